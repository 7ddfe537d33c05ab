"""Compaction: a long agent context made to fit its window, the same way every turn.

The levels, by the context's share of the window once earlier decisions are re-applied:

- fastpath (< 0.5): only the earlier decisions (the session's `CompactState`), so the output is stable;
- mild (≥ 0.5): tool results whose summary can stand in for them (score ≥ 4) are replaced by it, all but those
  of the last units (4 messages: the results the agent is about to read and the step before them);
- aggressive (≥ 0.85): then, down to 0.80 of the window, long tool results are cut to their head and tail
  and the oldest units (a tool call with its results) dropped, tool units before plain turns;
- emergency (≥ 0.95): the same down to 0.75, and past that the recent results are cut too.

Whatever the level, the active task graph goes in as a `<current_task_context>` block next to the last user
turn, and its tokens are reserved in the targets. System and developer messages, the last user turn and the
message opening the conversation are never changed or dropped; the last units (10 messages) are never dropped.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.model.offload import CompactionLevel, CompactReport, CompactState, OffloadEntry, TaskGraph
from memhub.offload import messages as fmt
from memhub.offload.replacement import replacement_text, truncated_text
from memhub.offload.task_context import is_task_context, task_context_block
from memhub.offload.tokens import DEFAULT_ENCODING, counter, message_digest

_PLAIN_KEY = "msg"  # the state's keys for units without tool calls: msg:<position>:<digest>


@dataclass(frozen=True, slots=True)
class CompactConfig:
    """The thresholds and sizes of compaction; the defaults are the original system's."""

    mild_ratio: float = 0.5
    aggressive_ratio: float = 0.85
    emergency_ratio: float = 0.95
    # Aggressive compacts to `aggressive_ratio - aggressive_headroom` of the window, emergency further down to
    # `aggressive_ratio - emergency_headroom`, so that the next turns do not trigger them again at once.
    aggressive_headroom: float = 0.05
    emergency_headroom: float = 0.10
    replace_min_score: int = 4  # the lowest replaceability score whose summary may stand in for a result
    # Mild leaves the results of the last units holding at least this many messages as they are. The original
    # system spares the newest 30% of the messages instead; in a long session that is dozens of tool steps the
    # agent has already acted on, and it keeps most of the context's tokens out of reach of the mild level.
    mild_keep_recent_messages: int = 4
    keep_recent_messages: int = 10  # the last units holding at least this many messages are never dropped
    truncate_head_chars: int = 1_500  # a cut result keeps this much of its start ...
    truncate_tail_chars: int = 500  # ... and of its end (2,000 characters in all, as the original keeps)
    graph_share: float = 0.2  # the task graph's block takes at most this share of the window
    encoding: str = DEFAULT_ENCODING


@dataclass(frozen=True, slots=True)
class Compaction:
    """The compacted messages, what was done, and the session's decisions so far (to store for next time)."""

    messages: list[dict[str, Any]]
    report: CompactReport
    state: CompactState


def resolve_level(ratio: float, config: CompactConfig) -> CompactionLevel:
    """The compaction level for a context filling `ratio` of its window."""
    if ratio >= config.emergency_ratio:
        return "emergency"
    if ratio >= config.aggressive_ratio:
        return "aggressive"
    if ratio >= config.mild_ratio:
        return "mild"
    return "fastpath"


def compact(
    messages: Sequence[Mapping[str, Any]],
    entries: Mapping[str, OffloadEntry],
    state: CompactState,
    graph: TaskGraph | None,
    *,
    context_window: int,
    total_tokens: int,
    message_tokens: Sequence[int] | None = None,
    config: CompactConfig = CompactConfig(),
    now_ms: int,
) -> Compaction:
    """Compact `messages` (any mix of the supported formats) for a window of `context_window` tokens.

    `total_tokens` is the whole request as the caller counted it, so whatever it holds beyond the messages
    (system prompt, tool schemas) is kept as fixed overhead. `message_tokens`, when given for every message,
    are used as their counts (a message compaction changes is counted anew with `config.encoding`). `entries`
    are the session's offloaded results by tool_call_id. The input is never modified; messages left unchanged
    are returned as the caller's own objects.
    """
    if context_window <= 0:
        raise ValueError("context_window must be positive")
    return _Compactor(messages, entries, state, config, message_tokens).run(graph, context_window, total_tokens, now_ms)


