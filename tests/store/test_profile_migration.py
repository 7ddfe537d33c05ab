"""Migration 11: the shared (team, agent) profiles of an older store are handed to no real user.

A store made by the previous schema (migrations 1–7, written by the real store code) holds one profile per
(team, agent) built from every user's memories. Opened by the current code, its documents sit unchanged under
the `"default"` user of their (team, agent), where the operator still reads them, the shared profile's open
work is settled, and an L2 job per user with memories rebuilds that user's profile from their own memories.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from memhub.ids import atomic_id
from memhub.model import NewAtomic
from memhub.scope import MemoryScope, ProfileScope
from memhub.store.sqlite import SQLiteStore
from memhub.store.sqlite import store as sqlite_store
from memhub.store.sqlite.profile_schema import SUPERSEDED
from memhub.store.sqlite.schema import MIGRATIONS
from tests.conftest import Gateway, build_gateway

SVC, TEAM, AGENT = "svc-a", "team-1", "agent-1"
FAST = {
    "pipeline_idle_seconds": 3600,
    "pipeline_l2_delay_seconds": 0,
    "pipeline_l2_min_interval_seconds": 0,
    "pipeline_persona_every": 1,
}
LEGACY_PERSONA = "# Persona\n- bob's phone is +1 555 0100\n- carol lives in Oslo\n"
MEMORIES = {  # (team, user) → what they told the agent
    (TEAM, "bob"): "User's phone number is +1 555 0100.",
    (TEAM, "carol"): "User lives in Oslo and loves sailing.",
    (TEAM, "default"): "User runs the nightly reports.",
    ("default", "dan"): "User collects stamps.",  # no team: dan's profile is filed under dan
}


def _old_profile_key(service_id: str, team_id: str, agent_id: str) -> str:
    """The key a profile had before it had a user."""
    digest = hashlib.blake2b("\x1f".join(("prof", service_id, team_id, agent_id)).encode(), digest_size=10)
    return "k" + digest.hexdigest()


def _old_document(con: sqlite3.Connection, team_id: str, kind: str, path: str, content: str) -> None:
    con.execute(
        "INSERT INTO profile_documents (scope_key, service_id, team_id, agent_id, kind, path, content, summary, "
        "version, content_md5, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 3, 'md5', 1000, 2000)",
        (_old_profile_key(SVC, team_id, AGENT), SVC, team_id, AGENT, kind, path, content, "legacy"),
    )


def _previous_schema_store(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store as the previous schema wrote it: memories of four users, shared profiles, open shared work."""
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:7])
        store = SQLiteStore(data_dir)
    try:
        assert store.schema_version() == 7
        for (team_id, user_id), text in MEMORIES.items():
            scope = MemoryScope(SVC, team_id, user_id, AGENT, "")
            store.add_atomic(scope, [NewAtomic(atomic_id(), "persona", text, 80, "about", "s1", 1_000)])
        with store._write() as con:
            _old_document(con, TEAM, "core", "persona.md", LEGACY_PERSONA)
            _old_document(con, TEAM, "scene", "people.md", "bob: +1 555 0100; carol: Oslo")
            _old_document(con, "dan", "core", "persona.md", "dan's old persona")
            con.execute(
                "INSERT INTO pipeline_profiles (profile_key, service_id, team_id, agent_id, l2_due_ms, last_l2_ms, "
                "memories_since_persona, persona_requested) VALUES (?, ?, ?, ?, 0, 1500, 4, 1)",
                (_old_profile_key(SVC, TEAM, AGENT), SVC, TEAM, AGENT),
            )
            scope = json.dumps({"service_id": SVC, "team_id": TEAM, "agent_id": AGENT}, sort_keys=True)
            for kind, state, error in (("l2", "pending", None), ("l3", "dead", "LLMError: timed out")):
                con.execute(
                    "INSERT INTO pipeline_jobs (service_id, kind, target, scope_json, state, run_after_ms, "
                    "created_ms, updated_ms, last_error) VALUES (?, ?, ?, ?, ?, 0, 0, 0, ?)",
                    (SVC, kind, _old_profile_key(SVC, TEAM, AGENT), scope, state, error),
                )
    finally:
        store.close()


