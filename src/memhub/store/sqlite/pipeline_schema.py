"""Tables of the memory pipeline: durable jobs, per-session and per-profile progress, L1 history,
the generation log and custom memory prompts (migration 4)."""

from __future__ import annotations

import sqlite3

PIPELINE_TABLES = """
    -- Every retired version of an L1 memory: updates and merges never overwrite in place.
    CREATE TABLE l1_history (
        seq              INTEGER PRIMARY KEY,
        id               TEXT NOT NULL,
        service_id       TEXT NOT NULL,
        scope_key        TEXT NOT NULL,
        version          INTEGER NOT NULL,
        type             TEXT NOT NULL,
        content          TEXT NOT NULL,
        priority         INTEGER NOT NULL,
        scene_name       TEXT,
        source_ids_json  TEXT NOT NULL,
        metadata_json    TEXT,
        valid_from_ms    INTEGER NOT NULL,
        valid_to_ms      INTEGER NOT NULL,
        superseded_by    TEXT NOT NULL,
        reason           TEXT NOT NULL
    );
    CREATE INDEX l1_history_by_id ON l1_history (service_id, id, version);
    CREATE INDEX l1_history_by_successor ON l1_history (service_id, superseded_by);

    -- L1 progress of one conversation: what was extracted (cursor = an L0 rowid) and what waits.
    CREATE TABLE pipeline_sessions (
        scope_key        TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        service_id       TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        user_id          TEXT NOT NULL,
        agent_id         TEXT NOT NULL,
        task_id          TEXT NOT NULL,
        l1_cursor        INTEGER NOT NULL DEFAULT 0,
        last_rowid       INTEGER NOT NULL DEFAULT 0,
        pending_rounds   INTEGER NOT NULL DEFAULT 0,
        threshold        INTEGER NOT NULL DEFAULT 1,
        last_message_ms  INTEGER NOT NULL,
        flush            INTEGER NOT NULL DEFAULT 0,
        last_l1_ms       INTEGER,
        last_scene       TEXT,
        PRIMARY KEY (scope_key, session_id)
    ) WITHOUT ROWID;
    CREATE INDEX pipeline_sessions_waiting ON pipeline_sessions (last_message_ms) WHERE last_rowid > l1_cursor;

    -- L2/L3 progress of one profile (one user's of a team and agent since migration 11).
    CREATE TABLE pipeline_profiles (
        profile_key             TEXT PRIMARY KEY,
        service_id              TEXT NOT NULL,
        team_id                 TEXT NOT NULL,
        agent_id                TEXT NOT NULL,
        l2_due_ms               INTEGER,
        last_l2_ms              INTEGER,
        memories_since_persona  INTEGER NOT NULL DEFAULT 0,
        persona_requested       INTEGER NOT NULL DEFAULT 0,
        last_l3_ms              INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX pipeline_profiles_due ON pipeline_profiles (l2_due_ms) WHERE l2_due_ms IS NOT NULL;

    -- Durable jobs: claimed under a lease, retried with backoff, dead-lettered after max attempts.
    CREATE TABLE pipeline_jobs (
        seq               INTEGER PRIMARY KEY,
        service_id        TEXT NOT NULL,
        kind              TEXT NOT NULL,
        target            TEXT NOT NULL,
        scope_json        TEXT NOT NULL,
        state             TEXT NOT NULL,
        attempts          INTEGER NOT NULL DEFAULT 0,
        run_after_ms      INTEGER NOT NULL,
        lease_owner       TEXT,
        lease_expires_ms  INTEGER,
        last_error        TEXT,
        created_ms        INTEGER NOT NULL,
        updated_ms        INTEGER NOT NULL,
        finished_ms       INTEGER
    );
    CREATE UNIQUE INDEX pipeline_jobs_one_open ON pipeline_jobs (kind, target) WHERE state IN ('pending', 'running');
    CREATE INDEX pipeline_jobs_by_state ON pipeline_jobs (state, run_after_ms);
    CREATE INDEX pipeline_jobs_by_service ON pipeline_jobs (service_id, state);

    -- What each generation consumed and produced (the original's "memory generation log").
    CREATE TABLE generation_log (
        seq              INTEGER PRIMARY KEY,
        log_id           TEXT NOT NULL UNIQUE,
        service_id       TEXT NOT NULL,
        layer            TEXT NOT NULL,
        status           TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        agent_id         TEXT NOT NULL,
        user_id          TEXT NOT NULL,
        task_id          TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        prompt_json      TEXT,
        input_refs_json  TEXT NOT NULL,
        output_refs_json TEXT NOT NULL,
        model            TEXT NOT NULL,
        latency_ms       INTEGER NOT NULL,
        tokens_json      TEXT,
        error            TEXT,
        created_ms       INTEGER NOT NULL
    );
    CREATE INDEX generation_log_by_time ON generation_log (service_id, layer, created_ms);

    CREATE TABLE generation_log_outputs (
        log_id     TEXT NOT NULL,
        service_id TEXT NOT NULL,
        layer      TEXT NOT NULL,
        record_id  TEXT NOT NULL
    );
    CREATE INDEX generation_log_by_output ON generation_log_outputs (service_id, layer, record_id);

    -- Custom memory prompts (the original's `/v3/memory-prompt/*`) and where they apply.
    CREATE TABLE memory_prompts (
        service_id        TEXT NOT NULL,
        memory_prompt_id  TEXT NOT NULL,
        name              TEXT NOT NULL,
        layer             TEXT NOT NULL,
        prompt            TEXT NOT NULL,
        version           INTEGER NOT NULL DEFAULT 1,
        created_ms        INTEGER NOT NULL,
        updated_ms        INTEGER NOT NULL,
        PRIMARY KEY (service_id, memory_prompt_id)
    );
    CREATE TABLE memory_prompt_settings (
        service_id        TEXT NOT NULL,
        team_id           TEXT NOT NULL,
        agent_id          TEXT NOT NULL,
        layer             TEXT NOT NULL,
        memory_prompt_id  TEXT NOT NULL,
        updated_ms        INTEGER NOT NULL,
        PRIMARY KEY (service_id, team_id, agent_id, layer)
    );
    CREATE TABLE memory_prompt_setting_logs (
        seq               INTEGER PRIMARY KEY,
        service_id        TEXT NOT NULL,
        action            TEXT NOT NULL,
        memory_prompt_id  TEXT,
        team_id           TEXT NOT NULL,
        agent_ids_json    TEXT NOT NULL,
        layer             TEXT NOT NULL,
        request_id        TEXT NOT NULL,
        created_ms        INTEGER NOT NULL
    );
    CREATE INDEX memory_prompt_setting_logs_by_time ON memory_prompt_setting_logs (service_id, created_ms);

    -- chat-memory/clear finds a (team, agent)'s memories across its users and tasks.
    CREATE INDEX l1_by_profile ON l1_atomic (service_id, agent_id, team_id)
"""


