"""Checks shared by the management services: existence, membership, ownership.

Each takes the reader of the transaction it guards, so the check and the change it allows see
the same data. Messages follow the original (`permission_denied: not a team member` …).
"""

from __future__ import annotations

from memhub.meta.caller import Caller
from memhub.meta.errors import MetaError, denied
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader

ACTIVE = "active"


def caller_id(caller: Caller) -> str:
    """The caller's user id; the management plane always acts as a user."""
    if caller.user_id is None:
        raise denied("authentication required")
    return caller.user_id


def existing(r: MetaReader, kind: MetaKind, entity_id: str, *, label: str | None = None) -> Row:
    """The entity, or `<kind>_not_found: <kind> not found: <id>`."""
    row = r.get(kind, entity_id)
    if row is None:
        name = label or kind.value
        raise MetaError(f"{name}_not_found", f"{name.replace('_', ' ')} not found: {entity_id}")
    return row


def referenced(r: MetaReader, kind: MetaKind, entity_id: str) -> Row:
    """An entity a request names (`<kind>_not_found: not found: <id>`, the router's wording)."""
    row = r.get(kind, entity_id)
    if row is None:
        raise MetaError(f"{kind.value}_not_found", f"not found: {entity_id}")
    return row


def membership(r: MetaReader, team_id: str, user_id: str) -> Row | None:
    """The user's active membership of the team, if any."""
    rows = r.find(MetaKind.MEMBER, {"team_id": team_id, "user_id": user_id, "status": ACTIVE}, limit=1)
    return rows[0] if rows else None


def active_member(r: MetaReader, team_id: str, caller: Caller) -> Row:
    """The caller's active membership, or `permission_denied: not a team member`."""
    row = membership(r, team_id, caller_id(caller))
    if row is None:
        raise denied("not a team member")
    return row


def team_admin(r: MetaReader, team_id: str, caller: Caller) -> None:
    """The caller administers the team."""
    if active_member(r, team_id, caller)["role"] != "admin":
        raise denied("caller is not team admin")


def team_owner_or_admin(r: MetaReader, team_id: str, caller: Caller) -> Row:
    """The team, which the caller owns or administers; to a non-member it does not exist."""
    team = r.get(MetaKind.TEAM, team_id)
    me = caller_id(caller)
    if team is None or (team["owner_user_id"] != me and membership(r, team_id, me) is None):
        raise MetaError("team_not_found", f"team not found: {team_id}")
    if team["owner_user_id"] != me:
        team_admin(r, team_id, caller)
    return team


def owner(row: Row, field: str, caller: Caller) -> None:
    """The caller owns this resource."""
    if row[field] != caller_id(caller):
        raise denied("caller is not resource owner")


def is_team_admin(r: MetaReader, team_id: str, user_id: str) -> bool:
    """True when the user is an active admin of the team."""
    row = membership(r, team_id, user_id)
    return row is not None and row["role"] == "admin"
