"""The offload store interface: a session's tool pairs with their full results, its prompts, graphs and state.

Every read and write names an `OffloadSession` (service, team, agent, user, session): one user's session state
is never reachable through another's key. Each stage's output, the job that produced it, and the jobs it makes
due commit in one transaction, so a crash never loses a pair or summarises one twice.

The store persists and never decides when work is due: the thresholds come in as `OffloadTriggers`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from memhub.model.offload import (
    CompactState,
    GraphUpdate,
    IngestResult,
    MappableEntry,
    OffloadEntry,
    OffloadSession,
    OffloadTriggers,
    PairSummary,
    QueuedPrompt,
    RecentTurn,
    SessionOffload,
    StoredPair,
    TaskDecision,
    TaskGraph,
    ToolPair,
)
from memhub.model.pipeline import Job

SUMMARY_JOB = "offload-summary"
TASK_JOB = "offload-task"
GRAPH_JOB = "offload-graph"
OFFLOAD_JOBS = (SUMMARY_JOB, TASK_JOB, GRAPH_JOB)


class PairConflict(Exception):
    """A tool_call_id already stored in the session with a different call or result."""

    def __init__(self, index: int, tool_call_id: str) -> None:
        super().__init__(f"tool_pairs[{index}].tool_call_id {tool_call_id!r} is already stored with other content")
        self.index = index
        self.tool_call_id = tool_call_id


class OffloadStore(ABC):
    """Persistence of context offload."""

    @abstractmethod
    def ingest(
        self,
        session: OffloadSession,
        pairs: Sequence[tuple[ToolPair, str, str]],
        prompt: tuple[str, Sequence[RecentTurn]] | None,
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> IngestResult:
        """Store the pairs (each with its content hash and result reference) and queue the prompt, atomically.

        A pair whose tool_call_id is stored with the same hash is a replay and counted as a duplicate; with
        another hash the whole ingest is refused (PairConflict) and nothing is written. The summary job is made
        due now at `summary_batch` pending pairs, else `summary_max_age_ms` after the oldest; a queued prompt
        makes the task job due now.
        """

    # -- L1: summaries ---------------------------------------------------------------------------
    @abstractmethod
    def pending_pairs(self, session: OffloadSession, limit: int) -> list[StoredPair]:
        """Pairs without a summary, oldest first."""

    @abstractmethod
    def commit_summaries(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        summaries: Sequence[PairSummary],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        """Write the summaries, finish the job, open a follow-up for pairs still pending and make the graph job due.

        Raises LeaseLost (writing nothing) when the job is no longer `owner`'s.
        """

    # -- L1.5: tasks -----------------------------------------------------------------------------
    @abstractmethod
    def pending_prompts(self, session: OffloadSession, limit: int) -> list[QueuedPrompt]:
        """Prompts not yet judged, oldest first."""

    @abstractmethod
    def commit_decisions(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        decisions: Sequence[TaskDecision],
        rewritten: Sequence[tuple[str, str]],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        """Record the decisions (the last one's graph becomes the active one), write `rewritten` — graphs whose
        content changed because a task ended or was left, as (filename, content) — finish the job, open a
        follow-up for prompts still pending and make the graph job due for entries these decisions placed."""

    # -- L2: graphs ------------------------------------------------------------------------------
    @abstractmethod
    def mappable_entries(self, session: OffloadSession, limit: int) -> list[MappableEntry]:
        """Summarised entries not yet on a graph whose task is known, oldest first."""

    @abstractmethod
    def commit_graphs(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        updates: Sequence[GraphUpdate],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        """Write the graphs and each entry's node, finish the job and open a follow-up for entries still waiting."""

    # -- reads -----------------------------------------------------------------------------------
    @abstractmethod
    def entries(self, session: OffloadSession) -> list[OffloadEntry]:
        """The session's summarised entries, oldest first."""

    @abstractmethod
    def graphs(self, session: OffloadSession) -> list[TaskGraph]:
        """The session's task graphs, by filename."""

    @abstractmethod
    def graph_labels(self, session: OffloadSession) -> dict[str, str]:
        """Each graph's task label, by filename (graphs decided on but not yet drawn included)."""

    @abstractmethod
    def state(self, session: OffloadSession) -> SessionOffload:
        """The active graph and the compaction decisions so far."""

    @abstractmethod
    def save_compact_state(self, session: OffloadSession, state: CompactState) -> None:
        """Remember what compaction replaced and dropped, for the next compaction of the session."""

    @abstractmethod
    def result(self, session: OffloadSession, ref: str) -> StoredPair | None:
        """The pair whose full result `ref` names, within this session only."""

    @abstractmethod
    def counts(self, service_id: str) -> dict[str, int]:
        """Open offload work of a tenant: pairs awaiting a summary, prompts awaiting a judgment, entries awaiting
        a graph."""
