"""Assets, agents' fixed assets (bindings) and asset ACLs: the `/v3/meta/asset|agent-fixed-asset|acl/*` rules.

memhub is secure by default where the original had no authorization: reads are limited to what
the caller may read under the permission algorithm (memhub.meta.permissions), and questions about
another user's access are answered only to a system admin or an admin of the team concerned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from memhub.meta import audit
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.errors import MetaError, denied, not_found
from memhub.meta.guards import (
    ACTIVE,
    active_member,
    caller_id,
    existing,
    is_team_admin,
    membership,
    owner,
    referenced,
    team_admin,
)
from memhub.meta.keys import relation_id
from memhub.meta.paging import FIRST_PAGE, Page
from memhub.meta.permissions import (
    ASSET_TYPES,
    AUTO_ASSET_STATUS,
    UNUSABLE_STATUSES,
    can_bind,
    check_permission,
)
from memhub.meta.users import live_user
from memhub.model.meta import DuplicateEntry, MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

CHAT_MEMORY = "chat_memory"
CHAT_MEMORY_PREFIX = "chat_memory-"
DEFAULT_INJECTION_MODE = "summary"
DEFAULT_PRIORITY = 50
# Fields asset/update may change (the original's whitelist); `version` is set, not incremented.
UPDATABLE = ("name", "description", "visibility", "status", "confidence", "expires_at", "content_ref", "version")
UPDATABLE_MORE = ("source_ref", "metadata_json")
# Columns that accept null; a null for any other updatable field is ignored rather than a 500.
NULLABLE = frozenset({"description", "confidence", "expires_at", "content_ref", "source_ref"})
ASSET_ORDER = ("-created_at", "asset_id")
BINDING_ORDER = ("-priority", "-created_at", "id")
ACL_ORDER = ("-created_at", "id")
OK: Row = {"ok": True}


def chat_memory_asset_id(team_id: str, agent_id: str) -> str:
    """The id of an agent's own memory asset: `chat_memory-{team_id}-{agent_id}`."""
    return f"{CHAT_MEMORY_PREFIX}{team_id}-{agent_id}"


def insert_auto_asset(
    w: MetaWriter, agent: Row, asset_id: str, asset_type: str, name: str, *, source_type: str, visibility: str
) -> Row:
    """An asset memhub creates for an agent (its memory, a skill it wrote): owned by the agent's owner, in its
    team, active. Inside the caller's transaction; no audit entry (the caller's action is audited)."""
    now = now_iso()
    asset = {
        "asset_id": asset_id,
        "team_id": agent["team_id"],
        "asset_type": asset_type,
        "name": name,
        "description": None,
        "owner_user_id": agent["owner_user_id"],
        "source_type": source_type,
        "source_ref": None,
        "version": 1,
        "visibility": visibility,
        "status": AUTO_ASSET_STATUS,
        "confidence": None,
        "expires_at": None,
        "last_used_at": None,
        "usage_count": 0,
        "content_ref": None,
        "created_at": now,
        "updated_at": now,
        "metadata_json": "{}",
    }
    w.insert(MetaKind.ASSET, asset)
    return asset


def bind_asset(w: MetaWriter, agent_id: str, asset_id: str, asset_type: str, **extra: Any) -> Row:
    """Bind an asset to an agent (`injection_mode`, `priority` default as the original's; `created_by` given)."""
    return _insert_binding(w, agent_id, asset_id, asset_type, **extra)


def _insert_binding(w: MetaWriter, agent_id: str, asset_id: str, asset_type: str, **extra: Any) -> Row:
    row = {
        "id": relation_id(),
        "agent_id": agent_id,
        "asset_id": asset_id,
        "asset_type": asset_type,
        "injection_mode": extra.get("injection_mode") or DEFAULT_INJECTION_MODE,
        "priority": DEFAULT_PRIORITY if extra.get("priority") is None else extra["priority"],
        "created_by": extra["created_by"],
        "created_at": now_iso(),
    }
    w.insert(MetaKind.FIXED_ASSET, row)
    return row


