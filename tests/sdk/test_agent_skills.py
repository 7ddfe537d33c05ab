"""The agent kit's skill options: `<available_skills>` in recall, turns to skill mining, and a gateway without them.

The gateway is memhub's real app on a socket. A gateway without the skill routes (the original's older
versions) is the same app behind `Without`, an ASGI layer that routes the named paths nowhere, so the app
answers them as it answers any unknown path (404). `Recorder` is the real HTTP transport, recording bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memhub.sdk import AsyncMemoryClient, ParamError, SkillClient
from memhub.sdk.agent import AgentConfig, MemoryAgent
from memhub.sdk.agent.capture import idempotency_key
from memhub.sdk.agent.skills import skill_batches, skill_messages, turn_window
from tests.conftest import GATEWAY_KEY, ISO, SERVICE, Gateway, build_gateway
from tests.meta.metadata_client import Recorder, serve
from tests.sdk.fault_proxy import fault_proxy

pytestmark = pytest.mark.timeout(300)

DEADLINE = 5.0  # what a healthy call meets on a busy 2-core machine
HELD = 600.0  # a late call is held by the proxy until the test ends, so lateness never depends on speed
LISTING = "/v3/skill/listing"
MINING = "/v3/skill/conversation/add"
SKILL_MD = "---\nname: docs-deploy\ndescription: Build and deploy the docs site\n---\n# Deploy\n\nRun make docs.\n"


class Without:
    """An ASGI layer in front of memhub's app: the paths in `missing` are routed nowhere (the app's own 404)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.missing: set[str] = set()
        self.seen: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
            if scope["path"] in self.missing:
                scope = {**scope, "root_path": scope.get("root_path", "") + scope["path"]}
        await self.app(scope, receive, send)


class Hub:
    def __init__(self, layer: Without, url: str) -> None:
        self.layer, self.url = layer, url
        self.recorder = Recorder()

    def agent(self, config: AgentConfig, session: str = "s-1", url: str | None = None) -> MemoryAgent:
        client = AsyncMemoryClient(
            url or self.url, GATEWAY_KEY, SERVICE, **ISO, session_id=session, transport=self.recorder
        )  # the kit's skill paths share this connection, so the recorder sees their bodies too
        return MemoryAgent(client, session_id=session, config=config)

    def skills(self) -> SkillClient:
        return SkillClient(self.url, GATEWAY_KEY, SERVICE, **ISO)

    def asked(self, path: str) -> list[Any]:
        return [body for sent, body in self.recorder.calls if sent == path]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    built = build_gateway(tmp_path / "data")
    layer = Without(built.client.app)
    with serve(Gateway(SimpleNamespace(app=layer), built.store, built.data_dir)) as http:  # type: ignore[arg-type]
        yield Hub(layer, str(http.client.base_url))
    built.close()


def listing_config(**extra: Any) -> AgentConfig:
    return AgentConfig(recall_deadline=DEADLINE, skills_listing=True, skills_char_budget=1500, **extra)


# ---------------------------------------------------------------------------- listing in recall


def test_recall_puts_the_available_skills_in_the_system_prompt(hub: Hub) -> None:
    with hub.skills() as skills:
        skills.create(name="docs-deploy", content=SKILL_MD)
    with hub.agent(listing_config()) as agent:
        r = agent.recall("how do I deploy the docs site?", messages=[])
    assert r.degraded == ()
    assert r.skills.startswith("<available_skills>") and r.skills.endswith("</available_skills>")
    assert "- docs-deploy: Build and deploy the docs site" in r.skills
    system = r.system_prompt("You help.")
    assert system.startswith("You help.\n\n<available_skills>") and system.endswith(r.append_system)
    assert hub.asked(LISTING) == [{**ISO, "query": "how do I deploy the docs site?", "char_budget": 1500}]


