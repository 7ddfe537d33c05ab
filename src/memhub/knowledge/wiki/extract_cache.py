"""Extracted text of PDF and DOCX sources for raw/read, so a read never parses the same document twice.

A build keeps every source's units in its generation (units.json, with any truncation note in the
manifest); raw/read takes them from there while the file on disk still has the content hash the build
saw. A file uploaded or changed since the last build is extracted once, in the same limited child
process a build uses, and the result is kept under `<wiki>/extracted/<sha256>.json`: a changed file has
a new hash, so a stale entry is never used, and an entry made under other limits is ignored. The
directory keeps the most recently written `ENTRIES_KEPT` entries.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memhub.knowledge.wiki.sources import extract_bytes
from memhub.knowledge.wiki.sourcetypes import (
    DEFAULT_LIMITS,
    ExtractedSource,
    Limits,
    SourceError,
    SourceUnit,
    content_hash,
    source_kind,
)

ENTRIES_KEPT = 64
_SUFFIX = ".json"


class BuiltUnits(Protocol):
    """What a loaded generation offers: the units its build extracted from a file with this content."""

    def extracted(self, name: str, digest: str) -> ExtractedSource | None: ...


@dataclass(frozen=True, slots=True)
class ExtractionCache:
    """The extracted text of one wiki's PDF and DOCX files by content hash."""

    directory: Path
    limits: Limits = DEFAULT_LIMITS

    def extracted(self, name: str, data: bytes, built: Callable[[], BuiltUnits | None]) -> ExtractedSource:
        """The units of a PDF or DOCX with these bytes: from the current generation, this cache, or one extraction."""
        digest = content_hash(data)
        generation = built()
        found = generation.extracted(name, digest) if generation is not None else None
        if found is None:
            found = self._get(name, digest)
        if found is None:
            found = extract_bytes(name, data, limits=self.limits)
            self._put(digest, found)
        return found

    def _path(self, digest: str) -> Path:
        return self.directory / (digest + _SUFFIX)

    def _get(self, name: str, digest: str) -> ExtractedSource | None:
        try:
            entry = json.loads(self._path(digest).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("limits") != dataclasses.asdict(self.limits):
            return None
        try:
            units = [SourceUnit(text, locator) for text, locator in entry["units"]]
            errors = [SourceError(name, reason, kind) for reason, kind in entry["errors"]]
        except (KeyError, TypeError, ValueError):
            return None
        return ExtractedSource(name, source_kind(name), units, hash=digest, errors=errors)

    def _put(self, digest: str, source: ExtractedSource) -> None:
        entry: dict[str, Any] = {
            "limits": dataclasses.asdict(self.limits),
            "units": [[u.text, u.locator] for u in source.units],
            "errors": [[e.reason, e.kind] for e in source.errors],
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".entry-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(tmp, self._path(digest))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._prune()

    def _prune(self) -> None:
        entries: list[tuple[float, Path]] = []
        for path in self.directory.glob("*" + _SUFFIX):
            try:
                entries.append((path.stat().st_mtime, path))
            except OSError:
                continue
        entries.sort(reverse=True)
        for _, path in entries[ENTRIES_KEPT:]:
            path.unlink(missing_ok=True)
