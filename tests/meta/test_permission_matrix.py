"""The asset permission matrix through the real HTTP app: acl/check, asset/get and list-accessible agree.

Expected values come from `oracle()` below, written from the original's rules (and memhub's
decisions) and not imported from src:

- missing or archived asset → deny `asset_not_available`; the owner → allow `owner`;
- not an active member of the asset's team → deny `not_team_member`;
- `private` → deny `visibility_restricted` (even team admins);
- `restricted` → non-admins only through an ACL allow entry (`acl:<id>`), else `visibility_restricted`;
- `task` → actions other than read need an admin, else `visibility_restricted`;
- `team` / `agent` pass; role defaults admin={read,write,assign,share}, member and reviewer={read}
  (`role_default:<role>`); then an ACL allow entry (user / team_role / agent subject); else
  `no_permission`. `deny` entries are stored but never evaluated.

Principals: the asset owner (a plain member), a team admin, a member, a reviewer, an outsider
(member of another team only) and a user of another service id, where the asset does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.meta.org import Member, Org, table_snapshot

ACTIONS = ("read", "write", "delete", "assign", "share", "use")
PRINCIPALS = ("owner", "admin", "member", "reviewer", "outsider", "other_service")
ROLES = {"admin": "admin", "member": "member", "reviewer": "reviewer"}  # owner's role is checked separately
UNUSABLE = ("archived", "deprecated", "failed")  # never offered by list-accessible


@dataclass
class Acl:
    id: str
    subject_type: str
    subject_id: str
    permission: str
    effect: str


@dataclass
class Asset:
    asset_id: str
    visibility: str
    status: str = "approved"
    owner: str = "owner"  # the principal owning it
    acls: list[Acl] = field(default_factory=list)


@dataclass
class World:
    gw: Gateway
    org: Org
    other: Org  # the second service id
    team_id: str
    agent_x: str  # an agent of the team, named by `agent` ACL subjects
    people: dict[str, Member]
    assets: dict[str, Asset]

    def uid(self, who: str) -> str:
        return self.people[who].user_id


# -- the oracle ------------------------------------------------------------------------------
def oracle(world: World, asset: Asset, who: str, action: str, agent_id: str | None = None) -> tuple[bool, set[str]]:
    """(allowed, acceptable reasons) for `who` doing `action` on `asset`, from the original's rules."""
    if who == "other_service" or asset.status == "archived":
        return False, {"asset_not_available"}
    if who == asset.owner:
        return True, {"owner"}
    role = ROLES.get(who)
    if role is None:
        return False, {"not_team_member"}
    user_id = world.uid(who)

    def acl_reasons() -> set[str]:
        return {
            f"acl:{e.id}"
            for e in asset.acls
            if e.effect == "allow"
            and e.permission == action
            and (
                (e.subject_type == "user" and e.subject_id == user_id)
                or (e.subject_type == "team_role" and e.subject_id == role)
                or (e.subject_type == "agent" and agent_id is not None and e.subject_id == agent_id)
            )
        }

    if asset.visibility == "private":
        return False, {"visibility_restricted"}
    if asset.visibility == "restricted" and role != "admin":
        found = acl_reasons()
        return (True, found) if found else (False, {"visibility_restricted"})
    if asset.visibility == "task" and action != "read" and role != "admin":
        return False, {"visibility_restricted"}
    defaults = {"read", "write", "assign", "share"} if role == "admin" else {"read"}
    if action in defaults:
        return True, {f"role_default:{role}"}
    found = acl_reasons()
    return (True, found) if found else (False, {"no_permission"})


# -- the world -------------------------------------------------------------------------------
def _asset(world: World, asset_id: str, visibility: str, status: str = "approved") -> Asset:
    body = {
        "asset_id": asset_id,
        "team_id": world.team_id,
        "asset_type": "skill",
        "name": asset_id,
        "owner_user_id": world.uid("owner"),
        "source_type": "manual",
        "visibility": visibility,
        "status": status,
    }
    data = world.org.ok(world.people["owner"], "/v3/meta/asset/create", body)
    assert (data["visibility"], data["status"]) == (visibility, status)
    asset = Asset(asset_id, visibility, status)
    world.assets[asset_id] = asset
    return asset