def _core(gw: Gateway, team_id: str | None, user_id: str) -> str | None:
    isolation = {"agent_id": AGENT, "user_id": user_id} | ({"team_id": team_id} if team_id else {})
    return gw.ok("/v3/core/read", {}, isolation=isolation)["content"]


def _legacy(gw: Gateway) -> tuple[str, int] | None:
    """The moved persona of the (team, agent): its text and version, as stored."""
    doc = gw.store.get_document(ProfileScope(SVC, TEAM, AGENT, "default"), "core", "persona.md")
    return None if doc is None else (doc.content, doc.version)


def test_old_profiles_move_to_the_default_user_and_each_user_is_rebuilt_from_their_own_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    _previous_schema_store(data_dir, monkeypatch)

    gw = build_gateway(data_dir, **FAST)
    try:
        assert gw.store.schema_version() == len(MIGRATIONS)
        # The mixed documents are nobody's but the operator's: the gateway key with user "default" reads them.
        assert (_core(gw, TEAM, "default") or "").startswith(LEGACY_PERSONA)
        assert _legacy(gw) == (LEGACY_PERSONA, 3)
        scenes = gw.ok("/v3/scenario/ls", {}, isolation={"team_id": TEAM, "agent_id": AGENT, "user_id": "default"})
        assert [(e["path"], e["version"]) for e in scenes["entries"]] == [("people.md", 3)]
        assert gw.store.get_document(ProfileScope(SVC, "dan", AGENT, "default"), "core", "persona.md") is not None
        for team_id, user_id in ((TEAM, "bob"), (TEAM, "carol"), (None, "dan")):
            assert _core(gw, team_id, user_id) is None
        # The shared profile's open and dead-lettered work is settled (a replay could not say whose profile it
        # builds); each user with memories has a rebuild queued.
        reader = gw.store._reader()
        old = reader.execute(
            "SELECT kind, state, last_error FROM pipeline_jobs WHERE target = ? ORDER BY kind",
            (_old_profile_key(SVC, TEAM, AGENT),),
        )
        assert [tuple(r) for r in old] == [
            ("l2", "done", SUPERSEDED),
            ("l3", "done", f"{SUPERSEDED}; it had failed: LLMError: timed out"),
        ]
        queued = {
            (job.kind, job.target, tuple(sorted(job.scope.items())))
            for job in gw.store.pipeline.jobs(SVC, ["pending"], 100)
        }
        expected = {
            (TEAM, "bob"): ProfileScope(SVC, TEAM, AGENT, "bob"),
            (TEAM, "carol"): ProfileScope(SVC, TEAM, AGENT, "carol"),
            ("dan", "dan"): ProfileScope(SVC, "dan", AGENT, "dan"),
        }
        assert queued == {
            ("l2", p.key, tuple(sorted({"service_id": SVC, "team_id": t, "agent_id": AGENT, "user_id": u}.items())))
            for (t, u), p in expected.items()
        }  # not the default user's: that would overwrite the moved documents

        gw.pipeline.drain()

        bob, carol, dan = _core(gw, TEAM, "bob"), _core(gw, TEAM, "carol"), _core(gw, None, "dan")
        assert bob and "555 0100" in bob and "Oslo" not in bob
        assert carol and "Oslo" in carol and "555 0100" not in carol
        assert dan and "stamps" in dan and "old persona" not in dan
        assert _legacy(gw) == (LEGACY_PERSONA, 3)  # kept as it was
        assert (_core(gw, "dan", "default") or "").startswith("dan's old persona")
    finally:
        gw.close()


def test_a_new_store_has_the_user_column_and_nothing_to_rebuild(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    try:
        columns = {r[1] for r in store._reader().execute("PRAGMA table_info(profile_documents)")}
        assert "user_id" in columns
        assert store.pipeline.jobs("svc-a", ["pending", "running", "done"], 10) == []
    finally:
        store.close()
