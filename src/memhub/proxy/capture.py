"""Capture: a finished main turn goes to L0 and to the skills conversation buffer, off the response path, and
nothing is lost on the way.

`submit` only puts the turn on an in-memory queue and returns. A spool thread's first act on each queued turn is
to write it to the spool (`<data_dir>/proxy-capture/`, see `memhub.proxy.spool`): one file per turn, atomic and
fsynced. A writer thread then writes it to L0 and to the skills buffer, records in the file that L0 is done (so
a replay never appends the skills buffer twice), and deletes the file once both are written. A store failure
that may pass (the database locked by another writer, an I/O error, a 5xx) is retried with capped exponential
backoff for as long as it takes; a refusal no retry changes (a 4xx domain error, a turn that cannot be read)
moves the file to `rejected/` with the reason, logged. At start the files an earlier run left are replayed in
submitted order. `close` stops taking turns, spools every accepted one and flushes them to the store; what is
still in the spool when it gives up waiting stays there for the next start.

What survives what:
- a `kill -9` (or a crash, a power loss) after a turn's file is written: the turn is replayed at the next start;
- a store outage of any length: the turns wait in the spool (and on disk across restarts);
- a `kill -9` after `submit` returned and before the spool thread wrote the file (the queue, a few milliseconds
  — more only when turns arrive faster than the disk takes them): the turn is lost;
- a `kill -9` between the skills-buffer write and the file's removal (one unlink): the replay finds both writes
  made (each carries the turn's key) and adds nothing;
- a spool write that fails (disk full, no permission): the turn is written from memory, logged as not durable.
Without a spool directory (tests of other parts) the queue is all there is.

A turn is written to L0 and to the skills buffer at most once: both writes carry an idempotency key derived from
the scope, the session, the turn's place in the conversation (how many messages the request carried) and a hash
of its content, so a replay after a write that did land, or the same request submitted twice, adds nothing (for
as long as the store keeps the key: 7 days; past that, the file's l0_done still keeps a replay off L0) — while a
later turn that happens to say the same words ("yes", "ok") is a new turn and is kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Full, Queue
from typing import Any

from memhub.background import lower_thread_priority
from memhub.errors import Conflict, MemhubError
from memhub.formats.sanitize import strip_code_blocks
from memhub.knowledge.skill.mining.service import MiningService
from memhub.memory.conversation import ConversationService, MessageInput
from memhub.meta.services import MetaServices
from memhub.model.skills import SessionKey
from memhub.proxy.model import ProxyIdentity, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.spool import SPOOL_DIR, Spool, key_of, turn_file_name
from memhub.proxy.user_text import clean_user_text
from memhub.scope import Isolation

__all__ = ["SPOOL_DIR", "BackgroundCapture", "CaptureConfig", "is_permanent", "turn_key"]

log = logging.getLogger("memhub.proxy.capture")

VIA = "memhub-proxy"  # the `via` of captured messages' metadata: where a message came from
TOOL_ARGUMENTS_SHOWN = 2000  # characters of a tool call's arguments in the message text (metadata keeps them all)
RECENT_TURNS = 4096  # turns remembered in process to drop a second submission before it reaches the store
SKILL = "skill"  # the capability flag that switches skill mining on or off for a user
RECORD_VERSION = 1  # the spool file format
RETRYABLE_4XX = frozenset({408, 429})  # client-side codes that say "later", not "never"
# Faults of the capture's own code or of a spool file: the same turn fails the same way at every attempt, and
# retrying it forever would hold up every turn behind it.
NOT_RETRIED = (TypeError, ValueError, KeyError, AttributeError, AssertionError)


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """How the worker waits between attempts at a turn: `backoff_seconds` × 2ⁿ, at most `max_backoff_seconds`
    (it never gives up on a failure that may pass); at most `max_queued` turns wait to be spooled (more are
    refused and logged)."""

    backoff_seconds: float = 0.25
    max_backoff_seconds: float = 30.0
    max_queued: int = 10_000


@dataclass(slots=True)
class _Turn:
    """A turn and how far its writes got."""

    key: str
    identity: ProxyIdentity
    protocol: WireProtocol
    user_text: str
    output: TurnOutput
    submitted_ms: int
    position: int | None = None
    l0_done: bool = False
    skills_done: bool = False
    resumed: bool = False  # left in the spool by an earlier run: its L0 write may have landed there
    l0_tries: int = 0
    prepared: bool = False
    duplicate: bool = False
    path: Path | None = None  # its spool file, once written
    messages: list[MessageInput] = field(default_factory=list)
    skill_messages: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The spool file's content: all it takes to write the turn later, and its progress."""
        output = self.output
        return {
            "version": RECORD_VERSION,
            "key": self.key,
            "identity": dataclasses.asdict(self.identity),
            "protocol": str(self.protocol),
            "user_text": self.user_text,
            "output": {
                "text": output.text,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in output.tool_calls],
                "usage": output.usage,
                "finish_reason": output.finish_reason,
                "complete": output.complete,
            },
            "position": self.position,
            "submitted_ms": self.submitted_ms,
            "l0_done": self.l0_done,
            "skills_done": self.skills_done,
        }

    @classmethod
    def of(cls, record: dict[str, Any], path: Path, *, resumed: bool) -> _Turn:
        """A spooled turn as an earlier run left it (a malformed record raises ValueError, KeyError or
        TypeError)."""
        if record.get("version") != RECORD_VERSION:
            raise ValueError(f"spool record version {record.get('version')!r} is not {RECORD_VERSION}")
        identity = ProxyIdentity(**record["identity"])
        if not identity.has_memory_scope:
            raise ValueError("identity: a captured turn needs a team_id and an agent_id")
        raw = record["output"]
        output = TurnOutput(
            text=raw["text"],
            tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for c in raw["tool_calls"]],
            usage=dict(raw["usage"]),
            finish_reason=raw["finish_reason"],
            complete=bool(raw["complete"]),
        )
        return cls(
            key=str(record["key"]),
            identity=identity,
            protocol=WireProtocol(record["protocol"]),
            user_text=str(record["user_text"]),
            output=output,
            submitted_ms=int(record["submitted_ms"]),
            position=record["position"],
            l0_done=bool(record["l0_done"]),
            skills_done=bool(record["skills_done"]),
            resumed=resumed,
            path=path,
        )


