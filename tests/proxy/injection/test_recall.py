"""Per-turn recall (memhub.proxy.injection.recall) over a real gateway: `/v3/recall`'s ranking of the user's own
memories and turns as one `<relevant-memories>` block, what the window holds skipped, another user's memory never
shown; and with stand-in readers, a failure and a deadline that end the wait without failing the turn.

The data is written through the real HTTP app as the users themselves; the recaller reads it in process, as the
proxy does. One world per module: each test reads it, and what a test changes is its own user's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError

from memhub.memory.recall import RecalledItem
from memhub.proxy.injection import RECALL_TAG, RecallConfig, Recaller, build_recaller
from memhub.proxy.injection.recall import WORKERS, recent_context
from memhub.proxy.model import ChatTurn, ProxyIdentity, RecallOutcome
from memhub.settings import Settings
from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org

DEPLOY_TURN = "Bob: we deploy the billing service every Friday afternoon"
DEPLOY_FACT = "Bob's team deploys the billing service on Fridays."
QUESTION = "when do we deploy the billing service?"


@dataclass
class World:
    gw: Gateway
    org: Org
    bob: Member
    carol: Member
    dave: Member
    team: str
    agent: str

    @property
    def hub(self):  # type: ignore[no-untyped-def]
        return self.gw.client.app.state.hub  # type: ignore[attr-defined]

    def identity(self, who: Member, session: str = "proxy-s") -> ProxyIdentity:
        return ProxyIdentity(self.org.service, who.user_id, None, session, team_id=self.team, agent_id=self.agent)

    def write(self, who: Member, path: str, body: dict[str, object]) -> None:
        self.org.ok(who, path, {"team_id": self.team, "agent_id": self.agent, "user_id": who.user_id, **body})


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    gw = build_gateway(tmp_path_factory.mktemp("recall") / "data", pipeline_enabled=False)
    org = Org(gw)
    bob, carol, dave = org.users("bob", "carol", "dave")
    team = org.staffed_team(bob, "team", (carol, "member"), (dave, "member"))
    world = World(gw, org, bob, carol, dave, team, org.agent(bob, team, "coder"))
    earlier = [
        {"role": "user", "content": DEPLOY_TURN, "timestamp": "2023-05-08T13:56:00Z"},
        {"role": "assistant", "content": "Noted, Fridays it is.", "timestamp": "2023-05-08T13:57:00Z"},
        {"role": "user", "content": "Bob: the cat is called Miso", "timestamp": "2023-05-09T09:00:00Z"},
    ]
    for who in (bob, dave):
        world.write(who, "/v3/conversation/add", {"session_id": "earlier", "messages": earlier})
        world.write(who, "/v3/atomic/add", {"content": DEPLOY_FACT, "type": "episodic"})
    world.write(carol, "/v3/atomic/add", {"content": "Carol keeps her notes in Obsidian.", "type": "persona"})
    yield world
    gw.close()


def recall(recaller: Recaller, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn] = ()) -> RecallOutcome:
    return asyncio.run(recaller.recall(identity, query, recent))


def test_the_users_memories_and_turns_come_ranked_together_in_one_block(w: World) -> None:
    outcome = recall(build_recaller(w.hub, RecallConfig()), w.identity(w.bob), QUESTION)
    lines = outcome.text.splitlines()
    assert lines[0] == f"<{RECALL_TAG}>" and lines[-1] == f"</{RECALL_TAG}>"
    items = [line for line in lines if line.startswith("- [")]
    assert f"- [memory, episodic] {DEPLOY_FACT}" in items
    assert f"- [conversation 2023-05-08, user] {DEPLOY_TURN}" in items
    assert outcome.status == str(len(items))


def test_what_the_window_already_holds_is_not_recalled_again(w: World) -> None:
    window = [ChatTurn("user", f"<system-reminder>today</system-reminder>{DEPLOY_TURN}"), ChatTurn("user", QUESTION)]
    outcome = recall(build_recaller(w.hub, RecallConfig()), w.identity(w.bob), QUESTION, window)
    assert DEPLOY_FACT in outcome.text
    assert DEPLOY_TURN not in outcome.text  # read as capture reads it, the window's turn is the stored turn


def test_the_budget_is_recalls_own(w: World) -> None:
    roomy = recall(build_recaller(w.hub, RecallConfig()), w.identity(w.bob), QUESTION)
    tight = recall(build_recaller(w.hub, RecallConfig(max_tokens=50)), w.identity(w.bob), QUESTION)
    assert 0 < int(tight.status) < int(roomy.status)


def test_another_users_memory_never_comes_back_and_nothing_found_says_none(w: World) -> None:
    recaller = build_recaller(w.hub, RecallConfig())
    carols = recall(recaller, w.identity(w.carol), QUESTION + " notes")
    assert "Obsidian" in carols.text and "billing" not in carols.text and "Friday" not in carols.text
    assert recall(recaller, w.identity(w.carol), "quantum chromodynamics") == RecallOutcome("", "none")


def test_a_user_with_chat_memory_switched_off_gets_no_recall(w: World) -> None:
    params = {"chat_memory.enabled": "0"}
    w.org.ok(w.dave, "/v3/meta/config/user/set", {"user_id": w.dave.user_id, "module": "asset_type", "params": params})
    assert recall(build_recaller(w.hub, RecallConfig()), w.identity(w.dave), QUESTION) == RecallOutcome("", "off")


def test_the_recent_context_is_read_as_capture_reads_it() -> None:
    echoed = f"<{RECALL_TAG}>\n- [memory] old\n</{RECALL_TAG}>\n\nwhat next?"
    messages = [
        ChatTurn("user", "<system-reminder>x</system-reminder>"),  # nothing typed: dropped
        ChatTurn("assistant", "Sure."),
        ChatTurn("user", echoed),
        ChatTurn("user", "<command-name>/clear</command-name>"),  # a slash command: not something said
    ]
    assert recent_context(messages) == [ChatTurn("assistant", "Sure."), ChatTurn("user", "what next?")]
    assert recent_context([ChatTurn("assistant", "y" * 10_000)])[0].text == "y" * 4000


IDENTITY = ProxyIdentity("svc", "usr-1", None, "s", team_id="t", agent_id="a")


class Blocked:
    """A recall stand-in that waits for `release` (which the test sets only once it is done) and counts calls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def __call__(
        self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int
    ) -> list[RecalledItem]:
        self.calls.append(query)
        self.release.wait()
        return []


