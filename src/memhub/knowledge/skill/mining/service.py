"""Agent work in, archives out: the service behind `conversation/add`, `force-archive` and `extract`.

Each archive is written with its pipeline job in one store transaction, so an archive answered to the client
is durable and is mined even when the process stops right after answering. `on_archive` lets the process's
pipeline worker start on it at once instead of at its next poll.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memhub.knowledge.skill.errors import SkillBadRequest
from memhub.knowledge.skill.mining.buffer import BufferLimits, append_rule, direct_archive, force_rule
from memhub.model.skills import Archive, ArchiveReason, KeyReused, SessionKey
from memhub.store.skills import SkillStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.skills.mining")

Message = Mapping[str, Any]


def _request_hash(messages: Sequence[Message], task_ref: str | None) -> str:
    """What an append carried, so a key reused for other messages is told apart from a replay."""
    text = json.dumps([task_ref, list(messages)], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    """What one `conversation/add` did: buffered the messages, or cut an archive with them; `replayed` when its
    idempotency key was applied before and nothing was written."""

    status: Literal["ok", "archived"]
    archived: Archived | None = None
    replayed: bool = False


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

    def add(
        self,
        key: SessionKey,
        messages: Sequence[Message],
        task_ref: str | None,
        idempotency_key: str | None = None,
    ) -> AddOutcome:
        """Append a turn's messages to the session's buffer; cut an archive when a threshold is reached.

        With an idempotency key the session was given before, nothing is appended (`replayed`): a capture
        replayed after a crash, or a client's retry, is buffered once. The same key with other messages is
        refused (SkillBadRequest naming the key).
        """
        rule = append_rule(messages, task_ref, self.limits)
        try:
            written = self.skills.update_buffer(
                key, now_ms(), rule, idempotency_key=idempotency_key, request_hash=_request_hash(messages, task_ref)
            )
        except KeyReused:
            raise SkillBadRequest("idempotency_key", "was used before in this session for other messages") from None
        if written.replayed:
            return AddOutcome("ok", replayed=True)
        if written.archive is None:
            return AddOutcome("ok")
        self._archived(written.archive)
        return AddOutcome("archived", Archived.of(written.archive))

    def force_archive(self, key: SessionKey, task_ref: str | None, note: str | None) -> Archived | None:
        """Cut the session's buffer into an archive now, whatever its size; None when it holds nothing."""
        archive = self.skills.update_buffer(key, now_ms(), force_rule(task_ref, note)).archive
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
