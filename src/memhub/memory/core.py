"""L3: the core persona of a (team, agent) profile, read exactly as stored.

Reads return the stored text, as the original does: agents get the scene index from `scenario/ls`. A write
never drops text without saying so: only a Scene Navigation block an older gateway generated (and a client
wrote back) is removed, text after it is kept, and the result says what was removed. Every accepted write
refreshes `updated_at`; the version moves only when the content's md5 changes, as in the original.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from memhub.formats.scene_navigation import remove_generated
from memhub.memory.atomic import audit_context
from memhub.model import DocumentRecord
from memhub.scope import Isolation
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

PERSONA_PATH = "persona.md"


@dataclass(frozen=True, slots=True)
class CoreRead:
    """The persona as a reader sees it (None content when there is none yet)."""

    document: DocumentRecord | None
    content: str | None


@dataclass(frozen=True, slots=True)
class CoreWritten:
    """What a persona write stored, and what it did not keep or change."""

    document: DocumentRecord
    removed_scene_navigation: bool  # a generated Scene Navigation block was taken out of the content
    content_changed: bool  # False: same text as stored (md5), so the version stayed; updated_at still moved


class CoreService:
    """Reads and writes the persona."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def read(self, iso: Isolation) -> CoreRead:
        """The persona exactly as stored (None content when there is none)."""
        doc = self.store.get_document(iso.profile, "core", PERSONA_PATH)
        return CoreRead(doc, doc.content if doc else None)

    def write(self, iso: Isolation, content: str, request_id: str) -> CoreWritten:
        """Upsert the persona, trimmed, without a generated Scene Navigation block; `updated_at` always moves."""
        removal = remove_generated(content)
        text = removal.text
        digest = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
        existing = self.store.get_document(iso.profile, "core", PERSONA_PATH)
        changed = existing is None or existing.content_md5 != digest
        # Strictly later than the stored stamp, even within one millisecond: a client comparing updated_at
        # must see that its write landed.
        stamp = max(now_ms(), existing.updated_ms + 1) if existing is not None else now_ms()
        doc = DocumentRecord(
            service_id=iso.service_id,
            team_id=iso.profile.team_id,
            agent_id=iso.agent_id,
            user_id=iso.profile.user_id,
            kind="core",
            path=PERSONA_PATH,
            content=text,
            summary=None,
            version=0,
            content_md5=digest,
            created_ms=stamp,
            updated_ms=stamp,
        )
        if existing is not None:
            version = existing.version + 1 if changed else existing.version
            doc = replace(doc, version=version, created_ms=existing.created_ms)
        stored = self.store.put_document(doc, audit_context(iso, request_id), expect_exists=None)
        assert stored is not None  # upserts always store
        return CoreWritten(stored, removal.removed, changed)

    def count(self, iso: Isolation) -> int:
        """1 when the profile has a persona, else 0."""
        return int(self.store.get_document(iso.profile, "core", PERSONA_PATH) is not None)
