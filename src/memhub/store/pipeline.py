"""The pipeline's store interface: durable jobs and the progress of every session and profile.

An L1 job's memories, its cursor advance and its completion commit in one transaction
(`commit_l1`), so a crash at any point either keeps all of them or none: a retried job never
writes a memory twice and never skips a message.

The store persists and never decides when work is due: thresholds, delays and the L2/L3 triggers
come from the pipeline (`memhub.pipeline.schedule`), as plain values or as a `SchedulePolicy` the
store asks inside the transaction that acts on the answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from memhub.scope import MemoryScope, ProfileScope
from memhub.store.records import AtomicRecord, MessageRecord, NewAtomic

JobKind = Literal["l1", "l2", "l3"]
JobState = Literal["pending", "running", "done", "dead"]


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of pipeline work on one target (a session for L1, one user's profile for L2/L3)."""

    seq: int
    service_id: str
    kind: JobKind
    target: str
    scope: dict[str, str]  # the isolation ids the job acts under
    state: JobState
    attempts: int
    run_after_ms: int
    last_error: str | None
    created_ms: int
    updated_ms: int
    lease_owner: str | None = None
    lease_expires_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SessionsDue:
    """Which conversations get an L1 job now, in plain values the pipeline's schedule computed.

    A conversation with messages after its cursor, and not held after a dead-lettered L1 job, is due
    when a flush asked for it, when its last message is at or before `idle_before_ms`, or when its
    rounds since the last extraction reach its stored threshold kept within [`min_rounds`, `max_rounds`].
    """

    min_rounds: int
    max_rounds: int
    idle_before_ms: int


@dataclass(frozen=True, slots=True)
class ProfileProgress:
    """The stored L2/L3 progress of one profile, which the schedule decides its next L2 and L3 from."""

    l2_due_ms: int | None  # when an L2 job opens (None: no L2 pending)
    last_l2_ms: int | None
    persona_requested: bool  # a flush asked for scenes and persona now
    memories_since_persona: int  # new or changed memories since the last L3


class SchedulePolicy(Protocol):
    """The pipeline's scheduling decisions, asked by the store inside the transaction that acts on them."""

    def sessions_due(self, now_ms: int) -> SessionsDue:
        """Which conversations are due at `now_ms`."""
        ...

    def next_threshold(self, threshold: int) -> int:
        """The rounds a conversation waits for after an L1 job opened for it at `threshold`."""
        ...

    def l2_due_ms(self, now_ms: int, progress: ProfileProgress) -> int:
        """When the profile's L2 runs, after an L1 commit at `now_ms` stored or revised memories of it."""
        ...


# Whether an L3 job opens after an L2 run: (the profile's progress, whether it has a persona yet).
PersonaDue = Callable[[ProfileProgress, bool], bool]


@dataclass(frozen=True, slots=True)
class L1Batch:
    """New messages of a session after its cursor, with older ones as background."""

    messages: list[tuple[int, MessageRecord]]  # (L0 rowid, message), oldest first
    background: list[MessageRecord]
    has_more: bool
    previous_scene: str | None = None  # the scene the session's last batch ended in


@dataclass(frozen=True, slots=True)
class Revision:
    """An existing memory replaced by a new version (update) or merged into another one."""

    target_id: str
    content: str
    type: str
    priority: int
    source_message_ids: tuple[str, ...]
    absorbed_ids: tuple[str, ...] = ()  # memories merged into the target, retired with it
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class L1Outcome:
    """What one L1 batch produced."""

    new: Sequence[NewAtomic] = ()
    revisions: Sequence[Revision] = ()
    skipped: int = 0
    last_scene: str | None = None  # where the batch ended, offered to the session's next extraction


