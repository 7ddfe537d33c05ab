"""Agent work in, archives out: the service behind `conversation/add`, `force-archive` and `extract`.

Each archive is written with its pipeline job in one store transaction, so an archive answered to the client
is durable and is mined even when the process stops right after answering. `on_archive` lets the process's
pipeline worker start on it at once instead of at its next poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memhub.knowledge.skill.mining.buffer import BufferLimits, append_rule, direct_archive, force_rule
from memhub.model.skills import Archive, ArchiveReason, SessionKey
from memhub.store.skills import SkillStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.skills.mining")

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Archived:
    """An archive as the routes answer it: the job that mines it, when it was cut, its id and why."""

    task_id: str  # the mining job's id (the pipeline job sequence number, as text)
    archived_at_ms: int
    archive_key: str
    reason: ArchiveReason

    @classmethod
    def of(cls, archive: Archive) -> Archived:
        """The answer for a stored archive."""
        return cls(str(archive.job_seq or ""), archive.created_ms, archive.archive_id, archive.reason)


@dataclass(frozen=True, slots=True)
class AddOutcome:
    """What one `conversation/add` did: buffered the messages, or cut an archive with them."""

    status: Literal["ok", "archived"]
    archived: Archived | None = None


class MiningService:
    """Buffers agent work per session and cuts it into archives for skill mining."""

    def __init__(
        self,
        skills: SkillStore,
        limits: BufferLimits | None = None,
        on_archive: Callable[[], None] | None = None,
    ) -> None:
        self.skills = skills
        self.limits = limits or BufferLimits()
        self.on_archive = on_archive

    def add(self, key: SessionKey, messages: Sequence[Message], task_ref: str | None) -> AddOutcome:
        """Append a turn's messages to the session's buffer; cut an archive when a threshold is reached."""
        archive = self.skills.update_buffer(key, now_ms(), append_rule(messages, task_ref, self.limits))
        if archive is None:
            return AddOutcome("ok")
        self._archived(archive)
        return AddOutcome("archived", Archived.of(archive))

    def force_archive(self, key: SessionKey, task_ref: str | None, note: str | None) -> Archived | None:
        """Cut the session's buffer into an archive now, whatever its size; None when it holds nothing."""
        archive = self.skills.update_buffer(key, now_ms(), force_rule(task_ref, note))
        if archive is None:
            return None
        self._archived(archive)
        return Archived.of(archive)

    def extract(
        self,
        key: SessionKey,
        messages: Sequence[Message],
        task_ref: str | None,
        note: str | None,
        max_iterations: int | None,
    ) -> Archived:
        """Archive these messages directly, bypassing the session's buffer."""
        draft = direct_archive(messages, task_ref, note, max_iterations, self.limits)
        archive = self.skills.add_archive(key, draft, now_ms())
        self._archived(archive)
        return Archived.of(archive)

    def _archived(self, archive: Archive) -> None:
        log.info(
            "skill archive %s (%s, %d messages) for agent %s, job %s",
            archive.archive_id,
            archive.reason,
            len(archive.messages),
            archive.agent_id,
            archive.job_seq,
        )
        if self.on_archive is not None:
            self.on_archive()
