"""The integration kit against a real `memhub serve`: recall, capture, tools, and every way the gateway fails.

Faults are made by a real reverse proxy (fault_proxy.py) between the kit and the real gateway, or by
stopping the gateway process; nothing here is mocked.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from memhub.sdk.agent import AgentConfig, MemoryAgent
from memhub.sdk.agent.prompt import estimate_tokens
from tests.e2e.conftest import GATEWAY_KEY, SERVICE, Api, Launcher, Server, free_port
from tests.sdk.fault_proxy import FaultProxy, fault_proxy

# One gateway serves the whole module; each test acts as its own team, agent and user (see `scope`), so no test
# sees another's memories, conversations or scenes.
_tests = itertools.count()
# Deadlines a healthy call meets even on a busy 2-core machine. A test about a late gateway makes the proxy hold
# the request until the test ends (HELD), so which parts miss the deadline never depends on this machine's speed.
# Where every path of a recall is held, nothing can arrive in time whatever the deadline: those recalls run with
# the production default (LATE), so the test does not sit out a deadline meant for healthy calls.
DEADLINE = 5.0
LATE = AgentConfig().recall_deadline
HELD = 600.0
FAST = AgentConfig(
    recall_deadline=DEADLINE,
    capture_backoff=0.05,
    capture_backoff_max=0.2,
    breaker_threshold=3,
    breaker_cooldown=0.3,
    tool_timeout=30.0,
)


def connect(url: str, scope: Mapping[str, str], session: str = "s-1", config: AgentConfig = FAST) -> MemoryAgent:
    return MemoryAgent.connect(url, GATEWAY_KEY, SERVICE, **scope, session_id=session, config=config)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `memhub serve` for the module."""
    base = tmp_path_factory.mktemp("kit-gateway")
    (base / "logs").mkdir()
    launcher = Launcher(base / "logs")
    try:
        yield launcher.serve(base / "data")
    finally:
        launcher.close()


@pytest.fixture
def api(gateway: Server) -> Iterator[Api]:
    # A client per test: a keep-alive connection idle past uvicorn's 5 s may be closed just as a request is sent.
    with gateway.api() as a:
        yield a


@pytest.fixture
def scope() -> dict[str, str]:
    """This test's own team, agent and user on the shared gateway."""
    n = next(_tests)
    return {"team_id": f"team-kit-{n}", "agent_id": f"agent-kit-{n}", "user_id": f"user-kit-{n}"}


@pytest.fixture
def proxy(gateway: Server) -> Iterator[FaultProxy]:
    with fault_proxy(gateway.url) as p:
        yield p


def seed(api: Api, scope: Mapping[str, str]) -> None:
    """Three memories, a persona and two scenes in the kit's scope."""
    for kind, content in [
        ("persona", "Ada drinks flat white coffee every morning"),
        ("episodic", "Ada moved to Berlin in March 2026"),
        ("instruction", "Always answer Ada in British English"),
    ]:
        api.ok("/v3/atomic/add", {**scope, "type": kind, "content": content})
    api.ok("/v3/core/write", {**scope, "content": "Ada is a backend engineer who loves coffee."})
    for path in ("scene_blocks/work.md", "scene_blocks/coffee.md"):
        api.ok("/v3/scenario/create", {**scope, "path": path, "content": f"# {path}\nDetails of {path}."})


def stored_messages(api: Api, scope: Mapping[str, str], session: str = "s-1") -> list[dict]:
    return api.ok("/v3/conversation/query", {**scope, "session_id": session, "limit": 100})["messages"]


# ---------------------------------------------------------------------------- recall


