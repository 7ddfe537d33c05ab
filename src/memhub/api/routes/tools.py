"""`/v3/tools/list` and `/v3/tools/call`: what agents use, discovered from the `<knowledge_tools>` block."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.knowledge_schemas import ToolsCall, ToolsList


def list_tools(call: GuardedCall, body: ToolsList) -> Any:
    assert call.knowledge is not None
    return call.knowledge.tools.list(call.caller, body.knowledge_id, body.language)


def call_tool(call: GuardedCall, body: ToolsCall) -> Any:
    assert call.knowledge is not None
    return call.knowledge.tools.call(call.caller, body.knowledge_id, body.tool_name, body.params)


ROUTES = [
    GuardedRoute("list", ToolsList, list_tools, Guard.TOOLS, summary="A knowledge resource's tools"),
    GuardedRoute("call", ToolsCall, call_tool, Guard.TOOLS, summary="Run one tool of a knowledge resource"),
]
