"""Who may read, change and apply custom memory prompts, through the real app with user keys.

alice owns team A (erin is one of its admins, bob a plain member, agent AT), carol owns team B
(agent CB); root is the instance's system admin. A prompt belongs to the team it was created for,
or to the instance (created by root or with the gateway key alone). Members read their teams'
prompts, settings and logs; team admins change them; only root and the gateway key touch
instance-level prompts and the instance-wide setting. Another team's prompt answers 404 and
nothing changes; a team or agent the caller may not name answers 403 naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memhub.model.prompts import PromptTarget
from memhub.store.sqlite import SQLiteStore
from memhub.store.sqlite.prompts import SQLitePromptStore
from memhub.store.sqlite.schema import MIGRATIONS
from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org, rows
from tests.pipeline.fake_llm import FakeChat
from tests.pipeline.test_llm_flow import ScriptedModel, batch_of, llm_gateway

INSTANCE_ONLY = "team_id: only a system admin or the gateway key may manage instance-level memory prompts"
NOT_MEMBER = "team_id: not a team this user is an active member of"
NOT_FOUND = "MEMORY_PROMPT_NOT_FOUND"


def not_admin(field: str, team: str) -> str:
    return f"{field}: only an admin of team {team} may change its memory prompts"


@dataclass
class Tenant:
    org: Org
    alice: Member
    bob: Member
    erin: Member
    carol: Member
    team_a: str
    team_b: str
    at: str
    cb: str

    @property
    def root(self) -> Member:
        return self.org.admin

    def call(self, who: Member | None, route: str, body: dict[str, Any], extra: dict[str, str] | None = None) -> Any:
        """POST /v3/memory-prompt/<route> as `who` (None: the gateway key alone)."""
        path = f"/v3/memory-prompt/{route}"
        return self.org.gw.client.post(path, json=body, headers=self.org.headers(who, extra))

    def ok(self, who: Member | None, route: str, body: dict[str, Any], **kw: Any) -> Any:
        response = self.call(who, route, body, **kw)
        envelope = response.json()
        assert response.status_code == 200 and envelope["code"] == 0, (route, envelope)
        return envelope["data"]

    def fails(self, who: Member | None, route: str, body: dict[str, Any], code: int, **kw: Any) -> dict[str, Any]:
        response = self.call(who, route, body, **kw)
        envelope = response.json()
        assert (response.status_code, envelope["code"]) == (code, code), (route, envelope)
        return envelope

    def create(self, who: Member | None, team: str | None, prompt: str = "focus on food", layer: str = "l1") -> str:
        body = {"name": "p", "layer": layer, "prompt": prompt} | ({"team_id": team} if team else {})
        return self.ok(who, "create", body)["memory_prompt_id"]

    def prompts(self) -> list[tuple[Any, ...]]:
        """Every stored prompt, to prove a refused request changed none."""
        return rows(self.org, "SELECT * FROM memory_prompts ORDER BY memory_prompt_id")

    def settings(self) -> list[tuple[Any, ...]]:
        return rows(self.org, "SELECT * FROM memory_prompt_settings ORDER BY team_id, agent_id, layer")


def make_tenant(gw: Gateway) -> Tenant:
    org = Org(gw)
    alice, bob, erin, carol = org.users("alice", "bob", "erin", "carol")
    team_a = org.staffed_team(alice, "A", (bob, "member"), (erin, "admin"))
    team_b = org.team(carol, "B")
    at = org.agent(alice, team_a, "at", "team")
    cb = org.agent(carol, team_b, "cb", "team")
    return Tenant(org, alice, bob, erin, carol, team_a, team_b, at, cb)


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Tenant]:
    gw = build_gateway(tmp_path / "data")
    yield make_tenant(gw)
    gw.close()


# -- creating ----------------------------------------------------------------------------------------------------------
def test_a_prompt_belongs_to_the_team_it_is_created_for(t: Tenant) -> None:
    by_body = t.create(t.alice, t.team_a)
    by_header = t.ok(t.erin, "create", {"name": "h", "layer": "l2", "prompt": "x"}, extra={"x-tdai-team-id": t.team_a})
    for pid in (by_body, by_header["memory_prompt_id"]):
        assert t.ok(t.bob, "get", {"memory_prompt_id": pid})["team_id"] == t.team_a
    instance = t.create(t.root, None)
    assert t.ok(None, "get", {"memory_prompt_id": instance})["team_id"] is None


@pytest.mark.parametrize(
    ("who", "team", "message"),
    [
        ("alice", None, INSTANCE_ONLY),  # a team owner cannot make an instance-level prompt
        ("bob", "a", not_admin("team_id", "{a}")),  # a plain member does not change the team's prompts
        ("carol", "a", NOT_MEMBER),
    ],
)
def test_creating_outside_ones_admin_teams_is_refused_and_stores_nothing(
    t: Tenant, who: str, team: str | None, message: str
) -> None:
    body = {"name": "n", "layer": "l1", "prompt": "x"} | ({"team_id": t.team_a} if team else {})
    envelope = t.fails(getattr(t, who), "create", body, 403)
    assert envelope["message"] == message.format(a=t.team_a)
    assert t.prompts() == []


# -- reading -----------------------------------------------------------------------------------------------------------
def test_list_shows_only_the_prompts_of_the_callers_teams(t: Tenant) -> None:
    pa, pb, pi = t.create(t.alice, t.team_a), t.create(t.carol, t.team_b), t.create(t.root, None)

    def listed(who: Member | None) -> set[str]:
        page = t.ok(who, "get", {"limit": 100})
        assert page["total"] == len(page["items"])
        return {p["memory_prompt_id"] for p in page["items"]}

    assert listed(t.bob) == listed(t.alice) == {pa}
    assert listed(t.carol) == {pb}
    assert listed(t.root) == listed(None) == {pa, pb, pi}
    assert t.ok(t.bob, "get", {"layer": "l1", "limit": 1})["total"] == 1


def test_another_teams_prompt_is_not_found_for_get_update_and_delete_and_nothing_changes(t: Tenant) -> None:
    pa, pb, pi = t.create(t.alice, t.team_a), t.create(t.carol, t.team_b), t.create(t.root, None)
    before = t.prompts()
    for pid in (pa, pi):
        assert t.fails(t.carol, "get", {"memory_prompt_id": pid}, 404)["message"] == NOT_FOUND
        assert t.fails(t.carol, "update", {"memory_prompt_id": pid, "prompt": "hijacked"}, 404)["message"] == NOT_FOUND
    refused = t.fails(t.carol, "delete", {"memory_prompt_ids": [pb, pa, pi]}, 404)
    assert refused["data"] == {"missing_ids": [pa, pi]}
    assert t.prompts() == before  # not even carol's own prompt went: the batch is all or nothing


def test_a_plain_member_reads_the_teams_prompts_but_only_admins_change_them(t: Tenant) -> None:
    pa = t.create(t.alice, t.team_a)
    assert t.ok(t.bob, "get", {"memory_prompt_id": pa})["prompt"] == "focus on food"
    before = t.prompts()
    update = t.fails(t.bob, "update", {"memory_prompt_id": pa, "prompt": "x"}, 403)
    assert update["message"] == not_admin("memory_prompt_id", t.team_a)
    delete = t.fails(t.bob, "delete", {"memory_prompt_ids": [pa]}, 403)
    assert delete["message"] == not_admin("memory_prompt_ids[0]", t.team_a)
    assert t.prompts() == before
    assert t.ok(t.erin, "update", {"memory_prompt_id": pa, "prompt": "v2"})["version"] == 2  # a team admin
    assert t.ok(t.erin, "delete", {"memory_prompt_ids": [pa]})["deleted_prompt_ids"] == [pa]


def test_instance_prompts_are_changed_only_by_the_system_admin_or_the_gateway_key(t: Tenant) -> None:
    pi = t.create(None, None)
    assert t.ok(t.root, "update", {"memory_prompt_id": pi, "name": "renamed"})["version"] == 2
    assert t.fails(t.alice, "update", {"memory_prompt_id": pi, "name": "x"}, 404)["message"] == NOT_FOUND
    assert t.ok(None, "delete", {"memory_prompt_ids": [pi]})["deleted_prompt_ids"] == [pi]


# -- settings ----------------------------------------------------------------------------------------------------------
def test_set_without_a_team_by_a_user_is_refused_and_installs_no_instance_prompt(t: Tenant) -> None:
    pa = t.create(t.alice, t.team_a)
    for action in ("apply", "clear"):
        body = {"action": action, "layer": "l1"} | ({"memory_prompt_id": pa} if action == "apply" else {})
        assert t.fails(t.alice, "set", body, 403)["message"] == INSTANCE_ONLY
    assert t.settings() == []
    resolved = t.ok(t.carol, "get", {"team_id": t.team_b, "layer": "l1"})
    assert (resolved["source"], resolved["prompt"]) == ("system", "")


def test_a_setting_may_only_use_the_target_teams_own_or_an_instance_prompt(t: Tenant) -> None:
    pa, pi = t.create(t.alice, t.team_a), t.create(t.root, None)
    for body in ({"team_id": t.team_b}, {}):
        envelope = t.fails(t.root, "set", {"action": "apply", "layer": "l1", "memory_prompt_id": pa, **body}, 400)
        assert envelope["message"].startswith(f"PROMPT_TEAM_MISMATCH: memory_prompt_id: prompt {pa} belongs to team")
    assert t.settings() == []
    apply = {"action": "apply", "layer": "l1"}
    assert t.ok(t.alice, "set", {**apply, "memory_prompt_id": pa, "team_id": t.team_a, "agent_ids": [t.at]}) == {
        "affected": 1
    }
    assert t.ok(t.root, "set", {**apply, "memory_prompt_id": pi, "team_id": t.team_a}) == {"affected": 1}
    assert t.ok(t.root, "set", {**apply, "memory_prompt_id": pi, "team_id": t.team_b}) == {"affected": 1}
    # A team admin cannot see the instance's prompts, let alone apply them.
    assert t.fails(t.carol, "set", {**apply, "memory_prompt_id": pi, "team_id": t.team_b}, 404)["message"] == NOT_FOUND


@pytest.mark.parametrize(
    ("who", "extra", "status", "message"),
    [
        ("bob", {}, 403, "team_id: only an admin of team {a} may change its memory prompts"),
        ("carol", {}, 403, NOT_MEMBER),
        ("alice", {"agent_ids": ["{cb}"]}, 403, "agent_ids[0]: not an agent of team {a}"),
        ("alice", {"agent_ids": ["{at}", "agent-nowhere"]}, 403, "agent_ids[1]: not an agent of team {a}"),
    ],
)
def test_set_and_clear_on_targets_outside_ones_admin_teams_are_refused(
    t: Tenant, who: str, extra: dict[str, Any], status: int, message: str
) -> None:
    pa = t.create(t.alice, t.team_a)
    ids = {"a": t.team_a, "at": t.at, "cb": t.cb}
    extra = {k: [v.format(**ids) for v in vs] for k, vs in extra.items()}
    for action in ("apply", "clear"):
        body = {"action": action, "layer": "l1", "team_id": t.team_a, "memory_prompt_id": pa, **extra}
        if action == "clear":
            del body["memory_prompt_id"]
        assert t.fails(getattr(t, who), "set", body, status)["message"] == message.format(**ids)
    assert t.settings() == []


def test_settings_logs_and_resolution_show_only_the_callers_teams(t: Tenant) -> None:
    pa, pb, pi = t.create(t.alice, t.team_a), t.create(t.carol, t.team_b), t.create(t.root, None)
    apply = {"action": "apply", "layer": "l1"}
    t.ok(t.alice, "set", {**apply, "memory_prompt_id": pa, "team_id": t.team_a})
    t.ok(t.carol, "set", {**apply, "memory_prompt_id": pb, "team_id": t.team_b})
    t.ok(t.root, "set", {**apply, "memory_prompt_id": pi})

    def targets(who: Member | None, body: dict[str, Any]) -> set[tuple[str | None, str]]:
        items = t.ok(who, "setting/list", body)["items"]
        return {(s["team_id"], s["memory_prompt_id"]) for s in items}

    assert targets(t.bob, {}) == {(t.team_a, pa)}
    assert targets(t.carol, {}) == {(t.team_b, pb)}
    assert targets(t.bob, {"target_type": "instance"}) == set()
    assert targets(t.bob, {"memory_prompt_id": pb}) == set()
    assert targets(None, {}) == {(t.team_a, pa), (t.team_b, pb), (None, pi)}
    assert t.fails(t.bob, "setting/list", {"team_id": t.team_b}, 403)["message"] == NOT_MEMBER

    assert t.ok(t.carol, "log", {"memory_prompt_id": pa}) == {"items": [], "total": 0}
    assert [e["memory_prompt_id"] for e in t.ok(t.bob, "log", {"team_id": t.team_a})["items"]] == [pa]
    assert t.fails(t.carol, "log", {"team_id": t.team_a}, 403)["message"] == NOT_MEMBER

    resolved = t.ok(t.bob, "get", {"team_id": t.team_a, "agent_id": t.at, "layer": "l1"})
    assert (resolved["source"], resolved["memory_prompt_id"]) == ("team", pa)
    assert t.fails(t.bob, "get", {"team_id": t.team_b, "layer": "l1"}, 403)["message"] == NOT_MEMBER
    agent = t.fails(t.bob, "get", {"team_id": t.team_a, "agent_id": t.cb, "layer": "l1"}, 403)
    assert agent["message"] == f"agent_id: not an agent of team {t.team_a}"


def test_the_prompt_routes_take_the_user_key_as_the_bearer_when_only_user_keys_open_the_data_plane(
    make_gateway: Callable[..., Gateway],
) -> None:
    t = make_tenant(make_gateway("user-keys", data_plane_auth="user_key"))
    pa = t.create(t.alice, t.team_a)
    response = t.org.gw.client.post(
        "/v3/memory-prompt/get",
        json={"memory_prompt_id": pa},
        headers={"authorization": f"Bearer {t.bob.key}", "x-tdai-service-id": t.org.service},
    )
    assert response.json()["data"]["memory_prompt_id"] == pa
    assert t.fails(None, "get", {}, 401)["message"] == "unauthorized: missing_user_key"


# -- what reaches the model --------------------------------------------------------------------------------------------
def test_an_instance_prompt_reaches_every_team_and_a_team_prompt_only_its_own(tmp_path: Path) -> None:
    with FakeChat() as fake:
        model = ScriptedModel()
        fake.script = model
        gw = llm_gateway(tmp_path / "data", fake)
        try:
            t = make_tenant(gw)
            instance = t.create(t.root, None, prompt="INSTANCE STRATEGY: keep travel facts")
            team = t.create(t.alice, t.team_a, prompt="TEAM A STRATEGY: keep food facts")
            t.ok(t.root, "set", {"action": "apply", "layer": "l1", "memory_prompt_id": instance})
            t.ok(t.alice, "set", {"action": "apply", "layer": "l1", "memory_prompt_id": team, "team_id": t.team_a})
            # The original let any key install its prompt instance-wide, into every team's extraction.
            set_everywhere = {"action": "apply", "layer": "l1", "memory_prompt_id": team}
            assert t.fails(t.alice, "set", set_everywhere, 403)["message"] == INSTANCE_ONLY

            said = {}
            for who, team_id, agent in ((t.alice, t.team_a, t.at), (t.carol, t.team_b, t.cb)):
                body = {"team_id": team_id, "agent_id": agent, "session_id": "s1"}
                body["messages"] = [{"role": "user", "content": f"{who.username} likes trains and pasta"}]
                (mid,) = t.org.ok(who, "/v3/conversation/add", body)["accepted_ids"]
                said[mid] = team_id
            gw.pipeline.drain()

            seen = {}
            for call in model.calls("extract"):
                system = "\n".join(m["content"] for m in call.body["messages"] if m["role"] == "system")
                for mid, _, _ in batch_of(call.body):
                    seen[said[mid]] = system
            assert set(seen) == {t.team_a, t.team_b}
            assert "TEAM A STRATEGY" in seen[t.team_a] and "INSTANCE STRATEGY" not in seen[t.team_a]
            assert "INSTANCE STRATEGY" in seen[t.team_b] and "TEAM A STRATEGY" not in seen[t.team_b]
        finally:
            gw.close()


# -- the store ---------------------------------------------------------------------------------------------------------
def test_resolution_ignores_a_setting_that_points_at_another_teams_prompt(t: Tenant) -> None:
    pa = t.create(t.alice, t.team_a, prompt="team A only")
    # Written past the service's rule (as a database from before it could hold): it must not reach team B.
    store = SQLitePromptStore(t.org.gw.store)
    assert store.apply_prompt(t.org.service, pa, [PromptTarget(t.team_b)], "l1", "req-x", 1) == 1
    assert store.resolve(t.org.service, t.team_b, "", "l1") is None
    assert store.resolve(t.org.service, t.team_a, "", "l1") is None  # set on B only, so A has none either


def test_the_migration_gives_each_prompt_the_only_team_that_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhub.store.sqlite import store as sqlite_module
    from memhub.store.sqlite.pipeline_schema import add_prompt_owners

    before = MIGRATIONS[: MIGRATIONS.index(add_prompt_owners)]
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", before)
    old = SQLiteStore(tmp_path / "data")
    settings = {  # prompt → the (team, agent) targets using it; "" is the instance
        "mp-one-team": [("A", ""), ("A", "agent-1")],
        "mp-two-teams": [("A", "agent-2"), ("B", "")],
        "mp-instance": [("", "")],
        "mp-team-and-instance": [("C", "")],
        "mp-unused": [],
    }
    with old._write() as con:
        for pid, targets in settings.items():
            con.execute(
                "INSERT INTO memory_prompts (service_id, memory_prompt_id, name, layer, prompt, created_ms, "
                "updated_ms) VALUES ('svc-a', ?, 'n', 'l1', 'x', 1, 1)",
                (pid,),
            )
            for team, agent in targets:
                con.execute(
                    "INSERT INTO memory_prompt_settings (service_id, team_id, agent_id, layer, memory_prompt_id, "
                    "updated_ms) VALUES ('svc-a', ?, ?, 'l1', ?, 1)",
                    (team, agent, pid),
                )
        # The instance-wide setting of layer l2 uses the prompt team C also uses for l1.
        con.execute(
            "INSERT INTO memory_prompt_settings (service_id, team_id, agent_id, layer, memory_prompt_id, updated_ms) "
            "VALUES ('svc-a', '', '', 'l2', 'mp-team-and-instance', 1)"
        )
    old.close()
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", MIGRATIONS)
    new = SQLiteStore(tmp_path / "data")
    try:
        owners = dict(new._reader().execute("SELECT memory_prompt_id, owner_team_id FROM memory_prompts"))
        assert owners == {
            "mp-one-team": "A",
            "mp-two-teams": "",
            "mp-instance": "",
            "mp-team-and-instance": "",
            "mp-unused": "",
        }
    finally:
        new.close()