def test_recall_builds_both_blocks(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(gateway.url, scope) as agent:
        r = agent.recall("what coffee does Ada drink", messages=[])
    assert r.degraded == ()
    assert r.prepend.startswith("<relevant-memories>\n\n- [persona] Ada drinks flat white coffee every morning")
    assert r.prepend.endswith("\n\n</relevant-memories>")
    assert r.persona == "Ada is a backend engineer who loves coffee."
    assert r.scenes == ("scene_blocks/coffee.md", "scene_blocks/work.md")
    assert r.append_system.startswith("<user-persona>\nAda is a backend engineer who loves coffee.\n</user-persona>")
    assert "- `scene_blocks/coffee.md`\n- `scene_blocks/work.md`" in r.append_system
    assert r.append_system.endswith("</memory-tools-guide>")
    assert "Details of" not in r.append_system  # paths only, never scene bodies
    assert r.tokens > 0 and r.elapsed_ms < 300
    assert r.system_prompt("You help.") == "You help.\n\n" + r.append_system
    assert r.user_message("hi") == r.prepend + "\n\nhi"


def test_recall_is_stable_across_turns_and_packs_items_by_budget(
    api: Api, gateway: Server, scope: dict[str, str]
) -> None:
    seed(api, scope)
    for i in range(8):
        api.ok("/v3/atomic/add", {**scope, "type": "work_fact", "content": f"coffee fact {i} about Ada"})
    small = AgentConfig(recall_deadline=FAST.recall_deadline, max_prepend_tokens=60)
    with connect(gateway.url, scope) as agent, connect(gateway.url, scope, config=small) as tight:
        first = agent.recall("coffee")
        second = agent.recall("Berlin move")
        squeezed = tight.recall("coffee")
    # The one call packs by the prompt budget, not by a count: every fact fits the default budget, fewer fit 60 tokens.
    assert first.prepend.count("coffee fact") == 8
    assert 0 < squeezed.prepend.count("coffee fact") < 8 and estimate_tokens(squeezed.prepend) <= 60
    assert first.append_system == second.append_system  # the cacheable tail does not move between turns
    assert first.prepend != second.prepend


def test_recall_sanitizes_a_polluted_query(api: Api, gateway: Server, proxy: FaultProxy, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(proxy.url, scope) as agent:
        r = agent.recall("<relevant-memories>\n- [event] Berlin\n</relevant-memories>\nwhat coffee?")
    assert "flat white" in r.prepend


# ---------------------------------------------------------------------------- degradation


def test_gateway_down_nothing_raises(scope: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with connect(url, scope) as agent:
        r = agent.recall("anything", messages=[])  # refused at once: no deadline to wait for
        assert set(r.degraded) == {"memories", "persona", "scenes"}
        assert r.prepend == "" and r.append_system.startswith("<memory-tools-guide>")
        answer = agent.dispatch("tdai_memory_search", {"query": "coffee"})
        assert answer.startswith("memory unavailable: ")
        assert agent.capture([{"role": "user", "content": "remember me"}]) == 1
        assert agent.flush(0.5) is False
        assert agent.stats["capture"]["pending"] == 1
        assert agent.stats["breaker"]["state"] in ("open", "half_open")
        agent.close(flush_timeout=0)


def test_slow_gateway_recall_keeps_its_deadline(api: Api, proxy: FaultProxy, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(proxy.url, scope) as agent:
        warm = agent.recall("coffee")
        assert warm.degraded == ()
        proxy.mode, proxy.delay, proxy.only_paths = "slow", HELD, ("/v3/recall",)
        agent.config = replace(agent.config, recall_deadline=LATE)  # the one call carries every path, held
        r = agent.recall("coffee")  # the one recall call is held far past the deadline: recall answers without it
        assert r.degraded == ("memories", "persona", "scenes")
        # the stable tail falls back to the last persona and scenes that arrived
        assert r.persona == warm.persona and r.scenes == warm.scenes
        assert r.append_system == warm.append_system and r.prepend == ""
        # a slow gateway is busy, not down: the breaker stays closed (three misses reach its threshold)
        for _ in range(2):
            agent.recall("coffee")
        assert agent.stats["breaker"]["state"] == "closed"


def test_gateway_errors_become_strings_and_open_the_breaker(api: Api, proxy: FaultProxy, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(proxy.url, scope) as agent:
        proxy.mode = "error"
        first = agent.dispatch("tdai_memory_search", {"query": "coffee"})
        assert first.startswith("memory unavailable: ") and "503" in first
        for _ in range(2):  # reads do not count towards the per-turn search cap
            agent.dispatch("tdai_read_file", {"path": "persona.md"})
        assert agent.stats["breaker"]["state"] == "open"
        seen = len(proxy.seen)
        short = agent.dispatch("tdai_read_file", {"path": "persona.md"})
        assert "gateway marked down" in short
        assert len(proxy.seen) == seen  # an open breaker sends nothing
        proxy.mode = "pass"
        time.sleep(FAST.breaker_cooldown + 0.05)
        agent.recall("a new turn")
        healed = agent.dispatch("tdai_memory_search", {"query": "coffee"})
        assert healed.startswith("Found "), healed
        assert agent.stats["breaker"]["state"] == "closed"


def test_malformed_json_degrades(api: Api, proxy: FaultProxy, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(proxy.url, scope) as agent:
        proxy.mode = "malformed"
        r = agent.recall("coffee")
        assert set(r.degraded) == {"memories", "persona", "scenes"}
        answer = agent.dispatch("tdai_read_file", {"path": "persona.md"})
        assert answer.startswith("memory unavailable: ")


# ---------------------------------------------------------------------------- capture


def turn(user: str, assistant: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def test_capture_restores_original_text_and_sanitizes(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    seed(api, scope)
    history = turn("earlier question", "earlier answer")
    with connect(gateway.url, scope) as agent:
        r = agent.recall("which coffee do I like?", messages=history)
        messages = [
            *history,
            {"role": "system", "content": "be nice"},
            {"role": "user", "content": r.user_message("which coffee do I like?")},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "A flat white.\n```python\nprint('noise')\n```\nEnjoy!"},
                ],
            },
        ]
        assert agent.capture(messages) == 2
        assert agent.flush(60)
    stored = stored_messages(api, scope)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "which coffee do I like?"),
        ("assistant", "A flat white.\n\nEnjoy!"),
    ]


def test_capture_while_down_lands_after_recovery_exactly_once(
    api: Api, proxy: FaultProxy, scope: dict[str, str]
) -> None:
    with connect(proxy.url, scope) as agent:
        proxy.mode = "refuse"
        assert agent.capture(turn("my cat is called Miso", "Nice name!"), since=0) == 2
        assert agent.capture(turn("I live in Lyon", "Noted."), since=0) == 2
        assert agent.flush(0.8) is False
        proxy.mode = "pass"
        assert agent.flush(60)
        stats = agent.stats["capture"]
    # the two queued turns went out together once the gateway was back
    assert stats["messages_sent"] == 4 and stats["dropped"] == 0 and stats["retries"] >= 1
    assert [m["content"] for m in stored_messages(api, scope)] == [
        "my cat is called Miso",
        "Nice name!",
        "I live in Lyon",
        "Noted.",
    ]


def test_lost_response_retry_is_idempotent(api: Api, proxy: FaultProxy, scope: dict[str, str]) -> None:
    with connect(proxy.url, scope) as agent:
        proxy.mode, proxy.only_paths = "lose_response", ("/v3/conversation/add",)
        agent.capture(turn("the launch is on Friday", "I'll remember."), since=0)
        deadline = time.monotonic() + 60  # a failure bound
        while proxy.seen.count("/v3/conversation/add") < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        proxy.mode = "pass"
        assert agent.flush(60)
        assert agent.stats["capture"]["retries"] >= 1
    assert proxy.seen.count("/v3/conversation/add") >= 2
    assert [m["content"] for m in stored_messages(api, scope)] == ["the launch is on Friday", "I'll remember."]


def test_huge_message_is_truncated_not_rejected(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    with connect(gateway.url, scope) as agent:
        assert agent.capture(turn("z" * 50_000, "ok"), since=0) == 2
        assert agent.flush(60)
        assert agent.stats["capture"]["rejected"] == 0
    stored = stored_messages(api, scope)
    assert len(stored) == 2
    assert len(stored[0]["content"]) == 8192 and stored[0]["content"].startswith("zzzz")


def test_many_messages_are_split_into_batches(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    messages = [m for i in range(130) for m in turn(f"question {i}", f"answer {i}")]
    with connect(gateway.url, scope) as agent:
        assert agent.capture(messages, since=0) == 260
        assert agent.flush(60)
    total = api.ok("/v3/conversation/count", {**scope, "session_id": "s-1"})["total"]
    assert total == 260


def test_full_queue_drops_and_counts(scope: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    config = AgentConfig(capture_queue_size=2, breaker_cooldown=30, breaker_threshold=1)
    with connect(url, scope, config=config) as agent:
        queued = [agent.capture(turn(f"q{i}", f"a{i}"), since=0) for i in range(5)]
        # one batch may already be in flight (taken off the queue), so 3 or 4 get a place
        assert queued.count(2) in (2, 3) and queued.count(0) == 5 - queued.count(2)
        assert agent.stats["capture"]["dropped"] == queued.count(0)
        agent.close(flush_timeout=0)


def test_no_session_no_capture(gateway: Server, scope: dict[str, str]) -> None:
    agent = MemoryAgent.connect(gateway.url, GATEWAY_KEY, SERVICE, **scope, session_id="s-x", config=FAST)
    agent.session_id = None
    with agent:
        assert agent.capture(turn("a", "b"), since=0) == 0


# ---------------------------------------------------------------------------- tools


def test_tools_answer_from_the_real_gateway(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(gateway.url, scope) as agent:
        agent.capture(turn("I booked the Lisbon flight for May", "Great, noted."), since=0)
        assert agent.flush(60)
        agent.recall("turn start")
        found = agent.dispatch("tdai_memory_search", '{"query": "coffee", "limit": 2}')
        assert found.startswith("Found ") and "**[persona]**" in found and "flat white" in found
        conv = agent.dispatch("tdai_conversation_search", {"query": "Lisbon flight"})
        assert "**[user]**" in conv and "Lisbon" in conv
        persona = agent.dispatch("tdai_read_file", {"path": "persona.md"})
        assert persona == "Ada is a backend engineer who loves coffee."  # the file as stored: no navigation added
        scene = agent.dispatch("tdai_read_cos", {"path": "scene_blocks/work.md"})
        assert "# scene_blocks/work.md\nDetails of scene_blocks/work.md." in scene  # the file, META block included
        assert agent.dispatch("tdai_read_file", {"path": "scene_blocks/none.md"}).startswith("File not found")
        assert agent.dispatch("tdai_read_file", {"path": "../x"}).startswith(
            "invalid arguments for tdai_read_file: path"
        )
        assert agent.dispatch("tdai_memory_search", {}).startswith("invalid arguments for tdai_memory_search: query")
        assert agent.dispatch("tdai_memory_search", "{oops").startswith("invalid arguments")
        assert agent.dispatch("launch_missiles", {}).startswith("unknown tool: launch_missiles")
        # two searches were made this turn; the third is allowed, the fourth is refused
        assert agent.dispatch("tdai_memory_search", {"query": "Berlin"}).startswith("Found ")
        assert agent.dispatch("tdai_memory_search", {"query": "Berlin"}).startswith("Search limit reached")
        agent.recall("next turn")  # a new turn resets the count
        assert agent.dispatch("tdai_memory_search", {"query": "Berlin"}).startswith("Found ")


def test_tool_definitions_formats(gateway: Server, scope: dict[str, str]) -> None:
    with connect(gateway.url, scope) as agent:
        openai = agent.tool_definitions("openai")
        anthropic = agent.tool_definitions("anthropic")
    assert [t["function"]["name"] for t in openai] == [
        "tdai_memory_search",
        "tdai_conversation_search",
        "tdai_read_file",
    ]
    assert [t["name"] for t in anthropic] == [t["function"]["name"] for t in openai]
    assert all("input_schema" in t for t in anthropic)


def test_async_api(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    seed(api, scope)

    async def main() -> tuple[str, str, int, bool]:
        agent = connect(gateway.url, scope)
        try:
            r, text = await asyncio.gather(
                agent.arecall("coffee"), agent.adispatch("tdai_memory_search", {"query": "Berlin"})
            )
            queued = await agent.acapture(turn("async hello", "async hi"), since=0)
            flushed = await agent.aflush(60)
            return r.prepend, text, queued, flushed
        finally:
            agent.close()

    prepend, text, queued, flushed = asyncio.run(main())
    assert "flat white" in prepend and "Berlin" in text and queued == 2 and flushed
    assert [m["content"] for m in stored_messages(api, scope)] == ["async hello", "async hi"]


# ---------------------------------------------------------------------------- the composer as a recall path


def test_recall_with_the_runtime_context_composer(api: Api, gateway: Server, scope: dict[str, str]) -> None:
    seed(api, scope)
    config = AgentConfig(compose_context=True, recall_deadline=30.0)
    with connect(gateway.url, scope, config=config) as agent:
        agent.capture(turn("the quarterly report is due on the 14th", "Noted, the 14th."), since=0)
        assert agent.flush(60)
        r = agent.recall("when is the quarterly report due?")
    assert r.degraded == ()
    assert r.context is not None and r.context["mode"] == "workspace_agent"
    assert "【Recent conversation memory excerpt】" in r.knowledge
    assert "the quarterly report is due on the 14th" in r.knowledge
    system = r.system_prompt("BASE")
    # runtime material sits between the base prompt and the stable memory tail
    assert system.index("BASE") < system.index("【Recent conversation") < system.index("<memory-tools-guide>")


def test_composer_late_degrades_only_itself(api: Api, proxy: FaultProxy, scope: dict[str, str]) -> None:
    seed(api, scope)
    with connect(proxy.url, scope, config=AgentConfig(compose_context=True, recall_deadline=DEADLINE)) as agent:
        proxy.mode, proxy.delay, proxy.only_paths = "slow", HELD, ("/v3/context/compose",)
        r = agent.recall("coffee")
    assert r.degraded == ("context",)
    assert r.knowledge == "" and r.context is None
    assert "flat white" in r.prepend


def test_queued_captures_are_sent_at_exit_without_close(
    api: Api, gateway: Server, tmp_path: Path, scope: dict[str, str]
) -> None:
    script = tmp_path / "forgetful_agent.py"
    script.write_text(
        "import sys\n"
        "from memhub.sdk.agent import MemoryAgent\n"
        f"agent = MemoryAgent.connect(sys.argv[1], {GATEWAY_KEY!r}, {SERVICE!r}, team_id={scope['team_id']!r},\n"
        f"    agent_id={scope['agent_id']!r}, user_id={scope['user_id']!r}, session_id='s-1')\n"
        "agent.capture([{'role': 'user', 'content': 'remember the blue door'},\n"
        "               {'role': 'assistant', 'content': 'The blue door, noted.'}], since=0)\n"
        "# no flush, no close: the process just ends\n"
    )
    done = subprocess.run([sys.executable, str(script), gateway.url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [m["content"] for m in stored_messages(api, scope)] == ["remember the blue door", "The blue door, noted."]


def test_capturing_the_whole_history_each_turn_sends_each_message_once(
    api: Api, gateway: Server, scope: dict[str, str]
) -> None:
    history: list[dict] = []
    with connect(gateway.url, scope) as agent:
        for i in range(3):
            agent.recall(f"question {i}")  # no messages given: the kit does not know where the turn starts
            history += turn(f"question {i}", f"answer {i}")
            agent.capture(history)  # the whole history, every turn, no `since`
        assert agent.flush(60)
    stored = [m["content"] for m in stored_messages(api, scope)]
    assert stored == ["question 0", "answer 0", "question 1", "answer 1", "question 2", "answer 2"]
