"""L3: the core persona of a (team, agent) profile, with the Scene Navigation footer on read."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from memhub.memory.atomic import audit_context
from memhub.memory.scene_format import parse_heat, render_navigation, split_scene
from memhub.scope import Isolation
from memhub.sdk.scene_navigation import strip_navigation
from memhub.store import DocumentRecord, MemoryStore
from memhub.timeutil import now_ms

PERSONA_PATH = "persona.md"


@dataclass(frozen=True, slots=True)
class CoreRead:
    """The persona as a reader sees it (None content when there is none yet)."""

    document: DocumentRecord | None
    content: str | None


class CoreService:
    """Reads and writes the persona."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def read(self, iso: Isolation) -> CoreRead:
        """The persona followed by the Scene Navigation of the profile's scenes, if any."""
        doc = self.store.get_document(iso.profile, "core", PERSONA_PATH)
        if doc is None:
            return CoreRead(None, None)
        scenes = self.store.list_documents(iso.profile, "scene")
        if not scenes:
            return CoreRead(doc, doc.content)
        heats = {s.path: parse_heat(split_scene(s.content)[0].get("heat"), 0) for s in scenes}
        return CoreRead(doc, f"{doc.content}\n\n{render_navigation(scenes, heats)}")

    def write(self, iso: Isolation, content: str, request_id: str) -> DocumentRecord:
        """Upsert the persona; the navigation section is generated, so it is stripped before saving."""
        text = strip_navigation(content)
        digest = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
        existing = self.store.get_document(iso.profile, "core", PERSONA_PATH)
        if existing is not None and existing.content_md5 == digest:
            return existing
        stamp = now_ms()
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
            doc = replace(doc, version=existing.version + 1, created_ms=existing.created_ms)
        stored = self.store.put_document(doc, audit_context(iso, request_id), expect_exists=None)
        assert stored is not None  # upserts always store
        return stored

    def count(self, iso: Isolation) -> int:
        """1 when the profile has a persona, else 0."""
        return int(self.store.get_document(iso.profile, "core", PERSONA_PATH) is not None)
