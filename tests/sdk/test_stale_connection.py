"""A read whose pooled keep-alive connection the server closed is sent once more on a fresh one; a write never is.

The server is real: memhub's app on a socket, behind the reverse proxy of fault_proxy.py in `stale` mode, which
closes a connection that already served a request, without an answer, when the next request arrives on it (what a
client meets when the server's idle keep-alive timeout fires just as the connection is reused). Nothing is mocked;
both the sync and the async client run the same scenario.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from memhub.sdk import AsyncMemoryClient, MemoryClient, TransportError
from memhub.sdk._http import Request
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.sdk.fault_proxy import FaultProxy, fault_proxy

pytestmark = pytest.mark.timeout(120)

Client = MemoryClient | AsyncMemoryClient
TEA = [{"role": "user", "content": "I prefer oolong tea"}]
_teams = itertools.count()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    built = build_gateway(tmp_path_factory.mktemp("stale"))
    with serve(built) as gateway:
        yield gateway
    built.close()


@pytest.fixture
def proxy(live: Gateway) -> Iterator[FaultProxy]:
    with fault_proxy(str(live.client.base_url)) as p:
        yield p


async def settle(result: Any) -> Any:
    """A call's data, whether the client is sync (already there) or async (awaited)."""
    return await result if inspect.isawaitable(result) else result


def run(
    kind: type[Client], live: Gateway, proxy: FaultProxy, scenario: Callable[..., Coroutine[Any, Any, None]]
) -> None:
    """The scenario with a client of this kind to the proxy, closed afterwards (in one event loop for async)."""

    async def go() -> None:
        client = kind(
            proxy.url,
            live.key,
            SERVICE,
            team_id=f"team-stale-{next(_teams)}",
            agent_id="agent-1",
            user_id="user-1",
            session_id="s1",
        )
        try:
            await scenario(client, proxy)
        finally:
            await settle(client.close())

    asyncio.run(go())


def contents(found: dict[str, Any]) -> list[str]:
    return [m["content"] for m in found["messages"]]


async def reused_connections(client: Client, proxy: FaultProxy) -> None:
    await settle(client.add_conversation(TEA))  # the pool's first connection, answered
    proxy.mode = "stale"
    mark = len(proxy.seen)
    # The read goes out on that kept-alive connection, which the server closes: sent again, on a fresh one.
    assert contents(await settle(client.query_conversation())) == ["I prefer oolong tea"]
    assert proxy.seen[mark:] == ["/v3/conversation/query"] * 2
    mark = len(proxy.seen)
    # A write on a reused connection the server closes is not sent again: the caller hears of it.
    with pytest.raises(TransportError) as info:
        await settle(client.add_conversation([{"role": "user", "content": "never twice"}]))
    assert "POST /v3/conversation/add failed (RemoteProtocolError)" in info.value.message and not info.value.timeout
    assert proxy.seen[mark:] == ["/v3/conversation/add"]
    # The next call opens a fresh connection; the dropped write was never stored.
    assert contents(await settle(client.query_conversation())) == ["I prefer oolong tea"]
    assert await settle(client.count_conversation()) == {"total": 1}


async def every_connection_dropped(client: Client, proxy: FaultProxy) -> None:
    proxy.mode = "refuse"  # every request, on a fresh connection or not, is closed unanswered
    for call, path in ((client.count_conversation, "/v3/conversation/count"), (client.read_core, "/v3/core/read")):
        mark = len(proxy.seen)
        with pytest.raises(TransportError):
            await settle(call())
        assert proxy.seen[mark:] == [path, path]  # once more, never more
    mark = len(proxy.seen)
    with pytest.raises(TransportError):
        await settle(client.add_conversation(TEA))
    assert proxy.seen[mark:] == ["/v3/conversation/add"]
    proxy.mode = "pass"
    assert await settle(client.count_conversation()) == {"total": 0}


@pytest.mark.parametrize("kind", [MemoryClient, AsyncMemoryClient])
def test_a_read_on_a_closed_keep_alive_connection_is_sent_once_more(
    live: Gateway, proxy: FaultProxy, kind: type[Client]
) -> None:
    run(kind, live, proxy, reused_connections)


@pytest.mark.parametrize("kind", [MemoryClient, AsyncMemoryClient])
def test_a_read_is_sent_at_most_twice_and_a_write_once(live: Gateway, proxy: FaultProxy, kind: type[Client]) -> None:
    run(kind, live, proxy, every_connection_dropped)


@pytest.mark.parametrize(
    "path",
    [
        "/v3/conversation/query",
        "/v3/conversation/search",
        "/v3/atomic/count",
        "/v3/scenario/ls",
        "/v3/scenario/read",
        "/v3/core/read",
        "/v3/recall",
        "/v3/context/compose",
        "/v3/knowledge/tools-block",
        "/v3/knowledge/list",
        "/v3/tools/list",
        "/v3/meta/team/get",
        "/v3/meta/asset/list-accessible",
        "/v3/meta/agent-fixed-asset/summary-by-agents",
        "/v3/meta/acl/check",
        "/v3/meta/auth/verify",
        "/v3/skill/get-by-name",
        "/v3/skill/files/read",
        "/v3/skill/listing",
        "/v3/skill/export",
    ],
)
def test_reads(path: str) -> None:
    assert Request(path, {}).reads


@pytest.mark.parametrize(
    "path",
    [
        "/v3/conversation/add",
        "/v3/conversation/delete",
        "/v3/atomic/update",
        "/v3/atomic/create",
        "/v3/scenario/write",
        "/v3/scenario/rm",
        "/v3/core/write",
        "/v3/chat-memory/clear",
        "/v3/tools/call",
        "/v3/knowledge/create",
        "/v3/meta/asset/touch-usage",
        "/v3/meta/participation-log/append",
        "/v3/meta/acl/grant",
        "/v3/meta/agent/archive",
        "/v3/skill/publish",
        "/v3/skill/extract",
        "/v3/skill/files/write",
        "/v3/skill/conversation/force-archive",
    ],
)
def test_writes(path: str) -> None:
    assert not Request(path, {}).reads
