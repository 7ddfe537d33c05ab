"""The skill service's business errors: one class per code of the original's map.

They answer HTTP 200 with the five-digit `code` in the envelope (MemhubError maps any code outside 400–599
to 200). Messages start with the original's reason (`SKILL_VERSION_STALE: expected version 1, head is 2`),
so a client that matches on it keeps working.
"""

from __future__ import annotations

from typing import Any

from memhub.errors import MemhubError


class SkillError(MemhubError):
    """A skill operation the service refused; `reason` is the original's error name."""

    reason: str = "SKILL_ERROR"
    code = 50001  # the original's code for any other failure; every subclass names its own

    def __init__(self, detail: str | None = None, *, data: Any = None) -> None:
        super().__init__(f"{self.reason}: {detail}" if detail else self.reason, data=data)


class SkillBadRequest(SkillError):
    """A request field broke a rule (40001); the message names the field and the rule, as the original's."""

    reason = "BAD_REQUEST"
    code = 40001

    def __init__(self, field: str, rule: str) -> None:
        MemhubError.__init__(self, f"{field}: {rule}", data={"errors": [{"field": field, "rule": rule}]})
        self.field = field
        self.rule = rule


class InvalidFrontmatter(SkillError):
    """The front matter's name is not the one the request names, or would change across versions."""

    reason = "INVALID_FRONTMATTER"
    code = 40001


class InvalidPath(SkillError):
    """A resource path is empty, absolute, escapes the skill, or holds characters no path may hold."""

    reason = "INVALID_PATH"
    code = 40001


class SkillNotOwner(SkillError):
    """The request's agent is not the skill's owner agent."""

    reason = "SKILL_NOT_OWNER"
    code = 40301


class SkillTeamMismatch(SkillError):
    """The agent named as owner belongs to another team than the request's."""

    reason = "SKILL_TEAM_MISMATCH"
    code = 40302


class SkillNotFound(SkillError):
    """No such skill (or version, or file) for this caller; a skill of another team is not found either."""

    reason = "SKILL_NOT_FOUND"
    code = 40401


class SkillVersionStale(SkillError):
    """`expected_version` is not the head's version: another writer won. `data.current_version` is the head."""

    reason = "SKILL_VERSION_STALE"
    code = 40901

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(f"expected version {expected}, head is {current}", data={"current_version": current})
        self.current_version = current


class SkillVersionExpired(SkillError):
    """The version is older than the version TTL. `data.latest_version` is the head."""

    reason = "SKILL_VERSION_EXPIRED"
    code = 41002

    def __init__(self, detail: str, latest: int) -> None:
        super().__init__(detail, data={"latest_version": latest})
        self.latest_version = latest


class ResourceTooLarge(SkillError):
    """A resource file, or all of a skill's files together, exceed the limit."""

    reason = "RESOURCE_TOO_LARGE"
    code = 41301


class ExportTooLarge(SkillError):
    """The export's zip would exceed the limit."""

    reason = "SKILL_EXPORT_TOO_LARGE"
    code = 41301


class SkillNameDuplicate(SkillError):
    """A live skill of the same team and owner agent already has this name."""

    reason = "SKILL_NAME_DUPLICATE"
    code = 42201


class PatchNotUnique(SkillError):
    """`old_string` does not occur, or occurs more than once without `replace_all`."""

    reason = "SKILL_PATCH_NOT_UNIQUE"
    code = 42202


class FrontmatterInvalid(SkillError):
    """SKILL.md cannot be parsed or breaks a limit of its front matter or body."""

    reason = "SKILL_FRONTMATTER_INVALID"
    code = 42203


class StorageNotFound(SkillError):
    """A version or a file's bytes are gone from storage (purged)."""

    reason = "STORAGE_NOT_FOUND"
    code = 50301


class SkillIdCollision(SkillError):
    """No unused skill id was found in a few tries."""

    reason = "SKILL_ID_COLLISION"
    code = 50304