def create_pipeline_tables(con: sqlite3.Connection) -> None:
    """Migration 4; existing conversations become pipeline sessions whose messages wait for extraction."""
    for statement in PIPELINE_TABLES.split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute(
        "INSERT INTO pipeline_sessions (scope_key, session_id, service_id, team_id, user_id, agent_id, task_id, "
        "last_rowid, pending_rounds, last_message_ms) "
        "SELECT scope_key, session_id, service_id, team_id, user_id, agent_id, task_id, MAX(rowid), "
        "SUM(role = 'user'), MAX(recorded_ms) FROM l0_messages GROUP BY scope_key, session_id"
    )


def add_prompt_owners(con: sqlite3.Connection) -> None:
    """Migration 8: every prompt belongs to a team, or to the instance (an empty owner: instance admins only).

    An existing prompt goes to the one team whose settings are the only ones using it; a prompt used
    by several teams, by the instance-wide setting or by nothing stays instance-level, so no team
    gains another team's prompt and no team member gains a prompt that was not only theirs.
    """
    con.execute("ALTER TABLE memory_prompts ADD COLUMN owner_team_id TEXT NOT NULL DEFAULT ''")
    con.execute(
        "UPDATE memory_prompts SET owner_team_id = used.team_id FROM ("
        "SELECT service_id, memory_prompt_id, MIN(team_id) AS team_id FROM memory_prompt_settings "
        "GROUP BY service_id, memory_prompt_id HAVING COUNT(DISTINCT team_id) = 1"
        ") AS used WHERE used.service_id = memory_prompts.service_id "
        "AND used.memory_prompt_id = memory_prompts.memory_prompt_id"
    )
    con.execute("CREATE INDEX memory_prompts_by_owner ON memory_prompts (service_id, owner_team_id, created_ms)")
