"""Migration 13: skills — versioned SKILL.md documents, their files by content hash, their search channels and
the mining buffers and archives.

`skill_versions` holds every version; `is_head` marks the one a skill is read as. The natural key is
(service_id, skill_id, version), kept UNIQUE; the explicit INTEGER PRIMARY KEY is there because the head's
full-text row and vector are keyed by it, and only an INTEGER PRIMARY KEY survives VACUUM unchanged.
`scope_key` names the (service, team) a head's vector is indexed under.

A file's bytes are stored once per tenant in `skill_blobs`, whatever number of versions or skills list
it in their manifest (`skill_files`); a blob no manifest row names any more is deleted with the last one.
"""

from __future__ import annotations

import sqlite3

SKILL_TABLES = """
    CREATE TABLE skill_versions (
        rowid           INTEGER PRIMARY KEY,
        service_id      TEXT NOT NULL,
        skill_id        TEXT NOT NULL,
        version         INTEGER NOT NULL,
        is_head         INTEGER NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('active', 'archived', 'candidate')),
        scope_key       TEXT NOT NULL,
        team_id         TEXT NOT NULL,
        owner_agent_id  TEXT NOT NULL,
        user_id         TEXT NOT NULL,
        task_id         TEXT NOT NULL,
        name            TEXT NOT NULL,
        description     TEXT NOT NULL,
        content         TEXT NOT NULL,
        content_hash    TEXT NOT NULL,
        metadata_json   TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        updated_ms      INTEGER NOT NULL,
        UNIQUE (service_id, skill_id, version)
    );
    CREATE UNIQUE INDEX skill_one_head ON skill_versions (service_id, skill_id) WHERE is_head = 1;
    -- One live skill per name under a team's owner agent (an archived head frees its name).
    CREATE UNIQUE INDEX skill_live_names ON skill_versions (service_id, team_id, owner_agent_id, name)
        WHERE is_head = 1 AND status != 'archived';
    CREATE INDEX skill_heads_by_update ON skill_versions (service_id, updated_ms) WHERE is_head = 1;
    CREATE INDEX skill_heads_by_team ON skill_versions (service_id, team_id, updated_ms) WHERE is_head = 1;

    CREATE TABLE skill_files (
        service_id     TEXT NOT NULL,
        skill_id       TEXT NOT NULL,
        version        INTEGER NOT NULL,
        path           TEXT NOT NULL,
        sha256         TEXT NOT NULL,
        size_bytes     INTEGER NOT NULL,
        mime_type      TEXT NOT NULL,
        is_executable  INTEGER NOT NULL,
        PRIMARY KEY (service_id, skill_id, version, path)
    ) WITHOUT ROWID;
    CREATE INDEX skill_files_by_blob ON skill_files (service_id, sha256);

    -- A rowid table: blobs of up to megabytes do not belong in a WITHOUT ROWID b-tree.
    CREATE TABLE skill_blobs (
        service_id  TEXT NOT NULL,
        sha256      TEXT NOT NULL,
        size_bytes  INTEGER NOT NULL,
        data        BLOB NOT NULL,
        UNIQUE (service_id, sha256)
    );

    -- Heads only: name, description and the start of the content, terms qualified by the tenant (fts.py).
    CREATE VIRTUAL TABLE skill_fts USING fts5(words, grams, tokenize = 'unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE skill_vocab USING fts5vocab(skill_fts, 'col');
    CREATE TABLE skill_vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);

    -- Turns of one session waiting to be cut into an archive.
    CREATE TABLE skill_buffers (
        service_id     TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        messages_json  TEXT NOT NULL,
        tool_calls     INTEGER NOT NULL,
        bytes          INTEGER NOT NULL,
        updated_ms     INTEGER NOT NULL,
        PRIMARY KEY (service_id, team_id, agent_id, user_id, session_id)
    );

    CREATE TABLE skill_archives (
        seq             INTEGER PRIMARY KEY,
        service_id      TEXT NOT NULL,
        archive_id      TEXT NOT NULL,
        team_id         TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        user_id         TEXT NOT NULL,
        session_id      TEXT NOT NULL,
        task_ref        TEXT,
        reason          TEXT NOT NULL,
        messages_json   TEXT NOT NULL,
        max_iterations  INTEGER,
        note            TEXT,
        created_ms      INTEGER NOT NULL,
        job_seq         INTEGER,
        UNIQUE (service_id, archive_id)
    );
    CREATE INDEX skill_archives_by_agent ON skill_archives (service_id, team_id, agent_id, created_ms);
"""


def create_skill_tables(con: sqlite3.Connection) -> None:
    """Migration 13: skill versions, files, blobs, their search tables and the mining buffers and archives."""
    for statement in SKILL_TABLES.split(";"):
        if statement.strip():
            con.execute(statement)
