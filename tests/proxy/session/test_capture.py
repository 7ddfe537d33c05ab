"""Capture: a finished turn reaches L0 (cleaned, with its tool calls readable) and the skills buffer exactly once,
survives a store that is locked (briefly, or across a restart: the spool), and is flushed by close."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.errors import Conflict, FieldError, Forbidden, StorageBusy, TooManyRequests
from memhub.model.skills import SessionKey
from memhub.proxy.capture import BackgroundCapture, CaptureConfig, is_permanent, turn_key
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


# -- the spool: what a restart, a kill or a refusal leaves --------------------------------------------------------


def spooled(spool: Path) -> list[Path]:
    """The turn files waiting in the spool, in every run's directory."""
    return sorted(spool.glob("run-*/*.json"))


def rejected(spool: Path) -> list[Path]:
    return sorted((spool / "rejected").glob("*.json"))


def skills_enabled(crew: Crew, on: bool) -> None:
    body = {"user_id": crew.alice.user_id, "module": "asset_type", "params": {"skill.enabled": "1" if on else "0"}}
    crew.org.ok(crew.alice, "/v3/meta/config/user/set", body)


SUBMITTED_MS = 1_767_225_600_000


def spool_file(crew: Crew, spool: Path, *, l0_done: bool, skills_done: bool = False) -> Path:
    """A turn file as a run that ended (its directory's lock free) left it: the file format, written by hand."""
    who = identity(crew)
    key = turn_key(who, RAW_USER, OUTPUT, 4)
    record = {
        "version": 1,
        "key": key,
        "identity": {
            "service_id": who.service_id,
            "user_id": who.user_id,
            "key_id": who.key_id,
            "session_id": who.session_id,
            "agent_source": who.agent_source,
            "team_id": who.team_id,
            "agent_id": who.agent_id,
            "task_id": None,
            "user_type": "normal",
        },
        "protocol": "anthropic",
        "user_text": RAW_USER,
        "output": {
            "text": OUTPUT.text,
            "tool_calls": [{"id": "call_1", "name": "Bash", "arguments": '{"command": "cat deploy.md"}'}],
            "usage": {"input_tokens": 12, "output_tokens": 7},
            "finish_reason": "tool_calls",
            "complete": True,
        },
        "position": 4,
        "submitted_ms": SUBMITTED_MS,
        "l0_done": l0_done,
        "skills_done": skills_done,
    }
    run = spool / "run-4242-0badc0de"
    run.mkdir(parents=True, exist_ok=True)
    (run / ".lock").touch()
    path = run / f"{SUBMITTED_MS:015d}-{key}.json"
    path.write_text(json.dumps(record))
    return path


def replay(crew: Crew, spool: Path, **kwargs: Any) -> BackgroundCapture:
    """A capture starting over `spool` (as the runtime's does at start), once it replayed what it found."""
    capture = capture_of(crew, spool_dir=spool, **kwargs)
    capture.resume()
    assert capture.drain(WAIT)
    return capture


def test_a_turn_spooled_while_the_store_is_locked_is_written_once_by_the_next_start(
    locked_gw: Gateway, tmp_path: Path
) -> None:
    crew = make_crew(locked_gw)
    spool = tmp_path / "spool"
    failed = threading.Event()
    first = capture_of(crew, spool_dir=spool, on_retry=lambda exc, attempt: failed.set())
    lock = WriteLock(locked_gw)
    try:
        first.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
        assert failed.wait(WAIT), "the first attempt never failed"
        [waiting] = spooled(spool)  # on disk before the first attempt at the store
        assert waiting.stat().st_mode & 0o777 == 0o600  # what the user said, readable by the owner only
        # Gives up at once: the writer stops after the store call in progress, the turn stays in the spool.
        assert not first.close(0)
        assert spooled(spool) == [waiting]
    finally:
        lock.release()
    assert l0(crew) == []
    second = replay(crew, spool)
    user, assistant = l0(crew)
    assert (user["content"], assistant["role"]) == (TYPED, "assistant")
    assert len(skills_buffer(crew)) == 3
    assert spooled(spool) == []
    assert second.close(WAIT)
    # Replaying again finds nothing: written once, and once only.
    assert replay(crew, spool).close(WAIT)
    assert len(l0(crew)) == 2 and len(skills_buffer(crew)) == 3
    assert [p.name for p in spool.iterdir()] == []  # every run's directory removed with its last turn


