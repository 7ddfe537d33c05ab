"""The pipeline store acts on the pipeline's schedule and decides nothing itself (SQLite backend).

These hold for any backend: its query for due sessions agrees with `Schedule.session_due` on every
combination of stored counters, and the L2 due time, the L3 trigger and the dead-L1 hold are the
caller's answers, written as given.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhub.ids import atomic_id
from memhub.model import NewAtomic
from memhub.model.pipeline import Job, JobKind, L1Outcome, ProfileProgress
from memhub.pipeline.schedule import Schedule, SessionProgress
from memhub.scope import MemoryScope
from memhub.store.sqlite import SQLiteStore
from memhub.store.sqlite.pipeline import session_target

NOW = 50_000_000
IDLE = 600_000
A = MemoryScope("svc", "team", "alice", "agent", "")
OWNER = "worker-test"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path)
    yield s
    s.close()


def _insert_session(store: SQLiteStore, session_id: str, progress: SessionProgress, dead_rowid: int | None) -> None:
    last_rowid = 10
    with store._write() as con:
        con.execute(
            "INSERT INTO pipeline_sessions (scope_key, session_id, service_id, team_id, user_id, agent_id, task_id, "
            "l1_cursor, last_rowid, pending_rounds, threshold, last_message_ms, flush, l1_dead_rowid) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                A.key,
                session_id,
                A.service_id,
                A.team_id,
                A.user_id,
                A.agent_id,
                A.task_id,
                0 if progress.waiting else last_rowid,
                last_rowid,
                progress.pending_rounds,
                progress.threshold,
                progress.last_message_ms,
                int(progress.flush),
                dead_rowid,
            ),
        )


def _grid() -> Iterator[tuple[SessionProgress, int | None]]:
    """Every combination of stored counters around the boundaries, with how the hold is stored."""
    holds = {"none": (False, None), "held": (True, 10), "newer message": (False, 9)}
    for rounds, threshold, last_ms, flush, waiting, hold in itertools.product(
        range(7), (0, 1, 2, 4, 5, 8), (NOW - IDLE, NOW - IDLE + 1), (False, True), (False, True), holds
    ):
        held, dead_rowid = holds[hold]
        yield SessionProgress(waiting, held, rounds, threshold, last_ms, flush), dead_rowid


@pytest.mark.parametrize(
    "schedule",
    [Schedule(every_n_rounds=5, idle_ms=IDLE), Schedule(every_n_rounds=5, warmup=False, idle_ms=IDLE), Schedule(3)],
    ids=["warm-up", "no warm-up", "n=3"],
)
def test_the_store_opens_l1_exactly_for_the_sessions_the_schedule_calls_due(
    store: SQLiteStore, schedule: Schedule
) -> None:
    sessions: dict[str, SessionProgress] = {}
    for i, (progress, dead_rowid) in enumerate(_grid()):
        sessions[f"s{i}"] = progress
        _insert_session(store, f"s{i}", progress, dead_rowid)
    expected = {sid for sid, progress in sessions.items() if schedule.session_due(progress, NOW)}
    assert 0 < len(expected) < len(sessions)

    opened = store.pipeline.schedule(NOW, schedule, limit=len(sessions))

    con = store._reader()
    targets = {r[0] for r in con.execute("SELECT target FROM pipeline_jobs WHERE kind = 'l1'")}
    assert targets == {session_target(A.key, sid) for sid in expected}
    assert opened == len(expected)
    after = {
        r["session_id"]: (r["pending_rounds"], r["flush"], r["threshold"])
        for r in con.execute("SELECT * FROM pipeline_sessions")
    }
    for sid, progress in sessions.items():
        if sid in expected:  # counted from zero again, towards the threshold the schedule chose
            assert after[sid] == (0, 0, schedule.next_threshold(progress.threshold)), sid
        else:
            assert after[sid] == (progress.pending_rounds, int(progress.flush), progress.threshold), sid


def _leased(store: SQLiteStore, kind: JobKind, target: str, scope: dict[str, str]) -> Job:
    assert store.pipeline.enqueue(A.service_id, kind, target, scope, NOW)
    (job,) = store.pipeline.claim(OWNER, NOW, 60_000, 1)
    return job


def _set_profile(store: SQLiteStore, progress: ProfileProgress) -> None:
    p = A.profile
    with store._write() as con:
        con.execute(
            "INSERT INTO pipeline_profiles (profile_key, service_id, team_id, agent_id, user_id, l2_due_ms, "
            "last_l2_ms, memories_since_persona, persona_requested) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.key,
                p.service_id,
                p.team_id,
                p.agent_id,
                p.user_id,
                progress.l2_due_ms,
                progress.last_l2_ms,
                progress.memories_since_persona,
                int(progress.persona_requested),
            ),
        )


@pytest.mark.parametrize(
    "before",
    [
        ProfileProgress(None, None, False, 0),
        ProfileProgress(None, NOW - 60_000, False, 3),
        ProfileProgress(NOW + 5_000, NOW - 60_000, False, 3),
        ProfileProgress(0, NOW - 60_000, True, 7),
    ],
    ids=["first", "recent l2", "already due", "flushed"],
)
def test_an_l1_commit_sets_the_l2_due_time_the_schedule_computes_from_the_stored_progress(
    store: SQLiteStore, before: ProfileProgress
) -> None:
    schedule = Schedule(l2_delay_ms=90_000, l2_min_interval_ms=900_000)
    _set_profile(store, before)
    scope = {k: getattr(A, k) for k in ("service_id", "team_id", "user_id", "agent_id", "task_id")}
    job = _leased(store, "l1", session_target(A.key, "s1"), {**scope, "session_id": "s1"})
    new = [NewAtomic(atomic_id(), "persona", f"fact {i}", 50, None, "s1", NOW) for i in range(2)]

    store.pipeline.commit_l1(job, OWNER, A, "s1", 0, L1Outcome(new=new), NOW, schedule, False)

    row = store._reader().execute("SELECT * FROM pipeline_profiles WHERE profile_key = ?", (A.profile.key,)).fetchone()
    assert row["l2_due_ms"] == schedule.l2_due_ms(NOW, before)
    assert row["memories_since_persona"] == before.memories_since_persona + 2


@pytest.mark.parametrize("decision", [True, False])
def test_after_l2_the_callers_persona_rule_alone_decides_whether_l3_opens(store: SQLiteStore, decision: bool) -> None:
    _set_profile(store, ProfileProgress(None, None, True, 4))
    profile = A.profile
    scope = {"service_id": profile.service_id, "team_id": profile.team_id, "agent_id": "agent", "user_id": "alice"}
    job = _leased(store, "l2", profile.key, scope)
    asked: list[tuple[ProfileProgress, bool]] = []

    def rule(progress: ProfileProgress, has_persona: bool) -> bool:
        asked.append((progress, has_persona))
        return decision

    assert store.pipeline.after_l2(job, OWNER, profile, NOW, rule) is decision

    # The rule saw the progress as stored after this run, and that the profile has no persona yet.
    assert asked == [(ProfileProgress(None, NOW, True, 4), False)]
    l3 = store._reader().execute("SELECT COUNT(*) FROM pipeline_jobs WHERE kind = 'l3'").fetchone()[0]
    assert l3 == int(decision)


@pytest.mark.parametrize("hold", [True, False])
def test_a_dead_l1_job_holds_its_session_only_when_the_caller_says_so(store: SQLiteStore, hold: bool) -> None:
    idle = SessionProgress(True, False, 0, 5, NOW - IDLE, False)  # due by the idle rule on every poll
    _insert_session(store, "s1", idle, None)
    schedule = Schedule(idle_ms=IDLE)
    assert store.pipeline.schedule(NOW, schedule) == 1
    (job,) = store.pipeline.claim(OWNER, NOW, 60_000, 1)

    store.pipeline.fail(job, OWNER, "boom", NOW, None, hold)

    assert store.pipeline.schedule(NOW + 1, schedule) == (0 if hold else 1)
