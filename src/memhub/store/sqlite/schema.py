"""SQLite schema, as an ordered list of migrations; the applied version is kept in the database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memhub.store.sqlite.codegraph_schema import create_code_graph_tables
from memhub.store.sqlite.context import refresh_context
from memhub.store.sqlite.knowledge_schema import create_knowledge_tables
from memhub.store.sqlite.meta_schema import create_meta_tables
from memhub.store.sqlite.pipeline_schema import add_prompt_owners, create_pipeline_tables
from memhub.store.sqlite.profile_schema import per_user_profiles
from memhub.store.sqlite.skills_schema import create_skill_tables

Migration = str | Callable[[sqlite3.Connection], None]

# The database's random identity (instance_settings), created once by migration 18.
DATABASE_ID_SETTING = "vectors.database_id"


def _neighbour_context_and_vectors(con: sqlite3.Connection) -> None:
    """v2: a `context` column for L0 full text (context.py), vectors and the embedding queue.

    FTS5 tables cannot gain a column, so l0_fts is rebuilt; the stored terms are copied, not
    re-tokenized. Every existing record is queued for embedding.
    """
    con.execute("DROP TABLE l0_vocab")
    con.execute("ALTER TABLE l0_fts RENAME TO l0_fts_v1")
    con.execute(
        "CREATE VIRTUAL TABLE l0_fts USING fts5(words, grams, context, tokenize = 'unicode61 remove_diacritics 0')"
    )
    con.execute("INSERT INTO l0_fts (rowid, words, grams, context) SELECT rowid, words, grams, '' FROM l0_fts_v1")
    con.execute("DROP TABLE l0_fts_v1")
    con.execute("CREATE VIRTUAL TABLE l0_vocab USING fts5vocab(l0_fts, 'col')")
    con.execute("CREATE INDEX l0_by_scope_session_order ON l0_messages (scope_key, session_id, rowid)")
    refresh_context(con, [r[0] for r in con.execute("SELECT rowid FROM l0_messages ORDER BY rowid")])
    for statement in _VECTORS.split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute("INSERT INTO embedding_queue (kind, ref) SELECT 'l0', rowid FROM l0_messages ORDER BY rowid")
    con.execute("INSERT INTO embedding_queue (kind, ref) SELECT 'l1', rowid FROM l1_atomic ORDER BY rowid")


# Vectors are float32 BLOBs keyed by their record's rowid: the source of truth from which each
# scope's in-memory index is built. A record waits in embedding_queue until its vector is written
# (seq orders the work; re-queueing a record gives it a new seq, so a vector computed from stale
# text is recognised and dropped). vector_epochs counts changes per scope so that a process sees
# when another process changed a scope it has cached.
_VECTORS = """
    CREATE TABLE l0_vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
    CREATE TABLE l1_vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
    CREATE TABLE embedding_queue (
        seq  INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        ref  INTEGER NOT NULL,
        UNIQUE (kind, ref)
    );
    CREATE TABLE vector_epochs (
        kind      TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        epoch     INTEGER NOT NULL,
        PRIMARY KEY (kind, scope_key)
    ) WITHOUT ROWID;
