"""`POST /v3/chat-memory/clear` through the real app: an agent's L0–L3 emptied, its asset kept.

A clear covers every user and task that talked to the agent (L0/L1 are scoped by team, user, agent and
task; the asset `chat_memory-{team}-{agent}` by team and agent), is all-or-nothing over its ids,
idempotent, audited per layer, and settles the pipeline's open work for the agent. The gateway key may
clear any chat memory of its tenant; a user key only one it owns or was granted `delete` on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memhub.model import EmbeddingModel, MessageFilter
from memhub.model.pipeline import L1Outcome, LeaseLost
from memhub.pipeline.stages import Stages
from memhub.scope import MemoryScope, ProfileScope
from memhub.sdk import MemoryClient
from memhub.store.sqlite.clear import CANCELLED
from memhub.timeutil import now_ms
from tests.conftest import Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.meta.org import Member, Org, rows, table_snapshot

CLEAR = "/v3/chat-memory/clear"
FAST = {"pipeline_idle_seconds": 3600, "pipeline_l2_delay_seconds": 0, "pipeline_l2_min_interval_seconds": 0}
# Whoever talks to the agent: two users, one of them also inside a task.
TALKERS = [{"user_id": "user-1"}, {"user_id": "user-2"}, {"user_id": "user-2", "task_id": "task-9"}]


@dataclass
class World:
    """alice owns team T with agents A and B (both with data); bob is a member of T; carol owns team U
    with agent C. Data of A sits under three (user, task) scopes."""

    org: Org
    alice: Member
    bob: Member
    carol: Member
    team: str
    a: str
    b: str
    other_team: str
    c: str

    @property
    def gw(self) -> Gateway:
        return self.org.gw

    def memory_id(self, agent_id: str, team_id: str | None = None) -> str:
        return f"chat_memory-{team_id or self.team}-{agent_id}"

    def iso(self, agent_id: str, team_id: str | None = None, **extra: str) -> dict[str, str]:
        return {"team_id": team_id or self.team, "agent_id": agent_id, **extra}

    def seed(self, agent_id: str, team_id: str | None = None, *, tag: str = "") -> dict[str, int]:
        """L0–L3 for the agent through the data plane (gateway key); returns what was written per layer."""
        gw = self.gw
        l0 = l1 = 0
        for n, who in enumerate(TALKERS):
            iso = self.iso(agent_id, team_id, **who)
            messages = [
                {"role": "user", "content": f"{tag} I like green tea number {n}"},
                {"role": "assistant", "content": f"{tag} noted, tea {n}"},
            ]
            l0 += gw.ok("/v3/conversation/add", {"session_id": f"s{n}", "messages": messages}, isolation=iso)[
                "total_count"
            ]
            gw.ok("/v3/atomic/add", {"content": f"{tag} prefers green tea {n}", "type": "persona"}, isolation=iso)
            l1 += 1
        iso = self.iso(agent_id, team_id, user_id="user-1")
        gw.ok("/v3/scenario/create", {"path": "drinks/tea.md", "content": f"{tag} tea scene"}, isolation=iso)
        gw.ok("/v3/scenario/create", {"path": "work.md", "content": f"{tag} work scene"}, isolation=iso)
        gw.ok("/v3/core/write", {"content": f"{tag} persona: likes tea"}, isolation=iso)
        return {"l0": l0, "l1": l1, "profile": 3}

    def counts(self, agent_id: str, team_id: str | None = None) -> dict[str, int]:
        """What the data plane still shows of the agent, summed over every talker."""
        gw = self.gw
        l0 = l1 = 0
        for who in TALKERS:
            iso = self.iso(agent_id, team_id, **who)
            l0 += gw.ok("/v3/conversation/count", {}, isolation=iso)["total"]
            l1 += gw.ok("/v3/atomic/count", {}, isolation=iso)["total"]
        iso = self.iso(agent_id, team_id, user_id="user-1")
        scenes = gw.ok("/v3/scenario/count", {}, isolation=iso)["total"]
        core = gw.ok("/v3/core/count", {}, isolation=iso)["total"]
        return {"l0": l0, "l1": l1, "profile": scenes + core}

    def clear(self, ids: list[str], who: Member | None = None) -> dict[str, Any]:
        return self.org.ok(who, CLEAR, {"memory_ids": ids})


def _world(gw: Gateway) -> World:
    org = Org(gw)
    alice, bob, carol = org.users("alice", "bob", "carol")
    team = org.staffed_team(alice, "T", (bob, "member"))
    a, b = org.agent(alice, team, "A"), org.agent(alice, team, "B")
    other_team = org.team(carol, "U")
    c = org.agent(carol, other_team, "C")
    return World(org, alice, bob, carol, team, a, b, other_team, c)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    gw = build_gateway(tmp_path / "data", **FAST)
    yield _world(gw)
    gw.close()


def _state(w: World) -> dict[str, Any]:
    """Every management and memory table, with the audit, history, FTS, vectors and pipeline tables."""
    snap: dict[str, Any] = table_snapshot(w.gw)
    for table in (
        "memory_audit",
        "l1_history",
        "l0_fts",
        "l1_fts",
        "l0_vectors",
        "l1_vectors",
        "embedding_queue",
        "pipeline_jobs",
        "pipeline_sessions",
        "pipeline_profiles",
    ):
        snap[table] = sorted(map(repr, rows(w.org, f"SELECT * FROM {table}")))
    return snap


def _refused(w: World, who: Member | None, body: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    before = _state(w)
    envelope = w.org.fails(who, CLEAR, body, code)
    assert envelope["message"] == message, envelope
    assert _state(w) == before, "a refused clear changed stored state"
    return envelope


# -- the happy path ----------------------------------------------------------------------------------
def test_clear_empties_every_layer_of_the_agent_for_every_user_and_task(world: World) -> None:
    seeded = world.seed(world.a, tag="A")
    kept = world.seed(world.b, tag="B")
    assert world.counts(world.a) == seeded == {"l0": 6, "l1": 3, "profile": 3}
    memory_id = world.memory_id(world.a)
    asset_before = rows(world.org, "SELECT * FROM meta_assets WHERE asset_id = ?", memory_id)
    bindings_before = rows(world.org, "SELECT * FROM meta_agent_fixed_assets WHERE asset_id = ?", memory_id)
    assert asset_before and bindings_before

    data = world.clear([memory_id])

    assert data == {
        "items": [
            {
                "memory_id": memory_id,
                "cleared": True,
                "l0_deleted": 6,
                "l1_deleted": 3,
                "profile_deleted": 3,
                "jobs_cancelled": 0,
            }
        ],
        "all_cleared": True,
    }
    assert world.counts(world.a) == {"l0": 0, "l1": 0, "profile": 0}
    assert world.counts(world.b) == kept  # the team's other agent keeps everything
    # Searches find nothing of A either (full-text entries went with the rows).
    iso = world.iso(world.a, user_id="user-1")
    assert world.gw.ok("/v3/conversation/search", {"query": "green tea"}, isolation=iso)["messages"] == []
    assert world.gw.ok("/v3/atomic/search", {"query": "green tea"}, isolation=iso)["items"] == []
    assert world.gw.ok("/v3/core/read", {}, isolation=iso)["content"] is None
    # The asset, its binding to the agent and everything else about it stay as they were.
    assert rows(world.org, "SELECT * FROM meta_assets WHERE asset_id = ?", memory_id) == asset_before
    assert rows(world.org, "SELECT * FROM meta_agent_fixed_assets WHERE asset_id = ?", memory_id) == bindings_before
    assert world.org.ok(world.alice, "/v3/meta/asset/get", {"asset_id": memory_id})["asset_id"] == memory_id
    # Nothing of A is left behind in the side tables.
    for table in ("l0_messages", "l1_atomic"):
        left = rows(world.org, f"SELECT COUNT(*) FROM {table} WHERE agent_id = ?", world.a)
        assert left == [(0,)], table
    assert rows(world.org, "SELECT COUNT(*) FROM l0_fts") == [(6,)]  # B's six messages
    assert rows(world.org, "SELECT COUNT(*) FROM l1_fts") == [(3,)]
    queued = rows(world.org, "SELECT COUNT(*) FROM embedding_queue")
    assert queued == [(9,)]  # B's 6 + 3 records still wait for vectors; A's entries are gone


def test_a_second_clear_and_a_clear_of_an_empty_memory_succeed_with_zero_counts(world: World) -> None:
    world.seed(world.a)
    memory_id = world.memory_id(world.a)
    world.clear([memory_id])
    again = world.clear([memory_id])
    zero = {"memory_id": memory_id, "cleared": True, "l0_deleted": 0, "l1_deleted": 0, "profile_deleted": 0}
    assert again == {"items": [{**zero, "jobs_cancelled": 0}], "all_cleared": True}
    never_used = world.memory_id(world.b)
    assert world.clear([never_used])["items"][0]["l0_deleted"] == 0


def test_ids_are_trimmed_and_deduplicated_and_several_clear_together(world: World) -> None:
    world.seed(world.a)
    world.seed(world.b)
    a, b = world.memory_id(world.a), world.memory_id(world.b)
    data = world.clear([f"  {a} ", a, b, f"{b}\t"])
    assert [i["memory_id"] for i in data["items"]] == [a, b]
    assert [i["l0_deleted"] for i in data["items"]] == [6, 6] and data["all_cleared"] is True
    assert world.counts(world.a)["l0"] == world.counts(world.b)["l0"] == 0


def test_vectors_and_l1_history_of_the_agent_go_and_the_other_agents_stay(world: World) -> None:
    world.seed(world.a, tag="A")
    world.seed(world.b, tag="B")
    iso = world.iso(world.a, user_id="user-1")
    first = world.gw.ok("/v3/atomic/query", {}, isolation=iso)["items"][0]["id"]
    world.gw.ok("/v3/atomic/update", {"id": first, "content": "prefers oolong now"}, isolation=iso)
    assert rows(world.org, "SELECT COUNT(*) FROM l1_history WHERE id = ?", first) == [(1,)]
    # Vectors as the embedding worker would write them (any model: the store keeps float32 rows).
    store = world.gw.store
    model = EmbeddingModel("test-model", 4)
    store.reset_embeddings(model)
    tasks = store.next_embedding_tasks(100)
    store.store_embeddings(model, tasks, np.random.default_rng(0).random((len(tasks), 4), dtype=np.float32))
    assert rows(world.org, "SELECT COUNT(*) FROM l0_vectors") == [(12,)]
    assert rows(world.org, "SELECT COUNT(*) FROM l1_vectors") == [(6,)]

    world.clear([world.memory_id(world.a)])

    assert rows(world.org, "SELECT COUNT(*) FROM l0_vectors") == [(6,)]
    assert rows(world.org, "SELECT COUNT(*) FROM l1_vectors") == [(3,)]
    survivors = rows(
        world.org,
        "SELECT COUNT(*) FROM l0_vectors v JOIN l0_messages m ON m.rowid = v.rowid WHERE m.agent_id = ?",
        world.b,
    )
    assert survivors == [(6,)]
    assert rows(world.org, "SELECT COUNT(*) FROM l1_history WHERE id = ?", first) == [(0,)]
    scope = MemoryScope("svc-a", world.team, "user-1", world.a, "")
    assert store.vector_search_messages(scope, np.ones(4, dtype=np.float32), MessageFilter(), 10) == []


def test_every_layer_is_audited_under_the_request(world: World) -> None:
    world.seed(world.a)
    memory_id = world.memory_id(world.a)
    response = world.org.call(world.alice, CLEAR, {"memory_ids": [memory_id]})
    request_id = response.json()["request_id"]
    audit = rows(
        world.org,
        "SELECT layer, action, team_id, agent_id, user_id, task_id, request_id FROM memory_audit "
        "WHERE record_id = ? ORDER BY layer",
        memory_id,
    )
    assert audit == [
        (layer, "clear", world.team, world.a, world.alice.user_id, "", request_id) for layer in ("L0", "L1", "L2", "L3")
    ]
    world.clear([memory_id])  # the gateway key is named as such
    users = rows(world.org, "SELECT DISTINCT user_id FROM memory_audit WHERE record_id = ?", memory_id)
    assert set(users) == {(world.alice.user_id,), ("gateway-key",)}


# -- the pipeline ----------------------------------------------------------------------------------
def test_open_pipeline_work_of_the_agent_is_settled_and_writes_nothing_afterwards(world: World) -> None:
    world.seed(world.a, tag="A")
    world.seed(world.b, tag="B")
    gw = world.gw
    pipeline = gw.store.pipeline
    stamp = now_ms()
    assert pipeline.schedule(stamp, gw.pipeline.config.schedule) == 6  # one L1 job per session (3 per agent)
    # A worker holds every job when the clear comes: one of A's is in the middle of its LLM call.
    claimed = pipeline.claim("slow-worker", stamp, 60_000, 10)
    running = next(j for j in claimed if j.scope["agent_id"] == world.a)

    data = world.clear([world.memory_id(world.a)])

    assert data["items"][0]["jobs_cancelled"] == 3
    jobs = rows(world.org, "SELECT state, last_error, json_extract(scope_json, '$.agent_id') FROM pipeline_jobs")
    assert sorted(j for j in jobs if j[2] == world.a) == [("done", CANCELLED, world.a)] * 3
    assert rows(world.org, "SELECT COUNT(*) FROM pipeline_sessions WHERE agent_id = ?", world.a) == [(0,)]
    # The slow worker comes back with its results: its lease is gone, nothing is written.
    s = running.scope
    scope = MemoryScope(s["service_id"], s["team_id"], s["user_id"], s["agent_id"], s["task_id"])
    schedule = gw.pipeline.config.schedule
    with pytest.raises(LeaseLost):
        pipeline.commit_l1(
            running, "slow-worker", scope, s["session_id"], 10**9, L1Outcome(), now_ms(), schedule, False
        )
    # B's jobs go back to the queue and run; A stays empty.
    for job in claimed:
        if job.scope["agent_id"] == world.b:
            pipeline.fail(job, "slow-worker", "released", now_ms(), now_ms())
    gw.pipeline.drain()
    assert world.counts(world.a) == {"l0": 0, "l1": 0, "profile": 0}
    b_jobs = [
        j
        for j in rows(world.org, "SELECT state, last_error, json_extract(scope_json, '$.agent_id') FROM pipeline_jobs")
        if j[2] == world.b
    ]
    assert b_jobs and all(state == "done" and error != CANCELLED for state, error, _ in b_jobs)


class _ClearDuringGeneration:
    """The scene writer of the real pipeline, with a clear of the agent landing while it generates."""

    def __init__(self, world: World, inner: Any) -> None:
        self.world, self.inner, self.drafts = world, inner, 0

    def scenes(self, memories: Any, *args: Any, **kwargs: Any) -> Any:
        drafts = self.inner.scenes(memories, *args, **kwargs)  # made from the memories as they were
        self.drafts += len(drafts)
        self.world.clear([self.world.memory_id(self.world.a)])
        return drafts


def test_an_l2_job_under_way_when_the_clear_lands_writes_no_scene(world: World) -> None:
    world.seed(world.a)
    gw = world.gw
    profile = ProfileScope("svc-a", world.team, world.a, "user-1")
    scope = {"service_id": "svc-a", "team_id": world.team, "agent_id": world.a, "user_id": "user-1"}
    assert gw.store.pipeline.enqueue("svc-a", "l2", profile.key, scope, now_ms())
    stages = gw.pipeline.runner.stages
    writer = _ClearDuringGeneration(world, stages.scenes)
    gw.pipeline.runner.stages = Stages(stages.extractor, stages.deduplicator, writer, stages.persona, stages.generator)

    gw.pipeline.drain()

    assert writer.drafts > 0, "the scene writer produced nothing to write"
    assert world.counts(world.a) == {"l0": 0, "l1": 0, "profile": 0}
    jobs = rows(world.org, "SELECT kind, state, last_error FROM pipeline_jobs")
    assert ("l2", "done", CANCELLED) in jobs  # with the L1 jobs the worker's scheduling opened meanwhile
    assert {job[1:] for job in jobs} == {("done", CANCELLED)}


# -- all or nothing --------------------------------------------------------------------------------
def test_an_unknown_id_fails_the_whole_request_with_404_and_nothing_is_deleted(world: World) -> None:
    world.seed(world.a)
    known = world.memory_id(world.a)
    unknown = world.memory_id("agt-nobody")
    envelope = _refused(
        world, None, {"memory_ids": [known, unknown]}, 404, f"memory_ids[1]: chat memory not found: {unknown}"
    )
    assert envelope["data"]["all_cleared"] is False
    items = {i["memory_id"]: i for i in envelope["data"]["items"]}
    assert items[unknown]["reason"] == "not_found" and items[known]["reason"] == "not_attempted"
    assert not any(i["cleared"] for i in items.values()) and all(i["retryable"] is False for i in items.values())


def test_an_asset_that_is_not_a_chat_memory_is_not_found(world: World) -> None:
    body = {
        "asset_id": "skill-tea",
        "team_id": world.team,
        "asset_type": "skill",
        "name": "tea",
        "owner_user_id": world.alice.user_id,
        "source_type": "manual",
    }
    world.org.ok(world.alice, "/v3/meta/asset/create", body)
    _refused(world, None, {"memory_ids": ["skill-tea"]}, 404, "memory_ids[0]: chat memory not found: skill-tea")


def test_another_tenant_cannot_reach_the_memory(world: World) -> None:
    world.seed(world.a)
    memory_id = world.memory_id(world.a)
    before = _state(world)
    envelope = world.gw.fails(CLEAR, {"memory_ids": [memory_id]}, 404, service="svc-other", isolation={})
    assert envelope["message"] == f"memory_ids[0]: chat memory not found: {memory_id}"
    assert _state(world) == before


# -- who may clear ---------------------------------------------------------------------------------
def test_a_user_key_clears_only_what_its_user_owns(world: World) -> None:
    world.seed(world.a)
    mine = world.memory_id(world.a)
    assert world.clear([mine], world.alice)["items"][0]["l0_deleted"] == 6


def test_a_user_key_without_rights_is_refused_and_nothing_is_deleted(world: World) -> None:
    world.seed(world.a)
    memory_id = world.memory_id(world.a)
    # A private asset does not exist for those who may not read it: the answer is the one for an unknown id.
    unknown = f"memory_ids[0]: chat memory not found: {memory_id}"
    envelope = _refused(world, world.bob, {"memory_ids": [memory_id]}, 404, unknown)
    assert envelope["data"]["items"][0]["reason"] == "not_found"
    _refused(
        world, world.bob, {"memory_ids": ["chat_memory-nope"]}, 404, unknown.replace(memory_id, "chat_memory-nope")
    )
    # Even a team admin has no `delete` by role, and a system admin is no owner.
    world.org.join(world.team, world.alice, world.carol, "admin")
    _refused(world, world.carol, {"memory_ids": [memory_id]}, 404, unknown)
    _refused(world, world.org.admin, {"memory_ids": [memory_id]}, 404, unknown)
    # Shared with the team, members may read it, so they learn that they may not clear it.
    world.org.ok(world.alice, "/v3/meta/asset/update", {"asset_id": memory_id, "visibility": "team"})
    denied = (
        f"memory_ids[0]: permission_denied: only the owner of {memory_id} or a user granted delete on it may clear it"
    )
    envelope = _refused(world, world.bob, {"memory_ids": [memory_id]}, 403, denied)
    assert envelope["data"]["items"][0]["reason"] == "permission_denied"
    _refused(world, world.carol, {"memory_ids": [memory_id]}, 403, denied)


def test_one_foreign_id_fails_the_request_and_nothing_is_deleted(world: World) -> None:
    world.seed(world.a)
    world.seed(world.c, world.other_team)
    mine, carols = world.memory_id(world.a), world.memory_id(world.c, world.other_team)
    envelope = _refused(
        world, world.alice, {"memory_ids": [mine, carols]}, 404, f"memory_ids[1]: chat memory not found: {carols}"
    )
    assert [i["reason"] for i in envelope["data"]["items"]] == ["not_attempted", "not_found"]


def test_an_acl_grant_of_delete_lets_another_member_clear(world: World) -> None:
    world.seed(world.a)
    memory_id = world.memory_id(world.a)
    # A private asset is its owner's alone; shared as restricted, an ACL entry can grant `delete`.
    world.org.ok(world.alice, "/v3/meta/asset/update", {"asset_id": memory_id, "visibility": "restricted"})
    grant = {
        "asset_id": memory_id,
        "subject_type": "user",
        "subject_id": world.bob.user_id,
        "permission": "delete",
        "granted_by": world.alice.user_id,
    }
    world.org.ok(world.alice, "/v3/meta/acl/grant", grant)
    assert world.clear([memory_id], world.bob)["items"][0]["l0_deleted"] == 6
    assert len(world.org.ok(world.alice, "/v3/meta/acl/list", {"asset_id": memory_id})["items"]) == 1  # ACL kept


def test_authentication_is_the_data_planes(world: World, make_gateway: Any) -> None:
    body = {"memory_ids": [world.memory_id(world.a)]}
    no_bearer = world.gw.client.post(CLEAR, json=body, headers={"x-tdai-service-id": "svc-a"})
    assert no_bearer.status_code == 401
    no_service = world.gw.client.post(CLEAR, json=body, headers={"authorization": f"Bearer {world.gw.key}"})
    assert no_service.status_code == 401 and no_service.json()["message"] == "Missing x-tdai-service-id header"
    bad_key = world.org.call("sk-mem-not-a-key", CLEAR, body)
    assert bad_key.status_code == 401
    # Strict isolation does not apply: the ids name the scope.
    strict = _world(make_gateway("strict", strict_isolation=True))
    strict.seed(strict.a)
    assert strict.clear([strict.memory_id(strict.a)])["all_cleared"] is True
    # With user keys required on the data plane, the gateway key alone is not enough.
    keyed = _world(make_gateway("keyed", data_plane_auth="user_key"))
    keyed.org.fails(None, CLEAR, {"memory_ids": [keyed.memory_id(keyed.a)]}, 401)
    assert keyed.clear([keyed.memory_id(keyed.a)], keyed.alice)["all_cleared"] is True


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "memory_ids: is required"),
        ({"memory_ids": []}, "memory_ids: must have 1..100 items"),
        ({"memory_ids": [f"chat_memory-t-{i}" for i in range(101)]}, "memory_ids: must have 1..100 items"),
        ({"memory_ids": "chat_memory-t-a"}, "memory_ids: must be an array"),
        ({"memory_ids": ["chat_memory-t-a", "chat_memory-t-b", "  "]}, "memory_ids[2]: must be a non-empty string"),
        ({"memory_ids": ["chat_memory-t-a", 7]}, "memory_ids[1]: must be a non-empty string"),
        ({"memory_ids": [None]}, "memory_ids[0]: must be a non-empty string"),
        ({"memory_ids": ["x" * 257]}, "memory_ids[0]: must be at most 256 characters"),
    ],
)
def test_validation_names_the_field_and_the_rule_and_writes_nothing(
    world: World, body: dict[str, Any], message: str
) -> None:
    world.seed(world.a)
    _refused(world, None, body, 400, message)


# -- the SDK -----------------------------------------------------------------------------------------
def test_the_sdk_clears_through_a_live_server(tmp_path: Path) -> None:
    built = build_gateway(tmp_path / "live")
    try:
        with serve(built) as live:
            w = _world(live)
            w.seed(w.a)
            memory_id = w.memory_id(w.a)
            client = MemoryClient(
                str(live.client.base_url),
                live.key or "",
                "svc-a",
                team_id=w.team,
                agent_id=w.a,
                user_id=w.alice.user_id,
                user_key=w.alice.key,
            )
            with client:
                result = client.clear_chat_memory([f" {memory_id} ", memory_id])
                assert result["all_cleared"] is True
                assert [i["l0_deleted"] for i in result["items"]] == [6]
                again = client.clear_chat_memory([memory_id])
                assert again["items"][0]["l0_deleted"] == 0
            assert w.counts(w.a) == {"l0": 0, "l1": 0, "profile": 0}
    finally:
        built.close()