def _delete_asset_rows(w: MetaWriter, asset_id: str) -> None:
    w.delete(MetaKind.FIXED_ASSET, {"asset_id": asset_id})
    w.delete(MetaKind.ACL, {"asset_id": asset_id})
    w.delete(MetaKind.ASSET, {"asset_id": asset_id})


def ensure_chat_memory_asset(w: MetaWriter, agent: Row, *, team_id: str | None = None) -> Row:
    """The agent's `chat_memory` asset and its binding, created if missing (idempotent; no audit entry).

    Called inside the caller's transaction (agent/create, conversation/add), which audits the action.
    `team_id`, when given, must be the agent's team (`team_mismatch` otherwise).
    """
    agent_id = agent["agent_id"]
    if team_id is not None and team_id != agent["team_id"]:
        raise MetaError(
            "team_mismatch",
            f"cannot ensure chat_memory asset: agent {agent_id} belongs to team {agent['team_id']}, not {team_id}",
        )
    asset_id = chat_memory_asset_id(agent["team_id"], agent_id)
    asset = w.get(MetaKind.ASSET, asset_id)
    if asset is None:
        name = f"Memory of {agent['name']}"
        asset = insert_auto_asset(w, agent, asset_id, CHAT_MEMORY, name, source_type="auto", visibility="private")
    elif (asset["asset_type"], asset["owner_user_id"], asset["team_id"]) != (
        CHAT_MEMORY,
        agent["owner_user_id"],
        agent["team_id"],
    ):
        # asset/create reserves the prefix, so this is only reachable through tampering: never bind
        # someone else's asset to the agent as its memory.
        raise MetaError("duplicate_entry", f"asset already exists: {asset_id}")
    if not w.count(MetaKind.FIXED_ASSET, {"agent_id": agent_id, "asset_id": asset_id}):
        _insert_binding(w, agent_id, asset_id, CHAT_MEMORY, created_by=agent["owner_user_id"])
    return asset


def delete_chat_memory_asset(w: MetaWriter, agent: Row) -> None:
    """Remove the agent's own chat_memory asset with every binding to it and its ACL (agent/archive)."""
    _delete_asset_rows(w, chat_memory_asset_id(agent["team_id"], agent["agent_id"]))


def delete_agent_assets(w: MetaWriter, agent: Row) -> None:
    """The asset side of the agent cascade: its chat_memory asset, its bindings, ACL entries naming it."""
    delete_chat_memory_asset(w, agent)
    w.delete(MetaKind.FIXED_ASSET, {"agent_id": agent["agent_id"]})
    # Agent ids are never reused, but an entry naming a deleted agent is an orphan all the same.
    w.delete(MetaKind.ACL, {"subject_type": "agent", "subject_id": agent["agent_id"]})


def _acls_by_asset(r: MetaReader, action: str, subject_ids: Iterable[str]) -> dict[str, list[Row]]:
    """Allow entries for `action` that could match these subjects, grouped by asset.

    Selecting by subject keeps the query bounded by the caller, not by the number of assets;
    check_permission still matches subject type and id exactly.
    """
    rows = r.find(
        MetaKind.ACL,
        {"permission": action, "effect": "allow", "subject_id": sorted(set(subject_ids))},
        order_by=("created_at", "id"),
    )
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row["asset_id"], []).append(row)
    return grouped


def _asset_acls(r: MetaReader, asset_id: str) -> list[Row]:
    return r.find(MetaKind.ACL, {"asset_id": asset_id}, order_by=("created_at", "id"))


def _may_read(asset: Row, user_id: str, member: Row | None, acls: Sequence[Row], agent_id: str | None = None) -> bool:
    # Owners always see their own assets, archived ones included: they may update or delete them anyway.
    if asset["owner_user_id"] == user_id:
        return True
    return check_permission(asset, user_id, member, acls, "read", agent_id).allowed


def may_read_asset(r: MetaReader, asset: Row, user_id: str, agent_id: str | None = None) -> bool:
    """Whether the user (acting through `agent_id`, if any) may read the asset."""
    member = membership(r, asset["team_id"], user_id)
    return _may_read(asset, user_id, member, _asset_acls(r, asset["asset_id"]), agent_id)


