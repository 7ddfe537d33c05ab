"""The skills store interface: versioned SKILL.md documents with content-addressed files, their search
channels, and the mining buffers and archives.

Every write is one transaction. A write that names `expected_version` compares it with the head inside that
transaction, so of two writers holding the same version exactly one appends and the other gets VersionStale.
The store persists and never decides: what a version contains, when a buffer is cut and who may read what are
the skill service's, passed in as plain values or as a function the store calls inside the transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from memhub.model.query import QueryTerms
from memhub.model.skills import (
    Archive,
    ArchiveDraft,
    BufferState,
    BufferUpdate,
    BufferWrite,
    NewSkillVersion,
    SessionKey,
    SkillFilter,
    SkillHeadline,
    SkillVersion,
)
from memhub.store.meta import MetaWriter


class SkillStore(ABC):
    """Persistence of skills (reached as `MemoryStore.skills`)."""

    # -- versions ------------------------------------------------------------------------------
    @abstractmethod
    def create(self, service_id: str, skill_id: str, new: NewSkillVersion, now_ms: int) -> SkillVersion:
        """Version 1 of a new skill, as its head.

        Raises IdTaken when the id exists (any version, any status) and NameTaken when a live (non-archived)
        head of the same team and owner agent has the name.
        """

    @abstractmethod
    def append(
        self, service_id: str, skill_id: str, expected_version: int, new: NewSkillVersion, now_ms: int
    ) -> SkillVersion:
        """The next version, which becomes the head; the old head stays readable as a version.

        Raises SkillMissing when the skill has no head and VersionStale(current) when the head is not
        `expected_version`.
        """

    @abstractmethod
    def set_status(
        self,
        service_id: str,
        skill_id: str,
        expected_version: int,
        status: str,
        now_ms: int,
        *,
        alongside: Callable[[MetaWriter], None] | None = None,
    ) -> SkillVersion:
        """Change the head's status in place (publishing a candidate); same refusals as `append`, and NameTaken
        when the change would make two live heads share a name. `alongside` writes to the meta store in the same
        transaction (the publish's audit entry): both commit, or neither."""

    @abstractmethod
    def delete(self, service_id: str, skill_id: str, expected_version: int) -> int:
        """Every version of the skill and the blobs no other version uses; returns the versions removed.

        Raises SkillMissing / VersionStale as `append`.
        """

    @abstractmethod
    def head(self, service_id: str, skill_id: str) -> SkillVersion | None:
        """The head version, whatever its status; None when the skill does not exist."""

    @abstractmethod
    def version(self, service_id: str, skill_id: str, version: int) -> SkillVersion | None:
        """One version (None when it never existed or was purged)."""

    @abstractmethod
    def versions(self, service_id: str, skill_id: str, limit: int, offset: int) -> tuple[list[SkillVersion], int]:
        """A page of the skill's versions, newest first, and how many it has."""

    @abstractmethod
    def head_by_name(self, service_id: str, team_id: str, owner_agent_id: str, name: str) -> SkillVersion | None:
        """The live (non-archived) head of that team and owner agent with this exact name."""

    @abstractmethod
    def list_heads(self, service_id: str, flt: SkillFilter, limit: int, offset: int) -> tuple[list[SkillVersion], int]:
        """A page of head versions matching the filter, most recently updated first, and the total."""

    @abstractmethod
    def headlines(self, service_id: str, flt: SkillFilter, limit: int) -> tuple[list[SkillHeadline], int]:
        """Up to `limit` heads matching the filter as headlines, most recently updated first, and the total."""

    @abstractmethod
    def head_ids(self, service_id: str, flt: SkillFilter, limit: int) -> list[str]:
        """The skill ids of up to `limit` head versions matching the filter, most recently updated first (what a
        search is confined to, without reading the skills themselves)."""

    @abstractmethod
    def purge_versions(self, service_id: str, skill_id: str, created_before_ms: int) -> int:
        """Remove the non-head versions written before the time (the version TTL) and blobs left unused."""

    @abstractmethod
    def read_blob(self, service_id: str, sha256: str) -> bytes | None:
        """A stored file's bytes by content hash."""

    @abstractmethod
    def blob_usage(self, service_id: str) -> tuple[int, int]:
        """(distinct blobs, their total bytes) of the tenant: what the files of every version cost."""

    # -- search channels (heads only; `flt` confines them to what the caller may read) -----------------
    @abstractmethod
    def search_lexical(
        self, service_id: str, flt: SkillFilter, terms: QueryTerms, limit: int
    ) -> list[tuple[SkillVersion, float]]:
        """BM25 over name, description and content, scores squashed into (0, 1), best first."""

    @abstractmethod
    def search_semantic(
        self, service_id: str, flt: SkillFilter, vector: np.ndarray, limit: int
    ) -> list[tuple[SkillVersion, float]]:
        """Nearest heads by cosine of their embedded name and description, best first."""

    @abstractmethod
    def similarities(self, service_id: str, vector: np.ndarray, skill_ids: Sequence[str]) -> dict[str, float]:
        """Cosine of these skills' heads to the vector, by skill id (heads without a vector left out)."""

    @abstractmethod
    def names_in(self, service_id: str, flt: SkillFilter, text: str, min_length: int) -> list[SkillVersion]:
        """Heads whose name (at least `min_length` characters) occurs in `text`, case-insensitively: the
        name fast path."""

    # -- mining ------------------------------------------------------------------------------------------
    @abstractmethod
    def update_buffer(
        self,
        key: SessionKey,
        now_ms: int,
        decide: Callable[[list[Mapping[str, object]], BufferState], BufferUpdate],
        *,
        idempotency_key: str | None = None,
        request_hash: str = "",
    ) -> BufferWrite:
        """Read the session's buffer, ask `decide` what it becomes, and apply that in one transaction.

        When the update cuts an archive, the archive and the pipeline job that mines it (kind `skill`, target
        the archive id) are written in the same transaction, so no archive is ever without its job. With an
        idempotency key the session was given before (kept 7 days), nothing is written and the answer says
        `replayed`; the same key with another `request_hash` raises KeyReused. The key is recorded in the same
        transaction as the write it guards.
        """

    @abstractmethod
    def buffer(self, key: SessionKey) -> tuple[list[Mapping[str, object]], BufferState]:
        """The session's buffered messages and counters (empty when none)."""

    @abstractmethod
    def add_archive(self, key: SessionKey, draft: ArchiveDraft, now_ms: int) -> Archive:
        """An archive cut directly (`extract`), with its mining job, in one transaction."""

    @abstractmethod
    def archive(self, service_id: str, archive_id: str) -> Archive | None:
        """One archive."""

    @abstractmethod
    def recent_archives(self, service_id: str, team_id: str, agent_id: str, limit: int) -> list[Archive]:
        """The agent's latest archives, newest first (the offline miner looks for recurring work in them)."""