def test_a_close_within_a_stop_budget_leaves_a_busy_writer_and_its_spool_to_the_process_exit(
    locked_gw: Gateway, tmp_path: Path
) -> None:
    crew = make_crew(locked_gw)
    spool = tmp_path / "spool"
    failed, resume = threading.Event(), threading.Event()

    def hold(exc: Exception, attempt: int) -> None:  # the writer, between a failed attempt and its retry
        failed.set()
        resume.wait(WAIT)

    first = capture_of(crew, spool_dir=spool, on_retry=hold)
    lock = WriteLock(locked_gw)
    try:
        first.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
        assert failed.wait(WAIT), "the first attempt never failed"
        [waiting] = spooled(spool)
        # The budget is spent and the writer is busy: close returns without waiting for it, keeping the turn
        # spooled and the run's directory held (another start leaves it alone, as a live run's).
        assert not first.close(0, 0.0)
        assert spooled(spool) == [waiting]
        other = replay(crew, spool)
        assert spooled(spool) == [waiting]
        assert other.close(WAIT)
        resume.set()
        assert first.drain(WAIT)  # the writer gave up on the turn: nothing written
    finally:
        resume.set()
        lock.release()
    assert l0(crew) == [] and spooled(spool) == [waiting]
    assert first.spool is not None
    first.spool.release()  # what the process's exit does to its lock
    second = replay(crew, spool)  # the next start writes the turn, once
    assert len(l0(crew)) == 2 and len(skills_buffer(crew)) == 3
    assert spooled(spool) == []
    assert second.close(WAIT)


def test_a_second_process_over_the_same_spool_leaves_a_live_run_s_turns_alone(
    locked_gw: Gateway, tmp_path: Path
) -> None:
    crew = make_crew(locked_gw)
    spool = tmp_path / "spool"
    failed = threading.Event()
    serving = capture_of(crew, spool_dir=spool, on_retry=lambda exc, attempt: failed.set())
    lock = WriteLock(locked_gw)
    try:
        serving.submit(identity(crew), WireProtocol.ANTHROPIC, RAW_USER, OUTPUT)
        assert failed.wait(WAIT)
        [waiting] = spooled(spool)
        # `memhub proxy` starting over the same data dir while `memhub serve` runs: nothing to adopt.
        other = replay(crew, spool)
        assert spooled(spool) == [waiting]
        assert other.close(WAIT)
    finally:
        lock.release()
    assert serving.close(WAIT)  # the live run writes its own turn
    assert len(l0(crew)) == 2 and len(skills_buffer(crew)) == 3
    assert spooled(spool) == []


def test_a_store_outage_longer_than_any_retry_count_loses_nothing(locked_gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(locked_gw)
    attempts = threading.Semaphore(0)
    capture = capture_of(crew, spool_dir=tmp_path / "spool", on_retry=lambda exc, attempt: attempts.release())
    lock = WriteLock(locked_gw)
    try:
        capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, TYPED, TurnOutput(text="Noted."))
        for _ in range(20):  # more failed attempts than the capture ever allowed before it dropped a turn
            assert attempts.acquire(timeout=WAIT)
    finally:
        lock.release()
    assert capture.drain(WAIT)
    assert [m["content"] for m in l0(crew)] == [TYPED, "Noted."]
    assert capture.close(WAIT)


