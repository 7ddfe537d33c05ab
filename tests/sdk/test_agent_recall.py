"""The kit's recall through `POST /v3/recall`, and through the three calls against a gateway without that route.

The gateway is memhub's real app on a real socket (uvicorn in a thread). An older gateway is the same app behind
`WithoutRecall`, a thin ASGI layer that routes `/v3/recall` nowhere, so the app answers it exactly as it answers
any unknown path. Faults come from the real reverse proxy of fault_proxy.py; nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from memhub.sdk.agent import AgentConfig, MemoryAgent
from tests.conftest import ISO, SERVICE, Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.sdk.fault_proxy import FaultProxy, fault_proxy

pytestmark = pytest.mark.timeout(300)

# Deadlines a healthy call meets on a busy 2-core machine; a late call is held by the proxy until the test
# ends (HELD), so which path misses the deadline never depends on this machine's speed. Where every path of a
# recall is held, nothing can arrive in time whatever the deadline: those recalls run with the production default
# (LATE), so the test does not sit out a deadline meant for healthy calls.
DEADLINE = 5.0
HELD = 600.0
CONFIG = AgentConfig(recall_deadline=DEADLINE, breaker_threshold=3, tool_timeout=30.0)
LATE = replace(CONFIG, recall_deadline=AgentConfig().recall_deadline)
THREE_CALLS = {"/v3/atomic/search", "/v3/core/read", "/v3/scenario/ls"}
SUPPORT_GROUP = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."


class WithoutRecall:
    """An ASGI layer in front of memhub's app: a gateway that predates `/v3/recall` when `missing` is set.

    Starlette routes on the path after the root path, so with the whole path as root path no route matches and
    the app answers with its own unknown-route envelope, naming the path the client sent. Every other request,
    and every request while `missing` is off, passes untouched. `seen` lists the paths that came through.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.missing = True
        self.seen: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
            if self.missing and scope["path"] == "/v3/recall":
                scope = {**scope, "root_path": scope.get("root_path", "") + scope["path"]}
        await self.app(scope, receive, send)


class Hub:
    """The gateway (in-process, for seeding) and the layer in front of it on a real socket."""

    def __init__(self, built: Gateway, layer: WithoutRecall, url: str) -> None:
        self.built, self.layer, self.url = built, layer, url

    def ok(self, path: str, body: dict[str, Any]) -> Any:
        return self.built.ok(path, body)

    def agent(self, url: str | None = None, config: AgentConfig = CONFIG, session: str = "s-now") -> MemoryAgent:
        key = self.built.key or ""
        return MemoryAgent.connect(url or self.url, key, SERVICE, **ISO, session_id=session, config=config)

    def since(self, mark: int) -> list[str]:
        return self.layer.seen[mark:]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    built = build_gateway(tmp_path / "data")
    layer = WithoutRecall(built.client.app)
    layer.missing = False
    # `serve` serves whatever app the gateway's client holds: here, the layer in front of the real app.
    with serve(Gateway(SimpleNamespace(app=layer), built.store, built.data_dir)) as http:  # type: ignore[arg-type]
        yield Hub(built, layer, str(http.client.base_url))
    built.close()


@pytest.fixture
def proxy(hub: Hub) -> Iterator[FaultProxy]:
    with fault_proxy(hub.url) as p:
        yield p


def seed(hub: Hub) -> None:
    """An earlier session's turns (L0), a memory drawn from elsewhere (L1), a persona and two scenes."""
    turns = [
        ("user", SUPPORT_GROUP, "2023-05-08T13:56:00Z"),
        ("assistant", "Melanie: That's great, Caroline! What was the best part?", "2023-05-08T13:57:00Z"),
        ("user", "Caroline: Researching adoption agencies is my next big step.", "2023-05-25T10:00:00Z"),
    ]
    messages = [{"role": r, "content": c, "timestamp": t} for r, c, t in turns]
    hub.ok("/v3/conversation/add", {"session_id": "s-old", "messages": messages})
    hub.ok("/v3/atomic/add", {"type": "episodic", "content": "Caroline felt accepted at the support group"})
    hub.ok("/v3/core/write", {"content": "Caroline is a counsellor in training."})
    for path in ("scene_blocks/support.md", "scene_blocks/adoption.md"):
        hub.ok("/v3/scenario/create", {"path": path, "content": f"# {path}\nDetails."})


# ---------------------------------------------------------------------------- one call


