"""The gateway side every adapter shares: one connection, resolved once, used from one private event loop.

Frameworks call an adapter from whatever loop (or thread) they run on: LangGraph's sync nodes from worker
threads, the Agents SDK from `asyncio.run` loops that come and go. An httpx.AsyncClient belongs to the loop
that opened its connections, so every call runs on the adapter's own loop thread and callers await it there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from memhub.sdk.agent.runner import LoopThread
from memhub.sdk.connection import Connection
from memhub.sdk.memory import AsyncMemoryClient

T = TypeVar("T")


class GatewayLink:
    """A `Connection` made into a data-plane client on first use (ids a user key implies filled in)."""

    def __init__(
        self, connection: Connection | None, *, name: str, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.connection = connection if connection is not None else Connection.from_env()
        self._transport = transport
        self._loop = LoopThread(name)
        self._client: AsyncMemoryClient | None = None
        self._lock: asyncio.Lock | None = None

    async def client(self) -> AsyncMemoryClient:
        """The client bound to the connection's team, agent and user (resolved on the first call)."""
        if self._client is not None:
            return self._client
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None:
                resolved = await self.connection.resolve(transport=self._transport)
                self._client = resolved.memory_client(transport=self._transport)
        return self._client

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the adapter's loop and wait for it (for sync callers)."""
        return self._loop.run(coro)

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the adapter's loop from any loop."""
        return await self._loop.run_async(coro)

    def close(self) -> None:
        """Close the HTTP client and stop the loop thread."""
        if self._client is not None:
            client, self._client = self._client, None
            self._loop.run(client.close())
        self._loop.stop()
