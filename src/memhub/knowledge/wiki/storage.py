"""Where a wiki's files live, and the rules for the names of uploaded source files.

    <data_dir>/knowledge/<service id, %-encoded>/<wiki id>/     (memhub.knowledge.storage)
        raw/          uploaded source files (the source archive), under their relative names
        gen/<n>/      built generations (memhub.knowledge.wiki.indexer); the database says which is current
        extracted/    raw/read's extracted text of PDF and DOCX files not (yet) built, by content hash

Every write goes to a temporary file in the same directory, is flushed, and is renamed into place,
so a crash leaves either the old file or the new one, never a torn one.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memhub.knowledge.storage import ResourceFiles
from memhub.knowledge.wiki.sources import SUPPORTED_EXTENSIONS, PathOutsideRoot, safe_path
from memhub.knowledge.wiki.sourcetypes import INDEX_FILE

RAW_DIR = "raw"
EXTRACTED_DIR = "extracted"
FILENAME_MAX = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def filename_problem(name: object) -> str | None:
    """Why a source file name is refused, or None: relative POSIX path, no `..`, no hidden parts, known type."""
    if not isinstance(name, str) or not name.strip():
        return "must be a non-empty string"
    if len(name) > FILENAME_MAX:
        return f"must be at most {FILENAME_MAX} characters"
    if _CONTROL.search(name) or "\\" in name:
        return "must not contain control characters or backslashes"
    pure = PurePosixPath(name)
    if pure.is_absolute() or name.startswith("/"):
        return "must be a relative path"
    if any(part in ("", ".", "..") for part in name.split("/")):
        return "must not contain empty, '.' or '..' path segments"
    if any(part.startswith(".") for part in pure.parts):
        return "must not contain hidden path segments (starting with '.')"
    if pure.name != INDEX_FILE and pure.suffix.lower() not in SUPPORTED_EXTENSIONS:
        allowed = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        return f"unsupported file type {pure.suffix.lower() or '(none)'!r}; expected {allowed} or index.json"
    return None


@dataclass(frozen=True, slots=True)
class WikiFiles(ResourceFiles):
    """The directory tree of every wiki under one data dir."""

    def wiki_dir(self, service_id: str, wiki_id: str) -> Path:
        """The wiki's own directory."""
        return self.resource_dir(service_id, wiki_id)

    def raw_dir(self, service_id: str, wiki_id: str) -> Path:
        """Where uploaded source files are kept."""
        return self.wiki_dir(service_id, wiki_id) / RAW_DIR

    def extracted_dir(self, service_id: str, wiki_id: str) -> Path:
        """Where raw/read keeps the extracted text of documents by content hash."""
        return self.wiki_dir(service_id, wiki_id) / EXTRACTED_DIR

    def write_raw(self, service_id: str, wiki_id: str, filename: str, data: bytes) -> None:
        """Store one uploaded file atomically (temporary file, fsync, rename)."""
        raw = self.raw_dir(service_id, wiki_id)
        target = safe_path(raw, filename) if raw.exists() else None
        raw.mkdir(parents=True, exist_ok=True)
        target = target or safe_path(raw, filename)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def remove_raw(self, service_id: str, wiki_id: str, filename: str) -> bool:
        """Delete one uploaded file (and directories it leaves empty); False when it was not there."""
        raw = self.raw_dir(service_id, wiki_id)
        try:
            target = safe_path(raw, filename)
        except PathOutsideRoot:
            return False
        if not target.is_file():
            return False
        target.unlink()
        parent = target.parent
        while parent != raw and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
        return True

    def remove_wiki(self, service_id: str, wiki_id: str) -> None:
        """Delete everything of one wiki."""
        self.remove(service_id, wiki_id)
