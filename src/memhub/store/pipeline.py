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
from collections.abc import Sequence
from typing import Any

from memhub.model.pipeline import (
    Job,
    JobKind,
    JobScope,
    L1Batch,
    L1Outcome,
    PersonaDue,
    PipelineCounts,
    Replayed,
    SchedulePolicy,
)
from memhub.model.records import AtomicRecord
from memhub.scope import MemoryScope, ProfileScope


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
