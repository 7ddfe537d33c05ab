"""Context offload for proxied turns: the proxy ingests every tool pair it sees and, once a request fills enough
of the model's window, forwards it compacted (memhub.offload.service does both; this module decides when).

Per main request of a session with offload on:

1. the answered tool calls not yet ingested go to the session's offload state, and the user's words (a new
   turn) go to the task stage, so summaries and task graphs are made in the background as the run goes on;
2. the request's tokens are counted (the model's window decides the share; a request whose bytes are fewer
   than the mild threshold's tokens is under it without counting);
3. past the mild threshold the messages are compacted, and that compacted prefix is remembered: the next
   requests of the session, which start with the same history, get the same compacted messages byte for byte
   followed by what came since (memhub.proxy.offload.prefix), until the context reaches the next level,
   when it is compacted again (earlier decisions re-applied, so the new prefix starts as the old one did).

A compaction made while most results in the part mild replaces still wait for their summaries (offload just
switched on mid-run, or a restart) is sent but not remembered: the next request compacts again, with the
summaries that arrived meanwhile. The few results of the last steps that wait in a running tool loop do not
hold the prefix back: they are replaced at the next level.

Everything runs on threads of its own within a deadline; a slow or failing offload forwards the caller's
messages unchanged and says so (`timeout`, `error`). The remembered prefixes live in this process (a bounded
LRU): after a restart the first request of a session is compacted afresh, from the decisions the store kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from memhub.errors import Conflict
from memhub.model.offload import OffloadSession, RecentTurn, ToolPair
from memhub.offload import messages as fmt
from memhub.offload.compact import resolve_level
from memhub.offload.pairs import tool_pairs
from memhub.offload.service import OffloadService
from memhub.offload.tokens import counter
from memhub.proxy.model import Block, OffloadOutcome, OffloadTurn, ProxyIdentity
from memhub.proxy.offload.prefix import LEVEL_RANK, CompactedPrefix, breakpoint_in, history_digest, without_breakpoints
from memhub.proxy.offload.prefix import with_prefix_breakpoint as marked_prefix
from memhub.proxy.offload.windows import DEFAULT_CONTEXT_WINDOW, context_window
from memhub.timeutil import ms_to_iso, now_ms

log = logging.getLogger("memhub.proxy.offload")

DEFAULT_TIMEOUT_SECONDS = 3.0
WORKERS = 2  # offloads at once; more wait their turn (and give up at their deadline)
DEFAULT_MAX_SESSIONS = 256  # sessions whose prefix and ingested ids are remembered (a compacted prefix: ~0.5 MB)
SWITCH_TTL_SECONDS = 60.0  # how long an agent's own offload switch is trusted before it is read again

# Whether an agent's configuration turns offload on (True), off (False) or leaves the server's default (None).
AgentSwitch = Callable[[ProxyIdentity], bool | None]
ToolsBlock = Callable[[ProxyIdentity], Block | None]


@dataclass(frozen=True, slots=True)
class ProxyOffloadConfig:
    """Plain settings values (runtime passes them)."""

    enabled: bool = False  # MEMHUB_PROXY_OFFLOAD: the default for agents and requests that do not say
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS  # MEMHUB_PROXY_OFFLOAD_TIMEOUT_MS
    context_window: int | None = None  # MEMHUB_PROXY_OFFLOAD_CONTEXT_WINDOW: one window for every model
    default_window: int = DEFAULT_CONTEXT_WINDOW  # a model the window table does not know
    max_sessions: int = DEFAULT_MAX_SESSIONS


class OffloadExpired(Exception):
    """An offload that waited in the queue past its deadline: the turn went on without it."""


@dataclass(slots=True)
class _Session:
    """What the proxy remembers of one session between its requests."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ingested: set[str] = field(default_factory=set)  # tool_call_ids stored (or refused) already
    prompt_at: int | None = None  # the message count of the request whose prompt was queued last
    prefix: CompactedPrefix | None = None
    switch: tuple[bool | None, float] | None = None  # the agent's switch and when it was read


