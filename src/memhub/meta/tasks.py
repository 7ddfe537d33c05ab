"""Tasks of a team, the agents linked to them, and the append-only participation log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.meta import audit
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.clock import canonical, now_iso
from memhub.meta.errors import MetaError
from memhub.meta.guards import ACTIVE, active_member, caller_id, existing, membership, owner, team_admin
from memhub.meta.keys import entity_id, relation_id
from memhub.meta.paging import Page, read_page
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

TASK_FIELDS = (
    "title",
    "description",
    "source_type",
    "source_url",
    "status",
    "auto_assign_floating_assets",
    "risk_level",
    "metadata_json",
)


def _agent_in_team(r: MetaReader, caller: Caller, agent_id: str, team_id: str) -> Row:
    agent = r.get(MetaKind.AGENT, agent_id)
    # An agent the caller may not see answers as a missing one; a mismatch would confirm that it exists.
    if agent is None or not agent_visible(r, agent, caller_id(caller), system_admin=caller.is_system_admin):
        raise MetaError("agent_not_found", f"agent not found: {agent_id}")
    if agent["team_id"] != team_id:
        raise MetaError("agent_team_mismatch", f"agent {agent_id} not in team {team_id}")
    return agent


@dataclass
class Tasks:
    """Tasks of every tenant."""

    store: MetaStore

    def _link(self, w: MetaWriter, task_id: str, agent_id: str, role_in_task: str | None) -> Row:
        rows = w.find(MetaKind.TASK_AGENT, {"task_id": task_id, "agent_id": agent_id}, limit=1)
        if rows:
            w.update(MetaKind.TASK_AGENT, rows[0]["id"], {"role_in_task": role_in_task, "status": ACTIVE})
            return {**rows[0], "role_in_task": role_in_task, "status": ACTIVE}
        link = {
            "id": relation_id(),
            "task_id": task_id,
            "agent_id": agent_id,
            "role_in_task": role_in_task,
            "status": ACTIVE,
            "created_at": now_iso(),
        }
        w.insert(MetaKind.TASK_AGENT, link)
        return link

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """task/create: a member creates a task (as its creator), optionally linking team agents."""
        team_id = fields["team_id"]
        with self.store.writing(caller.service_id) as w:
            existing(w, MetaKind.TEAM, team_id)
            active_member(w, team_id, caller)
            owner({"creator_user_id": fields["creator_user_id"]}, "creator_user_id", caller)
            linked = fields.get("linked_agents") or []
            seen: set[str] = set()
            for link in linked:
                _agent_in_team(w, caller, link["agent_id"], team_id)
                if link["agent_id"] in seen:
                    raise MetaError("duplicate_entry", f"agent linked twice: {link['agent_id']}")
                seen.add(link["agent_id"])
            now = now_iso()
            task = {
                "task_id": entity_id("task"),
                "team_id": team_id,
                "creator_user_id": fields["creator_user_id"],
                "title": fields["title"],
                "description": fields.get("description"),
                "source_type": fields.get("source_type") or "manual",
                "source_url": fields.get("source_url"),
                "status": fields.get("status") or "running",
                "auto_assign_floating_assets": bool(fields.get("auto_assign_floating_assets") or False),
                "risk_level": fields.get("risk_level"),
                "created_at": now,
                "updated_at": now,
                "metadata_json": fields.get("metadata_json") or "{}",
            }
            w.insert(MetaKind.TASK, task)
            for link in linked:
                self._link(w, task["task_id"], link["agent_id"], link.get("role_in_task"))
            audit.record(w, caller, "task/create", [task["task_id"]], {"team_id": team_id})
        return task

    @staticmethod
    def _known(r: MetaReader, caller: Caller, task_id: str) -> Row:
        """The task, unless the caller is neither its creator nor in its team (then it does not exist)."""
        task = r.get(MetaKind.TASK, task_id)
        me = caller_id(caller)
        if task is None or (task["creator_user_id"] != me and membership(r, task["team_id"], me) is None):
            raise MetaError("task_not_found", f"task not found: {task_id}")
        return task

    def _readable(self, r: MetaReader, caller: Caller, task_id: str) -> Row:
        task = r.get(MetaKind.TASK, task_id)
        if task is None or (membership(r, task["team_id"], caller_id(caller)) is None and not caller.is_system_admin):
            raise MetaError("task_not_found", f"not found: {task_id}")
        return task

    def get(self, caller: Caller, task_id: str) -> Row:
        """task/get: members of the task's team only."""
        with self.store.reading(caller.service_id) as r:
            return self._readable(r, caller, task_id)

    def _mutate(self, caller: Caller, task_id: str, patch: Mapping[str, Any], action: str) -> Row:
        with self.store.writing(caller.service_id) as w:
            owner(self._known(w, caller, task_id), "creator_user_id", caller)
            return audit.changed(w, caller, MetaKind.TASK, task_id, dict(patch), action)

    def update(self, caller: Caller, task_id: str, changes: Mapping[str, Any]) -> Row:
        """task/update: the creator only."""
        patch = {k: v for k, v in changes.items() if k in TASK_FIELDS and v is not None}
        return self._mutate(caller, task_id, patch, "task/update")

    def archive(self, caller: Caller, task_id: str) -> Row:
        """task/archive: marks the task completed."""
        return self._mutate(caller, task_id, {"status": "completed"}, "task/archive")

    def delete(self, caller: Caller, task_ids: Sequence[str]) -> Row:
        """task/delete: all or nothing, creator only; its agent links go with it."""
        ids = list(dict.fromkeys(task_ids))
        with self.store.writing(caller.service_id) as w:
            for task_id in ids:
                owner(self._known(w, caller, task_id), "creator_user_id", caller)
            w.delete(MetaKind.TASK_AGENT, {"task_id": ids})
            w.delete(MetaKind.TASK, {"task_id": ids})
            audit.record(w, caller, "task/delete", ids)
        return {"deleted_ids": ids, "failed": []}

    def list(self, caller: Caller, fields: Mapping[str, Any], creator_user_id: str | None, page: Page) -> Row:
        """task/list by team or creator: only tasks of teams the caller belongs to."""
        me = caller_id(caller)
        where: dict[str, Any] = {}
        for name in ("status", "title", "team_id"):
            if fields.get(name):
                where[name] = fields[name]
        if creator_user_id:
            where["creator_user_id"] = creator_user_id
        with self.store.reading(caller.service_id) as r:
            if not caller.is_system_admin:
                mine = {m["team_id"] for m in r.find(MetaKind.MEMBER, {"user_id": me, "status": ACTIVE})}
                if "team_id" in where and where["team_id"] not in mine:
                    raise MetaError("permission_denied", "not a team member")
                where.setdefault("team_id", sorted(mine))
            return read_page(r, MetaKind.TASK, where, ["-created_at", "task_id"], page)

    # -- task ↔ agent --------------------------------------------------------------------
    def link(self, caller: Caller, task_id: str, agent_id: str, role_in_task: str | None) -> Row:
        """task-agent/link: the creator links an agent of the task's team."""
        with self.store.writing(caller.service_id) as w:
            task = self._known(w, caller, task_id)
            owner(task, "creator_user_id", caller)
            _agent_in_team(w, caller, agent_id, task["team_id"])
            link = self._link(w, task_id, agent_id, role_in_task)
            audit.record(w, caller, "task-agent/link", [task_id, agent_id])
        return link

    def unlink(self, caller: Caller, task_id: str, agent_id: str) -> None:
        """task-agent/unlink: the creator only; unlinking what is not linked is not an error."""
        with self.store.writing(caller.service_id) as w:
            if w.get(MetaKind.AGENT, agent_id) is None:
                raise MetaError("agent_not_found", f"not found: {agent_id}")
            owner(self._known(w, caller, task_id), "creator_user_id", caller)
            w.delete(MetaKind.TASK_AGENT, {"task_id": task_id, "agent_id": agent_id})
            audit.record(w, caller, "task-agent/unlink", [task_id, agent_id])

    def list_links(self, caller: Caller, task_id: str, page: Page) -> Row:
        """task-agent/list: members of the task's team only."""
        with self.store.reading(caller.service_id) as r:
            self._readable(r, caller, task_id)
            where = {"task_id": task_id, "status": ACTIVE}
            return read_page(r, MetaKind.TASK_AGENT, where, ["-created_at", "id"], page)

    # -- participation log ---------------------------------------------------------------
    def append_participation(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """participation-log/append: a member logs themself; a team admin may log any member."""
        team_id, user_id = fields["team_id"], fields["user_id"]
        with self.store.writing(caller.service_id) as w:
            existing(w, MetaKind.TEAM, team_id)
            active_member(w, team_id, caller)
            if user_id != caller.user_id:
                team_admin(w, team_id, caller)
            task = existing(w, MetaKind.TASK, fields["task_id"])
            if task["team_id"] != team_id:
                raise MetaError("permission_denied", f"task {task['task_id']} not in team {team_id}")
            agent = existing(w, MetaKind.AGENT, fields["agent_id"])
            if membership(w, team_id, user_id) is None:
                raise MetaError("member_not_found", f"member not found: {team_id}/{user_id}")
            # The agent must be one of this team's that the caller or the logged member may act through; any other
            # answers as unknown, so the log cannot name (or confirm) another team's or a private agent.
            usable = agent["team_id"] == team_id and (
                agent_visible(w, agent, caller_id(caller), system_admin=caller.is_system_admin)
                or agent_visible(w, agent, user_id)
            )
            if not usable:
                raise MetaError("agent_not_found", f"agent not found: {agent['agent_id']}")
            at = canonical(fields["created_at"]) if fields.get("created_at") else now_iso()
            entry = {
                "id": relation_id(),
                "team_id": team_id,
                "task_id": task["task_id"],
                "agent_id": fields["agent_id"],
                "user_id": user_id,
                "source": fields.get("source") or "unknown",
                "metadata_json": fields.get("metadata_json") or "{}",
                "created_at": at,
                "updated_at": at,
            }
            w.insert(MetaKind.PARTICIPATION, entry)
        return entry

    def list_participation(self, caller: Caller, fields: Mapping[str, Any], page: Page) -> Row:
        """participation-log/list: members of the team; `dedupe` keeps each user's newest entry."""
        where: dict[str, Any] = {"team_id": fields["team_id"]}
        for name in ("task_id", "agent_id", "user_id"):
            if fields.get(name):
                where[name] = fields[name]
        if fields.get("created_after"):
            where["created_at >="] = canonical(fields["created_after"])
        if fields.get("created_before"):
            where["created_at <="] = canonical(fields["created_before"])
        with self.store.reading(caller.service_id) as r:
            active_member(r, fields["team_id"], caller)
            if not fields.get("dedupe"):
                return read_page(r, MetaKind.PARTICIPATION, where, ["-created_at", "-id"], page)
            newest: dict[str, Row] = {}
            for row in r.find(MetaKind.PARTICIPATION, where, order_by=["-created_at", "-id"]):
                newest.setdefault(row["user_id"], row)
        items = list(newest.values())
        return page.cut(items)
