"""Capture: a finished turn reaches L0 (cleaned, with its tool calls readable) and the skills buffer exactly once,
survives a store that is briefly locked, and is flushed by close."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.model.skills import SessionKey
from memhub.proxy.capture import BackgroundCapture, CaptureConfig
from memhub.proxy.model import ProxyIdentity, ToolCall, TurnOutput, WireProtocol
from memhub.store.sqlite.store import DB_FILENAME
from tests.conftest import Gateway, build_gateway
from tests.proxy.session.conftest import Crew, make_crew

SESSION = "sess-cap"
WAIT = 600.0  # a bound for the busy CI machine, never a measure of speed
TYPED = "Please remember that our deploys go out on Tuesdays."
RAW_USER = (
    "<system-reminder>\nToday's date is 2026-05-01.\n</system-reminder>\n"
    "<tdai_profile_memory>\n<agent name='at'>persona text</agent>\n</tdai_profile_memory>\n"
    f"{TYPED}\n"
    "<knowledge_tools>\ncurl recipes\n</knowledge_tools>"
)
OUTPUT = TurnOutput(
    text="Noted: deploys on Tuesdays.\n```bash\nls\n```\n",
    tool_calls=[ToolCall("call_1", "Bash", '{"command": "cat deploy.md"}')],
    finish_reason="tool_calls",
    complete=True,
)


def identity(crew: Crew, **changes: Any) -> ProxyIdentity:
    fields: dict[str, Any] = {
        "service_id": crew.service,
        "user_id": crew.alice.user_id,
        "key_id": "uky-any",
        "session_id": SESSION,
        "team_id": crew.team_a,
        "agent_id": crew.at,
        **changes,
    }
    return ProxyIdentity(**fields)


def capture_of(crew: Crew, **kwargs: Any) -> BackgroundCapture:
    hub = crew.hub
    config = CaptureConfig(backoff_seconds=0.01, max_backoff_seconds=0.05)
    return BackgroundCapture(hub.memory.conversation, hub.skill_mining, hub.meta, config, **kwargs)


def l0(crew: Crew, session: str = SESSION) -> list[dict[str, Any]]:
    scope = {"team_id": crew.team_a, "agent_id": crew.at, "user_id": crew.alice.user_id, "session_id": session}
    return list(crew.org.ok(crew.alice, "/v3/conversation/query", {**scope, "limit": 100})["messages"])


def skills_buffer(crew: Crew) -> list[Any]:
    key = SessionKey(crew.service, crew.team_a, crew.at, crew.alice.user_id, SESSION)
    messages, _ = crew.hub.store.skills.buffer(key)
    return list(messages)


@pytest.fixture
def locked_gw(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway whose writers give up on a locked database after 50 ms (instead of 10 s)."""
    gateway = build_gateway(tmp_path / "locked", db_busy_timeout_ms=50)
    yield gateway
    gateway.close()


class WriteLock:
    """Another connection holding the database's write lock, as a second writer would."""

    def __init__(self, gw: Gateway) -> None:
        self.db = sqlite3.connect(gw.data_dir / DB_FILENAME, isolation_level=None, check_same_thread=False)
        self.db.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.db.execute("ROLLBACK")
        self.db.close()


def test_a_turn_lands_in_l0_cleaned_with_its_tool_calls_and_in_the_skills_buffer(crew: Crew) -> None:
    capture = capture_of(crew)
    capture.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
    assert capture.drain(WAIT)
    user, assistant = l0(crew)
    assert (user["role"], user["content"]) == ("user", TYPED)
    assert assistant["role"] == "assistant"
    # Code blocks leave the stored answer (as the original's capture does); tool calls are rendered into it.
    assert assistant["content"] == 'Noted: deploys on Tuesdays.\n[tool call] Bash {"command": "cat deploy.md"}'
    assert assistant["metadata"]["tool_calls"] == [
        {"id": "call_1", "name": "Bash", "arguments": '{"command": "cat deploy.md"}'}
    ]
    assert user["metadata"] == {"via": "memhub-proxy", "client": "claude-code", "protocol": "anthropic"}
    buffered = skills_buffer(crew)
    assert [(m["role"], m.get("tool_name")) for m in buffered] == [
        ("user", None),
        ("assistant", None),
        ("tool_call", "Bash"),
    ]
    assert buffered[1]["content"] == OUTPUT.text  # the skills buffer keeps the code
    assert capture.close(WAIT)


