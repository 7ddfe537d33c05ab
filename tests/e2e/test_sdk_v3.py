"""memhub.sdk's MemoryClient: the v3 Python SDK's 18 data-plane calls against a live `memhub serve`.

The server runs with V3_STRICT_ISOLATION=on, the mode the v3 SDK is written for; every call
must succeed and return the `data` keys the SDK hands to its callers. A recording transport
captures the requests, so the wire shapes (headers, None-free bodies, no session on deletes) are
asserted as they went out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memhub.sdk import MemoryClient, ParamError, TDAMError
from tests.e2e.conftest import GATEWAY_KEY, SERVICE, Launcher, Server
from tests.meta.metadata_client import Recorder, Sent

pytestmark = pytest.mark.timeout(300)

MSG_ID = re.compile(r"^msg-[0-9a-f]{12}$")
ISO_INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
TEAM, AGENT, USER = "sdk-team", "sdk-agent", "sdk-user"


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("sdk")
    (base / "logs").mkdir()
    launcher = Launcher(base / "logs")
    try:
        yield launcher.serve(base / "data", env={"V3_STRICT_ISOLATION": "on"})
    finally:
        launcher.close()


_clients = iter(range(1_000_000))

SDK_METHODS = (
    "add_conversation",
    "query_conversation",
    "search_conversation",
    "delete_conversation",
    "count_conversation",
    "update_atomic",
    "query_atomic",
    "search_atomic",
    "delete_atomic",
    "count_atomic",
    "list_scenarios",
    "read_scenario",
    "write_scenario",
    "rm_scenario",
    "count_scenario",
    "read_core",
    "write_core",
    "count_core",
)


class Recorded(MemoryClient):
    """The SDK's MemoryClient over a recording transport; `sent` is every request that went out."""

    def __init__(self, server: Server, api_key: str = GATEWAY_KEY, **isolation: Any) -> None:
        self.server = server
        self.recorder = Recorder()
        super().__init__(server.url, api_key, SERVICE, transport=self.recorder, **isolation)

    @property
    def sent(self) -> list[Sent]:
        return self.recorder.sent


@pytest.fixture
def sdk(strict_server: Server) -> Iterator[Recorded]:
    """A client bound to a team/agent/user of its own (so tests sharing the server never meet)."""
    n = next(_clients)
    client = Recorded(strict_server, team_id=f"{TEAM}-{n}", agent_id=AGENT, user_id=USER, session_id="s1")
    yield client
    client.close()


def _scope(client: MemoryClient) -> dict[str, str]:
    return {"team_id": client.team_id, "agent_id": client.agent_id, "user_id": client.user_id}


def _seed_atomic(client: Recorded, content: str, type_: str = "work_fact", **extra: Any) -> str:
    """L1 memories come from the pipeline; memhub's `atomic/add` (not in the SDK) stands in for it here."""
    with client.server.api() as api:
        return api.ok("/v3/atomic/add", {**_scope(client), "type": type_, "content": content, **extra})["id"]


def _seed_scene(client: Recorded, path: str, content: str, summary: str) -> None:
    """Scene files come from the pipeline; memhub's `scenario/create` (not in the SDK) stands in for it here."""
    with client.server.api() as api:
        api.ok("/v3/scenario/create", {**_scope(client), "path": path, "content": content, "summary": summary})


def _iso(value: Any) -> bool:
    return isinstance(value, str) and ISO_INSTANT.match(value) is not None


