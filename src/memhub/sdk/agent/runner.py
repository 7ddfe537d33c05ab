"""One private event loop on a daemon thread, which every kit call runs on.

Sync agents get deadlines and fire-and-forget capture without an event loop of their own, async agents
await the same coroutines, and the async HTTP client is only ever used from the loop that created its
connections (an httpx.AsyncClient cannot be shared across loops).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running forever on its own daemon thread until `stop`."""

    def __init__(self, name: str = "memhub-agent") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule a coroutine on the loop; the future resolves on the caller's side."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the loop and wait for it (TimeoutError after `timeout` seconds, task cancelled)."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout} s") from None

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a coroutine that runs on this loop from any other loop (or from this one)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always called from a coroutine
            running = None
        if running is self.loop:
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread; pending tasks are cancelled."""
        if not self.loop.is_running():
            return

        async def _cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(TimeoutError):
            self.run(_cancel_rest(), timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