def test_recall_puts_conversation_turns_and_memories_in_the_prepend_in_one_call(hub: Hub) -> None:
    seed(hub)
    with hub.agent() as agent:
        mark = len(hub.layer.seen)
        r = agent.recall("what happened at the support group Caroline went to?", messages=[])
    assert hub.since(mark) == ["/v3/recall"]  # memories, persona and scenes in one request
    assert r.degraded == ()
    assert "- [conversation 2023-05-08, user] " + SUPPORT_GROUP in r.prepend
    assert "- [episodic] Caroline felt accepted at the support group" in r.prepend
    assert {m["layer"] for m in r.memories} == {"l0", "l1"}
    turn = next(m for m in r.memories if m["layer"] == "l0" and m["content"] == SUPPORT_GROUP)
    assert turn["session_id"] == "s-old" and turn["role"] == "user" and turn["timestamp"].startswith("2023-05-08")
    # the stable tail is built as before: persona, then the scene paths sorted
    assert r.persona == "Caroline is a counsellor in training."
    assert r.scenes == ("scene_blocks/adoption.md", "scene_blocks/support.md")
    assert "- `scene_blocks/adoption.md`\n- `scene_blocks/support.md`" in r.append_system
    assert r.append_system.startswith("<user-persona>\nCaroline is a counsellor in training.\n</user-persona>")


def test_turns_the_agent_already_has_are_not_recalled_again(hub: Hub) -> None:
    seed(hub)
    window = [
        {"role": "system", "content": "You help."},  # not a turn: never sent
        SimpleNamespace(role="user", content=[{"type": "text", "text": SUPPORT_GROUP}]),
    ]
    with hub.agent() as agent:
        r = agent.recall("what happened at the support group Caroline went to?", messages=window)
    assert r.degraded == ()
    assert SUPPORT_GROUP not in r.prepend  # in the agent's window already
    assert "Caroline felt accepted at the support group" in r.prepend


def test_recall_budget_and_switches_reach_the_gateway(hub: Hub) -> None:
    seed(hub)
    config = AgentConfig(recall_deadline=DEADLINE, include_persona=False, include_scene_nav=False)
    with hub.agent(config=config) as agent:
        r = agent.recall("support group Caroline")
    assert r.degraded == () and r.persona is None and r.scenes == ()
    assert r.append_system.startswith("<memory-tools-guide>")
    assert "support group" in r.prepend


# ---------------------------------------------------------------------------- a gateway without the route


def test_an_unknown_route_answer_is_what_the_layer_gives(hub: Hub) -> None:
    hub.layer.missing = True
    headers = {"authorization": f"Bearer {hub.built.key}", "x-tdai-service-id": SERVICE}
    answer = httpx.post(hub.url + "/v3/recall", json={**ISO, "query": "x"}, headers=headers)
    unknown = httpx.post(hub.url + "/v3/no-such-route", json={**ISO, "query": "x"}, headers=headers)
    assert (answer.status_code, unknown.status_code) == (404, 404)
    assert answer.json()["message"] == "Not found: POST /v3/recall"
    assert {k: v for k, v in answer.json().items() if k not in ("message", "request_id")} == {
        k: v for k, v in unknown.json().items() if k not in ("message", "request_id")
    }


def test_without_the_route_the_kit_recalls_through_three_calls_and_stops_asking(hub: Hub) -> None:
    seed(hub)
    hub.layer.missing = True
    with hub.agent(config=AgentConfig(recall_deadline=DEADLINE, recall_reprobe_after=2)) as agent:
        mark = len(hub.layer.seen)
        first = agent.recall("support group Caroline")
        asked = hub.since(mark)
        assert asked[0] == "/v3/recall" and set(asked[1:]) == THREE_CALLS and len(asked) == 4
        assert first.degraded == ()
        assert "- [episodic] Caroline felt accepted at the support group" in first.prepend
        assert "[conversation" not in first.prepend  # L1 only, as before
        assert [m["layer"] for m in first.memories] == ["l1"]
        assert first.persona == "Caroline is a counsellor in training."
        assert first.scenes == ("scene_blocks/adoption.md", "scene_blocks/support.md")

        for _ in range(2):  # the next two recalls do not ask again
            mark = len(hub.layer.seen)
            again = agent.recall("support group Caroline")
            assert set(hub.since(mark)) == THREE_CALLS and len(hub.since(mark)) == 3
            assert again.prepend == first.prepend and again.append_system == first.append_system

        hub.layer.missing = False  # the gateway was upgraded meanwhile: the next recall asks and keeps asking
        for _ in range(2):
            mark = len(hub.layer.seen)
            upgraded = agent.recall("support group Caroline")
            assert hub.since(mark) == ["/v3/recall"]
        assert "[conversation 2023-05-08, user]" in upgraded.prepend


