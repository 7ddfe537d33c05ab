"""The knowledge registry (`/v3/knowledge/*`): which wiki / code-graph services a team has.

These routes use the data-plane envelope, so failures are memhub.errors with the original's plain
messages ("Knowledge not found", "Knowledge team_id mismatch"). The original had no per-user
authorization; memhub requires a user caller (not a system admin, not the gateway key) to be an
active member of the team concerned, and only the entry's owner (the registering user) or an admin
of its team may change or delete it.

Every teammate's agent is told to send its user key to an entry's `service_url`, so a `service_url` must
be on a trusted origin (this gateway's public URL or the operator's allow-list): a member who could
register `https://evil.example/v3` would collect the keys of the whole team. The URL is stored, and shown, in its
canonical form (`memhub.meta.origins.canonical_url`: no fragment, dot segments resolved), so the text a teammate
reads names the host and path the request really goes to; a row written before that rule is shown canonical too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.errors import BadRequest, FieldError, Forbidden, NotFound
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.guards import is_team_admin, membership
from memhub.meta.origins import KnowledgeOrigins, canonical_url
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

SUMMARY_MAX = 256
DELETE_MAX = 100
LIST_IDS_MAX = 200
LIST_LIMIT_MAX = 1000
# The original's store default is unknown; 100 returns a typical team's registry in one page.
LIST_LIMIT_DEFAULT = 100
# Fields knowledge/update may change (everything but the id, the team and the type).
UPDATABLE = ("name", "summary", "service_url", "repo_url", "branch")
ORDER = ("-created_at", "knowledge_id")
NOT_FOUND = "Knowledge not found"
MISMATCH = "Knowledge team_id mismatch"


def shown_url(url: str) -> str:
    """A stored service_url as it is shown: canonical, or as stored when it has none (such a row is never offered to
    agents, and its owner sees what to fix)."""
    try:
        return canonical_url(url)
    except ValueError:
        return url


def knowledge_view(row: Row) -> Row:
    """A KnowledgeEntity on the wire; `agent_id` is reserved and always ""."""
    return {
        "knowledge_id": row["knowledge_id"],
        "type": row["type"],
        "service_url": shown_url(row["service_url"]),
        "name": row["name"],
        "summary": row["summary"],
        "team_id": row["team_id"],
        "agent_id": "",
        "user_id": row["user_id"],
        "repo_url": row["repo_url"],
        "branch": row["branch"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def _gated(caller: Caller) -> bool:
    """True when membership checks apply: a user who is not a system admin."""
    return caller.user_id is not None and not caller.is_system_admin


def _member(r: MetaReader, caller: Caller, team_id: str) -> bool:
    return not _gated(caller) or membership(r, team_id, caller.user_id or "") is not None


def _require_member(r: MetaReader, caller: Caller, team_id: str) -> None:
    if not _member(r, caller, team_id):
        raise Forbidden(f"Not a member of team {team_id}")


def _may_change(r: MetaReader, caller: Caller, row: Row) -> bool:
    """The entry's owner, an admin or the owner of its team, a system admin or the gateway key."""
    if not _gated(caller) or (row["user_id"] is not None and row["user_id"] == caller.user_id):
        return True
    team = r.get(MetaKind.TEAM, row["team_id"])
    me = caller.user_id or ""
    return (team is not None and team["owner_user_id"] == me) or is_team_admin(r, row["team_id"], me)


def _require_change(r: MetaReader, caller: Caller, row: Row) -> None:
    if not _may_change(r, caller, row):
        raise Forbidden(
            f"knowledge_id: {row['knowledge_id']} was registered by another user;"
            f" only its owner or an admin of team {row['team_id']} may change or delete it"
        )


def _scoped(r: MetaReader, caller: Caller, knowledge_id: str, team_id: str | None) -> Row:
    """The entry, checked against the optional team guard and the caller's membership."""
    if team_id is not None:
        _require_member(r, caller, team_id)
    row = r.get(MetaKind.KNOWLEDGE, knowledge_id)
    if row is None or not _member(r, caller, row["team_id"]):
        raise NotFound(NOT_FOUND)  # another team's entry: not disclosed to outsiders, whatever team_id says
    if team_id is not None and row["team_id"] != team_id:
        raise Forbidden(MISMATCH)
    return row


def register(w: MetaWriter, fields: Mapping[str, Any]) -> None:
    """Insert or update one entry (created_at kept on re-registration); no authorization here.

    The wiki service calls this in the transaction that makes a wiki ready, so a ready wiki is always
    offered to agents (the original's callback chain could lose that step).
    """
    now = now_iso()
    row = {
        "knowledge_id": fields["knowledge_id"],
        "type": fields["type"],
        "service_url": fields["service_url"],
        "name": fields["name"],
        "summary": fields.get("summary"),
        "team_id": fields["team_id"],
        "user_id": fields.get("user_id"),
        "repo_url": fields.get("repo_url"),
        "branch": fields.get("branch"),
        "updated_at": now,
    }
    if w.get(MetaKind.KNOWLEDGE, row["knowledge_id"]) is None:
        w.insert(MetaKind.KNOWLEDGE, {**row, "created_at": now})
    else:
        w.update(MetaKind.KNOWLEDGE, row["knowledge_id"], row)


