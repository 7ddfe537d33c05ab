"""The asset permission algorithm and the bindability rule, as pure functions over store rows.

The original's permission-checker: archived or missing → deny; owner → allow; not an
active member → deny; `private` → deny; `restricted` → non-admins need an ACL allow; `task` →
non-read actions need an admin; then role defaults, then an ACL allow. ACL `deny` entries are
stored but never evaluated ("allow-only"), as in the original.

Unlike the original service path, ACLs are always consulted for `restricted` assets: the
original never loaded them on that branch, so a restricted asset could not be shared at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memhub.model.meta import Row

ASSET_TYPES = ("skill", "llm_wiki", "code_graph", "chat_memory")
VISIBILITIES = ("private", "team", "restricted", "agent", "task")
# Auto-created assets (chat_memory, skills) are stored with status "active", outside this list.
ASSET_STATUSES = ("draft", "candidate", "approved", "deprecated", "archived", "failed")
AUTO_ASSET_STATUS = "active"
INJECTION_MODES = ("direct", "summary", "tool", "reference")
PERMISSIONS = ("read", "write", "delete", "assign", "share", "use")
ACL_SUBJECTS = ("user", "team_role", "agent")
ACL_EFFECTS = ("allow", "deny")
TEAM_ROLES = ("admin", "member", "reviewer")

ADMIN_ACTIONS = frozenset({"read", "write", "assign", "share"})
MEMBER_ACTIONS = frozenset({"read"})
# Statuses an asset can be in and still be offered to agents (list-accessible, bound-asset detail).
UNUSABLE_STATUSES = ("archived", "deprecated", "failed")


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of a permission check and the rule that decided it (wire: `{allowed, reason}`)."""

    allowed: bool
    reason: str

    def as_dict(self) -> Row:
        """`{allowed, reason}`, the acl/check response."""
        return {"allowed": self.allowed, "reason": self.reason}


def role_actions(role: str) -> frozenset[str]:
    """Actions a team role grants by default: admins read/write/assign/share; everyone else reads."""
    return ADMIN_ACTIONS if role == "admin" else MEMBER_ACTIONS


def _acl_match(
    asset: Row, user_id: str, role: str, acls: Sequence[Row], action: str, agent_id: str | None
) -> Row | None:
    for acl in acls:
        # Rows for another asset never count, even if a caller passes them by mistake.
        if acl["asset_id"] != asset["asset_id"] or acl["permission"] != action or acl["effect"] != "allow":
            continue
        subject, subject_id = acl["subject_type"], acl["subject_id"]
        if (
            (subject == "user" and subject_id == user_id)
            or (subject == "team_role" and subject_id == role)
            or (subject == "agent" and agent_id is not None and subject_id == agent_id)
        ):
            return acl
    return None


def check_permission(
    asset: Row | None,
    user_id: str,
    membership: Row | None,
    acls: Sequence[Row],
    action: str,
    agent_id: str | None = None,
) -> Decision:
    """May `user_id` (with this membership of the asset's team) perform `action` on `asset`?"""
    if asset is None or asset["status"] == "archived":
        return Decision(False, "asset_not_available")
    if asset["owner_user_id"] == user_id:
        return Decision(True, "owner")
    # A membership of another team or user must not stand in for the right one.
    if (
        membership is None
        or membership.get("status") != "active"
        or membership.get("team_id") != asset["team_id"]
        or membership.get("user_id") != user_id
    ):
        return Decision(False, "not_team_member")
    role = membership["role"]
    visibility = asset["visibility"]
    if visibility == "private":
        return Decision(False, "visibility_restricted")
    if visibility == "restricted":
        if role != "admin":
            acl = _acl_match(asset, user_id, role, acls, action, agent_id)
            return Decision(True, f"acl:{acl['id']}") if acl else Decision(False, "visibility_restricted")
    elif visibility == "task":
        if action != "read" and role != "admin":
            return Decision(False, "visibility_restricted")
    elif visibility not in ("team", "agent"):
        return Decision(False, "visibility_restricted")
    if action in role_actions(role):
        return Decision(True, f"role_default:{role}")
    acl = _acl_match(asset, user_id, role, acls, action, agent_id)
    if acl is not None:
        return Decision(True, f"acl:{acl['id']}")
    return Decision(False, "no_permission")


def can_bind(agent: Row, asset: Row) -> bool:
    """May `asset` be a fixed asset of `agent`? team/agent: same team; private: same owner and team."""
    same_team = asset["team_id"] == agent["team_id"]
    visibility = asset["visibility"]
    if visibility in ("team", "agent"):
        return same_team
    if visibility == "private":
        return same_team and asset["owner_user_id"] == agent["owner_user_id"]
    return False  # task, restricted and unknown visibilities are never bound