def _grant(world: World, asset: Asset, subject_type: str, subject_id: str, permission: str, effect: str) -> None:
    body = {
        "asset_id": asset.asset_id,
        "subject_type": subject_type,
        "subject_id": subject_id,
        "permission": permission,
        "effect": effect,
        "granted_by": world.uid("owner"),
    }
    row = world.org.ok(world.people["owner"], "/v3/meta/acl/grant", body)
    asset.acls.append(Acl(row["id"], subject_type, subject_id, permission, row["effect"]))


@pytest.fixture(scope="module")
def world(live: Gateway) -> Iterator[World]:
    yield from _world(live)


def _world(gw: Gateway) -> Iterator[World]:
    org = Org(gw)
    people = {name: org.user(name) for name in ("owner", "admin", "member", "reviewer", "outsider")}
    joins = [(people["owner"], "member"), (people["member"], "member"), (people["reviewer"], "reviewer")]
    team_id = org.staffed_team(people["admin"], "assets-team", *joins)  # the team owner is its admin
    org.team(people["outsider"], "elsewhere")  # the outsider is a member of another team only
    agent_x = org.agent(people["member"], team_id, "agent-x", "team")

    other = Org(gw, service="svc-b")
    people["other_service"] = other.user("owner")  # same name, other instance
    other.team(people["other_service"], "assets-team")  # a team of the same name, no assets

    w = World(gw, org, other, team_id, agent_x, people, {})
    for visibility in ("private", "team", "restricted", "agent", "task"):
        _asset(w, f"plain-{visibility}", visibility)
    _asset(w, "archived-team", "team", "archived")
    _asset(w, "archived-restricted", "restricted", "archived")
    _asset(w, "deprecated-team", "team", "deprecated")

    acl_team = _asset(w, "acl-team", "team")
    _grant(w, acl_team, "user", w.uid("member"), "delete", "allow")
    _grant(w, acl_team, "team_role", "reviewer", "write", "allow")
    _grant(w, acl_team, "agent", agent_x, "use", "allow")
    _grant(w, acl_team, "user", w.uid("member"), "read", "deny")  # ignored: member still reads
    _grant(w, acl_team, "team_role", "admin", "use", "deny")  # ignored: nothing to take away
    _grant(w, acl_team, "user", w.uid("outsider"), "read", "allow")  # no use to a non-member
    _grant(w, acl_team, "team_role", "member", "share", "deny")

    acl_restricted = _asset(w, "acl-restricted", "restricted")
    _grant(w, acl_restricted, "user", w.uid("member"), "read", "allow")
    _grant(w, acl_restricted, "user", w.uid("member"), "write", "allow")
    _grant(w, acl_restricted, "team_role", "reviewer", "read", "allow")
    _grant(w, acl_restricted, "agent", agent_x, "share", "allow")
    _grant(w, acl_restricted, "team_role", "member", "delete", "deny")  # ignored
    _grant(w, acl_restricted, "user", w.uid("reviewer"), "use", "deny")  # ignored
    _grant(w, acl_restricted, "team_role", "admin", "delete", "allow")
    _grant(w, acl_restricted, "user", w.uid("outsider"), "read", "allow")

    archived = w.assets["archived-restricted"]
    _grant(w, archived, "user", w.uid("member"), "read", "allow")  # archived wins over any grant

    # Every agent of the team has its own chat_memory asset: private, owned by the agent's owner.
    for who in ("owner", "admin", "member", "reviewer"):
        body = {"team_id": team_id, "owner_user_id": w.uid(who)}
        for agent in org.ok(people[who], "/v3/meta/agent/list", body)["items"]:
            asset_id = f"chat_memory-{team_id}-{agent['agent_id']}"
            w.assets[asset_id] = Asset(asset_id, "private", "active", owner=who)
    yield w


def _org_of(world: World, who: str) -> Org:
    return world.other if who == "other_service" else world.org


