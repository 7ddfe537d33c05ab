"""Tables of the management plane (users, keys, teams, agents, tasks, assets, ACL, registry, audit).

Every table is keyed by the tenant (`service_id`) first: one instance never sees another's rows,
and caller-chosen ids (asset_id, knowledge_id) may repeat across instances.
"""

from __future__ import annotations

import sqlite3

META_TABLES = """
    CREATE TABLE meta_users (
        service_id     TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        username       TEXT NOT NULL,
        display_name   TEXT,
        email          TEXT,
        auth_provider  TEXT NOT NULL DEFAULT 'local',
        external_id    TEXT NOT NULL DEFAULT '',
        status         TEXT NOT NULL,
        user_type      TEXT NOT NULL,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, user_id)
    );
    CREATE UNIQUE INDEX meta_one_system_admin ON meta_users (service_id) WHERE user_type = 'system_admin';
    CREATE INDEX meta_users_by_name ON meta_users (service_id, username);

    CREATE TABLE meta_user_keys (
        service_id     TEXT NOT NULL,
        key_id         TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        key_hash       TEXT NOT NULL,
        key_last4      TEXT NOT NULL,
        name           TEXT,
        status         TEXT NOT NULL,
        is_default     INTEGER NOT NULL DEFAULT 0,
        last_used_at   TEXT,
        expires_at     TEXT,
        created_at     TEXT NOT NULL,
        revoked_at     TEXT,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, key_id)
    );
    CREATE UNIQUE INDEX meta_user_keys_by_hash ON meta_user_keys (service_id, key_hash);
    CREATE INDEX meta_user_keys_by_user ON meta_user_keys (service_id, user_id, status);

    CREATE TABLE meta_teams (
        service_id     TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        name           TEXT NOT NULL,
        description    TEXT,
        owner_user_id  TEXT NOT NULL,
        status         TEXT NOT NULL,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, team_id)
    );

    CREATE TABLE meta_team_members (
        service_id  TEXT NOT NULL,
        id          TEXT NOT NULL,
        team_id     TEXT NOT NULL,
        user_id     TEXT NOT NULL,
        role        TEXT NOT NULL,
        status      TEXT NOT NULL,
        joined_at   TEXT NOT NULL,
        PRIMARY KEY (service_id, id),
        UNIQUE (service_id, team_id, user_id)
    );
    CREATE INDEX meta_members_by_user ON meta_team_members (service_id, user_id, status);

    CREATE TABLE meta_agents (
        service_id     TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        owner_user_id  TEXT NOT NULL,
        name           TEXT NOT NULL,
        description    TEXT,
        prompt         TEXT,
        visibility     TEXT NOT NULL,
        status         TEXT NOT NULL,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, agent_id)
    );
    CREATE INDEX meta_agents_by_team ON meta_agents (service_id, team_id);
    CREATE INDEX meta_agents_by_owner ON meta_agents (service_id, owner_user_id);

    CREATE TABLE meta_tasks (
        service_id                   TEXT NOT NULL,
        task_id                      TEXT NOT NULL,
        team_id                      TEXT NOT NULL,
        creator_user_id              TEXT NOT NULL,
        title                        TEXT NOT NULL,
        description                  TEXT,
        source_type                  TEXT NOT NULL,
        source_url                   TEXT,
        status                       TEXT NOT NULL,
        auto_assign_floating_assets  INTEGER NOT NULL DEFAULT 0,
        risk_level                   TEXT,
        created_at                   TEXT NOT NULL,
        updated_at                   TEXT NOT NULL,
        metadata_json                TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, task_id)
    );
    CREATE INDEX meta_tasks_by_team ON meta_tasks (service_id, team_id);

    CREATE TABLE meta_task_agents (
        service_id    TEXT NOT NULL,
        id            TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        role_in_task  TEXT,
        status        TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        PRIMARY KEY (service_id, id),
        UNIQUE (service_id, task_id, agent_id)
    );
    CREATE INDEX meta_task_agents_by_agent ON meta_task_agents (service_id, agent_id);

    CREATE TABLE meta_participation_logs (
        service_id     TEXT NOT NULL,
        id             TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        task_id        TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        user_id        TEXT NOT NULL,
        source         TEXT NOT NULL,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        PRIMARY KEY (service_id, id)
    );
    CREATE INDEX meta_participation_by_team ON meta_participation_logs (service_id, team_id, created_at);

    CREATE TABLE meta_assets (
        service_id     TEXT NOT NULL,
        asset_id       TEXT NOT NULL,
        team_id        TEXT NOT NULL,
        asset_type     TEXT NOT NULL,
        name           TEXT NOT NULL,
        description    TEXT,
        owner_user_id  TEXT NOT NULL,
        source_type    TEXT NOT NULL,
        source_ref     TEXT,
        version        INTEGER NOT NULL DEFAULT 1,
        visibility     TEXT NOT NULL,
        status         TEXT NOT NULL,
        confidence     REAL,
        expires_at     TEXT,
        last_used_at   TEXT,
        usage_count    INTEGER NOT NULL DEFAULT 0,
        content_ref    TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        metadata_json  TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (service_id, asset_id)
    );
    CREATE INDEX meta_assets_by_team ON meta_assets (service_id, team_id, asset_type);

    CREATE TABLE meta_agent_fixed_assets (
        service_id      TEXT NOT NULL,
        id              TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        asset_id        TEXT NOT NULL,
        asset_type      TEXT NOT NULL,
        injection_mode  TEXT NOT NULL,
        priority        INTEGER NOT NULL DEFAULT 0,
        created_by      TEXT NOT NULL,
        created_at      TEXT NOT NULL,
        PRIMARY KEY (service_id, id)
    );
    CREATE INDEX meta_fixed_by_agent ON meta_agent_fixed_assets (service_id, agent_id);
    CREATE INDEX meta_fixed_by_asset ON meta_agent_fixed_assets (service_id, asset_id);

    CREATE TABLE meta_asset_acl (
        service_id    TEXT NOT NULL,
        id            TEXT NOT NULL,
        asset_id      TEXT NOT NULL,
        subject_type  TEXT NOT NULL,
        subject_id    TEXT NOT NULL,
        permission    TEXT NOT NULL,
        effect        TEXT NOT NULL,
        granted_by    TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (service_id, id)
    );
    CREATE INDEX meta_acl_by_asset ON meta_asset_acl (service_id, asset_id);
    CREATE INDEX meta_acl_by_subject ON meta_asset_acl (service_id, subject_type, subject_id);

    CREATE TABLE meta_config_params (
        service_id   TEXT NOT NULL,
        id           TEXT NOT NULL,
        scope        TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        module       TEXT NOT NULL,
        param_name   TEXT NOT NULL,
        param_value  TEXT NOT NULL,
        description  TEXT NOT NULL DEFAULT '',
        created_at   TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        PRIMARY KEY (service_id, id),
        UNIQUE (service_id, scope, user_id, module, param_name)
    );

    CREATE TABLE knowledge_registry (
        service_id    TEXT NOT NULL,
        knowledge_id  TEXT NOT NULL,
        type          TEXT NOT NULL,
        service_url   TEXT NOT NULL,
        name          TEXT NOT NULL,
        summary       TEXT,
        team_id       TEXT NOT NULL,
        user_id       TEXT,
        repo_url      TEXT,
        branch        TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (service_id, knowledge_id)
    );
    CREATE INDEX knowledge_by_team ON knowledge_registry (service_id, team_id, type);

    CREATE TABLE meta_audit (
        seq            INTEGER PRIMARY KEY,
        service_id     TEXT NOT NULL,
        id             TEXT NOT NULL UNIQUE,
        action         TEXT NOT NULL,
        actor_user_id  TEXT NOT NULL,
        actor_kind     TEXT NOT NULL,
        target_ids     TEXT NOT NULL,
        detail_json    TEXT NOT NULL DEFAULT '{}',
        request_id     TEXT NOT NULL,
        created_at     TEXT NOT NULL
    );
    CREATE INDEX meta_audit_by_service ON meta_audit (service_id, seq);
"""

# Separate statements: a trigger body holds semicolons, so these are not split like the tables.
META_TRIGGERS = [
    """CREATE TRIGGER meta_audit_append_only_update BEFORE UPDATE ON meta_audit
        BEGIN SELECT RAISE(ABORT, 'meta_audit is append-only'); END""",
    """CREATE TRIGGER meta_audit_append_only_delete BEFORE DELETE ON meta_audit
        BEGIN SELECT RAISE(ABORT, 'meta_audit is append-only'); END""",
]


def create_meta_tables(con: sqlite3.Connection) -> None:
    """Migration v3: the management plane."""
    for statement in META_TABLES.split(";"):
        if statement.strip():
            con.execute(statement)
    for trigger in META_TRIGGERS:
        con.execute(trigger)
