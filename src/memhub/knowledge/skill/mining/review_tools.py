"""The review agent's tools, each one call of the skill service as the archive's agent.

Every write goes through `SkillService` exactly as a client's request would: the SKILL.md rules, the
compare-and-set on `expected_version`, the owner-agent check and the asset binding all apply. A refusal comes
back to the model as `{"error", "code", "message", "data"}` (a stale version carries `data.current_version`),
so it can correct the call; only failures of the system itself (storage) propagate and fail the job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.errors import MemhubError
from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.files import ResourcePayload
from memhub.knowledge.skill.search import SkillSearch
from memhub.knowledge.skill.service import SkillService
from memhub.knowledge.skill.views import summary
from memhub.meta.caller import Caller
from memhub.model.skills import SkillStatus

LISTED: tuple[SkillStatus, ...] = ("active", "candidate")  # drafts too, so the model does not write them twice
MAX_LIST = 50


class _BadArguments(Exception):
    """The model's arguments break the tool's contract."""


def _text(args: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise _BadArguments(f"{key}: must be a non-empty string")
    return value


def _integer(args: Mapping[str, Any], key: str, *, required: bool = True, default: int = 0) -> int:
    value = args.get(key)
    if value is None and not required:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _BadArguments(f"{key}: must be an integer")
    return value


@dataclass
class SkillTools:
    """skill_list / skill_view / skill_create / skill_update / skill_patch / skill_files_write for one agent."""

    service: SkillService
    caller: Caller
    ids: SkillIds
    # `skill_list`'s query ranks with the skill search (BM25 over name, description and content, and the name
    # fast path); without one given, BM25 over the service's store.
    ranker: SkillSearch | None = None
    written: list[tuple[str, str, int]] = field(default_factory=list)  # (tool, skill_id, new version)

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one tool; refusals are returned, never raised."""
        tools: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "skill_list": self._list,
            "skill_view": self._view,
            "skill_create": self._create,
            "skill_update": self._update,
            "skill_patch": self._patch,
            "skill_files_write": self._files_write,
        }
        tool = tools.get(name)
        if tool is None:
            return {"error": "UNKNOWN_TOOL", "message": f"no tool {name!r}; the tools are {', '.join(tools)}"}
        try:
            return tool(arguments)
        except _BadArguments as exc:
            return {"error": "BAD_ARGUMENTS", "message": str(exc)}
        except MemhubError as exc:
            refusal: dict[str, Any] = {
                "error": getattr(exc, "reason", type(exc).__name__),
                "code": exc.code,
                "message": exc.message,
            }
            if exc.data:
                refusal["data"] = exc.data
            return refusal

    def listing(self, limit: int) -> tuple[list[dict[str, Any]], int]:
        """The agent's skills, most recently changed first, and how many it has."""
        page = self.service.list(
            self.caller, self.ids, owner_agent_id=self.ids.agent_id, statuses=LISTED, limit=limit, offset=0
        )
        return list(page["items"]), int(page["total"])

    def _record(self, tool: str, result: Mapping[str, Any]) -> dict[str, Any]:
        if result.get("changed", True):
            self.written.append((tool, str(result.get("skill_id")), int(result.get("version", 0))))
        return dict(result)

    def searched(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The agent's skills (drafts included) ranked for the query, best first, at most `limit`."""
        actor = self.service.access.actor(self.caller, self.ids)
        flt = self.service.filter_for(actor, owner_agent_id=self.ids.agent_id, statuses=LISTED)
        ranker = self.ranker or SkillSearch(self.service.skills)
        mode = self.service.config.search_mode
        found = ranker.search(self.caller.service_id, flt, query, mode=mode, top_k=limit, snippets=False)
        return [summary(h.skill) for h in found.hits]

    def _list(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = _text(args, "query", required=False)
        limit = min(max(_integer(args, "limit", required=False, default=20), 1), MAX_LIST)
        if query:
            items = self.searched(query, limit)
            total = len(items)
        else:
            items, total = self.listing(limit)
        keep = ("skill_id", "name", "description", "version", "status")
        return {"items": [{k: i.get(k) for k in keep} for i in items[:limit]], "total": total}

    def _view(self, args: Mapping[str, Any]) -> dict[str, Any]:
        skill_id = _text(args, "skill_id")
        version = _integer(args, "version", required=False, default=0) or None
        return self.service.get(self.caller, self.ids, str(skill_id), version)

    def _create(self, args: Mapping[str, Any]) -> dict[str, Any]:
        name, content = _text(args, "name"), _text(args, "content")
        return self._record("skill_create", self.service.create(self.caller, self.ids, str(name), str(content)))

    def _update(self, args: Mapping[str, Any]) -> dict[str, Any]:
        skill_id, content = _text(args, "skill_id"), _text(args, "content")
        expected = _integer(args, "expected_version")
        result = self.service.update(self.caller, self.ids, str(skill_id), expected, str(content))
        return self._record("skill_update", result)

    def _patch(self, args: Mapping[str, Any]) -> dict[str, Any]:
        skill_id, old = _text(args, "skill_id"), _text(args, "old_string")
        new = args.get("new_string")
        if not isinstance(new, str):
            raise _BadArguments("new_string: must be a string")
        replace_all = args.get("replace_all") is True
        expected = _integer(args, "expected_version")
        result = self.service.patch(self.caller, self.ids, str(skill_id), expected, str(old), new, replace_all)
        return self._record("skill_patch", result)

    def _files_write(self, args: Mapping[str, Any]) -> dict[str, Any]:
        skill_id, path = _text(args, "skill_id"), _text(args, "path")
        content = args.get("content")
        if not isinstance(content, str):
            raise _BadArguments("content: must be a string")
        encoding = args.get("encoding") or "utf-8"
        if encoding not in ("utf-8", "base64"):
            raise _BadArguments("encoding: must be utf-8 or base64")
        expected = _integer(args, "expected_version")
        files: Sequence[ResourcePayload] = [ResourcePayload(str(path), content, encoding)]
        result = self.service.write_files(self.caller, self.ids, str(skill_id), expected, files)
        return self._record("skill_files_write", result)