@dataclass(frozen=True, slots=True)
class _Spooled:
    """A turn waiting in its spool file for the writer."""

    path: Path
    resumed: bool  # left by an earlier run


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


def is_permanent(exc: Exception) -> bool:
    """A refusal no retry changes (bad input, a denied scope, a turn that cannot be read back); anything else (a
    locked or unreachable store, an I/O error, a 5xx) may pass."""
    if isinstance(exc, MemhubError):
        return 400 <= exc.code < 500 and exc.code not in RETRYABLE_4XX
    return isinstance(exc, NOT_RETRIED)


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class BackgroundCapture:
    """The `TurnCapture`: an in-memory queue, a spool thread putting each turn on disk, and a writer thread
    writing spooled turns to L0 and the skills buffer (see the module's docstring for what survives what).

    `spool_dir` is where turns wait for the store (None: in memory only). `on_retry(exc, attempt)` is called after
    each failed attempt that will be retried (logging, tests).
    """

    def __init__(
        self,
        conversation: ConversationService,
        skill_mining: MiningService,
        meta: MetaServices,
        config: CaptureConfig | None = None,
        *,
        spool_dir: Path | None = None,
        on_retry: Callable[[Exception, int], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.skill_mining = skill_mining
        self.meta = meta
        self.config = config or CaptureConfig()
        self.on_retry = on_retry
        self.spool = Spool(spool_dir) if spool_dir is not None else None
        self._intake: Queue[_Turn | None] = Queue(maxsize=self.config.max_queued)
        self._ready: Queue[_Turn | _Spooled | None] = Queue()  # spooled turns by file, unspooled ones in memory
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._closed = False
        self._abandon = threading.Event()  # set when close gives up waiting: stop retrying, stop writing
        self._spooler: threading.Thread | None = None
        self._writer: threading.Thread | None = None

    # -- the port ---------------------------------------------------------------------------------
    def submit(
        self,
        identity: ProxyIdentity,
        protocol: WireProtocol,
        user_text: str,
        output: TurnOutput,
        position: int | None = None,
    ) -> None:
        """Queue the turn; returns at once (the spool write is the spool thread's). A turn without a memory scope
        has nowhere to go and is not queued."""
        if not identity.has_memory_scope:
            log.debug("turn of session %s not captured: no team and agent", identity.session_id)
            return
        key = turn_key(identity, user_text, output, position)
        turn = _Turn(key, identity, protocol, user_text, output, int(time.time() * 1000), position)
        with self._lock:
            if self._closed:
                log.warning("turn %s not captured: capture is closed", key)
                return
            if key in self._recent:
                log.debug("turn %s already captured or queued", key)
                return
            try:
                # Under the lock, so a turn accepted here is always queued before close's end marker.
                self._intake.put_nowait(turn)
            except Full:
                log.error("turn %s not captured: %d turns already wait to be spooled", key, self.config.max_queued)
                return
            self._remember(key)
            self._pending += 1
            self._start()

    # -- lifecycle ---------------------------------------------------------------------------------
    def resume(self) -> None:
        """Replay the turns earlier runs left in the spool (at start). A capture never resumed replays them
        before its first turn."""
        with self._lock:
            if not self._closed and self.spool is not None:
                self._start()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued or replayed turn is written (or rejected); False if `timeout` seconds passed
        first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = _remaining(deadline)
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def close(self, timeout: float | None = 60.0, last_write_timeout: float | None = None) -> bool:
        """Take no more turns, spool every accepted one and write them to the store; True when all were written
        (or rejected) within `timeout`. Past it the writer stops after the store call in progress, waited for at
        most `last_write_timeout` seconds (None: until it ends): the turns not written stay in the spool for the
        next start (without a spool they are lost, and logged). A writer still in that call is left to the
        process's exit, and so is this run's spool directory (the next start adopts it, as after a crash)."""
        with self._lock:
            self._closed = True
            spooler, writer = self._spooler, self._writer
        if spooler is None or writer is None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        self._intake.put(None)
        spooler.join(_remaining(deadline))
        writer.join(_remaining(deadline))
        flushed = not writer.is_alive()
        if not flushed:
            self._abandon.set()
            spooler.join()  # local disk writes: every accepted turn reaches the spool
            writer.join(last_write_timeout)
            with self._lock:
                left = self._pending
            where = f"they stay in {self.spool.dir} for the next start" if self.spool and self.spool.dir else "lost"
            log.error("capture closed with %d turns not written: %s", left, where)
            if writer.is_alive():
                return False  # its store call may still remove a spooled file: the directory stays this run's
        if self.spool is not None:
            self.spool.release()
        return flushed

    def _start(self) -> None:
        """Start both threads once (under the lock)."""
        if self._spooler is not None:
            return
        if self.spool is not None:
            self._pending += 1  # the replay, counted until its turns are queued (drain waits for them)
        self._spooler = threading.Thread(target=self._spool_work, name="memhub-proxy-capture-spool", daemon=True)
        self._writer = threading.Thread(target=self._write_work, name="memhub-proxy-capture", daemon=True)
        self._spooler.start()
        self._writer.start()

    def _remember(self, key: str) -> None:
        self._recent[key] = None
        self._recent.move_to_end(key)
        while len(self._recent) > RECENT_TURNS:
            self._recent.popitem(last=False)

    def _done(self, key: str, *, forget: bool = False) -> None:
        with self._idle:
            if forget:
                # Not written: a later submission of the same turn may try again.
                self._recent.pop(key, None)
            self._pending -= 1
            self._idle.notify_all()

    # -- the spool thread --------------------------------------------------------------------------
    def _spool_work(self) -> None:
        spool = self._claim()
        while True:
            turn = self._intake.get()
            if turn is None:
                self._ready.put(None)
                return
            if spool is not None:
                try:
                    turn.path = spool.write(turn_file_name(turn.submitted_ms, turn.key), turn.record())
                except Exception as exc:
                    log.error("turn %s not spooled, written from memory (lost if the process ends): %s", turn.key, exc)
            self._ready.put(_Spooled(turn.path, resumed=False) if turn.path is not None else turn)

    def _claim(self) -> Spool | None:
        """This run's spool directory, with the turns earlier runs left queued first (in submitted order)."""
        spool = self.spool
        replay: list[Path] = []
        if spool is not None:
            try:
                replay = spool.claim()
            except Exception as exc:
                log.error("capture spool %s unusable, turns kept in memory only: %s", spool.root, exc)
                spool = None
        with self._idle:
            for path in replay:
                self._remember(key_of(path))
            if self.spool is not None:
                self._pending += len(replay) - 1  # the replay's own count becomes its turns'
                self._idle.notify_all()
        if replay:
            log.info("capture: replaying %d turns an earlier run left in the spool", len(replay))
        for path in replay:
            self._ready.put(_Spooled(path, resumed=True))
        return spool

    # -- the writer thread -------------------------------------------------------------------------
    def _write_work(self) -> None:
        # The store writes yield the CPU to request handling; the spool thread keeps its priority, since the turn
        # is durable only once it has written the file.
        lower_thread_priority()
        while True:
            item = self._ready.get()
            if item is None or self._abandon.is_set():
                return
            key = item.key if isinstance(item, _Turn) else key_of(item.path)
            written = False
            try:
                written = self._handle(item)
            except Exception:  # a bug must not stop the writer: every later turn would wait forever
                log.exception("turn %s not captured (a spooled one is replayed at the next start)", key)
            self._done(key, forget=not written)

    def _handle(self, item: _Turn | _Spooled) -> bool:
        """Write one turn (read back from its spool file); True when it landed (or was already there)."""
        if isinstance(item, _Turn):
            return self._write(item)
        path = item.path
        try:
            record = Spool.read(path)
        except FileNotFoundError:
            return True  # written and removed already (the same turn spooled twice)
        except ValueError as exc:
            self._reject(path, None, key_of(path), exc)
            return False
        try:
            turn = _Turn.of(record, path, resumed=item.resumed)
        except NOT_RETRIED as exc:
            self._reject(path, record, key_of(path), exc)
            return False
        return self._write(turn)

    def _write(self, turn: _Turn) -> bool:
        """Write the turn, retrying what may pass for as long as it takes; True when it landed (or was already
        there), False when it was rejected or close gave up waiting."""
        attempt = 0
        while not self._abandon.is_set():
            attempt += 1
            try:
                self._step(turn)
            except Exception as exc:
                if is_permanent(exc):
                    self._reject(turn.path, turn.record(), turn.key, exc)
                    return False
                if attempt & (attempt - 1) == 0:  # attempts 1, 2, 4, 8…: a long outage logs ever less often
                    log.warning("turn %s capture attempt %d failed, retrying: %s", turn.key, attempt, exc)
                if self.on_retry is not None:
                    self.on_retry(exc, attempt)
                exponent = min(attempt - 1, 32)
                self._abandon.wait(min(self.config.backoff_seconds * 2**exponent, self.config.max_backoff_seconds))
                continue
            if turn.path is not None and self.spool is not None:
                try:
                    self.spool.remove(turn.path)
                except OSError as exc:
                    log.error("turn %s written, its spool file not removed (replayed at next start): %s", turn.key, exc)
            return True
        return False

    def _reject(self, path: Path | None, record: dict[str, Any] | None, key: str, exc: Exception) -> None:
        """A turn the store refused for good, or that cannot be read back: moved to rejected/, the reason added to
        its record (a file that is not a record at all is moved as it is), and logged."""
        reason = f"{type(exc).__name__}: {exc}"
        trace = not isinstance(exc, MemhubError)  # a fault of ours gets its traceback; a refusal says it all
        if path is None or self.spool is None:
            log.error("turn %s refused, not retried, and lost (it was not spooled): %s", key, reason, exc_info=trace)
            return
        if record is not None:
            record = {**record, "rejected": {"reason": reason, "at_ms": int(time.time() * 1000)}}
        try:
            target = self.spool.reject(path, record)
        except OSError as err:
            log.error("turn %s refused (%s); not moved to rejected/, replayed at the next start: %s", key, reason, err)
            return
        log.error("turn %s refused, not retried; kept in %s: %s", key, target, reason, exc_info=trace)

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
        # Progress read back from the spool stands: a write it records as done is not made again.
        turn.l0_done = turn.l0_done or not turn.messages
        turn.skills_done = turn.skills_done or not turn.skill_messages

    def _step(self, turn: _Turn) -> None:
        """The writes not done yet: L0 first, then the skills buffer (each marked done as it lands, L0's in the
        spool file too)."""
        if not turn.prepared:
            self._prepare(turn)
            turn.prepared = True
        identity = turn.identity
        isolation = _isolation(identity)
        if not turn.l0_done:
            # An earlier attempt at this very turn (here, or in the run that spooled it) may have landed: the
            # store then answers with a replay, and the skills write is still this turn's to make. A replay of a
            # first attempt, or a conflict (the same turn stored earlier with another timestamp), is another
            # submission's turn, whose own skills write is that submission's job.
            ours = turn.resumed or turn.l0_tries > 0
            turn.l0_tries += 1
            try:
                result = self.conversation.add(isolation, identity.session_id, turn.messages, turn.key)
                turn.duplicate = result.replayed and not ours
            except Conflict:
                turn.duplicate = True
            if not turn.duplicate:
                self.meta.note_conversation(isolation)
            turn.l0_done = True
            if turn.duplicate:
                log.debug("turn %s was already captured", turn.key)
                turn.skills_done = True
            else:
                self._record_progress(turn)
        if not turn.skills_done:
            if self._skills_on(identity):
                # The turn's key makes the append idempotent: a replay after the append landed adds nothing.
                self.skill_mining.add(skill_session_key(identity), turn.skill_messages, identity.task_id, turn.key)
            turn.skills_done = True

    def _record_progress(self, turn: _Turn) -> None:
        """L0 is written: say so in the spool file before the skills write, so a replay does not make it again."""
        if turn.skills_done or turn.path is None or self.spool is None:
            return  # nothing left that a replay could repeat
        try:
            self.spool.replace(turn.path, turn.record())
        except OSError as exc:
            # A replay would find L0 written (the store answers with a replay) and send the skills write again,
            # which the turn's key makes a no-op while the store keeps the key.
            log.warning("turn %s: L0 progress not recorded in its spool file: %s", turn.key, exc)

    def _skills_on(self, identity: ProxyIdentity) -> bool:
        try:
            return self.meta.config.asset_type_enabled(identity.service_id, identity.user_id, SKILL)
        except MemhubError as exc:
            # The original treats an unreadable switch as on: mining is the default.
            log.warning("skill switch of %s unreadable, mining on: %s", identity.user_id, exc)
            return True
