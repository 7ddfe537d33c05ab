"""Migration 6: the code-graph knowledge service's metadata (graph databases live under `<data_dir>/knowledge/`).

A code graph row points at its current good generation (`generation`, 0 = none yet): a build writes a
new generation database and then flips this one column, so readers switch in one commit (blue/green).
`build_seq` numbers builds; a build only touches the row while its number is still the row's.

Create is idempotent per source: a git repository is one graph per (team, URL, branch), a local
directory one graph per (team, path) — a working tree has one checkout, whatever branch it is on, so
its `branch` column records the branch seen at the last build instead of being part of the key.
"""

from __future__ import annotations

import sqlite3

CODE_GRAPH_TABLES = """
    CREATE TABLE knowledge_code_graphs (
        service_id       TEXT NOT NULL,
        code_graph_id    TEXT NOT NULL,
        team_id          TEXT NOT NULL,
        repo_name        TEXT NOT NULL,
        repo_url         TEXT,
        source_path      TEXT,
        remote_url       TEXT,
        branch           TEXT,
        commit_hash      TEXT,
        summary          TEXT,
        status           TEXT NOT NULL,
        internal_status  TEXT,
        sync_error       TEXT,
        version          INTEGER NOT NULL DEFAULT 0,
        generation       INTEGER NOT NULL DEFAULT 0,
        build_seq        INTEGER NOT NULL DEFAULT 0,
        owner_user_id    TEXT,
        agent_id         TEXT,
        task_id          TEXT,
        stats_json       TEXT,
        last_sync_at     TEXT,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        PRIMARY KEY (service_id, code_graph_id),
        CHECK ((repo_url IS NULL) != (source_path IS NULL))
    );
    CREATE UNIQUE INDEX knowledge_code_graphs_by_repo
        ON knowledge_code_graphs (service_id, team_id, repo_url, branch) WHERE repo_url IS NOT NULL;
    CREATE UNIQUE INDEX knowledge_code_graphs_by_path
        ON knowledge_code_graphs (service_id, team_id, source_path) WHERE source_path IS NOT NULL;
    CREATE INDEX knowledge_code_graphs_by_team ON knowledge_code_graphs (service_id, team_id, created_at);
    CREATE INDEX knowledge_code_graphs_by_status ON knowledge_code_graphs (status);
"""


def create_code_graph_tables(con: sqlite3.Connection) -> None:
    """Migration 6: code graphs."""
    for statement in CODE_GRAPH_TABLES.split(";"):
        if statement.strip():
            con.execute(statement)