def test_every_sdk_call_returns_what_the_sdk_hands_back(sdk: Recorded) -> None:
    # L0 ----------------------------------------------------------------------------------
    added = sdk.add_conversation(
        [
            {"role": "user", "content": "我们下周去成都吃火锅, remember the hotpot place"},
            {"role": "assistant", "content": "Noted: hotpot in Chengdu next week."},
        ]
    )
    assert set(added) == {"accepted_ids", "accepted_versions", "total_count"}
    assert all(MSG_ID.match(i) for i in added["accepted_ids"])
    assert added["accepted_versions"] == ["v1", "v1"] and added["total_count"] == 2
    other = sdk.add_conversation([{"role": "user", "content": "a second session about deadlines"}], session_id="s2")

    page = sdk.query_conversation(limit=10, offset=0)  # bound session s1 narrows reads
    assert {"messages", "total"} <= set(page)
    assert page["total"] == 2 and [m["id"] for m in page["messages"]] == added["accepted_ids"]
    first = page["messages"][0]
    assert {"id", "session_id", "team_id", "user_id", "agent_id", "task_id", "role", "content", "timestamp"} <= set(
        first
    )
    assert (first["session_id"], first["team_id"], first["agent_id"], first["user_id"]) == (
        "s1",
        sdk.team_id,
        AGENT,
        USER,
    )
    assert first["role"] == "user" and _iso(first["timestamp"])

    hits = sdk.search_conversation("火锅", limit=5)
    assert set(hits) >= {"messages"}
    assert hits["messages"] and hits["messages"][0]["id"] == added["accepted_ids"][0]
    assert {"id", "role", "content", "timestamp", "score"} <= set(hits["messages"][0])
    assert isinstance(hits["messages"][0]["score"], float)

    now = datetime.now(UTC)
    window = {"time_start": (now - timedelta(hours=1)).isoformat(), "time_end": (now + timedelta(hours=1)).isoformat()}
    assert sdk.count_conversation() == {"total": 2}
    assert sdk.count_conversation(session_id="s2", **window) == {"total": 1}

    deleted = sdk.delete_conversation(message_ids=[added["accepted_ids"][1]])
    assert deleted == {"deleted_count": 1}
    assert sdk.delete_conversation(session_ids=["s2"]) == {"deleted_count": 1}
    assert other["total_count"] == 1

    # L1 ----------------------------------------------------------------------------------
    memory_id = _seed_atomic(sdk, "The user prefers green tea over coffee")
    updated = sdk.update_atomic(memory_id, "The user prefers oolong tea over coffee", background="drinks")
    assert set(updated) == {"id", "version", "updated_at"}
    assert updated["id"] == memory_id and updated["version"] == "v1" and _iso(updated["updated_at"])

    items = sdk.query_atomic(type="work_fact", limit=20, offset=0)
    assert {"items", "total"} <= set(items) and items["total"] == 1
    detail = items["items"][0]
    assert {
        "id",
        "type",
        "content",
        "version",
        "team_id",
        "user_id",
        "agent_id",
        "task_id",
        "created_at",
        "updated_at",
    } <= set(detail)
    assert detail["version"] == 1 and isinstance(detail["version"], int)
    assert detail["background"] == "drinks" and detail["content"].startswith("The user prefers oolong")

    found = sdk.search_atomic("oolong tea", limit=5, type="work_fact")
    assert [i["id"] for i in found["items"]] == [memory_id]
    assert isinstance(found["items"][0]["score"], float)
    assert sdk.count_atomic(type="work_fact") == {"total": 1}
    assert sdk.count_atomic(type="persona") == {"total": 0}
    assert sdk.delete_atomic([memory_id, memory_id]) == {"deleted_count": 1}
    assert sdk.count_atomic() == {"total": 0}

    # L2 ----------------------------------------------------------------------------------
    _seed_scene(sdk, "travel/chengdu.md", "Planning a Chengdu trip.", "Chengdu trip")
    listing = sdk.list_scenarios()
    assert {"entries", "total"} <= set(listing)
    by_path = {e["path"]: e for e in listing["entries"]}
    assert set(by_path) == {"travel/", "travel/chengdu.md"} and listing["total"] == 2
    assert by_path["travel/"]["version"] == 0
    scene = by_path["travel/chengdu.md"]
    assert {"path", "version", "team_id", "agent_id", "created_at", "updated_at"} <= set(scene)
    assert scene["summary"] == "Chengdu trip" and scene["version"] == 0

    read = sdk.read_scenario("travel/chengdu.md")
    assert {"path", "content", "version", "team_id", "agent_id", "created_at", "updated_at"} <= set(read)
    assert "Planning a Chengdu trip." in read["content"] and read["version"] == 0

    written = sdk.write_scenario("travel/chengdu.md", "Trip booked for May.", summary="Chengdu trip, booked")
    assert {"path", "updated_at", "version", "team_id", "agent_id"} <= set(written)
    assert written["version"] == 1 and written["path"] == "travel/chengdu.md"
    assert sdk.count_scenario(path_prefix="travel/") == {"total": 1}
    assert sdk.count_scenario() == {"total": 1}
    assert sdk.rm_scenario("travel/chengdu.md") == {}  # no `data`: the SDK hands back {}
    assert sdk.read_scenario("travel/chengdu.md")["content"] is None
    assert sdk.count_scenario() == {"total": 0}

    # L3 ----------------------------------------------------------------------------------
    assert sdk.read_core()["content"] is None
    assert sdk.count_core() == {"total": 0}
    core = sdk.write_core("# Persona\nLikes hotpot and oolong tea.")
    assert {"updated_at", "version", "team_id", "agent_id"} <= set(core) and core["version"] == 0
    persona = sdk.read_core()
    assert {"content", "version", "team_id", "agent_id", "created_at", "updated_at"} <= set(persona)
    assert persona["content"].startswith("# Persona") and persona["version"] == 0
    assert sdk.write_core("# Persona\nLikes hotpot.")["version"] == 1
    assert sdk.count_core() == {"total": 1}

    # Every one of the 18 calls went out, with the SDK's headers and None-free bodies.
    sent_paths = {r.path for r in sdk.sent}
    expected_paths = {"/v3/conversation/" + p for p in ("add", "query", "search", "delete", "count")}
    expected_paths |= {"/v3/atomic/" + p for p in ("update", "query", "search", "delete", "count")}
    expected_paths |= {"/v3/scenario/" + p for p in ("ls", "read", "write", "rm", "count")}
    expected_paths |= {"/v3/core/" + p for p in ("read", "write", "count")}
    assert expected_paths <= sent_paths and len(SDK_METHODS) == len(expected_paths) == 18
    for request in sdk.sent:
        assert None not in request.body.values()
        assert {"team_id", "agent_id", "user_id"} <= set(request.body)
        assert request.headers["Authorization"] == f"Bearer {GATEWAY_KEY}"
        assert request.headers["x-tdai-service-id"] == SERVICE
        assert request.headers["Content-Type"] == "application/json"
        assert "x-tdai-user-key" not in request.headers