def readable_asset_ids(
    r: MetaReader, user_id: str, team_id: str, asset_type: str, agent_id: str | None = None
) -> list[str]:
    """The ids of the team's assets of one type that the user (acting through `agent_id`, if any) may read, in
    one query for the assets and one for the ACL entries that could apply, however many assets there are."""
    member = membership(r, team_id, user_id)
    subjects = {user_id} | ({member["role"]} if member else set()) | ({agent_id} if agent_id else set())
    acls = _acls_by_asset(r, "read", subjects)
    assets = r.find(MetaKind.ASSET, {"team_id": team_id, "asset_type": asset_type})
    return sorted(a["asset_id"] for a in assets if _may_read(a, user_id, member, acls.get(a["asset_id"], ()), agent_id))


def _readable_asset(r: MetaReader, caller: Caller, asset_id: str) -> Row:
    """The asset, or `asset_not_found` when it is absent or the caller may not read it.

    Refusing an unreadable asset with 403 would tell anyone holding a key which asset ids exist.
    """
    asset = r.get(MetaKind.ASSET, asset_id)
    if asset is None or not _readable(r, asset, caller_id(caller)):
        raise MetaError("asset_not_found", f"asset not found: {asset_id}")
    return asset


def _readable(r: MetaReader, asset: Row, user_id: str) -> bool:
    return may_read_asset(r, asset, user_id)


def _members_agent(r: MetaReader, caller: Caller, agent_id: str) -> tuple[Row, Row]:
    """The agent and the caller's active membership of its team; to anyone else the agent does not exist."""
    agent = r.get(MetaKind.AGENT, agent_id)
    mine = membership(r, agent["team_id"], caller_id(caller)) if agent is not None else None
    if agent is None or mine is None:
        raise MetaError("agent_not_found", f"agent not found: {agent_id}")
    return agent, mine


def _usable_agent(r: MetaReader, agent: Row, user_id: str) -> str | None:
    """The agent's id when the user may act through it; else None, so its ACL entries do not apply."""
    return agent["agent_id"] if agent_visible(r, agent, user_id) else None


def _may_ask_about(r: MetaReader, caller: Caller, user_id: str, team_id: str | None) -> bool:
    """May the caller learn `user_id`'s access? Themself, a system admin, or an admin of `team_id`."""
    me = caller_id(caller)
    return user_id == me or caller.is_system_admin or (team_id is not None and is_team_admin(r, team_id, me))