def test_no_skills_no_block_and_off_by_default(hub: Hub) -> None:
    with hub.agent(listing_config()) as agent:
        r = agent.recall("how do I deploy the docs site?", messages=[])
    assert r.skills == "" and r.degraded == ()  # "(none)" gives the model nothing to pick from
    assert "<available_skills>" not in r.system_prompt("You help.")
    with hub.skills() as skills:
        skills.create(name="docs-deploy", content=SKILL_MD)
    before = len(hub.asked(LISTING))
    with hub.agent(AgentConfig(recall_deadline=DEADLINE)) as agent:
        assert agent.recall("how do I deploy the docs site?", messages=[]).skills == ""
    assert len(hub.asked(LISTING)) == before


def test_a_gateway_without_the_listing_is_remembered_and_asked_again_later(hub: Hub) -> None:
    hub.layer.missing = {LISTING}
    with hub.agent(listing_config(recall_reprobe_after=2)) as agent:
        first = agent.recall("deploy the docs", messages=[])
        assert first.skills == "" and first.degraded == ()  # no skills there: nothing degraded
        assert len(hub.asked(LISTING)) == 1
        for _ in range(2):
            agent.recall("deploy the docs", messages=[])
        assert len(hub.asked(LISTING)) == 1  # not asked while remembered
        with hub.skills() as skills:
            skills.create(name="docs-deploy", content=SKILL_MD)
        hub.layer.missing = set()  # the gateway was upgraded meanwhile
        upgraded = agent.recall("deploy the docs", messages=[])
    assert len(hub.asked(LISTING)) == 2 and "- docs-deploy:" in upgraded.skills


def test_a_late_or_failing_listing_reuses_the_last_block(hub: Hub) -> None:
    with hub.skills() as skills:
        skills.create(name="docs-deploy", content=SKILL_MD)
    with fault_proxy(hub.url) as proxy, hub.agent(listing_config(), url=proxy.url) as agent:
        warm = agent.recall("deploy the docs", messages=[])
        assert "- docs-deploy:" in warm.skills
        proxy.mode, proxy.only_paths = "error", (LISTING,)
        failed = agent.recall("deploy the docs", messages=[])
        assert failed.degraded == ("skills",) and failed.skills == warm.skills
        proxy.mode, proxy.delay = "slow", HELD
        late = agent.recall("deploy the docs", messages=[])
        assert late.degraded == ("skills",) and late.skills == warm.skills
        assert late.append_system == warm.append_system  # the memory paths are unharmed


def test_skills_char_budget_is_checked() -> None:
    with pytest.raises(ParamError, match="skills_char_budget: must be at most 64000"):
        AgentConfig(skills_char_budget=64_001)
    with pytest.raises(ParamError, match="skills_char_budget: must be a positive number"):
        AgentConfig(skills_char_budget=0)


# ---------------------------------------------------------------------------- turns to skill mining

