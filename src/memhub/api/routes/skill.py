"""`/v3/skill/*` write and read routes (the original's create … export, and memhub's publish).

They authenticate as the data plane (the gateway key, or a user key) and take every id from the body, as the
original: no isolation headers are read, and strict isolation does not apply. A body that breaks its schema
answers code 40001 with HTTP 200, naming the field and the rule, like every other business error of these
routes. Who may do what is memhub.knowledge.skill.access's; the routes only translate bodies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.skill_schemas import (
    Pagination,
    SkillBody,
    SkillCreate,
    SkillDelete,
    SkillExport,
    SkillFilesRead,
    SkillFilesRemove,
    SkillFilesWrite,
    SkillGet,
    SkillGetByName,
    SkillList,
    SkillPatch,
    SkillPublish,
    SkillResource,
    SkillUpdate,
    SkillVersions,
)
from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.errors import SkillBadRequest
from memhub.knowledge.skill.files import ResourcePayload
from memhub.knowledge.skill.service import DEFAULT_PAGE, SkillService

BAD_REQUEST = SkillBadRequest.code


def skill_ids(body: SkillBody | SkillGetByName) -> SkillIds:
    """The ids a skill body names (blank: not given)."""
    return SkillIds(
        team_id=body.team_id or None,
        agent_id=body.agent_id or None,
        user_id=body.user_id or None,
        task_id=body.task_id or None,
    )


def _payloads(resources: Sequence[SkillResource] | None) -> list[ResourcePayload]:
    return [ResourcePayload(r.path, r.content, r.encoding, r.mime_type, bool(r.is_executable)) for r in resources or ()]


def _flag(value: bool | None) -> bool:
    return True if value is None else value


def _page(page: Pagination | None) -> dict[str, int]:
    return {"limit": (page.limit if page else None) or DEFAULT_PAGE, "offset": (page.offset if page else None) or 0}


def skill_route(path: str, model: type, handler: Any, summary: str, body_bytes: int | None = None) -> GuardedRoute:
    """A `/v3/skill/<path>` route: data-plane authentication, body errors answered as 40001 with HTTP 200."""
    return GuardedRoute(
        path, model, handler, guard=Guard.DATA, summary=summary, max_body_bytes=body_bytes, invalid_code=BAD_REQUEST
    )


def routes(service: SkillService, *, files_body_bytes: int) -> list[GuardedRoute]:
    """The skill routes over one service; the two that carry files take bodies up to `files_body_bytes`."""

    def create(call: GuardedCall, body: SkillCreate) -> Any:
        return service.create(
            call.caller, skill_ids(body), body.name, body.content, _payloads(body.resources), body.metadata
        )

    def update(call: GuardedCall, body: SkillUpdate) -> Any:
        return service.update(call.caller, skill_ids(body), body.skill_id, body.expected_version, body.content)

    def patch(call: GuardedCall, body: SkillPatch) -> Any:
        return service.patch(
            call.caller,
            skill_ids(body),
            body.skill_id,
            body.expected_version,
            body.old_string,
            body.new_string,
            bool(body.replace_all),
        )

    def delete(call: GuardedCall, body: SkillDelete) -> Any:
        return service.delete(call.caller, skill_ids(body), body.skill_id, body.expected_version)

    def publish(call: GuardedCall, body: SkillPublish) -> Any:
        return service.publish(call.caller, skill_ids(body), body.skill_id, body.expected_version)

    def get(call: GuardedCall, body: SkillGet) -> Any:
        return service.get(
            call.caller,
            skill_ids(body),
            body.skill_id,
            body.version,
            _flag(body.include_content),
            _flag(body.include_manifest),
        )

    def get_by_name(call: GuardedCall, body: SkillGetByName) -> Any:
        return service.get_by_name(
            call.caller,
            skill_ids(body),
            body.skill_name,
            body.version,
            _flag(body.include_content),
            _flag(body.include_manifest),
        )

    def list_(call: GuardedCall, body: SkillList) -> Any:
        filters, page = body.filters, body.pagination
        return service.list(
            call.caller,
            skill_ids(body),
            owner_agent_id=filters.owner_agent_id if filters else None,
            name_prefix=filters.name_prefix if filters else None,
            statuses=filters.status if filters else None,
            **_page(page),
        )

    def versions(call: GuardedCall, body: SkillVersions) -> Any:
        page = body.pagination
        return service.versions(
            call.caller,
            skill_ids(body),
            body.skill_id,
            **_page(page),
        )

    def files_write(call: GuardedCall, body: SkillFilesWrite) -> Any:
        return service.write_files(
            call.caller, skill_ids(body), body.skill_id, body.expected_version, _payloads(body.files)
        )

    def files_remove(call: GuardedCall, body: SkillFilesRemove) -> Any:
        return service.remove_files(call.caller, skill_ids(body), body.skill_id, body.expected_version, body.paths)

    def files_read(call: GuardedCall, body: SkillFilesRead) -> Any:
        return service.read_file(
            call.caller, skill_ids(body), body.skill_id, body.path, body.version, body.encoding or "utf-8"
        )

    def export(call: GuardedCall, body: SkillExport) -> Any:
        return service.export(call.caller, skill_ids(body), body.skill_id, body.version)

    route = skill_route
    return [
        route("create", SkillCreate, create, "Create a skill: SKILL.md and its files, version 1", files_body_bytes),
        route("update", SkillUpdate, update, "Replace SKILL.md of the head version (compare-and-set)"),
        route("patch", SkillPatch, patch, "Replace a string in SKILL.md (compare-and-set)"),
        route("delete", SkillDelete, delete, "Delete every version of a skill and its asset"),
        route("get", SkillGet, get, "A skill's head or one version, with content and manifest"),
        route("get-by-name", SkillGetByName, get_by_name, "A skill by (team, agent, name)"),
        route("list", SkillList, list_, "A page of skills (head versions)"),
        route("versions", SkillVersions, versions, "A page of a skill's versions"),
        route("files/write", SkillFilesWrite, files_write, "Add or replace resource files", files_body_bytes),
        route("files/remove", SkillFilesRemove, files_remove, "Remove resource files"),
        route("files/read", SkillFilesRead, files_read, "Read one resource file"),
        route("export", SkillExport, export, "A skill version as a zip (base64)"),
        route("publish", SkillPublish, publish, "Publish a candidate skill (memhub)"),
    ]