def _check(world: World, asker: Member, org: Org, who: str, asset_id: str, action: str, **extra: Any) -> dict:
    body = {"user_id": world.uid(who), "asset_id": asset_id, "action": action, **extra}
    data = org.ok(asker, "/v3/meta/acl/check", body)
    assert set(data) == {"allowed", "reason"}
    return data


def _accessible(world: World, asker: Member, who: str, **body: Any) -> set[str]:
    org = _org_of(world, who)
    data = org.ok(asker, "/v3/meta/asset/list-accessible", {"user_id": world.uid(who), "limit": 100, **body})
    assert set(data) == {"items", "total", "limit", "offset"}
    assert data["total"] == len(data["items"])
    return {a["asset_id"] for a in data["items"]}


def _expected_accessible(world: World, who: str, action: str, agent_id: str | None = None) -> set[str]:
    return {
        a.asset_id
        for a in world.assets.values()
        if a.status not in UNUSABLE and oracle(world, a, who, action, agent_id)[0]
    }


ASSET_IDS = (
    "plain-private",
    "plain-team",
    "plain-restricted",
    "plain-agent",
    "plain-task",
    "archived-team",
    "archived-restricted",
    "deprecated-team",
    "acl-team",
    "acl-restricted",
)


# -- acl/check: every action, asked by a system admin and by the user themself --------------------
@pytest.mark.parametrize("who", PRINCIPALS)
@pytest.mark.parametrize("asset_id", ASSET_IDS)
def test_acl_check_matrix(world: World, asset_id: str, who: str) -> None:
    asset = world.assets[asset_id]
    org = _org_of(world, who)
    for action in ACTIONS:
        allowed, reasons = oracle(world, asset, who, action)
        for asker in (org.admin, world.people[who]):
            got = _check(world, asker, org, who, asset_id, action)
            assert got["allowed"] is allowed and got["reason"] in reasons, (asset_id, who, action, asker, got)
        if who == "other_service":
            continue  # agent-x does not exist there
        # The same question with the agent named: `agent` subjects match only then.
        allowed, reasons = oracle(world, asset, who, action, world.agent_x)
        got = _check(world, world.people[who], org, who, asset_id, action, agent_id=world.agent_x)
        assert got["allowed"] is allowed and got["reason"] in reasons, (asset_id, who, action, "agent", got)


def test_oracle_covers_every_rule(world: World) -> None:
    """The fixture exercises each branch of the algorithm at least once (guards the matrix itself)."""
    seen = set()
    for asset in world.assets.values():
        for who in PRINCIPALS:
            for action in ACTIONS:
                for agent_id in (None, world.agent_x):
                    _, reasons = oracle(world, asset, who, action, agent_id)
                    seen |= {r.split(":")[0] if r.startswith("acl:") else r for r in reasons}
    assert seen == {
        "asset_not_available",
        "owner",
        "not_team_member",
        "visibility_restricted",
        "role_default:admin",
        "role_default:member",
        "role_default:reviewer",
        "acl",
        "no_permission",
    }


def test_acl_check_specific_answers(world: World) -> None:
    """A few hand-read cells, so that the oracle cannot drift with the code."""
    member, reviewer, admin = "member", "reviewer", "admin"
    restricted = world.assets["acl-restricted"]
    by_subject = {(e.subject_type, e.subject_id, e.permission): e.id for e in restricted.acls}

    def answer(who: str, asset_id: str, action: str) -> dict:
        """acl/check as asked by the system admin."""
        return _check(world, world.org.admin, world.org, who, asset_id, action)

    def allow(reason: str) -> dict[str, Any]:
        return {"allowed": True, "reason": reason}

    def deny(reason: str) -> dict[str, Any]:
        return {"allowed": False, "reason": reason}

    assert answer(member, "acl-restricted", "read") == allow(f"acl:{by_subject[('user', world.uid(member), 'read')]}")
    assert answer(reviewer, "acl-restricted", "read") == allow(f"acl:{by_subject[('team_role', 'reviewer', 'read')]}")
    # The deny entry on (team_role member, delete) is not evaluated, and nothing allows it.
    assert answer(member, "acl-restricted", "delete") == deny("visibility_restricted")
    # An admin of a restricted asset falls through to role defaults, then to ACLs.
    assert answer(admin, "acl-restricted", "write") == allow("role_default:admin")
    assert answer(admin, "acl-restricted", "delete") == allow(f"acl:{by_subject[('team_role', 'admin', 'delete')]}")
    # A deny entry on read does not take the member's default read away.
    assert answer(member, "acl-team", "read") == allow("role_default:member")
    assert answer(admin, "acl-team", "use") == deny("no_permission")
    assert answer("owner", "archived-team", "read") == deny("asset_not_available")
    assert answer(reviewer, "plain-task", "read") == allow("role_default:reviewer")
    assert answer(admin, "plain-private", "read") == deny("visibility_restricted")
    assert answer("outsider", "acl-team", "read") == deny("not_team_member")


