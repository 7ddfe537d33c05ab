"""The pipeline's scheduling rules on their own: plain numbers in, decisions out (no clock, no store)."""

from __future__ import annotations

import pytest

from memhub.model.pipeline import ProfileProgress, SessionsDue
from memhub.pipeline.config import PipelineConfig
from memhub.pipeline.schedule import Failure, Retry, Schedule, SessionProgress, persona_due

NOW = 10_000_000
MINUTE = 60_000


def session(
    rounds: int = 0,
    threshold: int = 1,
    last_ms: int = NOW,
    *,
    flush: bool = False,
    waiting: bool = True,
    held: bool = False,
) -> SessionProgress:
    return SessionProgress(
        waiting=waiting, held=held, pending_rounds=rounds, threshold=threshold, last_message_ms=last_ms, flush=flush
    )


def profile(
    due: int | None = None, last_l2: int | None = None, *, requested: bool = False, since: int = 0
) -> ProfileProgress:
    return ProfileProgress(l2_due_ms=due, last_l2_ms=last_l2, persona_requested=requested, memories_since_persona=since)


# -- L1 ----------------------------------------------------------------------------------------
def test_warm_up_extracts_after_one_then_two_four_rounds_up_to_every_n() -> None:
    schedule = Schedule(every_n_rounds=5)
    threshold, seen = 1, []
    for _ in range(5):
        seen.append(schedule.rounds_needed(threshold))
        threshold = schedule.next_threshold(threshold)
    assert seen == [1, 2, 4, 5, 5]


def test_without_warm_up_every_session_waits_for_every_n_rounds() -> None:
    schedule = Schedule(every_n_rounds=7, warmup=False)
    assert [schedule.rounds_needed(t) for t in (1, 2, 7, 20)] == [7, 7, 7, 7]
    assert [schedule.next_threshold(t) for t in (1, 4, 7)] == [7, 7, 7]


def test_a_threshold_stored_under_a_larger_n_is_capped_at_the_current_one() -> None:
    schedule = Schedule(every_n_rounds=3)
    assert schedule.rounds_needed(8) == 3
    assert schedule.next_threshold(8) == 3
    assert schedule.rounds_needed(0) == 1  # and never below one round
    assert Schedule(every_n_rounds=1).next_threshold(1) == 1


@pytest.mark.parametrize(
    ("progress", "due"),
    [
        (session(rounds=0), False),  # nothing counted yet, not idle
        (session(rounds=1), True),  # warm-up: the first round is enough
        (session(rounds=1, threshold=2), False),
        (session(rounds=2, threshold=2), True),
        (session(rounds=99, threshold=4, waiting=False), False),  # everything already extracted
        (session(flush=True), True),
        (session(last_ms=NOW - 10 * MINUTE), True),  # idle for exactly the idle time
        (session(last_ms=NOW - 10 * MINUTE + 1), False),
        (session(rounds=99, flush=True, last_ms=0, held=True), False),  # held after a dead L1 job: nothing opens it
    ],
)
def test_a_session_is_due_on_rounds_flush_or_idle_unless_held_or_extracted(
    progress: SessionProgress, due: bool
) -> None:
    assert Schedule(every_n_rounds=5, idle_ms=10 * MINUTE).session_due(progress, NOW) is due


def test_the_stores_query_values_state_the_same_rule() -> None:
    assert Schedule(every_n_rounds=5, idle_ms=MINUTE).sessions_due(NOW) == SessionsDue(1, 5, NOW - MINUTE)
    assert Schedule(every_n_rounds=5, warmup=False, idle_ms=MINUTE).sessions_due(NOW) == SessionsDue(5, 5, NOW - MINUTE)


# -- L2 ----------------------------------------------------------------------------------------
def test_l2_runs_a_delay_after_the_l1_that_changed_memories() -> None:
    schedule = Schedule(l2_delay_ms=90_000, l2_min_interval_ms=15 * MINUTE)
    assert schedule.l2_due_ms(NOW, profile()) == NOW + 90_000  # never ran before
    assert schedule.l2_due_ms(NOW, profile(last_l2=NOW - 60 * MINUTE)) == NOW + 90_000


def test_l2_never_runs_sooner_than_the_minimum_interval_after_the_last_one() -> None:
    schedule = Schedule(l2_delay_ms=90_000, l2_min_interval_ms=15 * MINUTE)
    assert schedule.l2_due_ms(NOW, profile(last_l2=NOW - MINUTE)) == NOW + 14 * MINUTE


def test_a_flush_makes_l2_due_now_and_an_earlier_due_time_is_kept() -> None:
    schedule = Schedule(l2_delay_ms=90_000, l2_min_interval_ms=15 * MINUTE)
    assert schedule.l2_due_ms(NOW, profile(last_l2=NOW - MINUTE, requested=True)) == NOW
    assert schedule.l2_due_ms(NOW, profile(due=NOW + 1_000)) == NOW + 1_000  # one L2 covers the burst
    assert schedule.l2_due_ms(NOW, profile(due=0, requested=True)) == 0
    assert schedule.l2_due_ms(NOW, profile(due=NOW + 60 * MINUTE)) == NOW + 90_000


# -- L3 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("progress", "has_persona", "due"),
    [
        (profile(since=0), False, True),  # no persona yet
        (profile(since=3), True, False),
        (profile(since=50), True, True),  # enough changed memories
        (profile(since=0, requested=True), True, True),  # a flush asked for it
    ],
)
def test_the_persona_is_due_when_asked_for_missing_or_after_enough_memories(
    progress: ProfileProgress, has_persona: bool, due: bool
) -> None:
    assert persona_due(progress, has_persona, every=50) is due


# -- failures ----------------------------------------------------------------------------------
def test_retries_back_off_doubling_up_to_the_cap() -> None:
    retry = Retry(max_attempts=10, backoff_ms=2_000, max_backoff_ms=20_000)
    assert [retry.delay_ms(a) for a in (0, 1, 2, 3, 4, 5)] == [2_000, 2_000, 4_000, 8_000, 16_000, 20_000]


def test_a_failed_job_is_retried_until_its_attempts_are_used_up_then_dead_lettered() -> None:
    retry = Retry(max_attempts=3, backoff_ms=1_000, max_backoff_ms=60_000)
    assert retry.after_failure("l1", 1, True, NOW) == Failure(NOW + 1_000)
    assert retry.after_failure("l2", 2, True, NOW) == Failure(NOW + 2_000)
    # Out of attempts, or a permanent error at once: dead; a dead L1 job holds its session.
    assert retry.after_failure("l1", 3, True, NOW) == Failure(None, hold_session=True)
    assert retry.after_failure("l1", 1, False, NOW) == Failure(None, hold_session=True)
    assert retry.after_failure("l2", 3, True, NOW) == Failure(None, hold_session=False)
    assert retry.after_failure("l3", 1, False, NOW) == Failure(None, hold_session=False)


def test_the_pipeline_config_retries_as_configured() -> None:
    config = PipelineConfig(max_attempts=2, backoff_ms=500, max_backoff_ms=700)
    assert config.retry == Retry(2, 500, 700)
    assert config.retry.after_failure("l1", 1, True, NOW) == Failure(NOW + 500)
