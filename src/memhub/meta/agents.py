"""Agents of a team: who may see and use them, their life cycle and what goes when one is deleted."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.errors import MetaError
from memhub.meta.guards import ACTIVE, active_member, caller_id, existing, membership, owner
from memhub.meta.keys import entity_id
from memhub.meta.paging import Page
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

AGENT_FIELDS = ("name", "description", "prompt", "visibility", "status", "metadata_json")
# Set by MetaServices from the assets service: every agent has its chat-memory asset, bound to it.
AssetHook = Callable[[MetaWriter, Row], None]


def agent_visible(r: MetaReader, agent: Row, user_id: str, *, system_admin: bool = False) -> bool:
    """Whether a user may see (and act through) an agent.

    The owner always; otherwise an active member of the agent's team, as the visibility allows:
    `private` only the owner, `restricted` team admins, `team` / `agent` / `task` every member.
    """
    if agent["owner_user_id"] == user_id or system_admin:
        return True
    member = membership(r, agent["team_id"], user_id)
    if member is None:
        return False
    visibility = agent["visibility"]
    if visibility == "private":
        return False
    if visibility == "restricted":
        return member["role"] == "admin"
    return True


@dataclass
class Agents:
    """Agents of every tenant."""

    store: MetaStore
    ensure_assets: AssetHook
    drop_assets: AssetHook  # delete: its chat-memory asset, its bindings, ACL entries naming it
    withdraw_memory_asset: AssetHook  # archive: only its chat-memory asset

    def insert_agent(self, w: MetaWriter, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """An agent with its chat-memory asset (inside the caller's transaction)."""
        now = now_iso()
        agent = {
            "agent_id": entity_id("agt"),
            "team_id": fields["team_id"],
            "owner_user_id": fields["owner_user_id"],
            "name": fields["name"],
            "description": fields.get("description"),
            "prompt": fields.get("prompt"),
            "visibility": fields.get("visibility") or "team",
            "status": fields.get("status") or ACTIVE,
            "created_at": now,
            "updated_at": now,
            "metadata_json": fields.get("metadata_json") or "{}",
        }
        w.insert(MetaKind.AGENT, agent)
        self.ensure_assets(w, agent)
        audit.record(w, caller, "agent/create", [agent["agent_id"]], {"team_id": agent["team_id"]})
        return agent

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """agent/create: a member creates their own agent; a team admin may create one for a member."""
        with self.store.writing(caller.service_id) as w:
            existing(w, MetaKind.TEAM, fields["team_id"])
            member = active_member(w, fields["team_id"], caller)
            if fields["owner_user_id"] != caller.user_id:
                if member["role"] != "admin":
                    owner({"owner_user_id": fields["owner_user_id"]}, "owner_user_id", caller)
                if membership(w, fields["team_id"], fields["owner_user_id"]) is None:
                    raise MetaError("permission_denied", "owner is not a team member")
            return self.insert_agent(w, caller, fields)

    def default_agent(self, w: MetaWriter, caller: Caller, team: Row, user: Row) -> None:
        """A new member's private default agent, unless they already have one in the team."""
        name = f"default-agent-{user['username']}"
        mine = {"team_id": team["team_id"], "owner_user_id": user["user_id"], "name": name}
        if w.count(MetaKind.AGENT, mine):
            return
        metadata = json.dumps({"ui": {"role_prompt": "", "rules_prompt": ""}, "default_agent": True})
        self.insert_agent(
            w,
            caller,
            {
                **mine,
                "description": "Default assistant",
                "prompt": "",
                "visibility": "private",
                "metadata_json": metadata,
            },
        )

    @staticmethod
    def _owned(r: MetaReader, caller: Caller, agent_id: str) -> Row:
        """The caller's own agent; one they cannot see does not exist for them, one they can is 403."""
        agent = r.get(MetaKind.AGENT, agent_id)
        me = caller_id(caller)
        if agent is None or not agent_visible(r, agent, me):
            raise MetaError("agent_not_found", f"agent not found: {agent_id}")
        owner(agent, "owner_user_id", caller)
        return agent

    def _visible(self, r: MetaReader, caller: Caller, agent_id: str) -> Row:
        agent = r.get(MetaKind.AGENT, agent_id)
        if agent is None or not agent_visible(r, agent, caller_id(caller), system_admin=caller.is_system_admin):
            raise MetaError("agent_not_found", f"not found: {agent_id}")
        return agent

    def get(self, caller: Caller, agent_id: str) -> Row:
        """agent/get: only an agent the caller may see exists for them."""
        with self.store.reading(caller.service_id) as r:
            return self._visible(r, caller, agent_id)

    def update(self, caller: Caller, agent_id: str, changes: Mapping[str, Any]) -> Row:
        """agent/update: the owner only; the owner cannot be changed."""
        with self.store.writing(caller.service_id) as w:
            self._owned(w, caller, agent_id)
            patch = {k: v for k, v in changes.items() if k in AGENT_FIELDS and v is not None}
            return audit.changed(w, caller, MetaKind.AGENT, agent_id, patch, "agent/update")

    def cascade(self, w: MetaWriter, agent: Row) -> None:
        """Everything that depends on an agent: task links, its bindings, its chat-memory asset."""
        w.delete(MetaKind.TASK_AGENT, {"agent_id": agent["agent_id"]})
        self.drop_assets(w, agent)

    def delete(self, caller: Caller, agent_ids: Sequence[str]) -> Row:
        """agent/delete: all or nothing, owner only."""
        ids = list(dict.fromkeys(agent_ids))
        with self.store.writing(caller.service_id) as w:
            agents = [self._owned(w, caller, a) for a in ids]
            for agent in agents:
                self.cascade(w, agent)
            w.delete(MetaKind.AGENT, {"agent_id": ids})
            audit.record(w, caller, "agent/delete", ids)
        return {"deleted_ids": ids, "failed": []}

    def archive(self, caller: Caller, agent_id: str) -> Row:
        """agent/archive: inactive, and its chat-memory asset is withdrawn."""
        with self.store.writing(caller.service_id) as w:
            agent = self._owned(w, caller, agent_id)
            self.withdraw_memory_asset(w, agent)
            return audit.changed(w, caller, MetaKind.AGENT, agent_id, {"status": "inactive"}, "agent/archive")

    def list(self, caller: Caller, fields: Mapping[str, Any], owner_user_id: str | None, page: Page) -> Row:
        """agent/list by team or by owner: only agents the caller may see are listed (and counted)."""
        me = caller_id(caller)
        where: dict[str, Any] = {}
        for name in ("status", "name"):
            if fields.get(name):
                where[name] = fields[name]
        if owner_user_id:
            where["owner_user_id"] = owner_user_id
        with self.store.reading(caller.service_id) as r:
            if fields.get("team_id"):
                where["team_id"] = fields["team_id"]
                if not caller.is_system_admin:
                    active_member(r, fields["team_id"], caller)
            rows = r.find(MetaKind.AGENT, where, order_by=["-created_at", "agent_id"])
            visible = [a for a in rows if agent_visible(r, a, me, system_admin=caller.is_system_admin)]
        return page.cut(visible)
