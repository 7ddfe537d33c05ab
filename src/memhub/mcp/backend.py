"""Who a tool call acts as, and the SDK clients it goes through.

The identity comes from the connection alone (the flags of `memhub mcp`, or the credentials and headers of a
request to `/mcp`), never from a tool's arguments: a model cannot ask to act as another user, team or agent.

`ConnectionBackend` serves one fixed connection (stdio): it resolves the ids a user key implies on first use, not
at start, so the server starts while the gateway is down and a call made once it is back succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from memhub.sdk._errors import ParamError
from memhub.sdk.connection import Connection, flags_text
from memhub.sdk.knowledge import AsyncKnowledgeClient
from memhub.sdk.memory import AsyncMemoryClient
from memhub.sdk.skills import AsyncSkillClient


@dataclass(frozen=True, slots=True)
class Clients:
    """The SDK clients of one resolved identity."""

    connection: Connection
    memory: AsyncMemoryClient
    knowledge: AsyncKnowledgeClient | None  # None without a user key: knowledge access is checked per user
    skills: AsyncSkillClient


class Backend(Protocol):
    """Hands a handler the clients of the caller it serves (`ctx.request` is the HTTP request, None on stdio)."""

    def clients(self, request: Any) -> AbstractAsyncContextManager[Clients]: ...


def open_clients(
    connection: Connection, transport: httpx.AsyncBaseTransport | None, describe_missing: Callable[[list[str]], str]
) -> Clients:
    """Clients for a resolved connection; ParamError naming what is missing (in the caller's terms)."""
    missing = connection.missing()
    if missing:
        raise ParamError(describe_missing(missing))
    return Clients(
        connection,
        connection.memory_client(transport=transport),
        connection.knowledge_client(transport=transport),
        connection.skill_client(transport=transport),
    )


async def close_clients(clients: Clients) -> None:
    await clients.memory.close()
    await clients.skills.close()
    if clients.knowledge is not None:
        await clients.knowledge.close()


def _flags_missing(missing: list[str]) -> str:
    return f"memhub connection incomplete: start `memhub mcp` with {flags_text(missing)}"


class ConnectionBackend:
    """One connection for the life of the process (`memhub mcp` on stdio); the clients are opened once."""

    def __init__(self, connection: Connection, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.connection = connection
        self.transport = transport
        self._clients: Clients | None = None
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def clients(self, request: Any) -> AsyncIterator[Clients]:
        async with self._lock:
            if self._clients is None:
                # A gateway that is down or refuses the key raises here (a tool error); the next call tries again.
                resolved = await self.connection.resolve(transport=self.transport)
                self._clients = open_clients(resolved, self.transport, _flags_missing)
        yield self._clients

    async def aclose(self) -> None:
        if self._clients is not None:
            await close_clients(self._clients)
            self._clients = None
