"""Context offload in domain terms: ingest tool pairs and prompts, compact a context, read graphs and results back.

Ingest only stores and queues: the summary (L1), task (L1.5) and graph (L2) stages run later on the pipeline's
durable jobs (`run_job`), so an agent's turn never waits for a model. `compact` is synchronous and uses no
model: it reads what the stages have made so far, and what earlier compactions decided, so that a session's
compaction is stable from turn to turn.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from memhub.errors import Conflict, NotFound, StorageBusy
from memhub.model.offload import (
    GraphUpdate,
    IngestResult,
    MappableEntry,
    OffloadSession,
    OffloadTriggers,
    RecentTurn,
    TaskDecision,
    TaskGraph,
    ToolPair,
)
from memhub.model.pipeline import Job
from memhub.offload.compact import CompactConfig, Compaction, compact
from memhub.offload.graph import digest, filename_for, finish_graph, pause_graph
from memhub.offload.replacement import file_outline
from memhub.offload.results import result_text
from memhub.offload.stages import OffloadStages
from memhub.offload.tokens import count_tokens, truncate_tokens
from memhub.store import MemoryStore
from memhub.store.offload import GRAPH_JOB, SUMMARY_JOB, TASK_JOB, PairConflict
from memhub.timeutil import now_ms

# A tool_call_id that is already a safe file stem is its reference's name; any other is named by its digest.
_SAFE_STEM = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
MAX_PROMPTS_PER_JOB = 20
MAX_ENTRIES_PER_GRAPH_JOB = 200
# read-ref: the original's default and hard cap on what one read returns.
READ_REF_DEFAULT_TOKENS = 1600
READ_REF_MAX_TOKENS = 4096


def result_ref(session_id: str, tool_call_id: str) -> str:
    """Where a pair's full result is read back: `offload/<session>/refs/<name>.md`, as the original names it."""
    stem = tool_call_id if _SAFE_STEM.match(tool_call_id) and ".." not in tool_call_id else None
    name = stem or "h-" + hashlib.sha256(tool_call_id.encode("utf-8")).hexdigest()[:24]
    return f"offload/{session_id}/refs/{name}.md"