@dataclass(frozen=True, slots=True)
class JobScope:
    """The jobs one caller may see: L1 jobs of its L0/L1 scopes' sessions, L2/L3 jobs of its profiles."""

    memory_keys: tuple[str, ...] = ()
    profile_keys: tuple[str, ...] = ()

    @classmethod
    def of(cls, memory: MemoryScope, profile: ProfileScope) -> JobScope:
        """The jobs of one L0/L1 scope and one L2/L3 profile."""
        return cls((memory.key,), (profile.key,))


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a replay did: how many jobs it re-queued, or the ids it could not find (then it changed nothing)."""

    count: int = 0
    missing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PipelineCounts:
    """Open work by stage, for /v2/pipeline/status."""

    queued: dict[str, list[str]] = field(default_factory=dict)  # kind -> targets
    running: dict[str, list[str]] = field(default_factory=dict)
    dead: dict[str, int] = field(default_factory=dict)
    waiting_sessions: int = 0  # sessions with messages not yet extracted and no open job


class PipelineStore(ABC):
    """Persistence of the pipeline."""

    # -- scheduling ------------------------------------------------------------------------
    @abstractmethod
    def schedule(self, now_ms: int, schedule: SchedulePolicy, limit: int = 100) -> int:
        """Open L1 jobs for the sessions `schedule.sessions_due(now_ms)` selects and L2 jobs for the profiles
        whose L2 due time has come; returns how many were opened.

        An opened session's rounds and flush request are reset and its threshold becomes
        `schedule.next_threshold(threshold)`; an opened profile's due time is cleared. A session held after a
        dead-lettered L1 job (see `fail`) is not due again until a message newer than the failure arrives or
        the dead job is replayed.
        """

    @abstractmethod
    def request_flush(self, scope: MemoryScope, session_id: str | None) -> int:
        """Make the scope's sessions (or one) due now, and their profile right after; returns sessions marked
        (a session held after a dead-lettered L1 job is not: see `schedule`)."""

    @abstractmethod
    def enqueue(self, service_id: str, kind: JobKind, target: str, scope: dict[str, str], run_after_ms: int) -> bool:
        """Open a job unless one is already open for the target; True when opened."""

    # -- jobs ----------------------------------------------------------------------------------
    @abstractmethod
    def claim(self, owner: str, now_ms: int, lease_ms: int, limit: int) -> list[Job]:
        """Lease due jobs (pending, or running with an expired lease) to `owner`, oldest first."""

    @abstractmethod
    def renew(self, job: Job, owner: str, until_ms: int) -> bool:
        """Extend a lease; False when the job is no longer this owner's."""

    @abstractmethod
    def finish(self, job: Job, owner: str, now_ms: int) -> bool:
        """Mark a leased job done."""

    @abstractmethod
    def fail(
        self, job: Job, owner: str, error: str, now_ms: int, retry_at_ms: int | None, hold_session: bool = False
    ) -> None:
        """Record a failure: retried at `retry_at_ms`, or dead-lettered when None.

        `hold_session` (an L1 job's): its session is held, not due again until a message newer than the
        failure arrives or the job is replayed (see `schedule`).
        """

    # `scope` narrows the next three to the jobs (and sessions) one caller may see; None: the whole tenant.
    @abstractmethod
    def jobs(self, service_id: str, states: Sequence[str], limit: int, scope: JobScope | None = None) -> list[Job]:
        """Jobs of a tenant in these states, newest first."""

    @abstractmethod
    def replay(self, service_id: str, seqs: Sequence[int], now_ms: int, scope: JobScope | None = None) -> Replayed:
        """Dead jobs back to pending with fresh attempts, releasing a held session (others are left alone, uncounted).

        All or nothing: when any seq is not a job of the tenant (within `scope`), nothing changes and
        the result names the missing ones.
        """

    @abstractmethod
    def counts(self, service_id: str, scope: JobScope | None = None) -> PipelineCounts:
        """Open work of a tenant."""

    # -- L1 ------------------------------------------------------------------------------------
    @abstractmethod
    def l1_batch(self, scope: MemoryScope, session_id: str, size: int, background: int) -> L1Batch:
        """The next messages to extract for a session."""

    @abstractmethod
    def commit_l1(
        self,
        job: Job,
        owner: str,
        scope: MemoryScope,
        session_id: str,
        cursor: int,
        outcome: L1Outcome,
        now_ms: int,
        schedule: SchedulePolicy,
        more: bool,
    ) -> list[AtomicRecord]:
        """Write the batch's memories, advance the cursor, finish the job and schedule L2, atomically.

        `more`: the session has further messages after this batch; a follow-up L1 job is opened.
        When memories were stored or revised, the profile's L2 becomes due at `schedule.l2_due_ms` and
        they count towards its next persona.

        Returns the stored new and revised memories. Raises LeaseLost when the job is no longer
        `owner`'s (another worker took it over): then nothing is written.
        """

    # -- L2 / L3 ---------------------------------------------------------------------------------
    @abstractmethod
    def profile_memories(self, profile: ProfileScope, limit: int) -> list[AtomicRecord]:
        """The current memories of the profile's user (every task under its team and agent), most important first.

        Never another user's: a profile is what one user's prompt receives.
        """

    @abstractmethod
    def changed_memories(self, profile: ProfileScope, limit: int) -> list[AtomicRecord]:
        """The profile's memories (as profile_memories) new or changed since its last L2 run (all of them before
        the first), oldest first."""

    @abstractmethod
    def after_l2(self, job: Job, owner: str, profile: ProfileScope, now_ms: int, persona_due: PersonaDue) -> bool:
        """Finish an L2 job and record the run; opens an L3 job when `persona_due` says so for the profile's
        progress. True when L3 was opened."""

    @abstractmethod
    def after_l3(self, job: Job, owner: str, profile: ProfileScope, now_ms: int) -> None:
        """Finish an L3 job and reset the persona counters."""

    # -- history --------------------------------------------------------------------------------
    @abstractmethod
    def atomic_history(self, service_id: str, atomic_id: str) -> list[dict[str, Any]]:
        """Retired versions of a memory and of the memories merged into it, oldest first."""


class LeaseLost(Exception):
    """Another worker owns the job now; this worker's results are discarded."""
