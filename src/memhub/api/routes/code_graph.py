"""`/v3/code-graph/*`: code-graph management and the direct query routes (the original's)."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedHandler, GuardedRoute, Reply
from memhub.api.knowledge_schemas import (
    CodeGraphCreate,
    CodeGraphDelete,
    CodeGraphList,
    CodeGraphQuery,
    CodeGraphRef,
    CodeGraphSync,
    CodeGraphUpdateMeta,
)
from memhub.knowledge.codegraph.service import CodeGraphService

# The reference's query routes, each the tools/call tool of the same name.
QUERY_TOOLS = ("search", "explore", "callers", "callees", "impact", "node", "status", "files")


def _code_graphs(call: GuardedCall) -> CodeGraphService:
    assert call.knowledge is not None, "knowledge routes are mounted with the knowledge services"
    return call.knowledge.code_graphs


def create(call: GuardedCall, body: CodeGraphCreate) -> Reply:
    fields = {k: v for k, v in body.fields().items() if k != "wait"}
    detail, created = _code_graphs(call).create(call.caller, fields, wait=body.wait)
    return Reply(detail, 201 if created else 200)


def list_code_graphs(call: GuardedCall, body: CodeGraphList) -> Any:
    return _code_graphs(call).list(call.caller, body.team_id, body.status, body.limit, body.offset)


def get(call: GuardedCall, body: CodeGraphRef) -> Any:
    return _code_graphs(call).get(call.caller, body.code_graph_id)


def update_meta(call: GuardedCall, body: CodeGraphUpdateMeta) -> Any:
    changes = {k: v for k, v in body.fields().items() if k in ("repo_name", "summary")}
    return _code_graphs(call).update_meta(call.caller, body.code_graph_id, changes)


def delete(call: GuardedCall, body: CodeGraphDelete) -> Any:
    return _code_graphs(call).delete(call.caller, body.code_graph_ids)


def sync(call: GuardedCall, body: CodeGraphSync) -> Reply:
    data, finished = _code_graphs(call).sync(call.caller, body.code_graph_id, wait=body.wait)
    return Reply(data, 200 if finished else 202)


def _query(tool_name: str) -> GuardedHandler:
    def handler(call: GuardedCall, body: CodeGraphQuery) -> Any:
        return _code_graphs(call).query(call.caller, body.code_graph_id, tool_name, body.params())

    return handler


def _query_route(tool_name: str) -> GuardedRoute:
    return GuardedRoute(tool_name, CodeGraphQuery, _query(tool_name), Guard.DATA, summary=f"The `{tool_name}` tool")


ROUTES = [
    GuardedRoute(
        "create",
        CodeGraphCreate,
        create,
        Guard.DATA,
        summary="Index a repository (idempotent per source)",
        statuses=(200, 201),
    ),
    GuardedRoute("list", CodeGraphList, list_code_graphs, Guard.DATA, summary="A team's code graphs"),
    GuardedRoute("get", CodeGraphRef, get, Guard.DATA, summary="One code graph"),
    GuardedRoute("update-meta", CodeGraphUpdateMeta, update_meta, Guard.DATA, summary="Rename or re-describe a graph"),
    GuardedRoute("delete", CodeGraphDelete, delete, Guard.DATA, summary="Delete code graphs with their files"),
    GuardedRoute(
        "sync",
        CodeGraphSync,
        sync,
        Guard.DATA,
        summary="Fetch the source again and re-index what changed",
        statuses=(200, 202),
    ),
    *(_query_route(name) for name in QUERY_TOOLS),
]