# -- asset/get: readable ⇔ read allowed (404 otherwise, the same message as a missing asset) ----------
@pytest.mark.parametrize("who", PRINCIPALS)
def test_asset_get_matches_read_permission(world: World, who: str) -> None:
    org = _org_of(world, who)
    person = world.people[who]
    before = table_snapshot(world.gw)
    for asset_id, asset in world.assets.items():
        readable = oracle(world, asset, who, "read")[0]
        if who == asset.owner:
            # memhub decision: owners see their own assets, archived ones included (they may still
            # update or delete them), although acl/check says asset_not_available for those.
            readable = True
        response = org.call(person, "/v3/meta/asset/get", {"asset_id": asset_id})
        envelope = response.json()
        if readable:
            assert response.status_code == 200 and envelope["code"] == 0, (asset_id, who, envelope)
            assert envelope["data"]["asset_id"] == asset_id
            assert envelope["data"]["team_id"] == world.team_id
        else:
            assert response.status_code == 404, (asset_id, who, envelope)
            assert envelope["code"] == 404
            assert envelope["message"] == f"asset_not_found: not found: {asset_id}"
    missing = org.call(person, "/v3/meta/asset/get", {"asset_id": "no-such-asset"}).json()
    assert missing["code"] == 404 and missing["message"] == "asset_not_found: not found: no-such-asset"
    assert table_snapshot(world.gw) == before


# -- list-accessible: exactly the usable assets the oracle allows ----------------------------------
@pytest.mark.parametrize("who", PRINCIPALS)
def test_list_accessible_matches_oracle(world: World, who: str) -> None:
    person = world.people[who]
    org = _org_of(world, who)
    for action in ACTIONS:
        expected = _expected_accessible(world, who, action)
        scoped = {"team_id": world.team_id} if who != "other_service" else {}
        assert _accessible(world, person, who, action=action, **scoped) == expected, (who, action)
        # Without team_id: every team of the user (the others hold none of these assets).
        assert _accessible(world, person, who, action=action) == expected, (who, action)
        # A system admin may ask about anyone and gets the same answer.
        assert _accessible(world, org.admin, who, action=action) == expected, (who, action, "sysadmin")
        if who != "other_service":
            with_agent = _expected_accessible(world, who, action, world.agent_x)
            got = _accessible(world, person, who, action=action, agent_id=world.agent_x)
            assert got == with_agent, (who, action, "agent")


def test_list_accessible_default_action_is_read(world: World) -> None:
    assert _accessible(world, world.people["member"], "member") == _expected_accessible(world, "member", "read")


def test_other_service_sees_nothing_of_this_instance(world: World) -> None:
    """The asset ids exist in svc-a only: svc-b answers as for any missing asset."""
    stranger = world.people["other_service"]
    for asset_id in world.assets:
        envelope = world.other.call(stranger, "/v3/meta/asset/get", {"asset_id": asset_id}).json()
        assert envelope["code"] == 404 and envelope["message"] == f"asset_not_found: not found: {asset_id}"
        envelope = world.other.call(world.other.admin, "/v3/meta/asset/get", {"asset_id": asset_id}).json()
        assert envelope["code"] == 404
    listed = world.other.ok(world.other.admin, "/v3/meta/asset/list-accessible", {"user_id": stranger.user_id})
    assert listed["items"] == [] and listed["total"] == 0
    # A key of svc-a is not a key of svc-b.
    response = world.gw.client.post(
        "/v3/meta/acl/check",
        json={"user_id": world.uid("owner"), "asset_id": "plain-team", "action": "read"},
        headers=world.other.headers(world.people["owner"]),
    )
    assert response.status_code == 401
    assert response.json()["message"] == "unauthorized: invalid_user_key"