def test_a_turn_submitted_twice_lands_once(crew: Crew) -> None:
    capture = capture_of(crew)
    for _ in range(2):
        capture.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
    assert capture.drain(WAIT)
    assert capture.close(WAIT)
    # A new process (nothing remembered in memory) submitting the same turn again: the store's idempotency.
    again = capture_of(crew)
    again.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
    assert again.drain(WAIT)
    assert again.close(WAIT)
    assert [m["role"] for m in l0(crew)] == ["user", "assistant"]
    assert len(skills_buffer(crew)) == 3
    # A different turn of the same session is a new turn.
    next_turn = capture_of(crew)
    next_turn.submit(identity(crew), WireProtocol.ANTHROPIC, "And Fridays are frozen.", TurnOutput(text="Ok."))
    assert next_turn.close(WAIT)
    assert [m["content"] for m in l0(crew)][2:] == ["And Fridays are frozen.", "Ok."]


def test_a_locked_store_is_retried_until_the_turn_lands(locked_gw: Gateway) -> None:
    crew = make_crew(locked_gw)
    failed = threading.Event()
    errors: list[Exception] = []

    def on_retry(exc: Exception, attempt: int) -> None:
        errors.append(exc)
        failed.set()

    capture = capture_of(crew, on_retry=on_retry)
    lock = WriteLock(locked_gw)
    try:
        capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, TYPED, TurnOutput(text="Noted."))
        assert failed.wait(WAIT), "the first attempt never failed"
    finally:
        lock.release()
    assert capture.drain(WAIT)
    assert "Storage busy" in str(errors[0])
    assert [m["content"] for m in l0(crew)] == [TYPED, "Noted."]
    assert capture.close(WAIT)


def test_close_flushes_the_queued_turns(locked_gw: Gateway) -> None:
    crew = make_crew(locked_gw)
    failed = threading.Event()
    capture = capture_of(crew, on_retry=lambda exc, attempt: failed.set())
    lock = WriteLock(locked_gw)
    try:
        for n in range(3):
            capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, f"fact number {n}", TurnOutput(text=f"ok {n}"))
        assert failed.wait(WAIT)
    finally:
        lock.release()
    assert capture.close(WAIT)  # no drain first: close itself flushes, retries included
    expected = [text for n in range(3) for text in (f"fact number {n}", f"ok {n}")]
    assert [m["content"] for m in l0(crew)] == expected
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, "after close", TurnOutput(text="x"))
    assert len(l0(crew)) == 6


def test_what_the_user_did_not_say_is_not_captured(crew: Crew) -> None:
    capture = capture_of(crew)
    slash = "<command-name>/clear</command-name>\n<command-message>clear</command-message>"
    capture.submit(identity(crew), WireProtocol.ANTHROPIC, slash, TurnOutput(text="cleared"))
    capture.submit(identity(crew), WireProtocol.ANTHROPIC, "[SUGGESTION MODE: next prompt]", TurnOutput(text="x"))
    # No team and agent: nowhere to write.
    capture.submit(identity(crew, agent_id=None), WireProtocol.ANTHROPIC, TYPED, TurnOutput(text="y"))
    # A tool loop's continuation: no user words, the answer still counts.
    reminder = "<system-reminder>\nfiles changed\n</system-reminder>"
    capture.submit(identity(crew), WireProtocol.ANTHROPIC, reminder, TurnOutput(text="Done: it is Tuesday."))
    assert capture.close(WAIT)
    assert [(m["role"], m["content"]) for m in l0(crew)] == [("assistant", "Done: it is Tuesday.")]


def test_skills_switched_off_leave_the_skills_buffer_alone(crew: Crew) -> None:
    body = {"user_id": crew.alice.user_id, "module": "asset_type", "params": {"skill.enabled": "0"}}
    crew.org.ok(crew.alice, "/v3/meta/config/user/set", body)
    capture = capture_of(crew)
    capture.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
    assert capture.close(WAIT)
    assert len(l0(crew)) == 2 and skills_buffer(crew) == []


def test_the_same_words_said_again_later_are_a_new_turn(crew: Crew) -> None:
    capture = capture_of(crew)
    yes, ok = "yes", TurnOutput(text="Ok, done.", complete=True)
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, yes, ok, position=3)
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, yes, ok, position=3)  # the same request, resent
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, yes, ok, position=5)  # said again two messages later
    assert capture.close(WAIT)
    assert [m["content"] for m in l0(crew)] == ["yes", "Ok, done.", "yes", "Ok, done."]
