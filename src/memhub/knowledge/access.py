"""Who may see and change a team's knowledge resources (wikis, code graphs): one set of rules for both.

The gateway key acts for the whole tenant, as do system admins; any other user must be an active member
of the resource's team, and to anyone else the resource does not exist. Deleting needs the resource's
owner or an admin of its team.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memhub.errors import Forbidden
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.guards import membership
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaWriter


def gated(caller: Caller) -> bool:
    """Membership rules apply to users that are not system admins; the gateway key acts for the tenant."""
    return caller.user_id is not None and not caller.is_system_admin


def visible(r: MetaReader, caller: Caller, row: Row) -> bool:
    """Whether the caller may see a resource of `row["team_id"]`."""
    return not gated(caller) or membership(r, row["team_id"], caller.user_id or "") is not None


def require_member(r: MetaReader, caller: Caller, team_id: str) -> None:
    """403 unless the caller may act in this team."""
    if gated(caller) and membership(r, team_id, caller.user_id or "") is None:
        raise Forbidden(f"not a member of team {team_id}")


def may_delete(r: MetaReader, caller: Caller, row: Row) -> bool:
    """The resource's owner, an admin of its team, a system admin or the gateway key."""
    if not gated(caller) or row["owner_user_id"] == caller.user_id:
        return True
    member = membership(r, row["team_id"], caller.user_id or "")
    return member is not None and member["role"] == "admin"


def delete_batch(
    w: MetaWriter,
    caller: Caller,
    ids: Sequence[str],
    *,
    kind: MetaKind,
    id_pattern: re.Pattern[str],
    drop: Callable[[MetaWriter, str], None],
    action: str,
) -> tuple[list[str], list[Row]]:
    """Delete resources one by one: (deleted ids, `[{id, reason: invalid id|not found|forbidden}]`).

    `drop` removes one resource's rows (its registry entry included) inside the same transaction.
    """
    deleted: list[str] = []
    failed: list[Row] = []
    for resource_id in dict.fromkeys(ids):
        if not id_pattern.match(resource_id):
            failed.append({"id": resource_id, "reason": "invalid id"})
            continue
        row = w.get(kind, resource_id)
        if row is None or not visible(w, caller, row):
            failed.append({"id": resource_id, "reason": "not found"})
        elif not may_delete(w, caller, row):
            failed.append({"id": resource_id, "reason": "forbidden"})
        else:
            drop(w, resource_id)
            deleted.append(resource_id)
    if deleted:
        audit.record(w, caller, action, deleted, {"failed": failed})
    return deleted, failed
