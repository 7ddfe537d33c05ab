"""`/v2/offload/*`: context offload, wire-compatible with the original (ingest, compact, query-mmd, read-ref).

Under the data plane's authentication and isolation: a session's offload state belongs to the user (under the
team and agent) the request acts as, and any other user's request for the same session id sees its own state.
Bodies are at most 1 MiB (413 beyond), as the original's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fastapi import FastAPI

from memhub.api.dataplane import Call, DataPlane, DataRoute, mount_post
from memhub.api.offload_schemas import (
    MAX_OFFLOAD_BODY_BYTES,
    OffloadCompact,
    OffloadIngest,
    OffloadQueryGraphs,
    OffloadReadRef,
)
from memhub.api.openapi import post_operation
from memhub.model.offload import CompactReport, OffloadSession, RecentTurn, ToolPair
from memhub.offload.service import OffloadService
from memhub.scope import Isolation

READ_REF = "offload/read-ref"


def _session(iso: Isolation, session_id: str) -> OffloadSession:
    return OffloadSession(iso.service_id, iso.team_id, iso.agent_id, iso.user_id, session_id)


def report_view(report: CompactReport) -> dict[str, Any]:
    """The original's report fields in its spelling, plus the tokens before and after."""
    return {
        "resolvedLevel": report.resolved_level,
        "originalCount": report.original_count,
        "compactedCount": report.compacted_count,
        "fastPathReplaced": report.fast_path_replaced,
        "fastPathDeleted": report.fast_path_deleted,
        "mildReplacements": report.mild_replacements,
        "aggressiveDeleted": report.aggressive_deleted,
        "emergencyDeleted": report.emergency_deleted,
        "mmdInjected": report.mmd_injected,
        "tokensBefore": report.tokens_before,
        "tokensAfter": report.tokens_after,
    }


def routes(service: OffloadService) -> list[DataRoute]:
    def ingest(call: Call, body: OffloadIngest) -> dict[str, Any]:
        pairs = [
            ToolPair(p.tool_name, p.tool_call_id, p.params, p.result, p.timestamp, p.error, p.duration_ms)
            for p in body.tool_pairs
        ]
        recent = [RecentTurn(m.role, m.content) for m in body.recent_messages or ()]
        result = service.ingest(_session(call.isolation, body.session_id), pairs, body.prompt, recent)
        data: dict[str, Any] = {
            "accepted": True,
            "pairs": result.accepted,
            "duplicates": result.duplicates,
            "prompt_queued": result.prompt_queued,
        }
        if result.duplicates and not result.accepted and not result.prompt_queued:
            data["note"] = f"nothing new: all {result.duplicates} pairs were already stored as sent"
        return data

    def compact(call: Call, body: OffloadCompact) -> dict[str, Any]:
        result = service.compact(
            _session(call.isolation, body.session_id),
            body.messages,
            context_window=body.context_window,
            total_tokens=body.total_tokens,
            message_tokens=body.message_tokens,
        )
        return {"messages": result.messages, "report": report_view(result.report)}

    def query_graphs(call: Call, body: OffloadQueryGraphs) -> dict[str, Any]:
        graphs, active = service.task_graphs(_session(call.isolation, body.session_id), body.limit)
        files = [{"filename": g.filename, "content": g.content, "version": g.version} for g in graphs]
        # The server answers `currentMmd` while both of the original's SDKs document `current_mmd`: both are sent.
        return {"mmds": files, "currentMmd": active, "current_mmd": active}

    def read_ref(call: Call, body: OffloadReadRef) -> dict[str, Any]:
        part = service.read_ref(
            _session(call.isolation, body.session_id),
            body.result_ref.strip(),
            query=body.query,
            start_line=body.start_line,
            end_line=body.end_line,
            max_tokens=body.max_tokens,
        )
        data: dict[str, Any] = {"result_ref": part.result_ref, "content": part.content, "truncated": part.truncated}
        if part.match_found is not None:
            data["match_found"] = part.match_found
        return data

    return [
        DataRoute("offload/ingest", OffloadIngest, ingest, summary="Store tool pairs and a prompt for offload"),
        DataRoute("offload/compact", OffloadCompact, compact, summary="Compact a context by its window share"),
        DataRoute("offload/query-mmd", OffloadQueryGraphs, query_graphs, summary="A session's Mermaid task graphs"),
        DataRoute(READ_REF, OffloadReadRef, read_ref, summary="An offloaded tool result, in full"),
    ]


def mount(plane: DataPlane, app: FastAPI, offload_routes: Sequence[DataRoute]) -> None:
    """At `/v2/offload/*` only (the original has no /v3 offload), lax isolation, 1 MiB bodies."""
    limited = replace(plane, max_body_bytes=min(plane.max_body_bytes, MAX_OFFLOAD_BODY_BYTES))
    for route in offload_routes:
        openapi = post_operation(route.model, security="data")
        mount_post(app, f"/v2/{route.path}", limited.endpoint(route, strict=False), openapi, "v2", route.summary)
