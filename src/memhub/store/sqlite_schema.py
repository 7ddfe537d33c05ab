"""SQLite schema, as an ordered list of migrations; the applied version is kept in the database."""

from __future__ import annotations

# Terms are produced by memhub.retrieval.tokenize (stemmed, CJK-segmented), so the FTS tokenizer
# only splits on spaces; the fts5vocab tables expose each term's document frequency.
# Every indexed term carries its owner's prefix (see sqlite_fts.py), so every search reads only
# its scope's postings: filtered inside the index, never a global top-k followed by a filter.
MIGRATIONS: list[str] = [
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
]
