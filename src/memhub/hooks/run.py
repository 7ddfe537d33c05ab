"""`memhub hooks run <event>`: one Claude Code hook event, its JSON on stdin, what the agent should see on stdout.

| event | Claude Code event | what it does | stdout |
|---|---|---|---|
| `session-start` | SessionStart | persona + scene index | `hookSpecificOutput.additionalContext` |
| `user-prompt-submit` | UserPromptSubmit | `/v3/recall` for the prompt (≤ 8k chars) | the same |
| `stop` | Stop, SessionEnd | capture the transcript past the cursor into L0 | nothing |
| `pre-compact` | PreCompact | the same capture, before the context is compacted | nothing |

The agent is never blocked: whatever goes wrong (gateway down or refusing, bad input, a full disk), the hook exits
0 with nothing on stdout and writes one line to the log in the state dir (memhub.hooks.state). Each event has a
deadline after which it gives up the same way: no call to the gateway waits past it (memhub.hooks.wire).

A new process runs each event, so this module imports only what the events use: the gateway is reached with the
standard library (memhub.hooks.wire), not the SDK's httpx clients, and nothing here imports asyncio.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from memhub.hooks import transcript, wire
from memhub.hooks.state import Cursor, CursorStore, IdentityCache, hook_logger, state_dir
from memhub.hooks.wire import Deadline, DeadlineExceeded, MemoryWire
from memhub.sdk._errors import TDAMError
from memhub.sdk.agent.prompt import format_memories, format_system, scene_paths, split_navigation
from memhub.sdk.agent.turns import fit_to_server_limits, iso_utc, parse_timestamp, select_turn
from memhub.sdk.connection import Connection

# Seconds each event may take before it gives up (Claude Code's own hook timeout, written by `install`, is longer).
DEADLINES = {"session-start": 5.0, "user-prompt-submit": 4.0, "stop": 20.0, "pre-compact": 20.0}
EVENTS = tuple(DEADLINES)
HOOK_EVENT_NAMES = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}

# Claude Code passes ~10k injected characters through whole and truncates far larger ones to a preview.
MAX_CONTEXT_CHARS = 8000
WINDOW_MESSAGE_CHARS = 4000  # of each recent turn sent with a prompt's recall
MAX_MEMORY_CHARS = 500
MAX_MEMORIES = 20
MAX_PERSONA_CHARS = 4000
MAX_SCENES = 40
# A prompt this short ("ok", "yes", "go on") carries nothing to recall by.
MIN_PROMPT_CHARS = 8
_SLASH_COMMAND = re.compile(r"^/[\w:.-]+(\s|$)")

Handler = Callable[[Mapping[str, Any], Connection, Deadline, Path, logging.Logger], str]


def run(
    event: str,
    stdin: str,
    connection: Connection,
    *,
    deadline: float | None = None,
    directory: Path | None = None,
) -> str:
    """What to print for this event ("" for nothing). Never raises: a failure is logged and prints nothing."""
    directory = directory or state_dir()
    log = hook_logger(directory)
    try:
        handler = _HANDLERS[event]
        payload = json.loads(stdin) if stdin.strip() else {}
        if not isinstance(payload, Mapping):
            raise ValueError("the hook input is not a JSON object")
        limit = Deadline(DEADLINES[event] if deadline is None else deadline)
        return handler(payload, connection, limit, directory, log)
    except DeadlineExceeded:
        log.warning("%s: gave up after the %.1f s deadline", event, deadline or DEADLINES.get(event, 0))
    except Exception as exc:  # the agent must never be blocked by a memory hook
        log.warning("%s: %s", event, _describe(exc))
    return ""


def run_stdio(event: str, connection: Connection | None = None, *, deadline: float | None = None) -> None:
    """Run one event as Claude Code starts it: its JSON on stdin, the connection from the environment unless given,
    what the agent should see on stdout."""
    try:
        stdin = sys.stdin.read() if sys.stdin is not None else ""
    except (OSError, ValueError):
        stdin = ""
    out = run(event, stdin, connection or Connection.from_env(), deadline=deadline)
    if out:
        sys.stdout.write(out + "\n")


def exit_now() -> NoReturn:
    """End a hook's process once `run_stdio` is done, with exit status 0, skipping the interpreter's teardown.

    Tearing down (freeing every module and object) is a tenth of a hook's wall time and does nothing a hook
    needs: the log is flushed and closed here, and so are stdout and stderr. A reader that went away (Claude Code
    gave up on the hook) is ignored rather than turned into an error status.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, TDAMError) else f"{type(exc).__name__}: {exc}"


