"""The asset permission algorithm (the original's permission-checker) and bindability, as a hand-written decision table.

Every expected value below was written from the original's rules, not computed by the code under test:
owner → allow; not an active member → deny; private → deny; restricted → non-admins need an ACL
allow; task → non-read needs admin; role defaults admin={read,write,assign,share}, others={read};
then an ACL allow; `deny` entries are never evaluated.
"""

from __future__ import annotations

import pytest

from memhub.meta.permissions import (
    ACL_EFFECTS,
    ACL_SUBJECTS,
    ASSET_STATUSES,
    ASSET_TYPES,
    INJECTION_MODES,
    PERMISSIONS,
    VISIBILITIES,
    Decision,
    can_bind,
    check_permission,
)
from memhub.model.meta import Row

TEAM = "team-1"
OWNER = "usr-owner"
ACTIONS = ("read", "write", "delete", "assign", "share", "use")
USERS = {
    "owner": OWNER,
    "admin": "usr-admin",
    "member": "usr-member",
    "reviewer": "usr-reviewer",
    "outsider": "usr-out",
}

# Codes of the table: one letter per action, in ACTIONS order.
CODES = {
    "O": Decision(True, "owner"),
    "A": Decision(True, "role_default:admin"),
    "M": Decision(True, "role_default:member"),
    "R": Decision(True, "role_default:reviewer"),
    "n": Decision(False, "no_permission"),
    "v": Decision(False, "visibility_restricted"),
    "x": Decision(False, "not_team_member"),
}
#              read write delete assign share use
EXPECTED: dict[str, dict[str, str]] = {
    "private": {
        "owner": "O O O O O O",
        "admin": "v v v v v v",
        "member": "v v v v v v",
        "reviewer": "v v v v v v",
        "outsider": "x x x x x x",
    },
    "team": {
        "owner": "O O O O O O",
        "admin": "A A n A A n",
        "member": "M n n n n n",
        "reviewer": "R n n n n n",
        "outsider": "x x x x x x",
    },
    "restricted": {
        "owner": "O O O O O O",
        "admin": "A A n A A n",
        "member": "v v v v v v",
        "reviewer": "v v v v v v",
        "outsider": "x x x x x x",
    },
    "agent": {
        "owner": "O O O O O O",
        "admin": "A A n A A n",
        "member": "M n n n n n",
        "reviewer": "R n n n n n",
        "outsider": "x x x x x x",
    },
    "task": {
        "owner": "O O O O O O",
        "admin": "A A n A A n",
        "member": "M v v v v v",
        "reviewer": "R v v v v v",
        "outsider": "x x x x x x",
    },
}


def asset(visibility: str = "team", status: str = "approved", team_id: str = TEAM, **extra: object) -> Row:
    return {
        "asset_id": "ast-1",
        "team_id": team_id,
        "owner_user_id": OWNER,
        "visibility": visibility,
        "status": status,
        **extra,
    }


def member_row(user_id: str, role: str, team_id: str = TEAM, status: str = "active") -> Row:
    return {"id": f"m-{user_id}", "team_id": team_id, "user_id": user_id, "role": role, "status": status}


def membership_of(who: str) -> Row | None:
    if who == "outsider":
        return None
    # The owner is an ordinary member: ownership, not the role, is what allows everything.
    return member_row(USERS[who], "member" if who == "owner" else who)


def acl(
    acl_id: str,
    subject_type: str,
    subject_id: str,
    permission: str,
    effect: str = "allow",
    asset_id: str = "ast-1",
) -> Row:
    return {
        "id": acl_id,
        "asset_id": asset_id,
        "subject_type": subject_type,
        "subject_id": subject_id,
        "permission": permission,
        "effect": effect,
    }


MATRIX = [
    pytest.param(visibility, who, action, CODES[row.split()[i]], id=f"{visibility}-{who}-{action}")
    for visibility, rows in EXPECTED.items()
    for who, row in rows.items()
    for i, action in enumerate(ACTIONS)
]


@pytest.mark.parametrize(("visibility", "who", "action", "expected"), MATRIX)
def test_matrix_without_acl(visibility: str, who: str, action: str, expected: Decision) -> None:
    decision = check_permission(asset(visibility), USERS[who], membership_of(who), [], action)
    assert decision == expected


