"""MemoryClient and AsyncMemoryClient against the real gateway on a real socket (strict isolation).

One scenario, written once, drives every L0–L3 call through the sync client and again through the
async one, each on an isolation scope of its own, and checks what the server hands back; errors from the
server must surface as TDAMError with its code and request id. Nothing is mocked: the app is memhub's,
served by uvicorn in a thread (tests/meta/metadata_client.serve).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memhub.sdk import AsyncMemoryClient, MemoryClient, ParamError, TDAMError, TransportError
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.meta.metadata_client import Recorder, serve

pytestmark = pytest.mark.timeout(120)

MSG_ID = re.compile(r"^msg-[0-9a-f]{12}$")
REQ_ID = re.compile(r"^req-[0-9a-f]{16}$")
Client = MemoryClient | AsyncMemoryClient


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A strict-isolation gateway served over a real socket for the whole module."""
    with pytest.MonkeyPatch.context() as mp:  # module scope: clear settings like tests/conftest._clean_env
        for name in [n for n in os.environ if n.startswith(("MEMHUB_", "TDAI_", "V3_STRICT_ISOLATION"))]:
            mp.delenv(name)
        built = build_gateway(tmp_path_factory.mktemp("sdk-live"), strict_isolation=True)
    with serve(built) as gateway:
        yield gateway
    built.close()


_scopes = iter(range(1_000_000))


def _client(live: Gateway, kind: type[Client], **overrides: Any) -> tuple[Client, Recorder]:
    recorder = Recorder()
    args: dict[str, Any] = {
        "endpoint": str(live.client.base_url),
        "api_key": live.key,
        "service_id": SERVICE,
        "team_id": f"team-{next(_scopes)}",
        "agent_id": "agent-1",
        "user_id": "user-1",
        "session_id": "s1",
        "transport": recorder,
        **overrides,
    }
    return kind(**args), recorder


async def settle(result: Any) -> Any:
    """A call's data, whether the client is sync (already there) or async (awaited)."""
    return await result if inspect.isawaitable(result) else result