def pair_digest(pair: ToolPair) -> str:
    """Tells a replay of the same pair from a different pair under a reused tool_call_id.

    The call and its result only: a client that sends a pair again stamps it again (the proxy sees each pair in
    every later request of the session), and that is still the same pair.
    """
    canonical = json.dumps(
        [pair.tool_name, pair.params, pair.result, pair.error],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class RefSlice:
    """What one read of an offloaded result returns."""

    result_ref: str
    content: str
    truncated: bool
    match_found: bool | None = None  # only when a query was given


class OffloadService:
    """One gateway's offload: its store, its stages (offline or LLM) and when they run."""

    def __init__(
        self,
        store: MemoryStore,
        stages: OffloadStages,
        *,
        triggers: OffloadTriggers | None = None,
        config: CompactConfig | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.store = store
        self.stages = stages
        self.triggers = triggers or OffloadTriggers()
        self.config = config or CompactConfig()
        self.clock = clock

    # -- ingest ----------------------------------------------------------------------------------
    def ingest(
        self, session: OffloadSession, pairs: Sequence[ToolPair], prompt: str | None, recent: Sequence[RecentTurn]
    ) -> IngestResult:
        """Store the pairs with their full results and queue the prompt for the task stage."""
        rows = [(p, pair_digest(p), result_ref(session.session_id, p.tool_call_id)) for p in pairs]
        queued = (prompt, tuple(recent)) if prompt is not None else None
        try:
            return self.store.offload.ingest(session, rows, queued, self.clock(), self.triggers)
        except PairConflict as exc:
            # The request is well formed; it conflicts with what the session holds (409, as a write conflict is).
            field = f"tool_pairs[{exc.index}].tool_call_id"
            rule = "is already stored in this session with a different call or result; send a new tool_call_id"
            raise Conflict(f"{field}: {rule}", data={"errors": [{"field": field, "rule": rule}]}) from exc
        except StorageBusy as exc:
            raise Conflict("Concurrent write conflict, please retry", data={"retryable": True}) from exc

    # -- compact ---------------------------------------------------------------------------------
    def compact(
        self,
        session: OffloadSession,
        messages: Sequence[dict[str, object]],
        *,
        context_window: int,
        total_tokens: int,
        message_tokens: Sequence[int] | None = None,
    ) -> Compaction:
        """The messages compacted to the level their tokens call for, the session's earlier decisions re-applied."""
        offload = self.store.offload
        entries = {e.tool_call_id: e for e in offload.entries(session)}
        state = offload.state(session)
        graph = next((g for g in offload.graphs(session) if g.filename == state.active_graph), None)
        result = compact(
            list(messages),
            entries,
            state.compact,
            graph,
            context_window=context_window,
            total_tokens=total_tokens,
            message_tokens=message_tokens,
            config=self.config,
            now_ms=self.clock(),
        )
        if replace(result.state, last_compacted_ms=0) != replace(state.compact, last_compacted_ms=0):
            try:
                offload.save_compact_state(session, result.state)
            except StorageBusy as exc:
                raise Conflict("Concurrent write conflict, please retry", data={"retryable": True}) from exc
        return result

    # -- reads -----------------------------------------------------------------------------------
    def task_graphs(self, session: OffloadSession, limit: int | None) -> tuple[list[TaskGraph], str | None]:
        """The session's graphs (only the active one when `limit` is 1, as the original) and the active graph."""
        active = self.store.offload.state(session).active_graph
        graphs = self.store.offload.graphs(session)
        if limit == 1 and active is not None:
            chosen = [g for g in graphs if g.filename == active]
            return chosen or [TaskGraph(active, "", 0)], active
        return (graphs[:limit] if limit else graphs), active

    def summarised(self, session: OffloadSession) -> set[str]:
        """The tool_call_ids of the session's pairs the summary stage has done."""
        return {entry.tool_call_id for entry in self.store.offload.entries(session)}

    def read_ref(
        self,
        session: OffloadSession,
        ref: str,
        *,
        query: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        max_tokens: int = READ_REF_DEFAULT_TOKENS,
    ) -> RefSlice:
        """An offloaded result in full (or the lines or the passage asked for), within `max_tokens`."""
        stored = self.store.offload.result(session, ref)
        if stored is None:
            raise NotFound(f"result_ref {ref!r} is not a result of this session")
        text = result_text(stored.pair.result, stored.pair.error)
        if query is not None:
            at = text.casefold().find(query.casefold())
            if at < 0:
                return RefSlice(ref, "", False, match_found=False)
            content, cut = _around(text, at, len(query), max_tokens)
            return RefSlice(ref, content, cut, match_found=True)
        lines = text.splitlines()
        first = min((start_line or 1) - 1, len(lines))
        last = min(end_line or len(lines), len(lines))
        selected = "\n".join(lines[first:last])
        content = truncate_tokens(selected, max_tokens)
        return RefSlice(ref, content, content != selected or first > 0 or last < len(lines))

    # -- the stages, as pipeline jobs ----------------------------------------------------------------
    def job_handlers(self) -> dict[str, Callable[[Job, str], None]]:
        """The pipeline's handlers for the offload job kinds."""
        return {SUMMARY_JOB: self.run_summaries, TASK_JOB: self.run_tasks, GRAPH_JOB: self.run_graphs}

    def run_summaries(self, job: Job, owner: str) -> None:
        session = OffloadSession.from_job_scope(job.scope)
        pending = self.store.offload.pending_pairs(session, self.triggers.max_pairs_per_job)
        summaries = self.stages.summarizer.summarize([p.pair for p in pending], ()) if pending else []
        # A file read's outline goes into its stand-in at every compaction: made once here, off the request path.
        pairs = {p.pair.tool_call_id: p.pair for p in pending}
        summaries = [
            replace(s, outline=file_outline(pair.tool_name, pair.params, result_text(pair.result)))
            if (pair := pairs.get(s.tool_call_id)) is not None
            else s
            for s in summaries
        ]
        self.store.offload.commit_summaries(job, owner, session, summaries, self.clock(), self.triggers)

    def run_tasks(self, job: Job, owner: str) -> None:
        session = OffloadSession.from_job_scope(job.scope)
        offload = self.store.offload
        graphs = {g.filename: g for g in offload.graphs(session)}
        labels = offload.graph_labels(session)
        active = offload.state(session).active_graph
        decisions: list[TaskDecision] = []
        closed: dict[str, Literal["done", "paused"]] = {}
        for queued in offload.pending_prompts(session, MAX_PROMPTS_PER_JOB):
            digests = [digest(g) for g in graphs.values()]
            judgment = self.stages.judge.judge(queued.prompt, queued.recent, digests, active)
            known = set(graphs) | set(labels)
            if judgment.is_continuation and (judgment.continuation_graph or active) in known:
                target = judgment.continuation_graph or active
                assert target is not None
                label = labels.get(target) or target.removesuffix(".mmd")
            else:
                label = (judgment.new_task_label or queued.prompt).strip()[:80] or "task"
                target = filename_for(label, sorted(known))
            if active is not None and active != target:
                closed[active] = "done" if judgment.task_completed else "paused"
            closed.pop(target, None)
            labels[target] = label
            decisions.append(TaskDecision(queued.seq, judgment, target, label))
            active = target
        stamp = self.clock()
        settle = {"done": finish_graph, "paused": pause_graph}
        rewritten = [
            (name, settle[status](graphs[name], stamp).content) for name, status in closed.items() if name in graphs
        ]
        offload.commit_decisions(job, owner, session, decisions, rewritten, stamp, self.triggers)

    def run_graphs(self, job: Job, owner: str) -> None:
        session = OffloadSession.from_job_scope(job.scope)
        offload = self.store.offload
        graphs = {g.filename: g for g in offload.graphs(session)}
        by_graph: dict[str, list[MappableEntry]] = {}
        for item in offload.mappable_entries(session, MAX_ENTRIES_PER_GRAPH_JOB):
            by_graph.setdefault(item.graph, []).append(item)
        updates: list[GraphUpdate] = []
        for filename, items in by_graph.items():
            update = self.stages.graph.update(graphs.get(filename), items[0].label, [i.entry for i in items])
            # The store names the graph; a builder that renamed it would orphan its entries.
            updates.append(GraphUpdate(filename, update.content, update.node_of))
        offload.commit_graphs(job, owner, session, updates, self.clock(), self.triggers)


def _around(text: str, at: int, length: int, max_tokens: int) -> tuple[str, bool]:
    """The widest window centred on text[at:at+length] that fits `max_tokens`; whether anything was left out."""
    if count_tokens(text) <= max_tokens:
        return text, False
    low, high = 0, max(at, len(text) - at - length)
    best = (at, at + length)
    while low <= high:
        radius = (low + high) // 2
        start, end = max(0, at - radius), min(len(text), at + length + radius)
        if count_tokens(text[start:end]) <= max_tokens:
            best, low = (start, end), radius + 1
        else:
            high = radius - 1
    start, end = best
    window = text[start:end]
    if count_tokens(window) > max_tokens:  # the match alone is longer than the budget
        window = truncate_tokens(window, max_tokens)
    return window, start > 0 or end < len(text)
