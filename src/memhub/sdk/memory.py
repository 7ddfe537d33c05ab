"""`MemoryClient` / `AsyncMemoryClient`: the v3 strict-isolation data plane (L0 conversation … L3 core).

The calls themselves, the requests they send, are `MemoryCalls` (memhub.sdk._memory_calls); these clients send them
with httpx. Every request carries the bound team, agent and user (and task, when bound). The session is per
call: writes need one (the call's or the bound one), reads narrow to it when there is one and
aggregate across sessions otherwise, L2/L3 never send it, and conversation deletes never inherit
it (a delete of a few messages must not widen into a delete of their whole session).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from typing import Self

import httpx

from memhub.sdk._http import AsyncClient, AsyncHttp, Options, SyncClient, SyncHttp, coroutine_calls, options
from memhub.sdk._isolation import UNSET, Isolation, Unset
from memhub.sdk._memory_calls import (
    MAX_CLEAR_CHAT_MEMORY,
    MAX_DELETE_ATOMIC,
    MAX_DELETE_MESSAGES,
    MAX_DELETE_SESSIONS,
    AtomicMemoryType,
    MemoryCalls,
)
from memhub.sdk._request import JsonObject

# The calls and their limits are defined with the requests they build (memhub.sdk._memory_calls); they are this
# module's as well, where the SDK has always exported them.
__all__ = [
    "MAX_CLEAR_CHAT_MEMORY",
    "MAX_DELETE_ATOMIC",
    "MAX_DELETE_MESSAGES",
    "MAX_DELETE_SESSIONS",
    "AsyncMemoryClient",
    "AtomicMemoryType",
    "MemoryClient",
]


def _connect(
    endpoint: str,
    api_key: str,
    service_id: str | None,
    iso: tuple[str, str, str, str | None, str | None],
    user_key: str | None,
    timeout: float,
    verify: bool,
) -> tuple[Isolation, Options]:
    # Isolation first: the ids are what a caller most often forgets, so that error should win.
    return Isolation(*iso), options(endpoint, api_key, service_id, user_key=user_key, timeout=timeout, verify=verify)


class _Isolated:
    """The bound isolation context, read-only, and clones with parts of it overridden."""

    _iso: Isolation

    @property
    def team_id(self) -> str:
        """The bound team."""
        return self._iso.team_id

    @property
    def agent_id(self) -> str:
        """The bound agent."""
        return self._iso.agent_id

    @property
    def user_id(self) -> str:
        """The bound user."""
        return self._iso.user_id

    @property
    def session_id(self) -> str | None:
        """The bound session (None: reads aggregate across sessions, writes need one per call)."""
        return self._iso.session_id

    @property
    def task_id(self) -> str | None:
        """The bound task, sent with every call when set."""
        return self._iso.task_id

    def with_isolation(
        self,
        *,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | Unset | None = UNSET,
        task_id: str | Unset | None = UNSET,
    ) -> Self:
        """A clone sharing this client's connection; `session_id=None`/`task_id=None` clear, omitted keeps."""
        clone = copy.copy(self)
        clone._iso = self._iso.replace(
            team_id=team_id, agent_id=agent_id, user_id=user_id, session_id=session_id, task_id=task_id
        )
        return clone


class MemoryClient(SyncClient, _Isolated, MemoryCalls[JsonObject]):
    """The synchronous v3 data-plane client; team, agent and user are required."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        team_id: str = "",
        agent_id: str = "",
        user_id: str = "",
        session_id: str | None = None,
        task_id: str | None = None,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        iso = (team_id, agent_id, user_id, session_id, task_id)
        self._iso, opts = _connect(endpoint, api_key, service_id, iso, user_key, timeout, verify)
        self._http = SyncHttp(opts, transport)


@coroutine_calls(MemoryCalls)
class AsyncMemoryClient(AsyncClient, _Isolated, MemoryCalls[Awaitable[JsonObject]]):
    """The asynchronous v3 data-plane client: `MemoryClient`'s methods as coroutines."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        team_id: str = "",
        agent_id: str = "",
        user_id: str = "",
        session_id: str | None = None,
        task_id: str | None = None,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        iso = (team_id, agent_id, user_id, session_id, task_id)
        self._iso, opts = _connect(endpoint, api_key, service_id, iso, user_key, timeout, verify)
        self._http = AsyncHttp(opts, transport)