# -- who may ask about whom ----------------------------------------------------------------------
def _denied(world: World, org: Org, asker: Member, path: str, body: dict[str, Any], message: str) -> None:
    before = table_snapshot(world.gw)
    envelope = org.fails(asker, path, body, 403)
    assert envelope["message"] == message
    assert table_snapshot(world.gw) == before


def test_acl_check_about_another_user_needs_an_admin(world: World) -> None:
    body = {"user_id": world.uid("member"), "asset_id": "plain-team", "action": "read"}
    for who in ("owner", "reviewer", "outsider"):
        _denied(
            world,
            world.org,
            world.people[who],
            "/v3/meta/acl/check",
            body,
            "permission_denied: cannot check another user's access",
        )
    # The team admin of the asset's team may ask; so may the system admin (checked in the matrix).
    got = world.org.ok(world.people["admin"], "/v3/meta/acl/check", body)
    assert got == {"allowed": True, "reason": "role_default:member"}
    # A missing asset is refused alike to a non-admin (nothing leaks).
    missing = {**body, "asset_id": "no-such-asset"}
    _denied(
        world,
        world.org,
        world.people["reviewer"],
        "/v3/meta/acl/check",
        missing,
        "permission_denied: cannot check another user's access",
    )
    got = world.org.ok(world.people["member"], "/v3/meta/acl/check", missing)
    assert got == {"allowed": False, "reason": "asset_not_available"}


def test_acl_check_by_user_key_and_unknown_agent(world: World) -> None:
    member = world.people["member"]
    got = world.org.ok(
        member, "/v3/meta/acl/check", {"user_key": member.key, "asset_id": "acl-restricted", "action": "write"}
    )
    restricted = world.assets["acl-restricted"]
    (write_id,) = [e.id for e in restricted.acls if e.permission == "write"]
    assert got == {"allowed": True, "reason": f"acl:{write_id}"}
    before = table_snapshot(world.gw)
    envelope = world.org.fails(
        member,
        "/v3/meta/acl/check",
        {"user_id": member.user_id, "asset_id": "plain-team", "action": "read", "agent_id": "agt-nope"},
        404,
    )
    assert envelope["message"] == "agent_not_found: not found: agt-nope"
    envelope = world.org.fails(
        member, "/v3/meta/acl/check", {"user_id": member.user_id, "asset_id": "plain-team", "action": "fly"}, 400
    )
    assert "action" in envelope["message"]
    envelope = world.org.fails(member, "/v3/meta/acl/check", {"asset_id": "plain-team", "action": "read"}, 400)
    assert "user_id or user_key is required" in envelope["message"]
    assert table_snapshot(world.gw) == before


def test_list_accessible_about_another_user(world: World) -> None:
    member_id = world.uid("member")
    message = "permission_denied: cannot access another user's assets"
    path = "/v3/meta/asset/list-accessible"
    for who in ("owner", "reviewer", "outsider"):
        _denied(world, world.org, world.people[who], path, {"user_id": member_id, "team_id": world.team_id}, message)
    # A team admin only with the team named (the answer is about that team).
    _denied(world, world.org, world.people["admin"], path, {"user_id": member_id}, message)
    got = _accessible(world, world.people["admin"], "member", team_id=world.team_id)
    assert got == _expected_accessible(world, "member", "read")


def test_list_accessible_for_a_team_the_user_is_not_in_is_empty(world: World) -> None:
    data = world.org.ok(
        world.people["outsider"],
        "/v3/meta/asset/list-accessible",
        {"user_id": world.uid("outsider"), "team_id": world.team_id},
    )
    assert data == {"items": [], "total": 0, "limit": 20, "offset": 0}