def test_without_the_route_a_late_search_degrades_only_memories(hub: Hub) -> None:
    seed(hub)
    hub.layer.missing = True
    with fault_proxy(hub.url) as proxy, hub.agent(proxy.url) as agent:
        warm = agent.recall("support group")
        proxy.mode, proxy.delay, proxy.only_paths = "slow", HELD, ("/v3/atomic/search",)
        r = agent.recall("support group")
        assert r.degraded == ("memories",)
        assert r.prepend == "" and r.append_system == warm.append_system
        proxy.only_paths = ("/v3/core/read", "/v3/scenario/ls")
        late = agent.recall("support group")
        assert set(late.degraded) == {"persona", "scenes"}
        assert late.append_system == warm.append_system and "support group" in late.prepend
    assert proxy.seen.count("/v3/recall") == 1  # asked once, on the first turn


# ---------------------------------------------------------------------------- faults of the one call


def test_a_late_recall_degrades_its_paths_and_keeps_the_stable_tail(hub: Hub, proxy: FaultProxy) -> None:
    seed(hub)
    with hub.agent(proxy.url) as agent:
        warm = agent.recall("support group")
        assert warm.degraded == () and "support group" in warm.prepend
        proxy.mode, proxy.delay, proxy.only_paths = "slow", HELD, ("/v3/recall",)
        agent.config = LATE  # the one call carries every path, held
        r = agent.recall("support group")
        assert r.degraded == ("memories", "persona", "scenes")
        assert r.prepend == "" and r.append_system == warm.append_system
        assert (r.persona, r.scenes) == (warm.persona, warm.scenes)
        for _ in range(2):  # a late gateway is busy, not down: three misses reach the threshold, it stays closed
            agent.recall("support group")
        assert agent.stats["breaker"]["state"] == "closed"
        proxy.mode, agent.config = "pass", CONFIG
        healed = agent.recall("support group")
    assert healed.degraded == () and healed.prepend == warm.prepend
    # a late answer is not a missing route: the kit never fell back to the three calls
    assert not THREE_CALLS & set(proxy.seen)


def test_a_failing_recall_degrades_without_falling_back_and_opens_the_breaker(hub: Hub, proxy: FaultProxy) -> None:
    seed(hub)
    with hub.agent(proxy.url) as agent:
        proxy.mode, proxy.only_paths = "error", ("/v3/recall",)
        for _ in range(3):
            r = agent.recall("support group")
            assert r.degraded == ("memories", "persona", "scenes") and r.prepend == ""
        assert agent.stats["breaker"]["state"] == "open"
        seen = len(proxy.seen)
        assert agent.recall("support group").degraded == ("memories", "persona", "scenes")
        assert len(proxy.seen) == seen  # an open breaker sends nothing
    assert not THREE_CALLS & set(proxy.seen)


def test_the_composer_runs_beside_the_one_call(hub: Hub, proxy: FaultProxy) -> None:
    seed(hub)
    config = AgentConfig(recall_deadline=DEADLINE, compose_context=True)
    with hub.agent(proxy.url, config=config) as agent:
        r = agent.recall("support group")
        assert r.degraded == () and r.context is not None and "support group" in r.prepend
        proxy.mode, proxy.delay, proxy.only_paths = "slow", HELD, ("/v3/context/compose",)
        late = agent.recall("support group")
    assert late.degraded == ("context",) and late.context is None
    assert late.prepend == r.prepend
    assert sorted(set(proxy.seen)) == ["/v3/context/compose", "/v3/recall"]


def test_the_recall_budget_is_the_prepends_plus_room_for_persona_and_scenes() -> None:
    from memhub.sdk.agent.config import SCENE_LINE_CHARS, SCENE_LINE_TOKENS, recall_budget

    config = AgentConfig(max_prepend_tokens=800, max_prepend_chars=3000, max_persona_chars=2000, max_scenes=10)
    assert recall_budget(config) == {
        "max_tokens": 800 + 500 + 10 * SCENE_LINE_TOKENS,
        "max_chars": 3000 + 2000 + 10 * SCENE_LINE_CHARS,
    }
    bare = AgentConfig(max_prepend_tokens=800, max_prepend_chars=3000, include_persona=False, include_scene_nav=False)
    assert recall_budget(bare) == {"max_tokens": 800, "max_chars": 3000}
    # Never past what the gateway accepts: a refused recall would cost the turn its memories.
    huge = AgentConfig(max_prepend_tokens=10**6, max_prepend_chars=10**7)
    assert recall_budget(huge) == {"max_tokens": 32_000, "max_chars": 128_000}