class ProxyOffloader:
    """Implements memhub.proxy.ports.TurnOffloader over an OffloadService."""

    def __init__(
        self,
        service: OffloadService,
        config: ProxyOffloadConfig,
        *,
        agent_switch: AgentSwitch,
        tools_block: ToolsBlock,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.config = config
        self.agent_switch = agent_switch
        self.tools_block = tools_block
        self.clock = clock
        self._sessions: OrderedDict[tuple[str, ...], _Session] = OrderedDict()
        self._sessions_lock = threading.Lock()
        self._threads = ThreadPoolExecutor(WORKERS, thread_name_prefix="memhub-proxy-offload")

    async def offload(self, identity: ProxyIdentity, turn: OffloadTurn, switch: bool | None) -> OffloadOutcome:
        """The messages to send for this request (None: the caller's own); never raises, never waits past the
        deadline. `switch` is the request's own choice (`x-memhub-offload`), None when it made none."""
        loop = asyncio.get_running_loop()
        timeout = self.config.timeout_seconds
        deadline = time.monotonic() + timeout
        on = switch
        try:
            if on is None:
                on = await asyncio.wait_for(loop.run_in_executor(self._threads, self._is_on, identity, None), timeout)
            if not on:
                return OffloadOutcome(False, None, "off")
            left = max(0.0, deadline - time.monotonic())
            messages, status = await asyncio.wait_for(
                loop.run_in_executor(self._threads, self._fit, identity, turn, deadline), left
            )
        except (TimeoutError, OffloadExpired):
            log.warning(
                "offload for session %s ran past its %.3f s; the turn goes uncompacted", identity.session_id, timeout
            )
            return self._failed(identity, on, "timeout")
        except Exception:
            log.warning("offload for session %s failed; the turn goes uncompacted", identity.session_id, exc_info=True)
            return self._failed(identity, on, "error")
        block = self._block(identity)
        if block is None and messages is not None:
            return OffloadOutcome(True, None, "error")  # no way back to a result: nothing is taken out
        return OffloadOutcome(True, messages, status, block)

    def _failed(self, identity: ProxyIdentity, on: bool | None, status: str) -> OffloadOutcome:
        """The caller's messages as sent; the read tool still offered when offload is on (the system prompt must
        not change with one turn's failure), and when the switch itself could not be read, the server's default."""
        on = self.config.enabled if on is None else on
        return OffloadOutcome(on, None, status, self._block(identity) if on else None)

    def _block(self, identity: ProxyIdentity) -> Block | None:
        """The read tool's block; None (logged) when it cannot be made, and then no stand-in is sent either."""
        try:
            return self.tools_block(identity)
        except Exception:
            log.warning("offload read tool for session %s not rendered", identity.session_id, exc_info=True)
            return None

    def window(self, model: object, headers: Mapping[str, str]) -> int:
        """The context window of the model a request names (memhub.proxy.offload.windows)."""
        return context_window(model, headers, override=self.config.context_window, default=self.config.default_window)

    def close(self) -> None:
        """Stop the offload threads (a running offload finishes first)."""
        self._threads.shutdown(wait=True, cancel_futures=True)

    # -- on or off ---------------------------------------------------------------------------------------

    def _is_on(self, identity: ProxyIdentity, switch: bool | None) -> bool:
        """The request's switch, else the agent's (read at most once a minute per session), else the server's."""
        if switch is not None:
            return switch
        state = self._session(identity)
        now = self.clock()
        known = state.switch
        if known is None or now - known[1] >= SWITCH_TTL_SECONDS:
            known = state.switch = (self.agent_switch(identity), now)
        return self.config.enabled if known[0] is None else known[0]

    # -- one request -------------------------------------------------------------------------------------

    def _fit(
        self, identity: ProxyIdentity, turn: OffloadTurn, deadline: float
    ) -> tuple[list[dict[str, Any]] | None, str]:
        if time.monotonic() >= deadline:
            raise OffloadExpired
        session = offload_session(identity)
        state = self._session(identity)
        with state.lock:
            self._ingest(session, state, turn)
            return self._compacted(session, state, turn)

    def _ingest(self, session: OffloadSession, state: _Session, turn: OffloadTurn) -> None:
        """Store the answered tool calls not stored yet, and queue a new turn's prompt for the task stage."""
        stamp = ms_to_iso(now_ms())
        pairs = [
            ToolPair(
                p.tool_name, p.tool_call_id, p.params, p.result, stamp, "tool reported an error" if p.is_error else None
            )
            for p in tool_pairs(turn.messages)
            if p.tool_call_id not in state.ingested
        ]
        count = len(turn.messages)
        prompt = turn.prompt if turn.prompt and state.prompt_at != count else None
        if not pairs and prompt is None:
            return
        recent = [RecentTurn(t.role, t.text) for t in turn.recent if t.role in ("user", "assistant")]
        try:
            self.service.ingest(session, pairs, prompt, recent)
        except Conflict as exc:
            if _retryable(exc):
                raise  # a busy store: nothing was stored, and the next request offers the same pairs again
            # A pair the session holds with another result (a client that rewrote its history) refuses the
            # batch: the others are stored one by one, and the refused one stays as it was first stored.
            log.info("offload ingest for session %s refused a batch; storing its pairs one by one", session.session_id)
            for pair in pairs:
                try:
                    self.service.ingest(session, [pair], None, ())
                except Conflict as refused:
                    if _retryable(refused):
                        raise
                    log.warning(
                        "offload pair %s of session %s kept as first stored", pair.tool_call_id, session.session_id
                    )
            if prompt is not None:
                self.service.ingest(session, [], prompt, recent)
        state.ingested.update(p.tool_call_id for p in pairs)
        if prompt is not None:
            state.prompt_at = count

    def _compacted(
        self, session: OffloadSession, state: _Session, turn: OffloadTurn
    ) -> tuple[list[dict[str, Any]] | None, str]:
        """The messages to send and what the memory header says about them."""
        config = self.service.config
        tokens = counter(config.encoding)
        mild = config.mild_ratio * turn.window
        prefix = state.prefix if state.prefix is not None and state.prefix.matches(turn.messages) else None
        if prefix is None:
            state.prefix = None  # the client changed its history (edited it, or compacted it itself)
            if turn.size < mild:  # a token is at least one byte: under the threshold without counting
                return None, "none"
        fixed = sum(tokens.message_tokens({"text": _text(part)}) for part in turn.fixed)
        if prefix is not None:
            tail = turn.messages[prefix.count :]
            total = fixed + prefix.tokens + sum(tokens.message_tokens(m) for m in tail)
            if LEVEL_RANK[resolve_level(total / turn.window, config)] <= LEVEL_RANK[prefix.level]:
                return prefix.resend(turn.messages, turn.breakpoints), f"prefix,tokens={total}"
        counts = [tokens.message_tokens(m) for m in turn.messages]
        total = fixed + sum(counts)
        if prefix is None and total < mild:
            return None, f"none,tokens={total}"
        result = self.service.compact(
            session, turn.messages, context_window=turn.window, total_tokens=total, message_tokens=counts
        )
        report = result.report
        marker = breakpoint_in(turn.messages)
        stripped = tuple(without_breakpoints(m) for m in result.messages)
        replaced = report.fast_path_replaced + report.mild_replacements
        dropped = report.fast_path_deleted + report.aggressive_deleted + report.emergency_deleted
        status = f"{report.resolved_level},tokens={report.tokens_before}/{report.tokens_after}"
        status += f",replaced={replaced},dropped={dropped}"
        waiting, replaceable = self._waiting(session, state, turn.messages, config.mild_keep_recent_messages)
        if waiting:
            status += f",pending={waiting}"
        if 2 * waiting > replaceable:
            state.prefix = None  # most summaries still to come: sent, not remembered; the next request compacts anew
        else:
            state.prefix = CompactedPrefix(
                count=len(turn.messages),
                digest=history_digest(turn.messages),
                messages=stripped,
                marker=marker,
                tokens=report.tokens_after - fixed,
                level=resolve_level(report.tokens_after / turn.window, config),
            )
        return marked_prefix(stripped, marker), status

    def _waiting(
        self, session: OffloadSession, state: _Session, messages: Sequence[Mapping[str, Any]], recent: int
    ) -> tuple[int, int]:
        """Of the ingested results mild may replace (all but the last `recent` messages'), how many still wait
        for their summary, and how many there are."""
        older = {
            call_id
            for message in messages[: max(0, len(messages) - recent)]
            for call_id in fmt.result_ids(message)
            if call_id in state.ingested
        }
        return (len(older - self.service.summarised(session)) if older else 0), len(older)

    def _session(self, identity: ProxyIdentity) -> _Session:
        key = (
            identity.service_id,
            identity.team_id or "",
            identity.agent_id or "",
            identity.user_id,
            identity.session_id,
        )
        with self._sessions_lock:
            state = self._sessions.get(key)
            if state is None:
                state = self._sessions[key] = _Session()
                if len(self._sessions) > self.config.max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return state


def offload_session(identity: ProxyIdentity) -> OffloadSession:
    """The offload state a proxied session writes to: the same as `/v2/offload/*` gives its user and session."""
    assert identity.team_id is not None and identity.agent_id is not None
    return OffloadSession(
        identity.service_id, identity.team_id, identity.agent_id, identity.user_id, identity.session_id
    )


def _retryable(exc: Conflict) -> bool:
    return isinstance(exc.data, Mapping) and exc.data.get("retryable") is True


def _text(part: Any) -> str:
    return part if isinstance(part, str) else json.dumps(part, ensure_ascii=False, sort_keys=True)
