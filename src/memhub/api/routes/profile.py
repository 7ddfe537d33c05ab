"""L2 and L3 routes: scenario/ls|read|write|create|rm|count and core/read|write|count."""

from __future__ import annotations

from typing import Any

from memhub.api.dataplane import NO_DATA, Call, DataRoute
from memhub.api.schemas import Body, CoreWrite, ScenarioList, ScenarioRead, ScenarioRemove, ScenarioWrite
from memhub.model import DocumentRecord
from memhub.timeutil import ms_to_iso


def _owner(call: Call) -> dict[str, str]:
    return {"team_id": call.isolation.team_id, "agent_id": call.isolation.agent_id}


def _maybe_iso(ms: int | None) -> str | None:
    return None if ms is None else ms_to_iso(ms)


def _document_view(call: Call, path: str, doc: DocumentRecord | None, content: str | None) -> dict[str, Any]:
    return {
        "path": path,
        "content": content,
        "version": doc.version if doc else 0,
        **_owner(call),
        "created_at": _maybe_iso(doc.created_ms if doc else None),
        "updated_at": _maybe_iso(doc.updated_ms if doc else None),
    }


def _write_view(call: Call, doc: DocumentRecord) -> dict[str, Any]:
    return {"path": doc.path, "updated_at": ms_to_iso(doc.updated_ms), "version": doc.version, **_owner(call)}


def scenario_ls(call: Call, body: ScenarioList) -> dict[str, Any]:
    entries = call.memory.scenario.list(call.isolation, body.path_prefix)
    views = []
    for e in entries:
        view: dict[str, Any] = {"path": e.path, "version": e.version, **_owner(call)}
        if e.summary is not None:
            view["summary"] = e.summary
        view["created_at"] = _maybe_iso(e.created_ms)
        view["updated_at"] = _maybe_iso(e.updated_ms)
        views.append(view)
    return {"entries": views, "total": len(views)}


def scenario_read(call: Call, body: ScenarioRead) -> dict[str, Any]:
    doc = call.memory.scenario.read(call.isolation, body.path)
    return _document_view(call, body.path, doc, doc.content if doc else None)


def scenario_write(call: Call, body: ScenarioWrite) -> dict[str, Any]:
    written = call.memory.scenario.write(call.isolation, body.path, body.content, body.summary, call.request_id)
    # An extension of the original's answer: whether the scene differed from the stored one.
    return {**_write_view(call, written.document), "content_changed": written.content_changed}


def scenario_create(call: Call, body: ScenarioWrite) -> dict[str, Any]:
    doc = call.memory.scenario.create(call.isolation, body.path, body.content, body.summary, call.request_id)
    return _write_view(call, doc)


def scenario_rm(call: Call, body: ScenarioRemove) -> object:
    call.memory.scenario.remove(call.isolation, body.targets(), call.request_id)
    return NO_DATA


def scenario_count(call: Call, body: ScenarioList) -> dict[str, Any]:
    return {"total": call.memory.scenario.count(call.isolation, body.path_prefix)}


def core_read(call: Call, body: Body) -> dict[str, Any]:
    result = call.memory.core.read(call.isolation)
    view = _document_view(call, "persona.md", result.document, result.content)
    del view["path"]
    return view


def core_write(call: Call, body: CoreWrite) -> dict[str, Any]:
    written = call.memory.core.write(call.isolation, body.content, call.request_id)
    view = _write_view(call, written.document)
    del view["path"]
    # Extensions of the original's answer: what the write removed, and whether the text differed from the stored.
    view["removed_scene_navigation"] = written.removed_scene_navigation
    view["content_changed"] = written.content_changed
    return view


def core_count(call: Call, body: Body) -> dict[str, Any]:
    return {"total": call.memory.core.count(call.isolation)}


ROUTES = [
    DataRoute("scenario/ls", ScenarioList, scenario_ls, summary="List L2 scene files"),
    DataRoute("scenario/read", ScenarioRead, scenario_read, summary="Read an L2 scene file"),
    DataRoute("scenario/write", ScenarioWrite, scenario_write, summary="Rewrite an existing L2 scene file"),
    DataRoute("scenario/create", ScenarioWrite, scenario_create, summary="Create an L2 scene file (extension)"),
    DataRoute("scenario/rm", ScenarioRemove, scenario_rm, summary="Remove L2 scene files or directories"),
    DataRoute("scenario/count", ScenarioList, scenario_count, v2=False, summary="Count L2 scene files"),
    DataRoute("core/read", Body, core_read, summary="Read the L3 persona"),
    DataRoute("core/write", CoreWrite, core_write, summary="Write the L3 persona"),
    DataRoute("core/count", Body, core_count, v2=False, summary="Count L3 personas (0/1)"),
]
