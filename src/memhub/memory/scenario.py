"""L2: narrative scene files of a (team, agent, user) profile, with md5-gated versions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.errors import Conflict, NotFound
from memhub.memory.atomic import audit_context
from memhub.memory.scene_format import SceneMeta, parse_heat, render_scene, split_scene
from memhub.model import DocumentRecord
from memhub.scope import Isolation
from memhub.store import MemoryStore
from memhub.timeutil import ms_to_iso, now_ms


@dataclass(frozen=True, slots=True)
class ScenarioEntry:
    """A file or a directory (path ends with "/") in a profile's scene tree."""

    path: str
    summary: str | None
    version: int
    created_ms: int | None
    updated_ms: int | None


def _digest(body: str, summary: str, heat: int) -> str:
    # Versions move only when what a reader sees changes, never because a timestamp did.
    return hashlib.md5(f"{summary}\x1f{heat}\x1f{body}".encode(), usedforsecurity=False).hexdigest()


@dataclass(frozen=True, slots=True)
class SceneWritten:
    """What a scene rewrite stored, and whether its body, summary or heat differed from the stored ones."""

    document: DocumentRecord
    content_changed: bool  # False: the version stayed; updated_at still moved


class ScenarioService:
    """Lists, reads, creates, writes and removes scene files."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def list(self, iso: Isolation, path_prefix: str = "") -> list[ScenarioEntry]:
        """Files under the prefix plus the directories that contain them, recursively, in path order."""
        entries: dict[str, ScenarioEntry] = {}
        for file in self.files(iso, path_prefix):
            parts = file.path.split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth]) + "/"
                if directory.startswith(path_prefix) and directory not in entries:
                    entries[directory] = ScenarioEntry(directory, None, 0, None, None)
            entries[file.path] = file
        return [entries[p] for p in sorted(entries)]

    def files(self, iso: Isolation, path_prefix: str = "") -> list[ScenarioEntry]:
        """The scene files under the prefix, without directories, in path order."""
        docs = self.store.list_documents(iso.profile, "scene", path_prefix)
        return [ScenarioEntry(d.path, d.summary, d.version, d.created_ms, d.updated_ms) for d in docs]

    def count(self, iso: Isolation, path_prefix: str = "") -> int:
        """How many scene files lie under the prefix."""
        return len(self.store.list_documents(iso.profile, "scene", path_prefix))

    def read(self, iso: Isolation, path: str) -> DocumentRecord | None:
        """One scene file, or None when it does not exist."""
        return self.store.get_document(iso.profile, "scene", path)

    def create(self, iso: Isolation, path: str, content: str, summary: str | None, request_id: str) -> DocumentRecord:
        """Create a new scene file (memhub extension); 409 when the path is taken."""
        doc = self._compose(iso, path, content, summary, existing=None)
        stored = self.store.put_document(doc, audit_context(iso, request_id), expect_exists=False)
        if stored is None:
            raise Conflict(f"path: scene file already exists: {path}")
        return stored

    def write(self, iso: Isolation, path: str, content: str, summary: str | None, request_id: str) -> SceneWritten:
        """Replace an existing scene file, keeping its META; 404 when it does not exist.

        Every accepted write is stored with a fresh `updated_at`, as persona writes are; the version moves only
        when the body, summary or heat changed (md5-gated, as in the original), and the answer says which.
        """
        existing = self.store.get_document(iso.profile, "scene", path)
        if existing is None:
            raise NotFound(f"Scenario file not found: {path}")
        doc = self._compose(iso, path, content, summary, existing=existing)
        stored = self.store.put_document(doc, audit_context(iso, request_id), expect_exists=True)
        if stored is None:  # removed between the read and the write
            raise NotFound(f"Scenario file not found: {path}")
        return SceneWritten(stored, doc.content_md5 != existing.content_md5)

    def remove(self, iso: Isolation, paths: Sequence[str], request_id: str) -> list[str]:
        """Remove files; a path ending in "/" removes the whole directory."""
        files = [p for p in paths if not p.endswith("/")]
        directories = [p for p in paths if p.endswith("/")]
        return self.store.delete_documents(iso.profile, "scene", files, directories, audit_context(iso, request_id))

    def _compose(
        self, iso: Isolation, path: str, content: str, summary: str | None, existing: DocumentRecord | None
    ) -> DocumentRecord:
        # Strictly later than the stored stamp, even within one millisecond: a client comparing updated_at
        # must see that its write landed.
        stamp = max(now_ms(), existing.updated_ms + 1) if existing else now_ms()
        given, body = split_scene(content)
        old_meta = split_scene(existing.content)[0] if existing else {}
        final_summary = summary if summary is not None else given.get("summary", existing.summary if existing else "")
        final_summary = " ".join((final_summary or "").split())
        heat = parse_heat(given.get("heat"), parse_heat(old_meta.get("heat"), 1))
        created_ms = existing.created_ms if existing else stamp
        meta = SceneMeta(
            created=old_meta.get("created", ms_to_iso(created_ms)),
            updated=ms_to_iso(stamp),
            summary=final_summary,
            heat=heat,
        )
        digest = _digest(body, final_summary, heat)
        version = 0 if existing is None else existing.version + (digest != existing.content_md5)
        return DocumentRecord(
            service_id=iso.service_id,
            team_id=iso.profile.team_id,
            agent_id=iso.agent_id,
            user_id=iso.profile.user_id,
            kind="scene",
            path=path,
            content=render_scene(meta, body),
            summary=final_summary,
            version=version,
            content_md5=digest,
            created_ms=created_ms,
            updated_ms=stamp,
        )