"""


# Terms are produced by memhub.index.tokenize (stemmed, CJK-segmented), so the FTS tokenizer
# only splits on spaces; the fts5vocab tables expose each term's document frequency.
# Every indexed term carries its owner's prefix (see fts.py), so every search reads only
# its scope's postings: filtered inside the index, never a global top-k followed by a filter.
MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE instance_settings (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );

    CREATE TABLE l0_messages (
        rowid         INTEGER PRIMARY KEY,
        id            TEXT NOT NULL UNIQUE,
        scope_key     TEXT NOT NULL,
        service_id    TEXT NOT NULL,
        team_id       TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        session_id    TEXT NOT NULL,
        role          TEXT NOT NULL,
        content       TEXT NOT NULL,
        metadata_json TEXT,
        recorded_ms   INTEGER NOT NULL,
        message_ms    INTEGER NOT NULL
    );
    CREATE INDEX l0_by_scope_time ON l0_messages (scope_key, recorded_ms, rowid);
    CREATE INDEX l0_by_scope_session_time ON l0_messages (scope_key, session_id, recorded_ms, rowid);

    CREATE VIRTUAL TABLE l0_fts USING fts5(words, grams, tokenize = 'unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE l0_vocab USING fts5vocab(l0_fts, 'col');

    CREATE TABLE l0_idempotency (
        scope_key    TEXT NOT NULL,
        key          TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        ids_json     TEXT NOT NULL,
        created_ms   INTEGER NOT NULL,
        PRIMARY KEY (scope_key, key)
    );
    CREATE INDEX l0_idempotency_by_age ON l0_idempotency (created_ms);

    CREATE TABLE l1_atomic (
        rowid            INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        scope_key        TEXT NOT NULL,
        service_id       TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        user_id          TEXT NOT NULL,
        agent_id         TEXT NOT NULL,
        task_id          TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        type             TEXT NOT NULL,
        content          TEXT NOT NULL,
        priority         INTEGER NOT NULL,
        scene_name       TEXT,
        version          INTEGER NOT NULL DEFAULT 0,
        source_ids_json  TEXT NOT NULL DEFAULT '[]',
        metadata_json    TEXT,
        created_ms       INTEGER NOT NULL,
        updated_ms       INTEGER NOT NULL
    );
    CREATE INDEX l1_by_scope_updated ON l1_atomic (scope_key, updated_ms, rowid);
    CREATE INDEX l1_by_scope_type_updated ON l1_atomic (scope_key, type, updated_ms, rowid);
    CREATE INDEX l1_by_service_id ON l1_atomic (service_id, id);

    CREATE VIRTUAL TABLE l1_fts USING fts5(words, grams, tokenize = 'unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE l1_vocab USING fts5vocab(l1_fts, 'col');

    CREATE TABLE profile_documents (
        scope_key   TEXT NOT NULL,
        service_id  TEXT NOT NULL,
        team_id     TEXT NOT NULL,
        agent_id    TEXT NOT NULL,
        kind        TEXT NOT NULL,
        path        TEXT NOT NULL,
        content     TEXT NOT NULL,
        summary     TEXT,
        version     INTEGER NOT NULL,
        content_md5 TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        PRIMARY KEY (scope_key, kind, path)
    );

    CREATE TABLE memory_audit (
        audit_id      TEXT PRIMARY KEY,
        service_id    TEXT NOT NULL,
        record_id     TEXT NOT NULL,
        layer         TEXT NOT NULL,
        action        TEXT NOT NULL,
        team_id       TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        version       INTEGER,
        updated_at_ms INTEGER NOT NULL,
        request_id    TEXT NOT NULL
    );
    CREATE INDEX audit_by_service_time ON memory_audit (service_id, updated_at_ms);
    """,
    _neighbour_context_and_vectors,
    create_meta_tables,
    create_pipeline_tables,
    create_knowledge_tables,
    create_code_graph_tables,
    # v7: chat-memory/clear finds an agent's L0 messages across its users and tasks (as l1_by_profile does for L1).
    "CREATE INDEX l0_by_profile ON l0_messages (service_id, agent_id, team_id)",
    add_prompt_owners,
    # v9: a user key's pipeline/jobs, status and replay read only its own scopes' jobs, found by target.
    "CREATE INDEX pipeline_jobs_by_target ON pipeline_jobs (service_id, target)",
    # v10: a user key's generation-log reads find the records of its own scope and profile by (team, agent).
    "CREATE INDEX generation_log_by_owner ON generation_log (service_id, team_id, agent_id, created_ms)",
    per_user_profiles,
    # v12: where a session stood when its L1 job was dead-lettered; no new job until a message comes after it.
    "ALTER TABLE pipeline_sessions ADD COLUMN l1_dead_rowid INTEGER",
    create_skill_tables,
    # Migration 14: the names of skill heads alone, so the name fast path scans names, not whole rows; and an
    # agent's heads newest first, for its listing.
    """
    CREATE INDEX skill_head_names ON skill_versions (service_id, name) WHERE is_head = 1;
    CREATE INDEX skill_heads_by_owner ON skill_versions (service_id, team_id, owner_agent_id, updated_ms)
        WHERE is_head = 1;
    """,
    # Migration 15: the idempotency keys of a session's skill-buffer appends, so a capture replayed after a crash
    # is buffered once.
    """
    CREATE TABLE skill_buffer_keys (
        service_id    TEXT NOT NULL,
        team_id       TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        session_id    TEXT NOT NULL,
        key           TEXT NOT NULL,
        request_hash  TEXT NOT NULL,
        created_ms    INTEGER NOT NULL,
        PRIMARY KEY (service_id, team_id, agent_id, user_id, session_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX skill_buffer_keys_by_age ON skill_buffer_keys (created_ms);
    """,
    # Migration 16: context offload. A session's tool pairs keep their full result (read back by `ref`) beside
    # the summary, score and graph node the stages give them; prompts wait for the task stage; graphs are
    # Mermaid text by filename. Every row carries the whole session key: one user's state is nobody else's.
    """
    CREATE TABLE offload_sessions (
        service_id       TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        agent_id         TEXT NOT NULL,
        user_id          TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        last_prompt_seq  INTEGER NOT NULL DEFAULT 0,
        active_graph     TEXT,
        compact_json     TEXT NOT NULL DEFAULT '{}',
        updated_ms       INTEGER NOT NULL,
        PRIMARY KEY (service_id, team_id, agent_id, user_id, session_id)
    ) WITHOUT ROWID;
    CREATE TABLE offload_pairs (
        seq            INTEGER PRIMARY KEY,
        service_id     TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        tool_call_id   TEXT NOT NULL,
        tool_name      TEXT NOT NULL,
        params_json    TEXT NOT NULL,
        result_json    TEXT NOT NULL,
        error          TEXT,
        timestamp      TEXT NOT NULL,
        duration_ms    REAL,
        content_hash   TEXT NOT NULL,
        ref            TEXT NOT NULL,
        prompt_seq     INTEGER NOT NULL,
        tool_call      TEXT,
        summary        TEXT,
        score          INTEGER,
        summarized_ms  INTEGER,
        graph          TEXT,
        node_id        TEXT,
        created_ms     INTEGER NOT NULL,
        UNIQUE (service_id, team_id, agent_id, user_id, session_id, tool_call_id),
        UNIQUE (service_id, team_id, agent_id, user_id, session_id, ref)
    );
    CREATE INDEX offload_pairs_pending ON offload_pairs (service_id, summarized_ms);
    CREATE TABLE offload_prompts (
        seq            INTEGER PRIMARY KEY,
        service_id     TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        prompt         TEXT NOT NULL,
        recent_json    TEXT NOT NULL,
        judged_ms      INTEGER,
        graph          TEXT,
        label          TEXT,
        judgment_json  TEXT,
        created_ms     INTEGER NOT NULL
    );
    CREATE INDEX offload_prompts_by_session
        ON offload_prompts (service_id, team_id, agent_id, user_id, session_id, seq);
    CREATE TABLE offload_graphs (
        service_id  TEXT NOT NULL,
        team_id     TEXT NOT NULL,
        agent_id    TEXT NOT NULL,
        user_id     TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        filename    TEXT NOT NULL,
        content     TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        PRIMARY KEY (service_id, team_id, agent_id, user_id, session_id, filename)
    ) WITHOUT ROWID;
    """,
    # Migration 17: a file read's outline, made once by the summary stage instead of at every compaction.
    """
    ALTER TABLE offload_pairs ADD COLUMN outline TEXT;
    """,
    # Migration 18: vector snapshots (vector_snapshots.py). When each scope's vectors last changed, so a start can
    # load the most recently written scopes first; and the database's own random id, which a snapshot must carry
    # (epochs start at 1 again in a new database, so an epoch alone cannot tell whose snapshot it is).
    f"""
    ALTER TABLE vector_epochs ADD COLUMN changed_ms INTEGER NOT NULL DEFAULT 0;
    INSERT OR IGNORE INTO instance_settings (name, value) VALUES ('{DATABASE_ID_SETTING}', lower(hex(randomblob(16))));
    """,
]