class _Compactor:
    """One compaction's working state: the current version of each message, its tokens, the dropped units."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        entries: Mapping[str, OffloadEntry],
        state: CompactState,
        config: CompactConfig,
        given_tokens: Sequence[int] | None,
    ) -> None:
        self.original = messages
        self.entries = entries
        self.state = state
        self.config = config
        self.counter = counter(config.encoding)
        self.current: list[Mapping[str, Any]] = list(messages)
        if given_tokens is not None and len(given_tokens) == len(messages):
            self.tokens = [int(tokens) for tokens in given_tokens]
        else:
            self.tokens = [self.counter.message_tokens(message) for message in messages]
        self.units = fmt.units(messages)
        self.results = [fmt.result_ids(message) for message in messages]  # replacing a result keeps its id
        self.unit_of = [position for position, unit in enumerate(self.units) for _ in range(unit.start, unit.stop)]
        self.dropped = [False] * len(self.units)
        self.replaced: list[str] = []
        self.truncated: list[str] = []
        self.cut = set(state.truncated)
        self.deleted: list[str] = []
        self.stale = {self.unit_of[index] for index, message in enumerate(messages) if _is_stale_context(message)}
        for position in self.stale:
            self.dropped[position] = True
        self.total = sum(self.tokens[index] for index in range(len(messages)) if self.unit_of[index] not in self.stale)
        self.last_user = next(
            (index for index in reversed(range(len(messages))) if self._is_turn(index)),
            None,
        )
        self.opening_user = next((index for index in range(len(messages)) if self._is_turn(index)), None)
        self.frozen = {self.unit_of[index] for index, message in enumerate(messages) if fmt.is_instruction(message)} | (
            {self.unit_of[self.last_user]} if self.last_user is not None else set()
        )
        self.recent: set[int] = set()

    def run(self, graph: TaskGraph | None, window: int, total_tokens: int, now_ms: int) -> Compaction:
        """All the steps, in order; see the module's description."""
        overhead = max(0, total_tokens - sum(self.tokens))
        tokens_before = sum(self.tokens) + overhead
        fast_replaced, fast_deleted = self._fast_path()
        self.recent = self._recent_units()
        used = self.total + overhead
        level = resolve_level(used / window, self.config)

        block = self._graph_message(graph, window)
        graph_tokens = self.counter.message_tokens(block) if block else 0
        mild = aggressive_deleted = emergency_deleted = 0
        if level != "fastpath":
            mild = self._mild()
        if level in ("aggressive", "emergency"):
            target = math.floor(window * (self.config.aggressive_ratio - self.config.aggressive_headroom))
            aggressive_deleted = self._reduce(target - graph_tokens - overhead)
        if level == "emergency":
            target = math.floor(window * (self.config.aggressive_ratio - self.config.emergency_headroom))
            emergency_deleted = self._reduce(target - graph_tokens - overhead)
            self._truncate(target - graph_tokens - overhead, recent_too=True)

        output = self._output(block)
        report = CompactReport(
            resolved_level=level,
            original_count=len(self.original),
            compacted_count=len(output),
            fast_path_replaced=fast_replaced,
            fast_path_deleted=fast_deleted,
            mild_replacements=mild,
            aggressive_deleted=aggressive_deleted,
            emergency_deleted=emergency_deleted,
            mmd_injected=1 if block else 0,
            tokens_before=tokens_before,
            tokens_after=self.total + overhead + graph_tokens,
        )
        state = CompactState(
            replaced=_extended(self.state.replaced, self.replaced),
            deleted=_extended(self.state.deleted, self.deleted),
            last_compacted_ms=now_ms,
            truncated=_extended(self.state.truncated, self.truncated),
        )
        return Compaction(messages=output, report=report, state=state)

    # ── the steps ────────────────────────────────────────────────────────────────────────────────────────

    def _fast_path(self) -> tuple[int, int]:
        """Re-apply the session's earlier decisions; return (results replaced, messages dropped)."""
        deleted = set(self.state.deleted)
        replaced = set(self.state.replaced)
        truncated = set(self.state.truncated)
        # A plain unit's key needs a digest of its content: computed only where a key names its position.
        plain_starts = {start for start in map(_plain_key_start, deleted) if start is not None}
        dropped_messages = replaced_results = 0
        for position, unit in enumerate(self.units):
            if not self._changeable(position):
                continue
            named = unit.has_tools or unit.start in plain_starts
            if named and deleted.intersection(self._keys(position)):
                dropped_messages += self._drop(position, record=False)
                continue
            for index in range(unit.start, unit.stop):
                for call_id in self.results[index]:
                    entry = self.entries.get(call_id)
                    if call_id in replaced and entry is not None:
                        text = replacement_text(entry, fmt.result_text(self.original[index], call_id))
                        replaced_results += self._set_result(index, call_id, text)
                    elif call_id in truncated:
                        self._truncate_result(index, call_id)
        return replaced_results, dropped_messages

    def _mild(self) -> int:
        """Replace every replaceable result before the last units by its summary; return how many.

        "Last" is by position in the messages as sent, not among those kept, so that the same messages sent
        again find nothing new to replace however many earlier compactions dropped.
        """
        count = 0
        for index in range(self._mild_end()):
            if not self._changeable(self.unit_of[index]):
                continue
            for call_id in self.results[index]:
                entry = self.entries.get(call_id)
                if entry is None or entry.score < self.config.replace_min_score:
                    continue
                text = replacement_text(entry, fmt.result_text(self.original[index], call_id))
                if len(text) < len(fmt.result_text(self.current[index], call_id) or "") and self._set_result(
                    index, call_id, text
                ):
                    self.replaced.append(call_id)
                    count += 1
        return count

    def _mild_end(self) -> int:
        """Where the last units holding at least `mild_keep_recent_messages` messages begin."""
        end, held = len(self.original), 0
        for unit in reversed(self.units):
            if held >= self.config.mild_keep_recent_messages:
                break
            end, held = unit.start, held + unit.stop - unit.start
        return end

    def _reduce(self, target: int) -> int:
        """Cut long results, then drop the oldest units, until the messages fit `target`; return drops."""
        self._truncate(target, recent_too=False)
        droppable = [
            position
            for position in range(len(self.units))
            if self._changeable(position)
            and position not in self.recent
            and (self.opening_user is None or position != self.unit_of[self.opening_user])
        ]
        tool_units = [position for position in droppable if self.units[position].has_tools]
        plain_units = [position for position in droppable if not self.units[position].has_tools]
        dropped = 0
        for position in tool_units + plain_units:
            if self.total <= target:
                break
            dropped += self._drop(position, record=True)
        return dropped

    def _truncate(self, target: int, *, recent_too: bool) -> None:
        """Cut long results to head and tail, longest first, until the messages fit `target`."""
        if self.total <= target:
            return
        keep = self.config.truncate_head_chars + self.config.truncate_tail_chars
        candidates: list[tuple[int, int, str]] = []
        for position, unit in enumerate(self.units):
            if not self._changeable(position) or (position in self.recent and not recent_too):
                continue
            for index in range(unit.start, unit.stop):
                for call_id in self.results[index]:
                    if call_id in self.cut:
                        continue  # cut once already: cutting the cut text again would not be re-applied alike
                    length = len(fmt.result_text(self.current[index], call_id) or "")
                    if length > keep:
                        candidates.append((-length, index, call_id))
        for _, index, call_id in sorted(candidates):
            if self.total <= target:
                return
            if self._truncate_result(index, call_id):
                self.truncated.append(call_id)
                self.cut.add(call_id)

    def _graph_message(self, graph: TaskGraph | None, window: int) -> dict[str, Any] | None:
        """The task graph's block as a user message shaped like the conversation's, or None."""
        if graph is None:
            return None
        text = task_context_block(graph, math.floor(window * self.config.graph_share), self.counter)
        if text is None:
            return None
        reference = self.original[self.last_user] if self.last_user is not None else None
        return fmt.user_message_like(reference, text)

    def _output(self, block: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The kept messages in order, with the task graph's block where the original system puts it.

        That is right after the last user turn, between the question and the tool loop answering it, or just
        before the turn when nothing follows it yet (so the prompt still ends with the user's words). A turn
        that also carries tool results (Anthropic) keeps the block after it: results must open their message.
        """
        kept = [index for index in range(len(self.current)) if not self.dropped[self.unit_of[index]]]
        output = [_as_dict(self.current[index]) for index in kept]
        if block is None:
            return output
        if self.last_user is None:
            at = next((place for place, index in enumerate(kept) if not fmt.is_instruction(self.current[index])), 0)
        else:
            unit = self.units[self.unit_of[self.last_user]]
            before = kept[-1] == self.last_user and not self.results[self.last_user]
            at = kept.index(self.last_user) + (0 if before else unit.stop - self.last_user)
        output.insert(at, block)
        return output

    # ── the moves ────────────────────────────────────────────────────────────────────────────────────────

    def _set_result(self, index: int, call_id: str, text: str) -> bool:
        """Make the result of `call_id` in message `index` read `text`; False when it already did."""
        if fmt.result_text(self.current[index], call_id) == text:
            return False
        self.current[index] = fmt.with_result_text(self.current[index], call_id, text)
        tokens = self.counter.message_tokens(self.current[index])
        self.total += tokens - self.tokens[index]
        self.tokens[index] = tokens
        return True

    def _truncate_result(self, index: int, call_id: str) -> bool:
        """Cut the result of `call_id` to head and tail; False when that saves nothing."""
        text = fmt.result_text(self.current[index], call_id) or ""
        cut = truncated_text(
            text,
            self.entries.get(call_id),
            head_chars=self.config.truncate_head_chars,
            tail_chars=self.config.truncate_tail_chars,
        )
        return cut is not None and self._set_result(index, call_id, cut)

    def _drop(self, position: int, *, record: bool) -> int:
        """Drop a unit (recording its keys in the state when it is a new decision); return its message count."""
        self.dropped[position] = True
        if record:
            self.deleted.extend(self._keys(position))
        unit = self.units[position]
        self.total -= sum(self.tokens[unit.start : unit.stop])
        return unit.stop - unit.start

    # ── what may be done ─────────────────────────────────────────────────────────────────────────────────

    def _changeable(self, position: int) -> bool:
        """A unit still in the context that holds no instruction and not the last user turn."""
        return not self.dropped[position] and position not in self.frozen

    def _is_turn(self, index: int) -> bool:
        return fmt.has_user_text(self.original[index]) and self.unit_of[index] not in self.stale

    def _recent_units(self) -> set[int]:
        """The last kept units that hold at least `keep_recent_messages` messages between them."""
        recent: set[int] = set()
        held = 0
        for position in reversed(range(len(self.units))):
            if held >= self.config.keep_recent_messages:
                break
            if not self.dropped[position]:
                recent.add(position)
                held += self.units[position].stop - self.units[position].start
        return recent

    def _keys(self, position: int) -> list[str]:
        """How the state names a unit: its tool ids, or for a plain unit its position and content digest."""
        unit = self.units[position]
        if unit.has_tools:
            return list(dict.fromkeys(unit.call_ids + unit.result_ids))
        digests = b"".join(message_digest(message) for message in self.original[unit.start : unit.stop])
        return [f"{_PLAIN_KEY}:{unit.start}:{hashlib.blake2b(digests, digest_size=8).hexdigest()}"]


def _is_stale_context(message: Mapping[str, Any]) -> bool:
    """An earlier compaction's task-graph block, sent back with the history: replaced by the current one.

    The block is a user message of that text alone, or of one text part when the client turned it into parts.
    """
    if fmt.role(message) != "user":
        return False
    content = fmt.body(message).get("content")
    if isinstance(content, list) and len(content) == 1:
        content = content[0]
    return is_task_context(fmt.content_text(content)) if isinstance(content, str | Mapping) else False


def _plain_key_start(key: str) -> int | None:
    """The position a plain unit's key names (None for a tool id)."""
    kind, _, rest = key.partition(":")
    start = rest.partition(":")[0]
    return int(start) if kind == _PLAIN_KEY and start.isdigit() else None


def _as_dict(message: Mapping[str, Any]) -> dict[str, Any]:
    return message if isinstance(message, dict) else dict(message)


def _extended(earlier: tuple[str, ...], new: list[str]) -> tuple[str, ...]:
    """The earlier ids followed by the new ones, each once, in the order they were decided."""
    return tuple(dict.fromkeys((*earlier, *new)))