def test_sdk_errors_carry_code_message_and_request_id(sdk: Recorded) -> None:
    with pytest.raises(TDAMError) as missing_scene:
        sdk.write_scenario("nope/absent.md", "content")
    assert missing_scene.value.code == 404
    assert missing_scene.value.request_id.startswith("req-")

    with pytest.raises(TDAMError) as missing_memory:
        sdk.update_atomic("m_0_deadbeef", "new content")
    assert missing_memory.value.code == 404

    with pytest.raises(TDAMError) as bad:
        sdk.query_conversation(limit=1000)
    assert bad.value.code == 400 and "limit" in bad.value.message

    with pytest.raises(TDAMError) as traversal:
        sdk.read_scenario("../etc/passwd")
    assert traversal.value.code == 400


def test_sdk_wrong_key_is_401(strict_server: Server) -> None:
    with (
        Recorded(strict_server, "mh-gw-wrong", team_id="t", agent_id="a", user_id="u") as client,
        pytest.raises(TDAMError) as denied,
    ):
        client.count_core()
    assert denied.value.code == 401


def test_sdk_isolation_semantics(strict_server: Server, sdk: Recorded) -> None:
    """Reads narrow to the bound session, deletes never inherit it; other agents/tasks see nothing."""
    ids_s1 = sdk.add_conversation([{"role": "user", "content": "session one fact about kayaks"}])["accepted_ids"]
    sdk.add_conversation([{"role": "user", "content": "session two fact about kayaks"}], session_id="s2")
    assert sdk.count_conversation()["total"] == 1  # bound to s1
    unbound = Recorded(strict_server, team_id=sdk.team_id, agent_id=AGENT, user_id=USER)
    other_agent = Recorded(strict_server, team_id=sdk.team_id, agent_id="another", user_id=USER)
    tasked = Recorded(strict_server, team_id=sdk.team_id, agent_id=AGENT, user_id=USER, task_id="task-9")
    try:
        assert unbound.count_conversation()["total"] == 2
        assert len(unbound.search_conversation("kayaks")["messages"]) == 2
        assert other_agent.count_conversation()["total"] == 0
        assert other_agent.search_conversation("kayaks")["messages"] == []
        assert tasked.count_conversation()["total"] == 0  # task is part of the L0 scope
        tasked.write_core("task persona")
        assert unbound.read_core()["content"].startswith("task persona")  # L3 is (team, agent) only
        assert other_agent.read_core()["content"] is None

        request = sdk.delete_conversation(message_ids=ids_s1)
        assert request == {"deleted_count": 1}
        assert "session_id" not in sdk.sent[-1].body
        assert unbound.count_conversation()["total"] == 1
        assert "task_id" in tasked.sent[-1].body
    finally:
        for client in (unbound, other_agent, tasked):
            client.close()


def test_strict_server_rejects_what_the_sdk_would_never_send(strict_server: Server, tmp_path: Path) -> None:
    """The SDK refuses to build a client without ids; a raw request without them is a 422."""
    with pytest.raises(ParamError, match="agent_id"):
        MemoryClient(strict_server.url, GATEWAY_KEY, SERVICE, team_id="t", agent_id="", user_id="u")
    with strict_server.api() as api:
        response = api.post("/v3/core/read", {"team_id": "t", "agent_id": "a"})
        assert response.status_code == 422
        assert "user_id" in response.json()["message"]