def test_a_failing_recall_is_an_error_and_a_slow_one_a_timeout() -> None:
    def broken(identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int) -> None:
        raise RuntimeError("the embedder fell over")

    assert recall(Recaller(broken, RecallConfig()), IDENTITY, "q") == RecallOutcome("", "error")
    stalled = Blocked()
    try:
        assert recall(Recaller(stalled, RecallConfig(timeout_seconds=0.05)), IDENTITY, "q") == RecallOutcome(
            "", "timeout"
        )
    finally:
        stalled.release.set()


def test_a_recall_that_waited_past_its_deadline_in_the_queue_is_never_run() -> None:
    stalled = Blocked()
    recaller = Recaller(stalled, RecallConfig(timeout_seconds=0.05))

    async def more_than_the_threads_take() -> list[RecallOutcome]:
        return await asyncio.gather(*(recaller.recall(IDENTITY, "q", ()) for _ in range(WORKERS + 2)))

    try:
        outcomes = asyncio.run(more_than_the_threads_take())
    finally:
        stalled.release.set()
    recaller._threads.shutdown(wait=True)  # every queued call has been taken and dropped, or run
    assert {o.status for o in outcomes} == {"timeout"}
    assert len(stalled.calls) == WORKERS


def test_recall_settings_and_their_bounds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    defaults = Settings(data_dir=tmp_path)
    assert (defaults.proxy_turn_recall, defaults.proxy_turn_recall_max_tokens) == (True, 1000)
    assert defaults.proxy_turn_recall_timeout_ms == 1500
    assert (defaults.proxy_max_response_bytes, defaults.proxy_max_response_seconds) == (64 * 1024 * 1024, 900)
    monkeypatch.setenv("MEMHUB_PROXY_TURN_RECALL", "off")
    monkeypatch.setenv("MEMHUB_PROXY_TURN_RECALL_MAX_TOKENS", "400")
    configured = Settings(data_dir=tmp_path)
    assert (configured.proxy_turn_recall, configured.proxy_turn_recall_max_tokens) == (False, 400)
    for name, value in (
        ("proxy_turn_recall_max_tokens", 32_001),
        ("proxy_turn_recall_timeout_ms", 9),
        ("proxy_max_response_bytes", 1023),
        ("proxy_max_response_seconds", 0),
    ):
        with pytest.raises(ValidationError, match=name):
            Settings(data_dir=tmp_path, **{name: value})
