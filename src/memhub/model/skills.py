"""Skills as the store and the skill services pass them: versions, their files, filters, and the mining buffer.

A skill is a SKILL.md document (YAML front matter + Markdown body) with resource files. Every write appends an
immutable version; exactly one version of a skill is its head. Files are stored by content hash, so a version
that leaves a file unchanged costs one manifest row, not a copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# `candidate`: a draft nobody who may publish it has reviewed yet (written by a team member who is neither the owner
# agent's owner nor a team admin, or proposed by the offline miner); it reaches no prompt but its author's until the
# agent's owner or a team admin publishes it.
SkillStatus = Literal["active", "archived", "candidate"]
ArchiveReason = Literal["tool_calls", "bytes", "compressed", "oversize", "forced", "direct"]


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One resource file of a version (a manifest entry); its bytes are the blob named by `sha256`."""

    path: str
    sha256: str
    size_bytes: int
    mime_type: str
    is_executable: bool


@dataclass(frozen=True, slots=True)
class SkillVersion:
    """One immutable version of a skill."""

    service_id: str
    skill_id: str
    version: int  # 1, 2, …
    is_head: bool
    status: SkillStatus
    team_id: str
    owner_agent_id: str
    user_id: str  # who wrote this version (audit, not ownership)
    task_id: str
    name: str
    description: str
    content: str  # the whole SKILL.md
    content_hash: str  # md5 hex of `content`, as the original
    files: tuple[SkillFile, ...]
    metadata: Mapping[str, Any]
    created_ms: int  # when this version was written
    updated_ms: int


@dataclass(frozen=True, slots=True)
class SkillHeadline:
    """What a listing shows of a head: enough for one `- name: description` line, read without the content."""

    skill_id: str
    version: int
    name: str
    description: str
    owner_agent_id: str
    updated_ms: int
    user_id: str  # who wrote the head (its author, as listings name it)


@dataclass(frozen=True, slots=True)
class NewSkillVersion:
    """What a write appends: the next version's content and its complete manifest.

    `blobs` holds the bytes of files whose hash the store may not have yet (by sha256); a manifest entry whose
    blob is neither here nor stored is refused.
    """

    team_id: str
    owner_agent_id: str
    user_id: str
    task_id: str
    name: str
    description: str
    content: str
    content_hash: str
    files: tuple[SkillFile, ...]
    metadata: Mapping[str, Any]
    status: SkillStatus = "active"
    blobs: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SkillReader:
    """Which heads a user who may not read everything may read: published ones whose asset she may read, every
    head she wrote herself, and the drafts she reviews (those of agents she owns; all of the team's when she owns
    or administers the team). Anyone else's draft is not hers to read, whatever the asset says."""

    user_id: str
    readable_ids: Sequence[str]
    reviewed_agent_ids: Sequence[str] = ()
    reviews_team: bool = False


@dataclass(frozen=True, slots=True)
class SkillFilter:
    """Which head versions a listing or search considers (every field narrows; None: no condition)."""

    team_id: str | None = None
    owner_agent_ids: Sequence[str] | None = None
    user_id: str | None = None
    name_prefix: str | None = None
    statuses: Sequence[SkillStatus] = ("active",)
    # Only these skills (the ones the caller may read); None: every skill of the tenant.
    skill_ids: Sequence[str] | None = None
    # With `owner_agent_ids`: these skills count too, whoever owns them (the skills bound to an agent).
    also_skill_ids: Sequence[str] | None = None
    # Only the heads this user may read (None: a caller who reads every skill of the tenant).
    reader: SkillReader | None = None
    # This user's own drafts count too, whatever `statuses` says: an author tries out what she wrote.
    drafts_of: str | None = None


class SkillStoreError(Exception):
    """A skill write the store refused; the service maps it to the original's business code."""


class SkillMissing(SkillStoreError):
    """No head for this skill id (never created, or deleted)."""


class VersionStale(SkillStoreError):
    """`expected_version` is not the head's version: another writer won."""

    def __init__(self, current_version: int) -> None:
        super().__init__(f"head is {current_version}")
        self.current_version = current_version


class NameTaken(SkillStoreError):
    """Another live skill of the same team and owner agent has this name."""

    def __init__(self, skill_id: str) -> None:
        super().__init__(f"name taken by {skill_id}")
        self.skill_id = skill_id


class IdTaken(SkillStoreError):
    """The new skill id is already in use (any version, any status)."""


class KeyReused(SkillStoreError):
    """An idempotency key came back with other content than the write it was first used for."""


class BlobMissing(SkillStoreError):
    """A manifest entry names a file whose bytes are neither in the write nor stored for the tenant."""

    def __init__(self, sha256: str) -> None:
        super().__init__(f"no bytes for file {sha256}")
        self.sha256 = sha256


# -- mining: turns buffered per session, cut into archives --------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionKey:
    """Whose turns a mining buffer holds."""

    service_id: str
    team_id: str
    agent_id: str
    user_id: str
    session_id: str


@dataclass(frozen=True, slots=True)
class BufferState:
    """A session's buffer as the archive rule sees it after an append."""

    messages: int
    tool_calls: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Archive:
    """A durable slice of agent work, waiting for (or done with) skill mining."""

    service_id: str
    archive_id: str
    team_id: str
    agent_id: str
    user_id: str
    session_id: str
    task_ref: str | None
    reason: ArchiveReason
    messages: tuple[Mapping[str, Any], ...]
    max_iterations: int | None
    note: str | None  # force-archive / extract `reason`
    created_ms: int
    job_seq: int | None  # the pipeline job that mines it


@dataclass(frozen=True, slots=True)
class ArchiveDraft:
    """An archive about to be cut: the messages it keeps and why it was cut."""

    messages: Sequence[Mapping[str, Any]]
    reason: ArchiveReason
    task_ref: str | None = None
    note: str | None = None
    max_iterations: int | None = None


@dataclass(frozen=True, slots=True)
class BufferWrite:
    """What `update_buffer` did: the archive it cut (if any), or nothing because the idempotency key was applied
    before (`replayed`)."""

    archive: Archive | None = None
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class BufferUpdate:
    """What an append leaves: the buffer's new content and counters, and the archive cut from it, if any."""

    messages: Sequence[Mapping[str, Any]]
    tool_calls: int
    bytes: int
    archive: ArchiveDraft | None = None
