"""Request bodies of the skill routes (`/v3/skill/*`), field for field as the original's schemas.

The ids come from the body only (the skill routes read no x-tdai-* isolation headers, as in the original):
every one is optional, and `agent_id` needs `team_id` (an agent is scoped under a team). Unknown keys are
ignored. memhub adds what the original lacks: ids of at most 256 characters without control characters,
and `candidate` among the statuses a listing may ask for (mined drafts waiting to be published).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from memhub.api.meta_schemas import MetaBody
from memhub.api.schemas import INT64_MAX, MAX_ID_CHARS
from memhub.ids import NO_CONTROL_PATTERN

AGENT_NEEDS_TEAM = "agent_id: agent_id requires team_id — agent is scoped under a team"
MAX_RESOURCES = 100

SkillId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=NO_CONTROL_PATTERN)]
Version = Annotated[int, Field(ge=1, le=INT64_MAX)]
Encoding = Literal["utf-8", "base64"]


class SkillBody(MetaBody):
    """The ids every skill request may carry."""

    model_config = ConfigDict(
        strict=True, extra="ignore", json_schema_extra={"dependentRequired": {"agent_id": ["team_id"]}}
    )

    user_id: SkillId | None = None
    team_id: SkillId | None = None
    agent_id: SkillId | None = None
    task_id: SkillId | None = None

    @model_validator(mode="after")
    def _agent_needs_team(self) -> SkillBody:
        if self.agent_id and not self.team_id:
            raise ValueError(AGENT_NEEDS_TEAM)
        return self


class SkillResource(MetaBody):
    """One file: its path inside the skill, its content as text or base64."""

    path: str = Field(min_length=1, max_length=512)
    content: str
    encoding: Encoding
    mime_type: str | None = Field(None, max_length=128)
    is_executable: bool | None = None


class Pagination(MetaBody):
    limit: int | None = Field(None, ge=1, le=1000)
    offset: int | None = Field(None, ge=0, le=INT64_MAX)


class SkillCreate(SkillBody):
    """create: version 1 of a new skill; the front matter's name must be `name`."""

    name: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1)
    resources: list[SkillResource] | None = Field(None, max_length=MAX_RESOURCES)
    metadata: dict[str, Any] | None = None


class SkillUpdate(SkillBody):
    """update: replace SKILL.md of the head `expected_version`."""

    skill_id: SkillId
    expected_version: Version
    content: str = Field(min_length=1)


class SkillPatch(SkillBody):
    """patch: replace `old_string` in SKILL.md (once, or everywhere with `replace_all`)."""

    skill_id: SkillId
    expected_version: Version
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool | None = None


class SkillWrite(SkillBody):
    """delete and publish: the skill and the head version the caller saw."""

    skill_id: SkillId
    expected_version: Version


class SkillDelete(SkillWrite):
    """delete: every version of the skill, its asset, bindings and ACL entries."""


class SkillPublish(SkillWrite):
    """publish (memhub): a `candidate` head becomes `active`."""


class SkillGet(SkillBody):
    """get: the head, or one version; content and manifest unless left out."""

    skill_id: SkillId
    version: Version | None = None
    include_content: bool | None = None
    include_manifest: bool | None = None


class SkillGetByName(MetaBody):
    """get-by-name: the live skill of (team, agent) with this name."""

    user_id: SkillId | None = None
    team_id: SkillId
    agent_id: SkillId
    task_id: SkillId | None = None
    skill_name: str = Field(min_length=1, max_length=64)
    version: Version | None = None
    include_content: bool | None = None
    include_manifest: bool | None = None


class ListFilters(MetaBody):
    owner_agent_id: SkillId | None = None
    name_prefix: str | None = Field(None, min_length=1, max_length=64)
    status: list[Literal["active", "archived", "candidate"]] | None = None


class SkillList(SkillBody):
    """list: a page of head versions."""

    filters: ListFilters | None = None
    pagination: Pagination | None = None


class SkillVersions(SkillBody):
    """versions: a page of one skill's versions, newest first."""

    skill_id: SkillId
    pagination: Pagination | None = None


class SkillFilesWrite(SkillBody):
    """files/write: add or replace 1..100 files."""

    skill_id: SkillId
    expected_version: Version
    files: list[SkillResource] = Field(min_length=1, max_length=MAX_RESOURCES)


class SkillFilesRemove(SkillBody):
    """files/remove: remove 1..100 files."""

    skill_id: SkillId
    expected_version: Version
    paths: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1, max_length=MAX_RESOURCES)


class SkillFilesRead(SkillBody):
    """files/read: one file of the head or of a version."""

    skill_id: SkillId
    version: Version | None = None
    path: str = Field(min_length=1)
    encoding: Encoding | None = None


class SkillExport(SkillBody):
    """export: the version as a zip, base64 in JSON."""

    skill_id: SkillId
    version: Version | None = None
    format: Literal["zip"] | None = None