def test_matrix_covers_every_visibility_and_permission() -> None:
    assert set(EXPECTED) == set(VISIBILITIES)
    assert set(ACTIONS) == set(PERMISSIONS)


ALICE = USERS["member"]
ADMIN = USERS["admin"]
# fmt: off
ACL_CASES = [
    # id, visibility, who, acls, action, agent_id, expected reason
    ("user-allow-grants-write", "team", "member", [acl("a1", "user", ALICE, "write")], "write", None, "acl:a1"),
    ("user-allow-other-user", "team", "member", [acl("a1", "user", "usr-x", "write")], "write", None, "no_permission"),
    ("user-allow-other-action", "team", "member", [acl("a1", "user", ALICE, "read")], "write", None, "no_permission"),
    ("role-member-delete", "team", "member", [acl("a2", "team_role", "member", "delete")], "delete", None, "acl:a2"),
    ("role-not-mine", "team", "reviewer", [acl("a2", "team_role", "member", "delete")], "delete", None,
     "no_permission"),
    ("role-reviewer-use", "agent", "reviewer", [acl("a3", "team_role", "reviewer", "use")], "use", None, "acl:a3"),
    ("agent-match", "team", "member", [acl("a4", "agent", "agt-1", "use")], "use", "agt-1", "acl:a4"),
    ("agent-none-given", "team", "member", [acl("a4", "agent", "agt-1", "use")], "use", None, "no_permission"),
    ("agent-other", "team", "member", [acl("a4", "agent", "agt-1", "use")], "use", "agt-2", "no_permission"),
    ("admin-delete-via-acl", "team", "admin", [acl("a5", "user", ADMIN, "delete")], "delete", None, "acl:a5"),
    # The first matching allow entry names the decision.
    ("first-match-wins", "team", "member",
     [acl("a6", "team_role", "member", "share"), acl("a7", "user", ALICE, "share")], "share", None, "acl:a6"),
    # Deny entries are stored but not evaluated: they neither block role defaults nor match as grants.
    ("deny-ignored-admin", "team", "admin", [acl("d1", "user", ADMIN, "write", "deny")], "write", None,
     "role_default:admin"),
    ("deny-ignored-member", "team", "member", [acl("d2", "user", ALICE, "read", "deny")], "read", None,
     "role_default:member"),
    ("deny-is-no-grant", "team", "member", [acl("d3", "user", ALICE, "delete", "deny")], "delete", None,
     "no_permission"),
    # restricted: non-admins get in only through an allow entry (no "ACLs never loaded" quirk).
    ("restricted-user", "restricted", "member", [acl("r1", "user", ALICE, "read")], "read", None, "acl:r1"),
    ("restricted-role", "restricted", "reviewer", [acl("r2", "team_role", "reviewer", "write")], "write", None,
     "acl:r2"),
    ("restricted-agent", "restricted", "member", [acl("r3", "agent", "agt-1", "read")], "read", "agt-1", "acl:r3"),
    ("restricted-other-action", "restricted", "member", [acl("r4", "user", ALICE, "write")], "read", None,
     "visibility_restricted"),
    ("restricted-deny-only", "restricted", "member", [acl("r5", "user", ALICE, "read", "deny")], "read", None,
     "visibility_restricted"),
    ("restricted-admin-acl", "restricted", "admin", [acl("r6", "user", ADMIN, "use")], "use", None, "acl:r6"),
    # private and task (for non-admin, non-read) stop before the ACL step.
    ("private-member-acl", "private", "member", [acl("p1", "user", ALICE, "read")], "read", None,
     "visibility_restricted"),
    ("private-admin-acl", "private", "admin", [acl("p2", "user", ADMIN, "read")], "read", None,
     "visibility_restricted"),
    ("task-member-acl", "task", "member", [acl("t1", "user", ALICE, "write")], "write", None,
     "visibility_restricted"),
    ("task-admin-acl", "task", "admin", [acl("t2", "user", ADMIN, "delete")], "delete", None, "acl:t2"),
    # Membership comes before any ACL.
    ("outsider-with-acl", "team", "outsider", [acl("o1", "user", USERS["outsider"], "read")], "read", None,
     "not_team_member"),
    # An entry of another asset never counts.
    ("other-asset-acl", "team", "member", [acl("z1", "user", ALICE, "write", asset_id="ast-2")], "write", None,
     "no_permission"),
]
# fmt: on


