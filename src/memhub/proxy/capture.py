"""Capture: a finished main turn goes to L0 and to the skills conversation buffer, off the response path.

`submit` only queues the turn; one worker thread writes it. A write that fails for a reason that may pass (the
database locked by another writer, an I/O error) is retried with exponential backoff; a refusal (a 4xx domain
error) is not. `close` stops taking turns and flushes what is queued before the process exits.

A turn is written at most once: its L0 messages carry an idempotency key derived from the scope, the session, the
turn's place in the conversation (how many messages the request carried) and a hash of its content, so a retry
after a write that did land, or the same request submitted twice, adds nothing — while a later turn that happens to
say the same words ("yes", "ok") is a new turn and is kept. The queue lives in memory: turns still queued when
the process is killed (not stopped) are lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from queue import Full, Queue
from typing import Any

from memhub.errors import Conflict, MemhubError
from memhub.formats.sanitize import strip_code_blocks
from memhub.knowledge.skill.mining.service import MiningService
from memhub.memory.conversation import ConversationService, MessageInput
from memhub.meta.services import MetaServices
from memhub.model.skills import SessionKey
from memhub.proxy.model import ProxyIdentity, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.user_text import clean_user_text
from memhub.scope import Isolation

log = logging.getLogger("memhub.proxy.capture")

VIA = "memhub-proxy"  # the `via` of captured messages' metadata: where a message came from
TOOL_ARGUMENTS_SHOWN = 2000  # characters of a tool call's arguments in the message text (metadata keeps them all)
RECENT_TURNS = 4096  # turns remembered in process to drop a second submission before it reaches the store
SKILL = "skill"  # the capability flag that switches skill mining on or off for a user


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """How hard the worker tries: `max_attempts` per turn, waiting `backoff_seconds` × 2ⁿ (at most
    `max_backoff_seconds`) between them; at most `max_queued` turns wait (more are refused and logged)."""

    max_attempts: int = 8
    backoff_seconds: float = 0.25
    max_backoff_seconds: float = 8.0
    max_queued: int = 10_000


@dataclass(slots=True)
class _Turn:
    """A queued turn and how far its writes got."""

    key: str
    identity: ProxyIdentity
    protocol: WireProtocol
    user_text: str
    output: TurnOutput
    submitted_ms: int
    l0_done: bool = False
    skills_done: bool = False
    attempts: int = 0
    duplicate: bool = False
    messages: list[MessageInput] = field(default_factory=list)
    skill_messages: list[dict[str, Any]] = field(default_factory=list)


def turn_key(identity: ProxyIdentity, user_text: str, output: TurnOutput, position: int | None = None) -> str:
    """The turn's idempotency key: its scope, session, place in the conversation and content (the same turn always
    gets the same key)."""
    content = [
        position,
        identity.service_id,
        identity.team_id,
        identity.user_id,
        identity.agent_id,
        identity.task_id,
        identity.session_id,
        user_text,
        output.text,
        [[c.id, c.name, c.arguments] for c in output.tool_calls],
    ]
    digest = hashlib.sha256(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
    return f"proxy-turn-{digest[:48]}"


def render_tool_call(call: ToolCall) -> str:
    """A tool call as a line of the assistant message's text."""
    arguments = call.arguments
    if len(arguments) > TOOL_ARGUMENTS_SHOWN:
        arguments = arguments[:TOOL_ARGUMENTS_SHOWN] + "…"
    return f"[tool call] {call.name} {arguments}".rstrip()


def _isolation(identity: ProxyIdentity) -> Isolation:
    assert identity.team_id is not None and identity.agent_id is not None
    return Isolation(
        service_id=identity.service_id,
        team_id=identity.team_id,
        user_id=identity.user_id,
        agent_id=identity.agent_id,
        task_id=identity.task_id or "",
        session_id=identity.session_id,
        profile_team_id=identity.team_id,
    )


def skill_session_key(identity: ProxyIdentity) -> SessionKey:
    """The skills conversation buffer of the turn's session (the identity has a memory scope)."""
    assert identity.team_id is not None and identity.agent_id is not None
    return SessionKey(identity.service_id, identity.team_id, identity.agent_id, identity.user_id, identity.session_id)


def _permanent(exc: Exception) -> bool:
    """A refusal that no retry changes (bad input, a denied scope); anything else may pass."""
    return isinstance(exc, MemhubError) and 400 <= exc.code < 500


