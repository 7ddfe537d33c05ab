"""Migration 11: L2/L3 profiles belong to one user of a (team, agent), not to the (team, agent).

Before it, one profile per (team, agent) was built from the memories of every user of the agent,
so one member's facts and instructions could reach another member's prompt. The documents such a
profile holds are mixed; they are handed to no real user: they move, unchanged, to the `"default"`
user of their (team, agent), where an operator (the gateway key, no user) can still read them.
The shared profiles' L2/L3 jobs name no user and are settled. Every user who has L1 memories gets
an L2 job that rebuilds their own scenes and persona from their own memories, except the
`"default"` user of a profile whose old documents were moved there: rebuilding it now would
overwrite them (it is rebuilt with that user's next memories).
"""

from __future__ import annotations

import json
import sqlite3

from memhub.scope import DEFAULT_ID, MemoryScope, ProfileScope
from memhub.timeutil import now_ms

SUPERSEDED = "superseded: profiles are per user now; each user's profile is rebuilt from their own memories"


def per_user_profiles(con: sqlite3.Connection) -> None:
    """v11: a user column and per-user keys for documents and profile progress; rebuild jobs per user."""
    stamp = now_ms()
    con.execute("ALTER TABLE profile_documents ADD COLUMN user_id TEXT NOT NULL DEFAULT 'default'")
    con.execute("ALTER TABLE pipeline_profiles ADD COLUMN user_id TEXT NOT NULL DEFAULT 'default'")
    # chat-memory/clear removes every user's profile of a (team, agent); L2 reads one user's memories.
    con.execute("CREATE INDEX profile_documents_by_agent ON profile_documents (service_id, agent_id, team_id)")
    con.execute("CREATE INDEX pipeline_profiles_by_agent ON pipeline_profiles (service_id, agent_id, team_id)")
    con.execute("CREATE INDEX l1_by_user_profile ON l1_atomic (service_id, agent_id, user_id, team_id)")
    _file_under_default_user(con)
    # A shared profile's job names no user, so it cannot run any more: open ones, and dead-lettered ones that
    # could be replayed, are settled (the rebuilds below supersede them).
    con.execute(
        "UPDATE pipeline_jobs SET state = 'done', lease_owner = NULL, lease_expires_ms = NULL, "
        "last_error = substr(CASE WHEN state = 'dead' THEN ?1 || '; it had failed: ' || COALESCE(last_error, '') "
        "ELSE ?1 END, 1, 2000), finished_ms = ?2, updated_ms = ?2 "
        "WHERE kind IN ('l2', 'l3') AND state IN ('pending', 'running', 'dead')",
        (SUPERSEDED, stamp),
    )
    _queue_rebuilds(con, stamp)


def _file_under_default_user(con: sqlite3.Connection) -> None:
    """Re-key the (team, agent) documents and progress rows to the profile of the default user."""
    owners = con.execute("SELECT DISTINCT scope_key, service_id, team_id, agent_id FROM profile_documents").fetchall()
    for old_key, service_id, team_id, agent_id in owners:
        new_key = ProfileScope(service_id, team_id, agent_id, DEFAULT_ID).key
        con.execute("UPDATE profile_documents SET scope_key = ? WHERE scope_key = ?", (new_key, old_key))
    progress = con.execute("SELECT profile_key, service_id, team_id, agent_id FROM pipeline_profiles").fetchall()
    for old_key, service_id, team_id, agent_id in progress:
        new_key = ProfileScope(service_id, team_id, agent_id, DEFAULT_ID).key
        # The shared profile's pending scene work is superseded by the per-user rebuilds below.
        con.execute(
            "UPDATE pipeline_profiles SET profile_key = ?, l2_due_ms = NULL, persona_requested = 0 "
            "WHERE profile_key = ?",
            (new_key, old_key),
        )


def _queue_rebuilds(con: sqlite3.Connection, stamp: int) -> None:
    """An L2 job (then L3, when the user has no persona) for every user with memories under an agent."""
    owners = con.execute("SELECT DISTINCT service_id, team_id, user_id, agent_id FROM l1_atomic").fetchall()
    for service_id, team_id, user_id, agent_id in owners:
        profile = MemoryScope(service_id, team_id, user_id, agent_id, "").profile
        has_documents = con.execute(
            "SELECT 1 FROM profile_documents WHERE scope_key = ? LIMIT 1", (profile.key,)
        ).fetchone()
        if has_documents is not None:
            continue  # only the default user's moved documents can be here: keep them as they are
        con.execute(
            "INSERT INTO pipeline_profiles (profile_key, service_id, team_id, agent_id, user_id) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (profile_key) DO NOTHING",
            (profile.key, profile.service_id, profile.team_id, profile.agent_id, profile.user_id),
        )
        scope = {"service_id": service_id, "team_id": profile.team_id, "agent_id": agent_id, "user_id": user_id}
        con.execute(
            "INSERT OR IGNORE INTO pipeline_jobs (service_id, kind, target, scope_json, state, run_after_ms, "
            "created_ms, updated_ms) VALUES (?, 'l2', ?, ?, 'pending', ?, ?, ?)",
            (service_id, profile.key, json.dumps(scope, sort_keys=True), stamp, stamp, stamp),
        )