@pytest.mark.parametrize(
    ("visibility", "who", "acls", "action", "agent_id", "reason"),
    [pytest.param(*case[1:], id=case[0]) for case in ACL_CASES],
)
def test_acl_cases(visibility: str, who: str, acls: list[Row], action: str, agent_id: str | None, reason: str) -> None:
    decision = check_permission(asset(visibility), USERS[who], membership_of(who), acls, action, agent_id)
    assert decision == Decision(reason.startswith(("acl:", "role_default:", "owner")), reason)


@pytest.mark.parametrize("who", ["owner", "admin", "member"])
def test_archived_asset_is_not_available_even_to_its_owner(who: str) -> None:
    grants = [acl("a1", "user", USERS[who], "read")]
    decision = check_permission(asset(status="archived"), USERS[who], membership_of(who), grants, "read")
    assert decision == Decision(False, "asset_not_available")


def test_missing_asset_is_not_available() -> None:
    assert check_permission(None, OWNER, None, [], "read") == Decision(False, "asset_not_available")


@pytest.mark.parametrize("status", ["draft", "candidate", "deprecated", "failed", "active"])
def test_only_archived_blocks(status: str) -> None:
    decision = check_permission(asset(status=status), ALICE, membership_of("member"), [], "read")
    assert decision == Decision(True, "role_default:member")


def test_owner_needs_no_membership() -> None:
    assert check_permission(asset("private"), OWNER, None, [], "delete") == Decision(True, "owner")


@pytest.mark.parametrize(
    ("member", "case"),
    [
        (member_row(ALICE, "admin", status="removed"), "removed membership"),
        (member_row(ALICE, "admin", team_id="team-2"), "membership of another team"),
        (member_row("usr-someone-else", "admin"), "membership of another user"),
    ],
)
def test_membership_must_be_active_and_of_this_team_and_user(member: Row, case: str) -> None:
    assert check_permission(asset(), ALICE, member, [], "read") == Decision(False, "not_team_member"), case


def test_unknown_visibility_is_restricted() -> None:
    decision = check_permission(asset("galaxy"), USERS["admin"], membership_of("admin"), [], "read")
    assert decision == Decision(False, "visibility_restricted")


def test_decision_wire_shape() -> None:
    assert Decision(True, "owner").as_dict() == {"allowed": True, "reason": "owner"}


def test_enums_match_the_spec() -> None:
    assert ASSET_TYPES == ("skill", "llm_wiki", "code_graph", "chat_memory")
    assert ASSET_STATUSES == ("draft", "candidate", "approved", "deprecated", "archived", "failed")
    assert INJECTION_MODES == ("direct", "summary", "tool", "reference")
    assert ACL_SUBJECTS == ("user", "team_role", "agent")
    assert ACL_EFFECTS == ("allow", "deny")


AGENT: Row = {"agent_id": "agt-1", "team_id": TEAM, "owner_user_id": OWNER}


@pytest.mark.parametrize(
    ("visibility", "team_id", "owner", "expected"),
    [
        ("team", TEAM, "usr-x", True),
        ("team", "team-2", OWNER, False),
        ("agent", TEAM, "usr-x", True),
        ("agent", "team-2", OWNER, False),
        ("private", TEAM, OWNER, True),
        ("private", TEAM, "usr-x", False),
        ("private", "team-2", OWNER, False),
        ("task", TEAM, OWNER, False),
        ("restricted", TEAM, OWNER, False),
        ("galaxy", TEAM, OWNER, False),
    ],
)
def test_can_bind(visibility: str, team_id: str, owner: str, expected: bool) -> None:
    candidate = asset(visibility, team_id=team_id, owner_user_id=owner)
    assert can_bind(AGENT, candidate) is expected
