"""Drafts: a skill a team member writes through someone else's agent reaches no prompt but her own until the agent's
owner or a team admin publishes it; publishing is audited; a member's change to a published skill is a draft again.

alice owns team T and its team-visible agent AT; carol administers T; mel and bob are plain members; dave owns
another team. One gateway for the module: every test writes skills of its own names.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org
from tests.skills.search_kit import Skills, skill_md

NOT_FOUND = 40401


@dataclass
class Team:
    gw: Gateway
    org: Org
    alice: Member
    carol: Member
    mel: Member
    bob: Member
    dave: Member
    team: str
    other_team: str
    at: str

    def as_(self, who: Member | None, agent: str | None = None, team: str | None = None) -> Skills:
        ids = {"team_id": team or self.team, "agent_id": agent or self.at}
        if who is None:
            return Skills(self.gw, ids)
        return Skills(self.gw, ids, self.org, who)

    def audit(self, skill_id: str) -> list[dict[str, Any]]:
        items = self.org.ok(self.org.admin, "/v3/meta/audit/list", {"action": "skill/publish"})["items"]
        return [e for e in items if e["target_ids"] == [skill_id]]


@pytest.fixture(scope="module")
def t(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    gw = build_gateway(Path(tmp_path_factory.mktemp("drafts")) / "data", pipeline_enabled=False)
    org = Org(gw)
    alice, carol, mel, bob, dave = org.users("alice", "carol", "mel", "bob", "dave")
    team = org.staffed_team(alice, "T", (carol, "admin"), (mel, "member"), (bob, "member"))
    at = org.agent(alice, team, "at", "team")
    yield Team(gw, org, alice, carol, mel, bob, dave, team, org.team(dave, "D"), at)
    gw.close()


def code(skills: Skills, route: str, body: dict[str, Any]) -> int:
    return int(skills.post(route, body)["code"])


def listed(skills: Skills, **body: Any) -> list[str]:
    return [h["name"] for h in skills.listing(**body)["hits"]]


def share_with_team(t: Team, skill_id: str) -> None:
    t.org.ok(t.alice, "/v3/meta/asset/update", {"asset_id": skill_id, "visibility": "team"})


def test_a_members_skill_is_a_draft_only_she_and_its_reviewers_read(t: Team) -> None:
    mel, alice, carol, bob = t.as_(t.mel), t.as_(t.alice), t.as_(t.carol), t.as_(t.bob)
    draft = mel.create("cache-warmup", "Warm the cache before a launch")
    sid = draft["skill_id"]
    assert (draft["status"], draft["owner_user_id"]) == ("candidate", t.mel.user_id)
    share_with_team(t, sid)  # even shared with the team, a draft is not the team's to read
    read = {"skill_id": sid}
    drafts = {"filters": {"status": ["candidate"]}}
    # The author reads and tries it: get, her list of drafts, her listing and her search.
    assert mel.ok("skill/get", read)["status"] == "candidate"
    assert [i["skill_id"] for i in mel.ok("skill/list", drafts)["items"]] == [sid]
    assert "cache-warmup" in listed(mel) and "cache-warmup" in listed(mel, query="warm the cache")
    assert mel.names("warm cache") == ["cache-warmup"]
    # The reviewers read it to review it, but no prompt of theirs lists it.
    for reviewer in (alice, carol):
        assert reviewer.ok("skill/get", read)["skill_id"] == sid
        assert sid in [i["skill_id"] for i in reviewer.ok("skill/list", drafts)["items"]]
        assert "cache-warmup" not in listed(reviewer) and "cache-warmup" not in listed(reviewer, query="warm cache")
        assert reviewer.names("warm cache") == []
    # Anyone else: it does not exist.
    assert code(bob, "skill/get", read) == NOT_FOUND
    assert bob.ok("skill/list", drafts)["items"] == []
    assert "cache-warmup" not in listed(bob) and bob.names("warm cache") == []
    # skill_view is the author's alone while it is a draft.
    view = {"knowledge_id": sid, "tool_name": "skill_view", "params": {}}
    assert mel.tools("call", view)[1]["data"]["status"] == "candidate"
    assert alice.tools("call", view)[0] == 404 and bob.tools("call", view)[0] == 404
    assert Skills(t.gw).tools("call", view)[0] == 404  # the gateway key's agents do not get drafts either


def test_only_a_reviewer_publishes_and_the_audit_log_names_them(t: Team) -> None:
    mel, alice, bob = t.as_(t.mel), t.as_(t.alice), t.as_(t.bob)
    sid = mel.create("rotate-keys", "Rotate the signing keys")["skill_id"]
    share_with_team(t, sid)
    publish = {"skill_id": sid, "expected_version": 1}
    refused = mel.post("skill/publish", publish)
    assert refused["code"] == 40301
    assert refused["message"] == (
        f"SKILL_NOT_OWNER: only the owner of agent {t.at} or an admin of team {t.team} may publish it"
    )
    assert code(bob, "skill/publish", publish) == NOT_FOUND  # he cannot read the draft: no existence leak
    # Another team's owner: not a member of T, and in his own team the skill does not exist.
    outsider = t.org.call(t.dave, "/v3/skill/publish", {"team_id": t.team, "agent_id": t.at, **publish})
    assert outsider.status_code == 403 and outsider.json()["message"].startswith("team_id: ")
    dave_agent = t.org.agent(t.dave, t.other_team, "dave-bot")
    assert code(t.as_(t.dave, dave_agent, t.other_team), "skill/publish", publish) == NOT_FOUND
    assert code(t.as_(t.dave, dave_agent, t.other_team), "skill/get", {"skill_id": sid}) == NOT_FOUND
    assert t.audit(sid) == []
    assert mel.ok("skill/get", {"skill_id": sid})["status"] == "candidate"  # nothing changed
    # The agent's owner publishes: once, audited with who did it and whose text it was.
    published = alice.ok("skill/publish", publish)
    assert (published["status"], published["changed"], published["version"]) == ("active", True, 1)
    (entry,) = t.audit(sid)
    assert (entry["actor_user_id"], entry["actor_kind"]) == (t.alice.user_id, "normal")
    assert entry["detail"] == {
        "version": 1,
        "name": "rotate-keys",
        "team_id": t.team,
        "owner_agent_id": t.at,
        "author_user_id": t.mel.user_id,
    }
    again = alice.ok("skill/publish", publish)
    assert (again["status"], again["changed"]) == ("active", False) and len(t.audit(sid)) == 1
    # Published: the team reads it (the asset is shared), the owner's listing offers it, the author still reads it.
    assert bob.ok("skill/get", {"skill_id": sid})["status"] == "active"
    assert "rotate-keys" in listed(alice) and "rotate-keys" in listed(bob)
    assert mel.ok("skill/get", {"skill_id": sid})["owner_user_id"] == t.mel.user_id
    # A team admin publishes too.
    other = mel.create("drain-node", "Drain a node before maintenance")["skill_id"]
    assert t.as_(t.carol).ok("skill/publish", {"skill_id": other, "expected_version": 1})["changed"] is True
    (carols,) = t.audit(other)
    assert carols["actor_user_id"] == t.carol.user_id


def test_a_members_change_to_a_published_skill_is_a_draft_again(t: Team) -> None:
    mel, alice, bob = t.as_(t.mel), t.as_(t.alice), t.as_(t.bob)
    sid = alice.create("release-train", "Cut the weekly release")["skill_id"]
    share_with_team(t, sid)
    assert "release-train" in listed(alice)
    changed = mel.ok(
        "skill/update", {"skill_id": sid, "expected_version": 1, "content": skill_md("release-train", "Cut it daily")}
    )
    assert (changed["version"], changed["status"], changed["changed"]) == (2, "candidate", True)
    # Until it is reviewed, the skill is out of every prompt but mel's, and out of bob's reach.
    assert "release-train" not in listed(alice) and "release-train" not in listed(bob)
    assert "release-train" in listed(mel)
    assert code(bob, "skill/get", {"skill_id": sid}) == NOT_FOUND
    assert alice.ok("skill/get", {"skill_id": sid})["description"] == "Cut it daily"
    assert alice.ok("skill/publish", {"skill_id": sid, "expected_version": 2})["status"] == "active"
    assert "release-train" in listed(bob)
    # The owner's own change stays published.
    own = alice.ok(
        "skill/update", {"skill_id": sid, "expected_version": 2, "content": skill_md("release-train", "Cut weekly")}
    )
    assert (own["version"], own["status"]) == (3, "active")
    # A patch and a file write by mel are drafts as well.
    patched = mel.ok(
        "skill/patch", {"skill_id": sid, "expected_version": 3, "old_string": "weekly", "new_string": "hourly"}
    )
    assert patched["status"] == "candidate"
    alice.ok("skill/publish", {"skill_id": sid, "expected_version": 4})
    files = {"skill_id": sid, "expected_version": 4, "files": [{"path": "a.sh", "content": "x", "encoding": "utf-8"}]}
    assert mel.ok("skill/files/write", files)["status"] == "candidate"


def test_the_gateway_key_writes_for_the_user_it_names(t: Team) -> None:
    tenant = t.as_(None)
    assert tenant.create("tenant-skill", "Written by the tenant")["status"] == "active"
    for_mel = tenant.create(
        "for-mel", "Written for mel", ids={"team_id": t.team, "agent_id": t.at, "user_id": t.mel.user_id}
    )
    assert (for_mel["status"], for_mel["owner_user_id"]) == ("candidate", t.mel.user_id)
    for_alice = tenant.create(
        "for-alice", "Written for alice", ids={"team_id": t.team, "agent_id": t.at, "user_id": t.alice.user_id}
    )
    assert for_alice["status"] == "active"
    # The gateway key publishes (the tenant's administrator), audited as the key.
    tenant.ok("skill/publish", {"skill_id": for_mel["skill_id"], "expected_version": 1})
    (entry,) = t.audit(for_mel["skill_id"])
    assert (entry["actor_user_id"], entry["actor_kind"]) == ("gateway-key", "gateway_key")


def test_a_member_cannot_write_a_skill_she_may_not_read(t: Team) -> None:
    sid = t.as_(t.alice).create("private-runbook", "Alice's own runbook")["skill_id"]  # private to alice
    update = {"skill_id": sid, "expected_version": 1, "content": skill_md("private-runbook", "Mel's now")}
    assert code(t.as_(t.mel), "skill/update", update) == NOT_FOUND
    assert code(t.as_(t.mel), "skill/delete", {"skill_id": sid, "expected_version": 1}) == NOT_FOUND
    assert t.as_(t.alice).ok("skill/get", {"skill_id": sid})["version"] == 1