def _client(connection: Connection, deadline: Deadline, directory: Path) -> MemoryWire:
    """The calls for the connection, the ids a user key implies read from the gateway at most every few minutes."""
    cache = IdentityCache(directory)
    given = connection
    connection = cache.fill(connection)
    if connection.missing():
        connection = wire.resolve(connection, deadline)
        if connection != given and not connection.missing():
            cache.remember(connection)
    return wire.memory(connection, deadline)


def _context(event: str, text: str) -> str:
    if not text:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": HOOK_EVENT_NAMES[event], "additionalContext": text}}
    return json.dumps(output, ensure_ascii=False)


def session_start(
    payload: Mapping[str, Any], connection: Connection, deadline: Deadline, directory: Path, log: logging.Logger
) -> str:
    """The persona and the scene index, as context for the whole session."""
    client = _client(connection, deadline, directory)
    core = _answer_or_error(client.read_core)
    listing = _answer_or_error(client.list_scenarios)
    persona: str | None = None
    scenes: list[str] = []
    if isinstance(core, TDAMError):
        log.warning("session-start: persona unavailable: %s", _describe(core))
    elif isinstance(core.get("content"), str):
        persona, listed = split_navigation(core["content"])
        scenes = listed[:MAX_SCENES]
    if isinstance(listing, TDAMError):
        log.warning("session-start: scene index unavailable: %s", _describe(listing))
    else:
        scenes = scene_paths(listing.get("entries") or [], MAX_SCENES) or scenes
    if isinstance(core, TDAMError) and isinstance(listing, TDAMError):
        return ""
    if not (persona and persona.strip()) and not scenes:
        return ""
    body = format_system(persona, scenes, language="en", max_persona_chars=MAX_PERSONA_CHARS, tools=False)
    return _context("session-start", "What memhub remembers about this user and their work:\n\n" + body)


def _answer_or_error(call: Callable[[], dict[str, Any]]) -> dict[str, Any] | TDAMError:
    """The call's answer, or the TDAMError it failed with (the deadline passing is not caught: the event ends)."""
    try:
        return call()
    except TDAMError as exc:
        return exc


def trivial(prompt: str) -> bool:
    """A prompt too short to recall by, or a slash command (Claude Code's own, not a question)."""
    text = prompt.strip()
    return len(text) < MIN_PROMPT_CHARS or bool(_SLASH_COMMAND.match(text))