class BackgroundCapture:
    """The `TurnCapture`: a queue and one worker thread writing turns to L0 and the skills buffer.

    `on_retry(exc, attempt)` is called after each failed attempt that will be retried (logging, tests).
    """

    def __init__(
        self,
        conversation: ConversationService,
        skill_mining: MiningService,
        meta: MetaServices,
        config: CaptureConfig | None = None,
        *,
        on_retry: Callable[[Exception, int], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.skill_mining = skill_mining
        self.meta = meta
        self.config = config or CaptureConfig()
        self.on_retry = on_retry
        self._queue: Queue[_Turn | None] = Queue(maxsize=self.config.max_queued)
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._closed = False
        self._abandon = threading.Event()  # set when close gives up waiting: stop retrying, stop writing
        self._thread: threading.Thread | None = None

    # -- the port ---------------------------------------------------------------------------------
    def submit(
        self,
        identity: ProxyIdentity,
        protocol: WireProtocol,
        user_text: str,
        output: TurnOutput,
        position: int | None = None,
    ) -> None:
        """Queue the turn; returns at once. A turn without a memory scope has nowhere to go and is not queued."""
        if not identity.has_memory_scope:
            log.debug("turn of session %s not captured: no team and agent", identity.session_id)
            return
        key = turn_key(identity, user_text, output, position)
        turn = _Turn(key, identity, protocol, user_text, output, int(time.time() * 1000))
        with self._lock:
            if self._closed:
                log.warning("turn %s not captured: capture is closed", key)
                return
            if key in self._recent:
                log.debug("turn %s already captured or queued", key)
                return
            try:
                # Under the lock, so a turn accepted here is always queued before close's end marker.
                self._queue.put_nowait(turn)
            except Full:
                log.error("turn %s not captured: %d turns already wait for the store", key, self.config.max_queued)
                return
            self._remember(key)
            self._pending += 1
            self._start()

    # -- lifecycle ---------------------------------------------------------------------------------
    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued turn is written or given up; False if `timeout` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def close(self, timeout: float | None = 60.0) -> bool:
        """Take no more turns and flush the queued ones (retries included); True when all were written or given up
        within `timeout`. Past it the worker stops at its next step and what is left is logged as lost."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is None:
            return True
        self._queue.put(None)
        thread.join(timeout)
        if thread.is_alive():
            self._abandon.set()
            with self._lock:
                left = self._pending
            log.error("capture closed with %d turns not written", left)
            return False
        return True

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="memhub-proxy-capture", daemon=True)
            self._thread.start()

    def _remember(self, key: str) -> None:
        self._recent[key] = None
        self._recent.move_to_end(key)
        while len(self._recent) > RECENT_TURNS:
            self._recent.popitem(last=False)

    def _done(self, turn: _Turn, *, forget: bool = False) -> None:
        with self._idle:
            if forget:
                # Given up: a later submission of the same turn may try again.
                self._recent.pop(turn.key, None)
            self._pending -= 1
            self._idle.notify_all()

    # -- the worker --------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            turn = self._queue.get()
            if turn is None:
                return
            written = False
            try:
                written = self._write(turn)
            except Exception:  # a bug must not kill the worker: every later turn would be lost
                log.exception("turn %s not captured", turn.key)
            self._done(turn, forget=not written)

    def _write(self, turn: _Turn) -> bool:
        """Write the turn, retrying what may pass; True when it landed (or was already there)."""
        self._prepare(turn)
        while not self._abandon.is_set():
            turn.attempts += 1
            try:
                self._step(turn)
                return True
            except Exception as exc:
                if _permanent(exc) or turn.attempts >= self.config.max_attempts:
                    log.error("turn %s not captured after %d attempts: %s", turn.key, turn.attempts, exc)
                    return False
                log.warning("turn %s capture attempt %d failed, retrying: %s", turn.key, turn.attempts, exc)
                if self.on_retry is not None:
                    self.on_retry(exc, turn.attempts)
                delay = min(self.config.backoff_seconds * 2 ** (turn.attempts - 1), self.config.max_backoff_seconds)
                self._abandon.wait(delay)
        return False

    def _prepare(self, turn: _Turn) -> None:
        """The turn's L0 messages and skills-buffer messages (once, before the first attempt)."""
        user = clean_user_text(turn.user_text)
        if user.skip:
            log.debug("turn %s not captured: not the user's words", turn.key)
            turn.l0_done = turn.skills_done = True
            return
        output, identity = turn.output, turn.identity
        meta: dict[str, Any] = {"via": VIA, "client": identity.agent_source, "protocol": str(turn.protocol)}
        answer = strip_code_blocks(output.text)
        shown = "\n".join([answer, *(render_tool_call(c) for c in output.tool_calls)]).strip()
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in output.tool_calls]
        if user.text:
            turn.messages.append(MessageInput("user", user.text, message_ms=turn.submitted_ms, metadata=meta))
            turn.skill_messages.append({"role": "user", "content": user.text, "timestamp": turn.submitted_ms})
        # One millisecond later: the answer sorts after the question it answers.
        answered_ms = turn.submitted_ms + 1
        if shown:
            assistant_meta = {**meta, "tool_calls": calls} if calls else meta
            turn.messages.append(MessageInput("assistant", shown, message_ms=answered_ms, metadata=assistant_meta))
        if output.text.strip():
            turn.skill_messages.append({"role": "assistant", "content": output.text, "timestamp": answered_ms})
        for c in output.tool_calls:
            call = {"role": "tool_call", "content": c.arguments, "tool_call_id": c.id, "tool_name": c.name}
            turn.skill_messages.append({**call, "timestamp": answered_ms})
        turn.l0_done = not turn.messages
        turn.skills_done = not turn.skill_messages

    def _step(self, turn: _Turn) -> None:
        """The writes not done yet: L0 first, then the skills buffer (each marked done as it lands)."""
        identity = turn.identity
        isolation = _isolation(identity)
        if not turn.l0_done:
            try:
                result = self.conversation.add(isolation, identity.session_id, turn.messages, turn.key)
                turn.duplicate = result.replayed
            except Conflict:
                # The key is the turn's content: the same turn, stored earlier with another timestamp.
                turn.duplicate = True
            if not turn.duplicate:
                self.meta.note_conversation(isolation)
            turn.l0_done = True
        if turn.duplicate:
            # Stored by an earlier submission, whose own skills-buffer write is that submission's job.
            log.debug("turn %s was already captured", turn.key)
            turn.skills_done = True
        if not turn.skills_done:
            if self._skills_on(identity):
                self.skill_mining.add(skill_session_key(identity), turn.skill_messages, identity.task_id)
            turn.skills_done = True

    def _skills_on(self, identity: ProxyIdentity) -> bool:
        try:
            return self.meta.config.asset_type_enabled(identity.service_id, identity.user_id, SKILL)
        except MemhubError as exc:
            # The original treats an unreadable switch as on: mining is the default.
            log.warning("skill switch of %s unreadable, mining on: %s", identity.user_id, exc)
            return True