@dataclass
class KnowledgeRegistry:
    """Knowledge entries of every tenant."""

    store: MetaStore
    origins: KnowledgeOrigins  # where a registered service_url may point

    def _checked_url(self, url: str) -> str:
        """The URL in its canonical form, when it is on a trusted origin; FieldError naming the rule otherwise."""
        if not self.origins.allows(url):
            raise FieldError("service_url", self.origins.rule())
        try:
            return canonical_url(url)
        except ValueError as exc:
            raise FieldError("service_url", str(exc)) from None

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """knowledge/create: idempotent upsert keyed by knowledge_id (created_at kept on re-create).

        Re-creating an existing id is an update of that entry: its owner stays unless `user_id` names a new one.
        A user who sends no `user_id` registers the entry as their own.
        """
        knowledge_id, team_id = fields["knowledge_id"], fields["team_id"]
        user_id = fields.get("user_id")
        if _gated(caller) and user_id is not None and user_id != caller.user_id:
            raise Forbidden("user_id does not match caller")
        fields = {**fields, "service_url": self._checked_url(fields["service_url"])}
        with self.store.writing(caller.service_id) as w:
            _require_member(w, caller, team_id)
            old = w.get(MetaKind.KNOWLEDGE, knowledge_id)
            if old is not None:
                # Re-registering must not move another team's entry into the caller's team.
                if old["team_id"] != team_id and not _member(w, caller, old["team_id"]):
                    raise Forbidden(MISMATCH)
                _require_change(w, caller, old)
            if user_id is None:
                user_id = old["user_id"] if old is not None else caller.user_id
            register(w, {**fields, "user_id": user_id})
            audit.record(w, caller, "knowledge/create", [knowledge_id], {"team_id": team_id, "type": fields["type"]})
            stored = w.get(MetaKind.KNOWLEDGE, knowledge_id)
        assert stored is not None
        return knowledge_view(stored)

    def get(self, caller: Caller, knowledge_id: str, team_id: str | None = None) -> Row:
        """knowledge/get: 404 when absent or in a team the caller is not in, 403 when `team_id` is given and differs."""
        with self.store.reading(caller.service_id) as r:
            return knowledge_view(_scoped(r, caller, knowledge_id, team_id))

    def update(self, caller: Caller, knowledge_id: str, changes: Mapping[str, Any], team_id: str | None = None) -> Row:
        """knowledge/update: name, summary (null clears), service_url, repo_url, branch."""
        if changes.get("service_url") is not None:
            changes = {**changes, "service_url": self._checked_url(changes["service_url"])}
        with self.store.writing(caller.service_id) as w:
            _require_change(w, caller, _scoped(w, caller, knowledge_id, team_id))
            patch = {k: v for k, v in changes.items() if k in UPDATABLE and (v is not None or k == "summary")}
            return knowledge_view(audit.changed(w, caller, MetaKind.KNOWLEDGE, knowledge_id, patch, "knowledge/update"))

    def delete(self, caller: Caller, knowledge_ids: Sequence[str], team_id: str | None = None) -> Row:
        """knowledge/delete: `{deleted_ids, failed:[{id, reason: not_found|team_mismatch}]}`.

        One entry the caller may not change refuses the whole request (403) before anything is deleted.
        """
        ids = list(dict.fromkeys(knowledge_ids))
        if not ids or len(ids) > DELETE_MAX:
            raise BadRequest(f"knowledge_ids: must hold 1 to {DELETE_MAX} ids")
        deleted: list[str] = []
        failed: list[Row] = []
        with self.store.writing(caller.service_id) as w:
            if team_id is not None:
                _require_member(w, caller, team_id)
            for knowledge_id in ids:
                row = w.get(MetaKind.KNOWLEDGE, knowledge_id)
                if row is None or not _member(w, caller, row["team_id"]):
                    failed.append({"id": knowledge_id, "reason": "not_found"})
                elif team_id is not None and row["team_id"] != team_id:
                    failed.append({"id": knowledge_id, "reason": "team_mismatch"})
                else:
                    _require_change(w, caller, row)
                    deleted.append(knowledge_id)
            for knowledge_id in deleted:
                w.delete(MetaKind.KNOWLEDGE, {"knowledge_id": knowledge_id})
            if deleted:
                audit.record(w, caller, "knowledge/delete", deleted, {"team_id": team_id, "failed": failed})
        return {"deleted_ids": deleted, "failed": failed}

    def list(
        self,
        caller: Caller,
        team_id: str,
        *,
        type: str | None = None,
        knowledge_ids: Sequence[str] | None = None,
        limit: int = LIST_LIMIT_DEFAULT,
        offset: int = 0,
    ) -> Row:
        """knowledge/list: the team's entries, newest first, as `{items, total}`."""
        where: dict[str, Any] = {"team_id": team_id}
        if type is not None:
            where["type"] = type
        if knowledge_ids:
            where["knowledge_id"] = list(knowledge_ids)
        with self.store.reading(caller.service_id) as r:
            _require_member(r, caller, team_id)
            rows = r.find(MetaKind.KNOWLEDGE, where, order_by=ORDER, limit=limit, offset=offset)
            total = r.count(MetaKind.KNOWLEDGE, where)
        return {"items": [knowledge_view(x) for x in rows], "total": total}
