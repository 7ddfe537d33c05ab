"""Teams and their members. Adding a member gives them a private default agent in the team."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.errors import MetaError, denied
from memhub.meta.guards import ACTIVE, active_member, caller_id, existing, membership, team_admin, team_owner_or_admin
from memhub.meta.keys import entity_id, relation_id
from memhub.meta.paging import Page, read_page
from memhub.meta.quotas import Quotas
from memhub.meta.users import require_user
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

TEAM_FIELDS = ("name", "description", "status", "metadata_json")
# Deletes everything that hangs off one agent (links, bindings, its chat-memory asset); set by the
# agents service so that a team delete cascades exactly like an agent delete.
AgentCascade = Callable[[MetaWriter, Row], None]


def member_view(r: MetaReader, member: Row) -> Row:
    """A membership with the member's username (read-time join, as in the original)."""
    user = r.get(MetaKind.USER, member["user_id"])
    return {**member, "username": user["username"] if user else ""}


@dataclass
class Teams:
    """Teams of every tenant."""

    store: MetaStore
    quotas: Quotas = field(default_factory=Quotas)
    # Wired by MetaServices: creates a member's default agent / removes an agent's dependants.
    create_default_agent: Callable[[MetaWriter, Caller, Row, Row], None] | None = None
    cascade_agent: AgentCascade | None = None

    def insert_team(self, w: MetaWriter, caller: Caller, fields: Mapping[str, Any], owner_user_id: str) -> Row:
        """A team and its owner's admin membership (inside the caller's transaction)."""
        count = w.count(MetaKind.TEAM)
        if count >= self.quotas.max_teams:
            raise MetaError(
                "team_limit_exceeded",
                f"team limit {self.quotas.max_teams} reached for instance {w.service_id} (current: {count})",
            )
        now = now_iso()
        team = {
            "team_id": entity_id("team"),
            "name": fields["name"],
            "description": fields.get("description"),
            "owner_user_id": owner_user_id,
            "status": fields.get("status") or ACTIVE,
            "created_at": now,
            "updated_at": now,
            "metadata_json": fields.get("metadata_json") or "{}",
        }
        w.insert(MetaKind.TEAM, team)
        w.insert(
            MetaKind.MEMBER,
            {
                "id": relation_id(),
                "team_id": team["team_id"],
                "user_id": owner_user_id,
                "role": "admin",
                "status": ACTIVE,
                "joined_at": now,
            },
        )
        audit.record(w, caller, "team/create", [team["team_id"]], {"name": team["name"]})
        return team

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """team/create: the caller creates a team they own."""
        if fields["owner_user_id"] != caller_id(caller):
            raise denied("caller is not resource owner")
        with self.store.writing(caller.service_id) as w:
            return self.insert_team(w, caller, fields, fields["owner_user_id"])

    def get(self, caller: Caller, team_id: str) -> Row:
        """team/get: members only; to anyone else the team does not exist (no existence leak)."""
        with self.store.reading(caller.service_id) as r:
            team = r.get(MetaKind.TEAM, team_id)
            if team is None or (membership(r, team_id, caller_id(caller)) is None and not caller.is_system_admin):
                raise MetaError("team_not_found", f"not found: {team_id}")
            return team

    def update(self, caller: Caller, team_id: str, changes: Mapping[str, Any]) -> Row:
        """team/update: owner or team admin; the owner cannot be changed."""
        with self.store.writing(caller.service_id) as w:
            team_owner_or_admin(w, team_id, caller)
            patch = {k: v for k, v in changes.items() if k in TEAM_FIELDS and v is not None}
            return audit.changed(w, caller, MetaKind.TEAM, team_id, patch, "team/update")

    def delete(self, caller: Caller, team_ids: Sequence[str]) -> Row:
        """team/delete: all or nothing; agents, members, tasks and assets of the team go with it."""
        ids = list(dict.fromkeys(team_ids))
        with self.store.writing(caller.service_id) as w:
            for team_id in ids:
                team_owner_or_admin(w, team_id, caller)
            for team_id in ids:
                self._cascade(w, team_id)
            audit.record(w, caller, "team/delete", ids)
        return {"deleted_ids": ids, "failed": []}

    def _cascade(self, w: MetaWriter, team_id: str) -> None:
        assert self.cascade_agent is not None
        for agent in w.find(MetaKind.AGENT, {"team_id": team_id}):
            self.cascade_agent(w, agent)
        w.delete(MetaKind.AGENT, {"team_id": team_id})
        tasks = [t["task_id"] for t in w.find(MetaKind.TASK, {"team_id": team_id})]
        if tasks:
            w.delete(MetaKind.TASK_AGENT, {"task_id": tasks})
            w.delete(MetaKind.TASK, {"task_id": tasks})
        # Unlike the original, an asset's bindings and ACL entries go with it: nothing left points at it.
        assets = [a["asset_id"] for a in w.find(MetaKind.ASSET, {"team_id": team_id})]
        if assets:
            w.delete(MetaKind.FIXED_ASSET, {"asset_id": assets})
            w.delete(MetaKind.ACL, {"asset_id": assets})
            w.delete(MetaKind.ASSET, {"asset_id": assets})
        w.delete(MetaKind.MEMBER, {"team_id": team_id})
        w.delete(MetaKind.TEAM, {"team_id": team_id})

    def list(self, caller: Caller, user_id: str, name: str | None, page: Page) -> Row:
        """team/list: the teams a user is an active member of (your own, unless you are a system admin)."""
        if user_id != caller_id(caller) and not caller.is_system_admin:
            raise denied("cannot list another user's teams")
        with self.store.reading(caller.service_id) as r:
            team_ids = [m["team_id"] for m in r.find(MetaKind.MEMBER, {"user_id": user_id, "status": ACTIVE})]
            where: dict[str, Any] = {"team_id": team_ids}
            if name:
                where["name"] = name
            return read_page(r, MetaKind.TEAM, where, ["-created_at", "team_id"], page)

    # -- members -------------------------------------------------------------------------
    def add_member(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """team-member/add: by a team admin; a new active member gets a private default agent."""
        team_id, user_id = fields["team_id"], fields["user_id"]
        role = fields.get("role") or "member"
        status = fields.get("status") or ACTIVE
        with self.store.writing(caller.service_id) as w:
            user = require_user(w, user_id, text=f"not found: {user_id}")
            team_admin(w, team_id, caller)
            if user_id == caller.user_id:
                raise denied("cannot add yourself as a team member")
            team = existing(w, MetaKind.TEAM, team_id)
            if user_id == team["owner_user_id"] and role != "admin":
                raise denied("cannot demote team owner")
            if user_id == team["owner_user_id"] and status != ACTIVE:
                raise denied("cannot remove team owner")
            rows = w.find(MetaKind.MEMBER, {"team_id": team_id, "user_id": user_id}, limit=1)
            if rows and rows[0]["status"] == status and rows[0]["role"] == role:
                raise MetaError("member_already_exists", f"member already exists: {team_id}/{user_id}")
            if rows:
                w.update(MetaKind.MEMBER, rows[0]["id"], {"role": role, "status": status})
                member = {**rows[0], "role": role, "status": status}
            else:
                member = {
                    "id": relation_id(),
                    "team_id": team_id,
                    "user_id": user_id,
                    "role": role,
                    "status": status,
                    "joined_at": now_iso(),
                }
                w.insert(MetaKind.MEMBER, member)
            if status == ACTIVE and self.create_default_agent is not None:
                self.create_default_agent(w, caller, team, user)
            audit.record(w, caller, "team-member/add", [team_id, user_id], {"role": role, "status": status})
        return member

    def remove_member(self, caller: Caller, team_id: str, user_id: str) -> None:
        """team-member/remove: by a team admin; never the owner."""
        with self.store.writing(caller.service_id) as w:
            require_user(w, user_id, text=f"not found: {user_id}")
            team_admin(w, team_id, caller)
            team = existing(w, MetaKind.TEAM, team_id)
            if user_id == team["owner_user_id"]:
                raise denied("cannot remove team owner")
            w.delete(MetaKind.MEMBER, {"team_id": team_id, "user_id": user_id})
            audit.record(w, caller, "team-member/remove", [team_id, user_id])

    def list_members(self, caller: Caller, team_id: str, page: Page) -> Row:
        """team-member/list: for members of the team."""
        with self.store.reading(caller.service_id) as r:
            active_member(r, team_id, caller)
            where = {"team_id": team_id, "status": ACTIVE}
            return read_page(r, MetaKind.MEMBER, where, ["-joined_at", "id"], page, lambda m: member_view(r, m))

    def get_member(self, caller: Caller, team_id: str, user_id: str) -> Row:
        """team-member/get: for members of the team."""
        with self.store.reading(caller.service_id) as r:
            active_member(r, team_id, caller)
            rows = r.find(MetaKind.MEMBER, {"team_id": team_id, "user_id": user_id}, limit=1)
            if not rows:
                raise MetaError("member_not_found", f"member not found: {team_id}/{user_id}")
            return member_view(r, rows[0])