def test_a_replay_after_the_l0_write_was_recorded_makes_only_the_skills_write(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    # The earlier run's L0 write, made as it made it (skills off, so that run's skills write never happens).
    skills_enabled(crew, False)
    spool_file(crew, tmp_path / "before", l0_done=False)
    assert replay(crew, tmp_path / "before").close(WAIT)
    assert len(l0(crew)) == 2 and skills_buffer(crew) == []
    skills_enabled(crew, True)
    # Killed between the two writes: the file says L0 is done.
    spool = tmp_path / "spool"
    spool_file(crew, spool, l0_done=True)
    capture = replay(crew, spool)
    assert [m["role"] for m in l0(crew)] == ["user", "assistant"]
    assert [m["role"] for m in skills_buffer(crew)] == ["user", "assistant", "tool_call"]
    assert spooled(spool) == []
    assert capture.close(WAIT)


def test_a_file_that_says_l0_is_done_is_not_written_to_l0_again(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    spool = tmp_path / "spool"
    # L0 done, as recorded; whatever L0 holds (here: nothing, e.g. a session deleted since) is not written again.
    spool_file(crew, spool, l0_done=True)
    assert replay(crew, spool).close(WAIT)
    assert l0(crew) == []
    assert len(skills_buffer(crew)) == 3


def test_a_replay_after_an_unrecorded_l0_write_still_makes_the_skills_write_once(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    skills_enabled(crew, False)
    spool_file(crew, tmp_path / "before", l0_done=False)
    assert replay(crew, tmp_path / "before").close(WAIT)
    skills_enabled(crew, True)
    # Killed after the L0 write landed and before the file said so: the store answers with a replay.
    spool = tmp_path / "spool"
    spool_file(crew, spool, l0_done=False)
    assert replay(crew, spool).close(WAIT)
    assert len(l0(crew)) == 2
    assert len(skills_buffer(crew)) == 3


def test_a_replay_after_both_writes_landed_buffers_the_turn_once(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    spool_file(crew, tmp_path / "before", l0_done=False)
    assert replay(crew, tmp_path / "before").close(WAIT)
    assert len(l0(crew)) == 2 and len(skills_buffer(crew)) == 3
    # Killed after the skills-buffer write and before the file was removed: the file says only L0 is done.
    spool = tmp_path / "spool"
    spool_file(crew, spool, l0_done=True)
    assert replay(crew, spool).close(WAIT)
    assert len(l0(crew)) == 2
    assert [m["role"] for m in skills_buffer(crew)] == ["user", "assistant", "tool_call"]  # buffered once
    assert spooled(spool) == []


def test_a_turn_that_cannot_be_read_back_is_kept_in_rejected_and_not_retried(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    spool = tmp_path / "spool"
    bad = spool_file(crew, spool, l0_done=False)
    unreadable = {**json.loads(bad.read_text()), "version": 99}  # a format this code does not know
    bad.write_text(json.dumps(unreadable))
    retries: list[Exception] = []
    capture = replay(crew, spool, on_retry=lambda exc, attempt: retries.append(exc))
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, TYPED, TurnOutput(text="Noted."))
    assert capture.drain(WAIT)
    [kept] = rejected(spool)
    assert kept.name == bad.name
    refused = json.loads(kept.read_text())
    assert refused["rejected"]["reason"] == "ValueError: spool record version 99 is not 1"
    assert {k: v for k, v in refused.items() if k != "rejected"} == unreadable  # kept as it was, with the reason
    assert retries == []
    assert [m["content"] for m in l0(crew)] == [TYPED, "Noted."]  # the turns behind it are not held up
    assert capture.close(WAIT)
    # The next start does not try it again.
    assert replay(crew, spool).close(WAIT)
    assert rejected(spool) == [kept] and spooled(spool) == []
    assert len(l0(crew)) == 2


def test_a_turn_with_nowhere_to_go_is_kept_in_rejected_with_the_reason(gw: Gateway, tmp_path: Path) -> None:
    crew = make_crew(gw)
    spool = tmp_path / "spool"
    path = spool_file(crew, spool, l0_done=False)
    record = json.loads(path.read_text())
    record["identity"]["agent_id"] = None  # no agent: no memory scope to write the turn to
    path.write_text(json.dumps(record))
    retries: list[Exception] = []
    assert replay(crew, spool, on_retry=lambda exc, attempt: retries.append(exc)).close(WAIT)
    [kept] = rejected(spool)
    refused = json.loads(kept.read_text())
    assert refused["rejected"]["reason"] == "ValueError: identity: a captured turn needs a team_id and an agent_id"
    assert {k: v for k, v in refused.items() if k != "rejected"} == record
    assert retries == [] and l0(crew) == [] and spooled(spool) == []


@pytest.mark.parametrize(
    ("exc", "permanent"),
    [
        (FieldError("session_id", "must not be empty"), True),
        (Forbidden("no access"), True),
        (Conflict("taken"), True),
        (StorageBusy(), False),
        (TooManyRequests(), False),
        (sqlite3.OperationalError("disk I/O error"), False),
        (OSError("no space left on device"), False),
        (KeyError("identity"), True),
    ],
)
def test_only_a_refusal_or_a_fault_of_the_turn_itself_stops_the_retries(exc: Exception, permanent: bool) -> None:
    assert is_permanent(exc) is permanent


def test_a_written_turn_leaves_nothing_in_the_spool(crew: Crew, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    capture = capture_of(crew, spool_dir=spool)
    capture.submit(identity(crew), WireProtocol.OPENAI_CHAT, TYPED, TurnOutput(text="Noted."))
    assert capture.close(WAIT)
    assert [m["content"] for m in l0(crew)] == [TYPED, "Noted."]
    assert not spool.exists() or [p.name for p in spool.iterdir()] == []
