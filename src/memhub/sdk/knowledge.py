"""`KnowledgeClient` / `AsyncKnowledgeClient`: an agent's side of `/v3/tools/list` and `/v3/tools/call`.

What an agent does with a `<knowledge_tools>` block: list a wiki's or code graph's tools, then call
one. Access is checked per user (a member of the resource's team, or an admin), so `user_key` is
required; team, agent and user ids ride along as the `x-tdai-*` telemetry headers the block's
recipes carry, for attribution in the gateway's logs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Generic, Literal

import httpx

from memhub.sdk._errors import ParamError
from memhub.sdk._http import AsyncClient, AsyncHttp, Options, SyncClient, SyncHttp, coroutine_calls, options
from memhub.sdk._isolation import strip_none
from memhub.sdk._request import JsonObject, Request, ResultT


def _connect(
    endpoint: str,
    api_key: str,
    service_id: str | None,
    user_key: str | None,
    telemetry: Mapping[str, str | None],
    timeout: float,
    verify: bool,
) -> Options:
    if not isinstance(user_key, str) or not user_key.strip():
        raise ParamError("user_key must be provided: knowledge access is checked per user")
    extra = {name: value for name, value in telemetry.items() if value}
    return options(
        endpoint, api_key, service_id, user_key=user_key, timeout=timeout, verify=verify, extra_headers=extra
    )


def _telemetry(team_id: str | None, agent_id: str | None, user_id: str | None) -> dict[str, str | None]:
    return {"x-tdai-team-id": team_id, "x-tdai-agent-id": agent_id, "x-tdai-user-id": user_id}


class _KnowledgeCalls(Generic[ResultT]):
    """The two tool calls, written once; the client's `_send` makes them sync or async."""

    def _send(self, request: Request) -> ResultT:
        raise NotImplementedError

    def tools_list(self, knowledge_id: str, language: Literal["en", "zh"] | None = None) -> ResultT:
        """`POST /v3/tools/list`: the resource (`name`, `type`, `status` …) and its `tools` with param schemas."""
        return self._send(Request("/v3/tools/list", strip_none({"knowledge_id": knowledge_id, "language": language})))

    def tools_call(self, knowledge_id: str, tool_name: str, params: Mapping[str, Any] | None = None) -> ResultT:
        """`POST /v3/tools/call`: run one tool; a tool-level failure is data with `isError`, not an exception."""
        if params is not None and not isinstance(params, Mapping):
            raise ParamError("params must be a dict")
        body = {"knowledge_id": knowledge_id, "tool_name": tool_name, "params": dict(params or {})}
        return self._send(Request("/v3/tools/call", body))

    def tools_block(
        self,
        team_id: str,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        language: Literal["en", "zh"] | None = None,
    ) -> ResultT:
        """`POST /v3/knowledge/tools-block` (memhub): the `<knowledge_tools>` block and the ids of the resources
        offered to this team (or agent) for this user: `{text, resources: [knowledge_id…], cache_key, chars}`."""
        body = strip_none({"team_id": team_id, "agent_id": agent_id, "user_id": user_id, "language": language})
        return self._send(Request("/v3/knowledge/tools-block", body))


class KnowledgeClient(SyncClient, _KnowledgeCalls[JsonObject]):
    """The synchronous knowledge-tools client."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        user_key: str | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        telemetry = _telemetry(team_id, agent_id, user_id)
        opts = _connect(endpoint, api_key, service_id, user_key, telemetry, timeout, verify)
        self._http = SyncHttp(opts, transport)


@coroutine_calls(_KnowledgeCalls)
class AsyncKnowledgeClient(AsyncClient, _KnowledgeCalls[Awaitable[JsonObject]]):
    """The asynchronous knowledge-tools client: `KnowledgeClient`'s methods as coroutines."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        user_key: str | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        telemetry = _telemetry(team_id, agent_id, user_id)
        opts = _connect(endpoint, api_key, service_id, user_key, telemetry, timeout, verify)
        self._http = AsyncHttp(opts, transport)
