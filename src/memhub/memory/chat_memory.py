"""Clearing chat-memory assets (`/v3/chat-memory/clear`): an agent's L0–L3 emptied, the asset itself kept.

A chat-memory asset `chat_memory-{team}-{agent}` stands for everything memhub remembers of one
agent in one team: the L0 messages and L1 memories of every user and task that talked to it (L0/L1
are scoped by team, user, agent and task) and every such user's L2 scenes and L3 persona (a profile
belongs to one user of the team and agent).

Who may clear (the data plane's authentication; strict isolation does not apply, the ids name the scope):
- the gateway key alone: the tenant's operator, who may clear any chat memory of the tenant;
- a user key: only the asset's owner (the agent's owner), or a user whom the asset's ACL grants
  `delete` under the permission algorithm (memhub.meta.permissions; team roles never grant it).

All or nothing: every id is checked before anything is deleted, and the deletion of every id is one
store transaction (MemoryStore.clear_agent_memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhub.errors import Forbidden, MemhubError, NotFound
from memhub.meta.assets import CHAT_MEMORY, CHAT_MEMORY_PREFIX, chat_memory_asset_id
from memhub.meta.caller import Caller
from memhub.meta.guards import membership
from memhub.meta.permissions import check_permission
from memhub.model import AuditContext, ClearedMemory, ClearTarget
from memhub.model.meta import MetaKind, Row
from memhub.store import MemoryStore
from memhub.store.meta import MetaReader

NOT_FOUND = "not_found"
DENIED = "permission_denied"
NOT_ATTEMPTED = "not_attempted"  # this id passed, another failed the precheck: nothing was deleted
CLEAR_PERMISSION = "delete"


@dataclass(frozen=True, slots=True)
class _Checked:
    """One requested id after the precheck: its target, or why it cannot be cleared."""

    position: int  # index in the request's memory_ids (first occurrence)
    memory_id: str
    target: ClearTarget | None = None
    reason: str | None = None


def _item(memory_id: str, cleared: ClearedMemory | None, reason: str | None = None) -> dict[str, Any]:
    done = cleared or ClearedMemory(0, 0, 0, 0)
    item: dict[str, Any] = {
        "memory_id": memory_id,
        "cleared": cleared is not None,
        "l0_deleted": done.l0_deleted,
        "l1_deleted": done.l1_deleted,
        "profile_deleted": done.profile_deleted,
        "jobs_cancelled": done.jobs_cancelled,  # memhub: open pipeline jobs settled unrun
    }
    if reason is not None:
        # A precheck failure is about the request, not the moment: retrying it unchanged fails alike.
        item.update(reason=reason, retryable=False)
    return item


def _agent_of(asset: Row) -> str | None:
    """The agent a chat-memory asset stands for, or None when the row is not one."""
    head = f"{CHAT_MEMORY_PREFIX}{asset['team_id']}-"
    agent_id = asset["asset_id"].removeprefix(head)
    if asset["asset_type"] != CHAT_MEMORY or not asset["asset_id"].startswith(head) or not agent_id:
        return None
    return agent_id if chat_memory_asset_id(asset["team_id"], agent_id) == asset["asset_id"] else None


def _refusal_reason(r: MetaReader, caller: Caller, asset: Row) -> str | None:
    """None when the caller may clear the asset; NOT_FOUND when they may not even read it (a denial would
    confirm that it exists); DENIED when they may read but not clear it."""
    if caller.is_service_key:
        return None  # the tenant's operator, as on the rest of the data plane
    user_id = caller.user_id
    assert user_id is not None
    if asset["owner_user_id"] == user_id:
        return None  # even an archived asset: its owner may still empty it
    acls = r.find(MetaKind.ACL, {"asset_id": asset["asset_id"]}, order_by=("created_at", "id"))
    found = membership(r, asset["team_id"], user_id)
    if check_permission(asset, user_id, found, acls, CLEAR_PERMISSION).allowed:
        return None
    return DENIED if check_permission(asset, user_id, found, acls, "read").allowed else NOT_FOUND


@dataclass(frozen=True, slots=True)
class ChatMemoryService:
    """Empties chat-memory assets."""

    store: MemoryStore

    def clear(self, caller: Caller, memory_ids: Sequence[str]) -> dict[str, Any]:
        """`{items, all_cleared}` for the (trimmed) ids, de-duplicated; NotFound/Forbidden with nothing deleted."""
        checked = self._precheck(caller, memory_ids)
        failed = [c for c in checked if c.reason is not None]
        if failed:
            raise self._refusal(checked, failed)
        targets = [c.target for c in checked if c.target is not None]
        cleared = self.store.clear_agent_memory(targets)
        items = [_item(c.memory_id, done) for c, done in zip(checked, cleared, strict=True)]
        return {"items": items, "all_cleared": True}

    def _precheck(self, caller: Caller, memory_ids: Sequence[str]) -> list[_Checked]:
        first: dict[str, int] = {}
        for position, memory_id in enumerate(memory_ids):
            first.setdefault(memory_id.strip(), position)
        checked: list[_Checked] = []
        with self.store.meta.reading(caller.service_id) as r:
            for memory_id, position in first.items():
                asset = r.get(MetaKind.ASSET, memory_id)
                agent_id = _agent_of(asset) if asset is not None else None
                reason = NOT_FOUND if asset is None or agent_id is None else _refusal_reason(r, caller, asset)
                if reason is not None:
                    checked.append(_Checked(position, memory_id, reason=reason))
                else:
                    team_id = asset["team_id"]
                    # Audit rows name who cleared (a user, or "gateway-key"), not an isolation the body never sends.
                    audit = AuditContext(caller.request_id, team_id, agent_id, caller.actor, "")
                    target = ClearTarget(caller.service_id, team_id, agent_id, memory_id, audit)
                    checked.append(_Checked(position, memory_id, target=target))
        return checked

    @staticmethod
    def _refusal(checked: Sequence[_Checked], failed: Sequence[_Checked]) -> MemhubError:
        """404 when an id is unknown (else 403), naming each failing id; the items say why for every id."""
        data = {
            "items": [_item(c.memory_id, None, c.reason or NOT_ATTEMPTED) for c in checked],
            "all_cleared": False,
        }
        missing = [c for c in failed if c.reason == NOT_FOUND]
        if missing:
            text = "; ".join(f"memory_ids[{c.position}]: chat memory not found: {c.memory_id}" for c in missing[:5])
            return NotFound(text, data=data)
        text = "; ".join(
            f"memory_ids[{c.position}]: permission_denied: only the owner of {c.memory_id} "
            "or a user granted delete on it may clear it"
            for c in failed[:5]
        )
        return Forbidden(text, data=data)