@dataclass
class Assets:
    """Assets, fixed-asset bindings and ACLs of every tenant."""

    store: MetaStore

    # -- assets --------------------------------------------------------------------------
    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """asset/create: an active member creates an asset they own in the team."""
        asset_id = fields["asset_id"]
        if asset_id.startswith(CHAT_MEMORY_PREFIX):
            # Reserved: a squatted `chat_memory-{team}-{agent}` id would become another agent's memory.
            raise MetaError("invalid_request", f"asset_id prefix '{CHAT_MEMORY_PREFIX}' is reserved")
        with self.store.writing(caller.service_id) as w:
            existing(w, MetaKind.TEAM, fields["team_id"])
            active_member(w, fields["team_id"], caller)
            owner(fields, "owner_user_id", caller)
            now = now_iso()
            row = {
                "asset_id": asset_id,
                "team_id": fields["team_id"],
                "asset_type": fields["asset_type"],
                "name": fields["name"],
                "description": fields.get("description"),
                "owner_user_id": fields["owner_user_id"],
                "source_type": fields["source_type"],
                "source_ref": fields.get("source_ref"),
                "version": 1,
                "visibility": fields.get("visibility") or "team",
                "status": fields.get("status") or "draft",
                "confidence": fields.get("confidence"),
                "expires_at": fields.get("expires_at"),
                "last_used_at": None,
                "usage_count": 0,
                "content_ref": fields.get("content_ref"),
                "created_at": now,
                "updated_at": now,
                "metadata_json": fields.get("metadata_json") or "{}",
            }
            try:
                w.insert(MetaKind.ASSET, row)
            except DuplicateEntry:
                raise MetaError("duplicate_entry", f"asset already exists: {asset_id}") from None
            detail = {k: row[k] for k in ("team_id", "asset_type", "visibility", "status")}
            audit.record(w, caller, "asset/create", [asset_id], detail)
        return row

    def get(self, caller: Caller, asset_id: str) -> Row:
        """asset/get: only an asset the caller may read; anything else is `asset_not_found`."""
        me = caller_id(caller)
        # The original had no check; answering "not found" for unreadable assets leaks no existence.
        with self.store.reading(caller.service_id) as r:
            asset = r.get(MetaKind.ASSET, asset_id)
            if asset is None or not _may_read(asset, me, membership(r, asset["team_id"], me), _asset_acls(r, asset_id)):
                raise not_found("asset", asset_id)
        return asset

    def update(self, caller: Caller, asset_id: str, changes: Mapping[str, Any]) -> Row:
        """asset/update: the owner changes whitelisted fields; updated_at always moves."""
        with self.store.writing(caller.service_id) as w:
            asset = _readable_asset(w, caller, asset_id)
            owner(asset, "owner_user_id", caller)
            patch = {
                k: v for k, v in changes.items() if k in UPDATABLE + UPDATABLE_MORE and (v is not None or k in NULLABLE)
            }
            return audit.changed(w, caller, MetaKind.ASSET, asset_id, patch, "asset/update")

    def delete(self, caller: Caller, asset_ids: Sequence[str]) -> Row:
        """asset/delete: the owner's assets with their bindings and ACL; unknown ids count as deleted.

        An asset the caller may not read is unknown to them, and answered alike (a 403 would confirm it exists).
        """
        ids = list(dict.fromkeys(asset_ids))
        me = caller_id(caller)
        with self.store.writing(caller.service_id) as w:
            for asset_id in ids:
                asset = w.get(MetaKind.ASSET, asset_id)
                if asset is not None and _readable(w, asset, me):
                    owner(asset, "owner_user_id", caller)  # one foreign asset fails the whole request
                    _delete_asset_rows(w, asset_id)
            audit.record(w, caller, "asset/delete", ids)
        # As in the original, deleting an absent asset is an idempotent success.
        return {"deleted_ids": ids, "failed": []}

    def list(self, caller: Caller, team_id: str, filters: Mapping[str, Any], page: Page) -> Row:
        """asset/list: the team's assets the caller (an active member) may read, newest first."""
        me = caller_id(caller)
        where: dict[str, Any] = {"team_id": team_id}
        for name in ("asset_type", "status", "owner_user_id", "visibility"):
            if filters.get(name) is not None:
                where[name] = filters[name]
        # The original listed any team's assets to anyone; memhub shows members what they may read.
        with self.store.reading(caller.service_id) as r:
            mine = active_member(r, team_id, caller)
            rows = r.find(MetaKind.ASSET, where, order_by=ASSET_ORDER)
            acls = _acls_by_asset(r, "read", [me, mine["role"]])
        kept = [a for a in rows if _may_read(a, me, mine, acls.get(a["asset_id"], ()))]
        return page.cut(kept)

    def list_accessible(
        self,
        caller: Caller,
        user_id: str,
        *,
        team_id: str | None = None,
        action: str = "read",
        asset_type: str | None = None,
        agent_id: str | None = None,
        visibility: str | Sequence[str] | None = None,
        page: Page = FIRST_PAGE,
    ) -> Row:
        """asset/list-accessible: usable assets `user_id` may `action`, over one team or all of theirs."""
        with self.store.reading(caller.service_id) as r:
            # The original answered for anyone; another user's access is disclosed to a system admin
            # or to an admin of the team asked about, not to every key holder.
            if not _may_ask_about(r, caller, user_id, team_id):
                raise denied("cannot access another user's assets")
            if team_id is not None:
                found = membership(r, team_id, user_id)
                members = [found] if found else []
            else:
                members = r.find(MetaKind.MEMBER, {"user_id": user_id, "status": ACTIVE})
            if not members:
                return page.of([], 0)
            by_team = {m["team_id"]: m for m in members}
            where: dict[str, Any] = {"team_id": sorted(by_team), "status !=": list(UNUSABLE_STATUSES)}
            if asset_type is not None:
                where["asset_type"] = asset_type
            if visibility is not None:
                where["visibility"] = [visibility] if isinstance(visibility, str) else list(visibility)
            rows = r.find(MetaKind.ASSET, where, order_by=ASSET_ORDER)
            if agent_id is not None:
                agent = r.get(MetaKind.AGENT, agent_id)
                agent_id = _usable_agent(r, agent, user_id) if agent else None
            subjects = {user_id, *(m["role"] for m in members)} | ({agent_id} if agent_id else set())
            acls = _acls_by_asset(r, action, subjects)
        kept = [
            a
            for a in rows
            if check_permission(
                a, user_id, by_team[a["team_id"]], acls.get(a["asset_id"], ()), action, agent_id
            ).allowed
        ]
        return page.cut(kept)

    def touch_usage(self, caller: Caller, asset_id: str) -> Row:
        """asset/touch-usage: the owner counts one use (updated_at unchanged)."""
        with self.store.writing(caller.service_id) as w:
            asset = _readable_asset(w, caller, asset_id)
            owner(asset, "owner_user_id", caller)
            w.update(MetaKind.ASSET, asset_id, {"usage_count": asset["usage_count"] + 1, "last_used_at": now_iso()})
            audit.record(w, caller, "asset/touch-usage", [asset_id])
        return dict(OK)

    # -- fixed assets --------------------------------------------------------------------
    def set_fixed_assets(self, caller: Caller, agent_id: str, bindings: Sequence[Mapping[str, Any]]) -> Row:
        """agent-fixed-asset/set: replace all of an agent's bindings (agent owner or team admin)."""
        with self.store.writing(caller.service_id) as w:
            # Beyond the original, the owner must still be an active member to manage the agent.
            agent, mine = _members_agent(w, caller, agent_id)
            if agent["owner_user_id"] != mine["user_id"] and mine["role"] != "admin":
                raise denied("caller is not team admin")
            seen: dict[str, None] = {}
            for binding in bindings:
                asset_id = binding["asset_id"]
                if asset_id in seen:
                    raise MetaError("duplicate_entry", f"asset {asset_id} appears twice in bindings")
                seen[asset_id] = None
                asset = _readable_asset(w, caller, asset_id)
                if not can_bind(agent, asset):
                    raise MetaError(
                        "asset_not_bindable",
                        f"asset {asset_id} (visibility={asset['visibility']}) cannot bind to agent {agent_id}",
                    )
                # The original trusted the given type; a wrong one would skew per-type counts.
                if binding["asset_type"] != asset["asset_type"]:
                    raise MetaError(
                        "invalid_request",
                        f"asset {asset_id} is of type {asset['asset_type']}, not {binding['asset_type']}",
                    )
            w.delete(MetaKind.FIXED_ASSET, {"agent_id": agent_id})
            for binding in bindings:
                _insert_binding(
                    w,
                    agent_id,
                    binding["asset_id"],
                    binding["asset_type"],
                    injection_mode=binding.get("injection_mode"),
                    priority=binding.get("priority"),
                    created_by=binding["created_by"],
                )
            audit.record(w, caller, "agent-fixed-asset/set", [agent_id], {"asset_ids": list(seen)})
        return dict(OK)

    def list_fixed_assets(self, caller: Caller, agent_id: str, page: Page) -> Row:
        """agent-fixed-asset/list: raw bindings, priority then newest first (active team members only)."""
        with self.store.reading(caller.service_id) as r:
            _members_agent(r, caller, agent_id)  # the original had no check
            where = {"agent_id": agent_id}
            rows = r.find(MetaKind.FIXED_ASSET, where, order_by=BINDING_ORDER, limit=page.limit, offset=page.offset)
            total = r.count(MetaKind.FIXED_ASSET, where)
        return page.of(rows, total)

    def list_fixed_assets_with_detail(
        self,
        caller: Caller,
        agent_id: str,
        *,
        apply_visibility_filter: bool = False,
        touch_usage: bool = False,
        asset_types: Sequence[str] | None = None,
        page: Page = FIRST_PAGE,
    ) -> Row:
        """agent-fixed-asset/list-with-detail: a page of bindings joined with their usable assets."""
        # Touching usage writes, so that variant runs in one write transaction, the other in a snapshot.
        tx: AbstractContextManager[MetaReader] = (
            self.store.writing(caller.service_id) if touch_usage else self.store.reading(caller.service_id)
        )
        with tx as r:
            agent, _ = _members_agent(r, caller, agent_id)  # the original had no check
            where: dict[str, Any] = {"agent_id": agent_id}
            if asset_types:
                where["asset_type"] = list(asset_types)
            bindings = r.find(MetaKind.FIXED_ASSET, where, order_by=BINDING_ORDER, limit=page.limit, offset=page.offset)
            total = r.count(MetaKind.FIXED_ASSET, where)
            assets = {
                a["asset_id"]: a
                for a in r.find(MetaKind.ASSET, {"asset_id": sorted({b["asset_id"] for b in bindings})})
            }
            items: list[Row] = []
            for binding in bindings:
                asset = assets.get(binding["asset_id"])
                if asset is None or asset["status"] in UNUSABLE_STATUSES:
                    continue
                if apply_visibility_filter and not can_bind(agent, asset):
                    continue
                items.append(
                    {
                        "asset_id": asset["asset_id"],
                        "asset_type": asset["asset_type"],
                        "name": asset["name"],
                        "description": asset["description"],
                        "status": asset["status"],
                        "visibility": asset["visibility"],
                        "injection_mode": binding["injection_mode"],
                        "priority": binding["priority"],
                        "created_at": asset["created_at"],
                    }
                )
            if touch_usage and items:
                assert isinstance(r, MetaWriter)
                now = now_iso()
                for item in items:
                    count = assets[item["asset_id"]]["usage_count"] + 1
                    r.update(MetaKind.ASSET, item["asset_id"], {"usage_count": count, "last_used_at": now})
                touched = [i["asset_id"] for i in items]
                audit.record(r, caller, "agent-fixed-asset/touch-usage", touched, {"agent_id": agent_id})
        view = {k: agent[k] for k in ("agent_id", "team_id", "owner_user_id", "prompt", "visibility", "status")}
        return {"agent": view, **page.of(items, total)}

    def summary_by_agents(self, caller: Caller, agent_ids: Sequence[str], asset_id: str | None = None) -> Row:
        """agent-fixed-asset/summary-by-agents: distinct bound assets per type for each agent, in request order.

        Agents that are unknown or outside the caller's active teams get zero counts.
        """
        me = caller_id(caller)
        ids = list(dict.fromkeys(agent_ids))
        counts: dict[str, Counter[str]] = {agent_id: Counter() for agent_id in ids}
        with self.store.reading(caller.service_id) as r:
            agents = {a["agent_id"]: a for a in r.find(MetaKind.AGENT, {"agent_id": ids})}
            teams = {a["team_id"] for a in agents.values()}
            mine = {t for t in teams if membership(r, t, me) is not None}
            visible = [i for i, a in agents.items() if a["team_id"] in mine]
            where: dict[str, Any] = {"agent_id": visible}
            if asset_id is not None:
                where["asset_id"] = asset_id
            pairs = {(b["agent_id"], b["asset_type"], b["asset_id"]) for b in r.find(MetaKind.FIXED_ASSET, where)}
        for agent_id, asset_type, _ in pairs:
            counts[agent_id][asset_type] += 1
        items = []
        for agent_id in ids:
            per_type = {t: counts[agent_id][t] for t in ASSET_TYPES}
            items.append({"agent_id": agent_id, "counts": per_type, "total": sum(per_type.values())})
        return {"items": items, "total": len(items)}

    # -- ACL -----------------------------------------------------------------------------
    def grant_acl(
        self,
        caller: Caller,
        *,
        asset_id: str,
        subject_type: str,
        subject_id: str,
        permission: str,
        effect: str = "allow",
        granted_by: str,
    ) -> Row:
        """acl/grant: the asset owner upserts an entry keyed by (asset, subject type, subject id, permission)."""
        with self.store.writing(caller.service_id) as w:
            # Ownership before subject lookups (the original's router did the reverse), so that
            # non-owners cannot probe which users or agents exist.
            asset = _readable_asset(w, caller, asset_id)
            owner(asset, "owner_user_id", caller)
            if granted_by != caller.user_id:
                raise denied("granted_by must match caller")
            if subject_type == "user" and live_user(w, subject_id) is None:
                raise not_found("user", subject_id)
            if subject_type == "agent":
                referenced(w, MetaKind.AGENT, subject_id)
            now = now_iso()
            key = {"asset_id": asset_id, "subject_type": subject_type, "subject_id": subject_id}
            found = w.find(MetaKind.ACL, {**key, "permission": permission}, limit=1)
            if found:
                acl_id = found[0]["id"]
                w.update(MetaKind.ACL, acl_id, {"effect": effect, "granted_by": granted_by, "updated_at": now})
            else:
                acl_id = relation_id()
                row = {
                    "id": acl_id,
                    **key,
                    "permission": permission,
                    "effect": effect,
                    "granted_by": granted_by,
                    "created_at": now,
                    "updated_at": now,
                }
                w.insert(MetaKind.ACL, row)
            audit.record(w, caller, "acl/grant", [acl_id], {**key, "permission": permission, "effect": effect})
            acl = w.get(MetaKind.ACL, acl_id)
        assert acl is not None
        return acl

    def revoke_acl(self, caller: Caller, acl_id: str) -> Row:
        """acl/revoke: the asset owner deletes an entry."""
        with self.store.writing(caller.service_id) as w:
            acl = existing(w, MetaKind.ACL, acl_id)
            asset = w.get(MetaKind.ASSET, acl["asset_id"])
            if asset is None or not _readable(w, asset, caller_id(caller)):
                raise MetaError("acl_not_found", f"acl not found: {acl_id}")  # as if absent, like its asset
            owner(asset, "owner_user_id", caller)
            w.delete(MetaKind.ACL, {"id": acl_id})
            audit.record(w, caller, "acl/revoke", [acl_id], {"asset_id": acl["asset_id"]})
        return dict(OK)

    def list_acl(self, caller: Caller, asset_id: str, page: Page) -> Row:
        """acl/list: the asset's entries, newest first (asset owner or team admin)."""
        with self.store.reading(caller.service_id) as r:
            asset = _readable_asset(r, caller, asset_id)
            if asset["owner_user_id"] != caller_id(caller):
                team_admin(r, asset["team_id"], caller)
            where = {"asset_id": asset_id}
            rows = r.find(MetaKind.ACL, where, order_by=ACL_ORDER, limit=page.limit, offset=page.offset)
            total = r.count(MetaKind.ACL, where)
        return page.of(rows, total)

    def check_acl(self, caller: Caller, user_id: str, asset_id: str, action: str, agent_id: str | None = None) -> Row:
        """acl/check: `{allowed, reason}` for `user_id` doing `action` on the asset (ACLs always consulted)."""
        caller_id(caller)  # a user's question; the gateway key has no user to ask about
        with self.store.reading(caller.service_id) as r:
            if agent_id is not None:
                agent_id = _usable_agent(r, referenced(r, MetaKind.AGENT, agent_id), user_id)
            asset = r.get(MetaKind.ASSET, asset_id)
            # The original answered for anyone; another user's rights are a system admin's or a
            # team admin's business (a missing asset is refused alike, so nothing leaks).
            if not _may_ask_about(r, caller, user_id, asset["team_id"] if asset else None):
                raise denied("cannot check another user's access")
            if asset is None:
                return check_permission(None, user_id, None, (), action, agent_id).as_dict()
            found = membership(r, asset["team_id"], user_id)
            acls = _asset_acls(r, asset_id)
        return check_permission(asset, user_id, found, acls, action, agent_id).as_dict()