def user_prompt_submit(
    payload: Mapping[str, Any], connection: Connection, deadline: Deadline, directory: Path, log: logging.Logger
) -> str:
    """The memories and earlier turns relevant to this prompt (`/v3/recall`), within MAX_CONTEXT_CHARS."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or trivial(prompt):
        return ""
    client = _client(connection, deadline, directory)
    # Persona and scenes came with SessionStart: this turn gets only what its prompt calls up.
    answer = client.recall(
        prompt,
        messages=_window(payload),
        max_chars=MAX_CONTEXT_CHARS,
        include_persona=False,
        include_scenes=False,
    )
    memories = answer.get("memories") or []
    block = format_memories(
        memories, max_items=MAX_MEMORIES, max_item_chars=MAX_MEMORY_CHARS, max_chars=MAX_CONTEXT_CHARS
    )
    return _context("user-prompt-submit", block)


def _window(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The session's last turns from its transcript (recall reads a follow-up prompt with them); none when the
    transcript cannot be read."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        return []
    try:
        found = transcript.recent_messages(Path(path))
    except OSError:
        return []
    return [{"role": m.role, "content": m.content[:WINDOW_MESSAGE_CHARS]} for m in found]


def capture(
    payload: Mapping[str, Any], connection: Connection, deadline: Deadline, directory: Path, log: logging.Logger
) -> str:
    """Send the transcript's conversation past the session's cursor to L0, exactly once (see memhub.hooks.state)."""
    session_id = payload.get("session_id")
    path = payload.get("transcript_path")
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError("session_id: missing from the hook input")
    if not isinstance(path, str) or not path:
        raise ValueError("transcript_path: missing from the hook input")
    transcript_file = Path(path)
    store = CursorStore(directory)
    client: MemoryWire | None = None
    with store.locked(session_id):
        cursor = store.load(session_id)
        # A pending range first (a run that stopped after sending it, maybe), then whatever was appended since.
        for _ in range(2):
            span = _next_span(cursor, transcript_file, log)
            if span is None:
                break
            start, end = span
            if cursor.pending_start is None:
                cursor.pending_start, cursor.pending_end, cursor.transcript = start, end, str(transcript_file)
                cursor.pending_now = iso_utc(datetime.now(UTC))
                store.save(session_id, cursor)
            client = client or _client(connection, deadline, directory)
            sent = _send(client, session_id, transcript_file, cursor, log)
            cursor.offset, cursor.pending_start, cursor.pending_end, cursor.pending_now = end, None, None, None
            store.save(session_id, cursor)
            if sent:
                log.info("captured %d messages of session %s (bytes %d-%d)", sent, session_id, start, end)
    return ""


def _next_span(cursor: Cursor, path: Path, log: logging.Logger) -> tuple[int, int] | None:
    """The range to send next: the pending one, else the whole lines past the offset; None when there are none."""
    if cursor.pending_start is not None and cursor.pending_end is not None:
        return cursor.pending_start, cursor.pending_end
    if cursor.transcript and cursor.transcript != str(path):
        # The same session in another file (Claude Code moved it): positions in the old one mean nothing here.
        log.info("transcript of a known session is now %s; reading it from the start", path)
        cursor.offset = 0
    length = transcript.size(path)
    if length < cursor.offset:
        # Never seen from Claude Code, which only appends; restarting at 0 would store the whole session twice.
        log.warning("transcript %s is shorter than its cursor; capturing from its current end", path)
        cursor.offset = length
    end = transcript.complete_end(path, cursor.offset)
    return None if end <= cursor.offset else (cursor.offset, end)


def _send(client: MemoryWire, session_id: str, path: Path, cursor: Cursor, log: logging.Logger) -> int:
    """Send the pending range in batches, each with a key naming the range and the batch; the messages sent."""
    assert cursor.pending_start is not None and cursor.pending_end is not None
    part = transcript.read_slice(path, cursor.pending_start, cursor.pending_end)
    # Messages without a timestamp get the moment the range was first taken, so a resend is the same request.
    now = parse_timestamp(cursor.pending_now) or datetime.now(UTC)
    turn = select_turn(
        [m.wire() for m in part.messages], since_index=0, after_timestamp=None, original_user_text=None, now=now
    )
    sent = 0
    for index, batch in enumerate(fit_to_server_limits(turn.messages)):
        key = _range_key(session_id, part.start, part.end, index)
        try:
            client.add_conversation(batch, session_id=session_id, idempotency_key=key)
        except TDAMError as exc:
            if exc.code != 409:
                raise
            # The key was used for a request that differs from this one: this range was stored before.
            log.info("range %d-%d of session %s was already captured", part.start, part.end, session_id)
        sent += len(batch)
    return sent


def _range_key(session_id: str, start: int, end: int, batch: int) -> str:
    digest = hashlib.sha256(f"{session_id}\n{start}\n{end}\n{batch}".encode()).hexdigest()[:40]
    return f"cc-{digest}"


_HANDLERS: dict[str, Handler] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "stop": capture,
    "pre-compact": capture,
}