def _seed(live: Gateway, client: Client, route: str, /, **fields: Any) -> Any:
    """What the pipeline would produce (memhub extension routes, not in the SDK), over the same socket."""
    body = {"team_id": client.team_id, "agent_id": client.agent_id, "user_id": client.user_id, **fields}
    response = live.client.post(route, json=body, headers=live.headers())
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def scenario(live: Gateway, client: Client, recorder: Recorder) -> None:
    """Every L0–L3 call once or more, with the shapes the SDK's callers read."""
    # L0 --------------------------------------------------------------------------------------------
    added = await settle(
        client.add_conversation(
            [
                {"role": "user", "content": "我们下周去成都吃火锅, remember the hotpot place"},
                {"role": "assistant", "content": "Noted: hotpot in Chengdu next week."},
            ],
            idempotency_key="turn-1",
        )
    )
    assert set(added) == {"accepted_ids", "accepted_versions", "total_count"} and added["total_count"] == 2
    assert all(MSG_ID.match(i) for i in added["accepted_ids"])
    assert recorder.sent[-1].body["idempotency_key"] == "turn-1"
    again = await settle(
        client.add_conversation(
            [
                {"role": "user", "content": "我们下周去成都吃火锅, remember the hotpot place"},
                {"role": "assistant", "content": "Noted: hotpot in Chengdu next week."},
            ],
            idempotency_key="turn-1",
        )
    )
    assert again["accepted_ids"] == added["accepted_ids"]  # the server deduplicated the retried turn
    await settle(
        client.add_conversation([{"role": "user", "content": "a second session on deadlines"}], session_id="s2")
    )

    page = await settle(client.query_conversation(limit=10, offset=0))
    assert page["total"] == 2 and [m["id"] for m in page["messages"]] == added["accepted_ids"]
    assert page["messages"][0]["session_id"] == "s1" and page["messages"][0]["team_id"] == client.team_id
    everywhere = await settle(client.with_isolation(session_id=None).query_conversation(limit=10))
    assert everywhere["total"] == 3
    hits = await settle(client.search_conversation("火锅", limit=5))
    assert hits["messages"][0]["id"] == added["accepted_ids"][0] and isinstance(hits["messages"][0]["score"], float)
    now = datetime.now(UTC)
    window = {"time_start": (now - timedelta(hours=1)).isoformat(), "time_end": (now + timedelta(hours=1)).isoformat()}
    assert await settle(client.count_conversation()) == {"total": 2}
    assert await settle(client.count_conversation(session_id="s2", **window)) == {"total": 1}
    assert await settle(client.delete_conversation(message_ids=[added["accepted_ids"][1]])) == {"deleted_count": 1}
    assert "session_id" not in recorder.sent[-1].body
    assert await settle(client.delete_conversation(session_ids=["s2"])) == {"deleted_count": 1}

    # L1 --------------------------------------------------------------------------------------------
    memory_id = _seed(live, client, "/v3/atomic/add", type="work_fact", content="The user prefers green tea")["id"]
    updated = await settle(client.update_atomic(memory_id, "The user prefers oolong tea", background="drinks"))
    assert set(updated) == {"id", "version", "updated_at"} and updated["version"] == "v1"
    items = await settle(client.query_atomic(type="work_fact", limit=20, offset=0))
    assert items["total"] == 1 and items["items"][0]["background"] == "drinks"
    found = await settle(client.search_atomic("oolong tea", limit=5, type="work_fact"))
    assert [i["id"] for i in found["items"]] == [memory_id]
    assert await settle(client.count_atomic(type="work_fact")) == {"total": 1}
    assert await settle(client.count_atomic(type="persona")) == {"total": 0}
    assert await settle(client.delete_atomic([memory_id, f" {memory_id} "])) == {"deleted_count": 1}
    assert recorder.sent[-1].body["ids"] == [memory_id]
    assert await settle(client.count_atomic()) == {"total": 0}

    # L2 --------------------------------------------------------------------------------------------
    _seed(live, client, "/v3/scenario/create", path="travel/chengdu.md", content="Planning a trip.", summary="Trip")
    listing = await settle(client.list_scenarios())
    assert {e["path"] for e in listing["entries"]} == {"travel/", "travel/chengdu.md"} and listing["total"] == 2
    assert (await settle(client.list_scenarios(path_prefix="nowhere/")))["entries"] == []
    read = await settle(client.read_scenario("travel/chengdu.md"))
    assert "Planning a trip." in read["content"] and read["version"] == 0
    written = await settle(client.write_scenario("travel/chengdu.md", "Booked for May.", summary="Trip, booked"))
    assert written["version"] == 1 and written["path"] == "travel/chengdu.md"
    assert await settle(client.count_scenario(path_prefix="travel/")) == {"total": 1}
    assert await settle(client.rm_scenario("travel/chengdu.md")) == {}
    assert (await settle(client.read_scenario("travel/chengdu.md")))["content"] is None
    assert await settle(client.count_scenario()) == {"total": 0}

    # L3 --------------------------------------------------------------------------------------------
    assert (await settle(client.read_core()))["content"] is None
    assert await settle(client.count_core()) == {"total": 0}
    core = await settle(client.write_core("# Persona\nLikes hotpot and oolong tea."))
    assert core["version"] == 0 and core["team_id"] == client.team_id
    assert (await settle(client.read_core()))["content"].startswith("# Persona")
    assert await settle(client.count_core()) == {"total": 1}

    # Every call went out with the SDK's headers, and L2/L3 without a session.
    for sent in recorder.sent:
        assert sent.headers["authorization"] == f"Bearer {live.key}" and sent.headers["x-tdai-service-id"] == SERVICE
        assert None not in sent.body.values()
        if sent.path.startswith(("/v3/scenario/", "/v3/core/")):
            assert "session_id" not in sent.body
    paths = {s.path for s in recorder.sent}
    layers = {
        "conversation": ("add", "query", "search", "delete", "count"),
        "atomic": ("update", "query", "search", "delete", "count"),
        "scenario": ("ls", "read", "write", "rm", "count"),
        "core": ("read", "write", "count"),
    }
    assert paths == {f"/v3/{layer}/{op}" for layer, ops in layers.items() for op in ops}