# -- changes take effect at once -------------------------------------------------------------------
@pytest.fixture
def small(make_org: Callable[..., Org]) -> tuple[Gateway, Org, dict[str, Member], str]:
    org = make_org("small")
    people = {n: org.user(n) for n in ("owner", "admin", "member")}
    team_id = org.staffed_team(people["admin"], "t", (people["owner"], "member"), (people["member"], "member"))
    body = {
        "asset_id": "doc",
        "team_id": team_id,
        "asset_type": "llm_wiki",
        "name": "doc",
        "owner_user_id": people["owner"].user_id,
        "source_type": "manual",
        "visibility": "restricted",
    }
    org.ok(people["owner"], "/v3/meta/asset/create", body)
    return org.gw, org, people, team_id


def test_grant_revoke_visibility_and_membership_changes(small: tuple[Gateway, Org, dict[str, Member], str]) -> None:
    gw, org, people, team_id = small
    owner, member = people["owner"], people["member"]

    def check(action: str = "read") -> dict:
        return org.ok(member, "/v3/meta/acl/check", {"user_id": member.user_id, "asset_id": "doc", "action": action})

    def readable() -> bool:
        return org.call(member, "/v3/meta/asset/get", {"asset_id": "doc"}).status_code == 200

    assert check() == {"allowed": False, "reason": "visibility_restricted"} and not readable()
    grant = {
        "asset_id": "doc",
        "subject_type": "user",
        "subject_id": member.user_id,
        "permission": "read",
        "granted_by": owner.user_id,
    }
    acl = org.ok(owner, "/v3/meta/acl/grant", grant)
    assert check() == {"allowed": True, "reason": f"acl:{acl['id']}"} and readable()
    # Turning the same entry into a deny (upsert) withdraws the allow.
    org.ok(owner, "/v3/meta/acl/grant", {**grant, "effect": "deny"})
    assert check() == {"allowed": False, "reason": "visibility_restricted"} and not readable()
    org.ok(owner, "/v3/meta/acl/grant", {**grant, "effect": "allow"})
    assert readable()
    org.ok(owner, "/v3/meta/acl/revoke", {"id": acl["id"]})
    assert check() == {"allowed": False, "reason": "visibility_restricted"} and not readable()
    org.ok(owner, "/v3/meta/asset/update", {"asset_id": "doc", "visibility": "team"})
    assert check() == {"allowed": True, "reason": "role_default:member"} and readable()
    org.ok(owner, "/v3/meta/asset/update", {"asset_id": "doc", "visibility": "private"})
    assert check() == {"allowed": False, "reason": "visibility_restricted"} and not readable()
    org.ok(owner, "/v3/meta/asset/update", {"asset_id": "doc", "visibility": "team"})
    # A removed member is no member.
    org.ok(people["admin"], "/v3/meta/team-member/remove", {"team_id": team_id, "user_id": member.user_id})
    assert check() == {"allowed": False, "reason": "not_team_member"} and not readable()
    # Re-added with status "removed": still not an active member.
    org.ok(
        people["admin"],
        "/v3/meta/team-member/add",
        {"team_id": team_id, "user_id": member.user_id, "role": "member", "status": "removed"},
    )
    assert check() == {"allowed": False, "reason": "not_team_member"} and not readable()
    org.join(team_id, people["admin"], member, "admin")
    assert check("write") == {"allowed": True, "reason": "role_default:admin"} and readable()
    # Archiving denies everyone, the owner included.
    org.ok(owner, "/v3/meta/asset/update", {"asset_id": "doc", "status": "archived"})
    assert check() == {"allowed": False, "reason": "asset_not_available"} and not readable()
    got = org.ok(owner, "/v3/meta/acl/check", {"user_id": owner.user_id, "asset_id": "doc", "action": "read"})
    assert got == {"allowed": False, "reason": "asset_not_available"}
    assert table_snapshot(gw)["meta_assets"]  # the archived asset is still stored