OPENAI_TURN: list[dict[str, Any]] = [
    {"role": "system", "content": "You help."},
    {"role": "user", "content": "Deploy the docs site"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd":"make"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "built 12 pages"},
    {"role": "assistant", "content": "The docs are built and deployed."},
]
MINED = [
    {"role": "user", "content": "Deploy the docs site"},
    {"role": "tool_call", "content": '{"cmd":"make"}', "tool_call_id": "call_1", "tool_name": "shell"},
    {"role": "tool_result", "content": "built 12 pages", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "The docs are built and deployed."},
]


def test_capture_sends_the_turn_with_its_tool_calls_to_mining(hub: Hub) -> None:
    with hub.agent(AgentConfig(recall_deadline=DEADLINE, skills_capture=True)) as agent:
        agent.recall("Deploy the docs site", messages=OPENAI_TURN[:1])
        assert agent.capture(OPENAI_TURN) == 2  # L0 takes the user and the final assistant message
        assert agent.flush(60)
        stats = agent.stats
    (sent,) = hub.asked(MINING)
    assert sent == {"session_id": "s-1", **ISO, "messages": MINED, "idempotency_key": idempotency_key("s-1", MINED)}
    assert stats["skills_capture"]["sent"] == 1 and stats["skills_capture"]["rejected"] == 0
    assert stats["capture"]["sent"] == 1
    with hub.skills() as skills:  # the gateway buffered the turn: there is something to archive
        archived = skills.conversation_force_archive(session_id="s-1", **ISO)
    assert archived["status"] == "archived"


def test_capture_to_mining_is_opt_in(hub: Hub) -> None:
    with hub.agent(AgentConfig(recall_deadline=DEADLINE)) as agent:
        agent.capture(OPENAI_TURN)
        assert agent.flush(60)
        assert "skills_capture" not in agent.stats
    assert hub.asked(MINING) == [] and len(hub.asked("/v3/conversation/add")) == 1


def test_a_gateway_without_mining_never_fails_the_turn_and_is_not_asked_again(hub: Hub) -> None:
    hub.layer.missing = {MINING}
    config = AgentConfig(recall_deadline=DEADLINE, skills_capture=True, recall_reprobe_after=50)
    with hub.agent(config) as agent:
        assert agent.capture(OPENAI_TURN) == 2
        assert agent.flush(60)
        later = [*OPENAI_TURN, {"role": "user", "content": "And the blog?"}, {"role": "assistant", "content": "Done."}]
        assert agent.capture(later) == 2
        assert agent.flush(60)
        stats = agent.stats
    assert len(hub.asked(MINING)) == 1  # the 404 was remembered
    assert stats["skills_capture"]["rejected"] == 1 and "404" in (stats["skills_capture"]["last_error"] or "")
    assert stats["capture"]["sent"] == 2 and stats["breaker"]["state"] == "closed"  # L0 unaffected


# ---------------------------------------------------------------------------- reading a framework's turn


def test_anthropic_and_responses_turns_read_as_mining_messages() -> None:
    polluted = "<relevant-memories>\nold\n</relevant-memories>\n\nFix CI"
    result = {"type": "tool_result", "tool_use_id": "tu_1", "content": [{"type": "text", "text": "1 failed"}]}
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": polluted}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": "tu_1", "name": "bash", "input": {"cmd": "pytest"}},
            ],
        },
        {"role": "user", "content": [result]},
    ]
    assert skill_messages(anthropic) == [
        {"role": "user", "content": "Fix CI"},
        {"role": "assistant", "content": "Running the tests."},
        {"role": "tool_call", "content": '{"cmd": "pytest"}', "tool_call_id": "tu_1", "tool_name": "bash"},
        {"role": "tool_result", "content": "1 failed", "tool_call_id": "tu_1"},
    ]
    responses = [
        {"type": "message", "role": "developer", "content": "rules"},
        {"type": "function_call", "call_id": "fc_1", "name": "grep", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "fc_1", "output": "3 hits"},
        SimpleNamespace(role="tool_call", content="{}", tool_call_id=None, tool_name=None),  # no id: one is made
    ]
    assert skill_messages(responses) == [
        {"role": "tool_call", "content": '{"q":"x"}', "tool_call_id": "fc_1", "tool_name": "grep"},
        {"role": "tool_result", "content": "3 hits", "tool_call_id": "fc_1"},
        {"role": "tool_call", "content": "{}", "tool_call_id": "call-3-0"},
    ]


def test_long_tool_output_keeps_head_and_tail_and_batches_fit_the_gateway() -> None:
    output = "h" * 5000 + "m" * 10_000 + "t" * 5000
    [message] = skill_messages([{"role": "tool", "tool_call_id": "c", "content": output}])
    assert message["content"].startswith("h" * 4000) and message["content"].endswith("t" * 4000)
    assert "…[12000 chars cut]…" in message["content"]
    many = [{"role": "user", "content": f"m{i}"} for i in range(250)]
    assert [len(b) for b in skill_batches(many)] == [100, 100, 50]
    big = [{"role": "user", "content": "x" * 30_000} for _ in range(40)]
    batches = skill_batches(big)
    assert len(batches) > 1 and all(len(json.dumps(b)) < 960 * 1024 for b in batches)
    assert [m for b in batches for m in b] == big


def test_the_turn_window() -> None:
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert turn_window(history, None) == history
    assert turn_window(history, 2) == history[2:]
    assert turn_window(history, 9) == history[2:]  # a trimmed history: from the last user text
