"""Migration 5: the wiki knowledge service's metadata (files live under `<data_dir>/knowledge/`).

A wiki row points at its current good generation (`generation`, 0 = none yet): a build writes a new
generation directory and then flips this one column, so readers switch in one commit (blue/green).
`wiki_sources` records each source file the wiki knows: uploads and the files of a local directory.
"""

from __future__ import annotations

import sqlite3

KNOWLEDGE_TABLES = """
    CREATE TABLE knowledge_wikis (
        service_id       TEXT NOT NULL,
        wiki_id          TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        name             TEXT NOT NULL,
        summary          TEXT,
        auto_summary     TEXT,
        status           TEXT NOT NULL,
        internal_status  TEXT,
        sync_error       TEXT,
        version          INTEGER NOT NULL DEFAULT 0,
        generation       INTEGER NOT NULL DEFAULT 0,
        build_seq        INTEGER NOT NULL DEFAULT 0,
        owner_user_id    TEXT,
        agent_id         TEXT,
        task_id          TEXT,
        source_path      TEXT,
        page_count       INTEGER NOT NULL DEFAULT 0,
        source_count     INTEGER NOT NULL DEFAULT 0,
        last_sync_at     TEXT,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        PRIMARY KEY (service_id, wiki_id)
    );
    CREATE UNIQUE INDEX knowledge_wikis_by_name ON knowledge_wikis (service_id, team_id, name);
    CREATE INDEX knowledge_wikis_by_status ON knowledge_wikis (status);

    CREATE TABLE wiki_sources (
        service_id        TEXT NOT NULL,
        id                TEXT NOT NULL,
        wiki_id           TEXT NOT NULL,
        filename          TEXT NOT NULL,
        size              INTEGER NOT NULL,
        sha256            TEXT NOT NULL,
        status            TEXT NOT NULL,
        error             TEXT,
        last_modified_by  TEXT,
        uploaded_at       TEXT,
        ingested_at       TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL,
        PRIMARY KEY (service_id, id)
    );
    CREATE UNIQUE INDEX wiki_sources_by_file ON wiki_sources (service_id, wiki_id, filename);
"""


def create_knowledge_tables(con: sqlite3.Connection) -> None:
    """Migration 5: wikis and their source files."""
    for statement in KNOWLEDGE_TABLES.split(";"):
        if statement.strip():
            con.execute(statement)
