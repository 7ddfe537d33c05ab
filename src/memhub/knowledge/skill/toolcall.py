"""The skill kind's service for `/v3/tools/list` and `/v3/tools/call` on a `skl-…` id: read-only views of one
skill (its SKILL.md, one resource file) through the skill service's own reads, so the access rules, the version
TTL and the storage checks are the skill routes' (memhub.knowledge.skill.service).

A skill the caller may not read, a deleted one and a draft nobody published yet are all "not found", as a wiki
of another team is; a draft is found only by its author, who tries out what she wrote. A read the service refuses
(a version that was purged or is past the TTL, a path not in the manifest, binary bytes asked for as text) is a
tool error carrying the service's message and data, so an agent can act on it.

What the tools show goes to an agent: `skill_view` withholds a name, a description or lines of the instructions
that read like an instruction to the agent and says so in `notes` (memhub.knowledge.skill.screen), unless the
caller wrote that version; `tools/list` leaves such a description out of the summary.
"""

from __future__ import annotations

from typing import Any, ClassVar

from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.errors import SkillError, SkillNotFound
from memhub.knowledge.skill.kind import SKILL
from memhub.knowledge.skill.screen import flagged, screen_view
from memhub.knowledge.skill.service import SkillService
from memhub.knowledge.tools import tool_error
from memhub.meta.access import AccessDenied
from memhub.meta.caller import Caller
from memhub.model.meta import Row
from memhub.model.skills import SkillVersion
from memhub.store.meta import MetaStore

# Archived skills are deleted; candidates are drafts no agent but their author's sees until someone publishes them.
READABLE_STATUSES = ("active",)


class SkillTools:
    """`KindService` of the skill kind: finds a skill the caller may read and runs its read-only tools.

    Built like every kind's service from the meta store and its config; a skill's config is the skill service.
    """

    KIND: ClassVar[ResourceKind] = SKILL

    def __init__(self, store: MetaStore, service: SkillService) -> None:
        self.store = store
        self.service = service

    def row(self, caller: Caller, resource_id: str) -> Row:
        """The skill's head if the caller may read it, else the kind's 404."""
        SKILL.check_id(resource_id)
        head = self.service.skills.head(caller.service_id, resource_id)
        if head is None or not _findable(caller, head):
            raise SKILL.not_found(resource_id)
        # The skill's own team: a user key must be an active member of it and may read the skill's asset.
        ids = SkillIds(team_id=head.team_id)
        try:
            access = self.service.access
            if not access.may_read(access.actor(caller, ids), head):
                raise SKILL.not_found(resource_id)
        except AccessDenied:
            raise SKILL.not_found(resource_id) from None
        return {"skill_id": head.skill_id, "team_id": head.team_id, "head": head}

    def tool_view(self, row: Row) -> Row:
        """The skill as tools/list shows it: its name, its description as the summary, its status."""
        head: SkillVersion = row["head"]
        summary = "" if flagged(head.description) else head.description
        return {"name": head.name, "summary": summary, "status": head.status, "stale": False}

    def call_tool(self, caller: Caller, row: Row, tool_name: str, params: dict[str, Any]) -> Row:
        """`skill_view` or `skill_read_file` (params already checked)."""
        ids = SkillIds(team_id=row["team_id"])
        skill_id = row["skill_id"]
        try:
            if tool_name == "skill_view":
                view = self.service.get(caller, ids, skill_id, params.get("version"))
                mine = caller.user_id is not None and view.get("owner_user_id") == caller.user_id
                return view if mine else screen_view(view)
            return self.service.read_file(
                caller, ids, skill_id, params["path"], params.get("version"), params["encoding"]
            )
        except SkillNotFound as exc:
            if self._gone(caller, skill_id):
                raise SKILL.not_found(skill_id) from None
            return tool_error(exc.message, **_data(exc))
        except SkillError as exc:
            return tool_error(exc.message, **_data(exc))

    def _gone(self, caller: Caller, skill_id: str) -> bool:
        """Whether the skill itself disappeared between finding it and reading it (deleted meanwhile)."""
        head = self.service.skills.head(caller.service_id, skill_id)
        return head is None or not _findable(caller, head)

    def resume(self) -> int:
        """Skills have no builds."""
        return 0

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Skills have no builds."""

    def close(self) -> None:
        """Skills have no workers."""


def _findable(caller: Caller, head: SkillVersion) -> bool:
    """A published skill, or a draft the caller wrote (the access rules decide the rest)."""
    if head.status in READABLE_STATUSES:
        return True
    return head.status == "candidate" and caller.user_id is not None and head.user_id == caller.user_id


def _data(exc: SkillError) -> dict[str, Any]:
    """The refusal's data (`latest_version` of an expired version) and its business code."""
    data = exc.data if isinstance(exc.data, dict) else {}
    return {**data, "error_code": exc.code}
