"""The memory pipeline's records: jobs, what is due, batches and outcomes, as the store and the pipeline pass them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from memhub.model.records import MessageRecord, NewAtomic
from memhub.scope import MemoryScope, ProfileScope

# `skill`: mine one archive of agent work for skills (target: the archive id).
JobKind = Literal["l1", "l2", "l3", "skill", "offload-summary", "offload-task", "offload-graph"]
JobState = Literal["pending", "running", "done", "dead"]


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of pipeline work on one target (a session for L1, one user's profile for L2/L3, an archive
    of agent work for `skill`)."""

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


class LeaseLost(Exception):
    """Another worker owns the job now; this worker's results are discarded."""
