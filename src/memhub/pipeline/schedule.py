"""When the pipeline's stages run: pure decisions over the counters and timestamps the store keeps.

The store persists (rounds since the last extraction, thresholds, due times, attempts); this module
decides. Nothing here reads a clock or a database: every rule takes the stored values and `now_ms`
and says what is due and when, so a store backend asks these rules and never re-implements them.

- L1 runs for a conversation after N user rounds (warm-up: after 1, then 2, 4 … rounds up to N),
  after it has been idle for a while, or at once when a flush asks for it.
- L2 runs for a profile a little after the L1 that changed its memories (so one L2 covers a burst),
  never sooner than a minimum interval after the last one, at once after a flush.
- L3 (the persona) runs after an L2 when asked for, when the profile has none yet, or after enough
  new or changed memories.
- A failed job is retried with doubling backoff, then dead-lettered; a dead-lettered L1 job holds
  its conversation until a newer message arrives or the job is replayed.
"""

from __future__ import annotations

from dataclasses import dataclass

from memhub.model.pipeline import JobKind, ProfileProgress, SessionsDue


@dataclass(frozen=True, slots=True)
class SessionProgress:
    """The stored L1 progress of one conversation, as far as its next L1 depends on it."""

    waiting: bool  # it has messages after its cursor
    held: bool  # its last L1 job was dead-lettered and no newer message arrived since
    pending_rounds: int  # user rounds since the last L1 job opened
    threshold: int  # the rounds it waits for, as `Schedule.next_threshold` last set it
    last_message_ms: int
    flush: bool  # a flush asked for it


@dataclass(frozen=True, slots=True)
class Schedule:
    """When L1 and L2 run (the original's defaults); the store asks it as its `SchedulePolicy`."""

    every_n_rounds: int = 5
    warmup: bool = True
    idle_ms: int = 600_000
    l2_delay_ms: int = 90_000
    l2_min_interval_ms: int = 900_000

    # -- L1 ------------------------------------------------------------------------------------
    def sessions_due(self, now_ms: int) -> SessionsDue:
        """The values the store selects due conversations with (the rule `session_due` states)."""
        # Without warm-up every conversation waits for N rounds; with it, for its own threshold (at most N,
        # also when N was lowered since the threshold was stored).
        floor = 1 if self.warmup else self.every_n_rounds
        return SessionsDue(min_rounds=floor, max_rounds=self.every_n_rounds, idle_before_ms=now_ms - self.idle_ms)

    def rounds_needed(self, threshold: int) -> int:
        """The user rounds a conversation with this stored threshold waits for before its next L1."""
        due = self.sessions_due(0)
        return max(min(threshold, due.max_rounds), due.min_rounds)

    def session_due(self, session: SessionProgress, now_ms: int) -> bool:
        """Whether a conversation gets an L1 job at `now_ms`."""
        if not session.waiting or session.held:
            return False
        idle = session.last_message_ms <= now_ms - self.idle_ms
        return session.flush or idle or session.pending_rounds >= self.rounds_needed(session.threshold)

    def next_threshold(self, threshold: int) -> int:
        """The rounds a conversation waits for after an L1 job opened for it at `threshold`."""
        if not self.warmup:
            return max(self.every_n_rounds, 1)
        return max(min(threshold * 2, self.every_n_rounds), 1)  # warm-up: 1, 2, 4 … up to N

    # -- L2 ------------------------------------------------------------------------------------
    def l2_due_ms(self, now_ms: int, progress: ProfileProgress) -> int:
        """When the profile's L2 runs, after an L1 commit at `now_ms` stored or revised memories of it."""
        due = now_ms + self.l2_delay_ms
        if progress.last_l2_ms is not None:
            due = max(due, progress.last_l2_ms + self.l2_min_interval_ms)
        if progress.persona_requested:  # a flush asked for scenes and persona now
            due = now_ms
        if progress.l2_due_ms is not None:  # an L2 already due sooner keeps its time
            due = min(due, progress.l2_due_ms)
        return due


def persona_due(progress: ProfileProgress, has_persona: bool, every: int) -> bool:
    """Whether an L3 job opens after an L2 run: asked for, no persona yet, or `every` memories changed since."""
    return progress.persona_requested or not has_persona or progress.memories_since_persona >= every


@dataclass(frozen=True, slots=True)
class Failure:
    """What happens to a job that failed."""

    retry_at_ms: int | None  # None: dead-lettered (visible, replayable)
    hold_session: bool = False  # a dead L1 job's conversation waits for a newer message or a replay


@dataclass(frozen=True, slots=True)
class Retry:
    """How failed jobs are retried."""

    max_attempts: int = 5  # then the job is dead-lettered
    backoff_ms: int = 2_000  # first retry delay; doubles per attempt
    max_backoff_ms: int = 300_000

    def delay_ms(self, attempts: int) -> int:
        """Backoff before the next attempt of a job that has run `attempts` times."""
        return min(self.backoff_ms * 2 ** max(attempts - 1, 0), self.max_backoff_ms)

    def after_failure(self, kind: JobKind, attempts: int, retryable: bool, now_ms: int) -> Failure:
        """Retry later, or dead-letter: a permanent error, or the attempts are used up."""
        if retryable and attempts < self.max_attempts:
            return Failure(now_ms + self.delay_ms(attempts))
        # Its messages stay unextracted, never skipped; without the hold the idle rule would open a job for
        # the same failing batch on every poll, forever.
        return Failure(None, hold_session=kind == "l1")