async def errors(live: Gateway, client: Client) -> None:
    """Server errors as TDAMError with the envelope's code, message and request id."""
    with pytest.raises(TDAMError) as missing_scene:
        await settle(client.write_scenario("nope/absent.md", "content"))
    assert missing_scene.value.code == 404 and REQ_ID.match(missing_scene.value.request_id)
    assert str(missing_scene.value).startswith("<TDAMError: (code=404, message=")
    with pytest.raises(TDAMError) as missing_memory:
        await settle(client.update_atomic("m_0_deadbeef", "new content"))
    assert missing_memory.value.code == 404
    with pytest.raises(TDAMError) as bad:
        await settle(client.query_conversation(limit=1000))
    assert bad.value.code == 400 and "limit" in bad.value.message and REQ_ID.match(bad.value.request_id)
    with pytest.raises(TDAMError) as traversal:
        await settle(client.read_scenario("../etc/passwd"))
    assert traversal.value.code == 400
    with pytest.raises(TDAMError) as unknown:  # not a memhub route (yet): the SDK's call is the original's
        await settle(client.create_memories([{"content": "x"}]))
    assert unknown.value.code == 404 and not isinstance(unknown.value, TransportError)
    wrong_key, _ = _client(live, type(client), api_key="mh-gw-wrong")
    with pytest.raises(TDAMError) as denied:
        await settle(wrong_key.count_core())
    assert denied.value.code == 401 and REQ_ID.match(denied.value.request_id)
    await settle(wrong_key.close())


def test_sync_client_round_trips_every_call(live: Gateway) -> None:
    client, recorder = _client(live, MemoryClient)
    with client:
        asyncio.run(scenario(live, client, recorder))
        asyncio.run(errors(live, client))


def test_async_client_round_trips_every_call(live: Gateway) -> None:
    async def run() -> None:
        client, recorder = _client(live, AsyncMemoryClient)
        async with client:
            await scenario(live, client, recorder)
            await errors(live, client)

    asyncio.run(run())


def test_strict_gateway_sees_isolation_from_the_clients(live: Gateway) -> None:
    """Scopes never meet: another agent or task sees nothing; L3 is (team, agent) only."""
    client, _ = _client(live, MemoryClient)
    other_agent = client.with_isolation(agent_id="agent-2", session_id=None)
    tasked = client.with_isolation(task_id="task-9", session_id=None)
    with client:
        client.add_conversation([{"role": "user", "content": "kayaks are great"}])
        assert client.count_conversation() == {"total": 1}
        assert other_agent.count_conversation() == {"total": 0}
        assert tasked.count_conversation() == {"total": 0}
        tasked.write_core("task persona")
        assert client.read_core()["content"].startswith("task persona")
        assert other_agent.read_core()["content"] is None
        with pytest.raises(ParamError, match="requires session_id"):
            tasked.add_conversation([{"role": "user", "content": "no session"}])


def test_a_stopped_gateway_is_a_transport_error(tmp_path: Path) -> None:
    """The gateway goes away between two calls: the second is a TransportError, sync and async."""
    built = build_gateway(tmp_path / "data")
    iso = {"team_id": "t", "agent_id": "a", "user_id": "u"}
    try:
        with ExitStack() as running:
            endpoint = str(running.enter_context(serve(built)).client.base_url)
            with MemoryClient(endpoint, built.key or "", SERVICE, **iso) as client:
                assert client.count_core() == {"total": 0}
                running.close()
                with pytest.raises(TransportError) as caught:
                    client.count_core()
                assert caught.value.code == -1 and not caught.value.timeout

        async def run() -> None:
            with ExitStack() as running:
                endpoint = str(running.enter_context(serve(built)).client.base_url)
                async with AsyncMemoryClient(endpoint, built.key or "", SERVICE, **iso) as client:
                    assert await client.count_core() == {"total": 0}
                    await asyncio.to_thread(running.close)
                    with pytest.raises(TransportError) as caught:
                        await client.count_core()
                    assert caught.value.code == -1

        asyncio.run(run())
    finally:
        built.close()
