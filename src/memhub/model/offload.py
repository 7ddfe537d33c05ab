"""Context offload's vocabulary: tool pairs an agent ran, their summaries, task graphs and compaction state.

A long agent run is mostly tool output it read once. Offload keeps each tool pair's full result on the server,
a short summary that can stand in for it, and a Mermaid task graph per task; compaction then swaps results for
summaries (and, past harder thresholds, drops the oldest turns) while the graph keeps the thread of the work.

Plain data only. The stages that make summaries and graphs are in `memhub.offload`; the store persists them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

# The original's limits: a summary is one line an agent can read at a glance; a graph node's text is shorter.
SUMMARY_MAX_CHARS = 200
NODE_SUMMARY_MAX_CHARS = 150
SCORE_MIN, SCORE_MAX = 0, 10

NodeStatus = Literal["done", "doing", "paused", "blocked"]
NODE_STATUSES: tuple[NodeStatus, ...] = ("done", "doing", "paused", "blocked")
CompactionLevel = Literal["fastpath", "mild", "aggressive", "emergency"]


@dataclass(frozen=True, slots=True)
class ToolPair:
    """One tool call and its result, as the agent ran it (`params` and `result` are any JSON)."""

    tool_name: str
    tool_call_id: str
    params: Any
    result: Any
    timestamp: str
    error: str | None = None
    duration_ms: float | None = None


@dataclass(frozen=True, slots=True)
class RecentTurn:
    """A user or assistant text turn sent with an ingest, read as context by the stages."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class PairSummary:
    """What the summary stage (L1) makes of one tool pair.

    `score` is replaceability, 0–10: how safely the summary can stand in for the full result in a prompt
    (10: the summary says all a later step needs; 0: the result must stay whole).
    """

    tool_call_id: str
    tool_call: str  # a short rendering of the call: its tool and the parameters that identify it
    summary: str  # at most SUMMARY_MAX_CHARS
    score: int
    timestamp: str
    outline: str | None = None  # a file read's definitions by line ("" for a read that defines nothing)


@dataclass(frozen=True, slots=True)
class OffloadEntry:
    """A summarised tool pair as stored: its summary, the task-graph node it belongs to, and where its result is."""

    tool_call_id: str
    tool_call: str
    summary: str
    score: int
    timestamp: str
    result_ref: str  # read back in full with the read-ref route
    node_id: str | None = None
    outline: str | None = None  # a file read's definitions by line; None: not made (a pair summarised before)


@dataclass(frozen=True, slots=True)
class TaskJudgment:
    """What the task stage (L1.5) decides when a new user prompt arrives."""

    task_completed: bool  # the task before this prompt is finished
    is_long_task: bool  # the new work is worth a task graph
    is_continuation: bool  # the prompt continues an existing graph ...
    continuation_graph: str | None = None  # ... this one (a graph filename)
    new_task_label: str | None = None  # the label of a new task's graph


@dataclass(frozen=True, slots=True)
class TaskGraph:
    """One task's Mermaid `flowchart TD`, by filename within its session."""

    filename: str
    content: str
    updated_ms: int

    @property
    def version(self) -> str:
        """The original's version: the first 12 hex digits of the content's MD5 ("" for no content)."""
        return hashlib.md5(self.content.encode("utf-8")).hexdigest()[:12] if self.content else ""


@dataclass(frozen=True, slots=True)
class GraphUpdate:
    """What the graph stage (L2) writes: the graph's new content and the node each entry now belongs to."""

    filename: str
    content: str
    node_of: dict[str, str] = field(default_factory=dict)  # tool_call_id -> node id


@dataclass(frozen=True, slots=True)
class CompactState:
    """What a session's earlier compactions decided, re-applied first so that compaction is stable.

    `replaced`: tool results swapped for their summaries; `truncated`: tool results cut to their head and tail
    (both by tool_call_id); `deleted`: units dropped, by the tool_call_ids they held, or for a unit without
    tool calls by `msg:<position>:<digest>` (its position in the messages and a digest of its content).
    """

    replaced: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    last_compacted_ms: int = 0
    truncated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactReport:
    """Every field of the original's report, in its names (camelCase on the wire)."""

    resolved_level: CompactionLevel
    original_count: int
    compacted_count: int
    fast_path_replaced: int = 0
    fast_path_deleted: int = 0
    mild_replacements: int = 0
    aggressive_deleted: int = 0
    emergency_deleted: int = 0
    mmd_injected: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class OffloadSession:
    """Whose offload state this is: one session of one user under one team and agent, nobody else's.

    The session id is kept exactly as sent: `a:b` and `a_b` are two sessions (the original maps both to one
    directory on disk).
    """

    service_id: str
    team_id: str
    agent_id: str
    user_id: str
    session_id: str

    def job_scope(self) -> dict[str, str]:
        return {
            "service_id": self.service_id,
            "team_id": self.team_id,
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
        }

    @classmethod
    def from_job_scope(cls, scope: dict[str, str]) -> OffloadSession:
        return cls(scope["service_id"], scope["team_id"], scope["agent_id"], scope["user_id"], scope["session_id"])

    @property
    def job_target(self) -> str:
        """One pipeline job per stage and session: the job table's target for this session."""
        return json.dumps([self.team_id, self.agent_id, self.user_id, self.session_id], ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class StoredPair:
    """An ingested pair: where its full result is read back (`ref`), and the prompt whose task it belongs to."""

    seq: int
    pair: ToolPair
    ref: str
    prompt_seq: int  # 0: ingested before any prompt
    created_ms: int


@dataclass(frozen=True, slots=True)
class QueuedPrompt:
    """A user prompt waiting for the task stage, with the turns sent beside it."""

    seq: int
    prompt: str
    recent: tuple[RecentTurn, ...]
    created_ms: int


@dataclass(frozen=True, slots=True)
class TaskDecision:
    """The task stage's answer for one prompt: its judgment and the graph its work goes to."""

    prompt_seq: int
    judgment: TaskJudgment
    graph: str  # a graph filename: the continued one, or a new one for a new task
    label: str  # the task's label (the graph's goal when it is new)
    closed: tuple[tuple[str, NodeStatus], ...] = ()  # graphs the prompt ends or leaves, with their new status


@dataclass(frozen=True, slots=True)
class MappableEntry:
    """A summarised entry not yet on a graph, with the graph and task label it goes to."""

    entry: OffloadEntry
    graph: str
    label: str


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What an ingest stored: new pairs, pairs already stored as sent (a replay), and whether a prompt was queued."""

    accepted: int
    duplicates: int
    prompt_queued: bool


@dataclass(frozen=True, slots=True)
class OffloadTriggers:
    """When the stages run, as the original: summaries at 4 pending pairs or 30 s after the oldest; the graph
    1 s after 6 entries wait for it, or 30 s after the oldest of fewer."""

    summary_batch: int = 4
    summary_max_age_ms: int = 30_000
    graph_batch: int = 6
    graph_delay_ms: int = 1_000
    graph_max_age_ms: int = 30_000
    max_pairs_per_job: int = 20  # the original client's batch; a longer backlog takes follow-up jobs


@dataclass(frozen=True, slots=True)
class SessionOffload:
    """A session's offload state as compaction reads it."""

    active_graph: str | None
    compact: CompactState
