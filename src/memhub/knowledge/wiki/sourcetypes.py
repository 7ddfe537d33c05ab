"""What extracting a source file produces, and the limits it runs under: units, problems, caps.

Shared by the extractors in the server process (memhub.knowledge.wiki.sources), the PDF and DOCX
parsers that run in a child process (memhub.knowledge.wiki.documents, .docworker) and the source
tree walker, so none of them needs to import another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

MB = 1024 * 1024
TEXT_EXTENSIONS = frozenset({".md", ".markdown", ".txt", ".text"})
MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown"})
SUPPORTED_EXTENSIONS = TEXT_EXTENSIONS | {".pdf", ".docx"}

SourceKind = Literal["markdown", "text", "pdf", "docx"]
_KINDS: dict[str, SourceKind] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".pdf": "pdf",
    ".docx": "docx",
}
# The name of an authored index file: read as the index, never as a source document.
INDEX_FILE = "index.json"
# `error`: the file (or part of it) could not be used; `skip`: deliberately left out (a limit, an unknown
# type); `truncated`: used, but only up to a cap, which the reason names.
ProblemKind = Literal["error", "skip", "truncated"]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one source file may cost: bytes read, text extracted, and the child process that parses PDF/DOCX.

    A file over a byte limit, or a DOCX whose zip is over a zip limit, is skipped with the limit named. A
    document over a page, paragraph, table, unit or character cap is truncated at the cap, with a
    `truncated` problem saying so on the build report and in the page's front matter.
    """

    text_bytes: int = 5 * MB
    binary_bytes: int = 20 * MB
    # Text kept per file: as much as the largest text file accepted, so a 20 MB PDF cannot become 200 MB.
    chars: int = 5_000_000
    units: int = 20_000
    pdf_pages: int = 2_000
    docx_paragraphs: int = 50_000
    docx_tables: int = 5_000
    # A DOCX is a zip: real ones are a few dozen members, compress 3-20x and inflate to a few MB.
    zip_members: int = 1_000
    zip_uncompressed_bytes: int = 50 * MB
    zip_ratio: int = 100
    # Members smaller than this may compress arbitrarily well (runs of spaces) without costing anything.
    zip_ratio_min_bytes: int = 1 * MB
    # The child process that parses one PDF or DOCX: address space, CPU seconds, and wall-clock seconds
    # after which the server kills it (a busy machine gets the wall-clock margin over the CPU limit).
    process_memory_bytes: int = 1024 * MB
    process_cpu_seconds: int = 120
    process_wall_seconds: float = 300.0

    def for_extension(self, ext: str) -> int:
        """The byte limit that applies to a file with this extension."""
        return self.text_bytes if ext in TEXT_EXTENSIONS else self.binary_bytes


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class SourceUnit:
    """One searchable piece of a source with where it came from (`page 3`, `paragraph 12`, …)."""

    text: str
    locator: str
    heading: tuple[str, ...] = ()
    lines: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class SourceError:
    """A problem with a file (or part of one): unusable, deliberately left out, or cut at a cap."""

    filename: str
    reason: str
    kind: ProblemKind = "error"


@dataclass(slots=True)
class ExtractedSource:
    """The extracted text units of one file, its front matter, content hash and problems."""

    filename: str
    kind: SourceKind | None
    units: list[SourceUnit] = field(default_factory=list)
    front_matter: dict[str, Any] = field(default_factory=dict)
    hash: str = ""
    errors: list[SourceError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the file yielded text (it may still carry partial errors, e.g. one bad page)."""
        return bool(self.units)

    @property
    def truncation(self) -> str | None:
        """Why only part of the file was kept, or None when all of it was."""
        notes = [e.reason for e in self.errors if e.kind == "truncated"]
        return "; ".join(notes) if notes else None


def content_hash(data: bytes) -> str:
    """sha256 hex digest of a file's bytes: the identity used for incremental re-ingest."""
    return hashlib.sha256(data).hexdigest()


def source_kind(filename: str) -> SourceKind | None:
    """The extractor a file name maps to, or None for an unsupported extension."""
    return _KINDS.get(Path(filename).suffix.lower())


def one_line(message: str, limit: int = 200) -> str:
    """A message on one line, cut with an ellipsis past `limit` characters."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"


def exc_reason(prefix: str, exc: BaseException) -> str:
    """`prefix: ExceptionType: detail` on one line, for a problem caused by an exception."""
    detail = one_line(str(exc)) or type(exc).__name__
    return f"{prefix}: {type(exc).__name__}: {detail}" if detail != type(exc).__name__ else f"{prefix}: {detail}"


def cap_units(filename: str, units: list[SourceUnit], limits: Limits) -> tuple[list[SourceUnit], SourceError | None]:
    """The units within the per-file unit and character caps, and the note saying what was cut, if anything."""
    kept: list[SourceUnit] = []
    used = 0
    for unit in units:
        if len(kept) >= limits.units:
            return kept, SourceError(
                filename,
                f"truncated: only the first {limits.units:,} text units were kept (limit {limits.units:,} per file)",
                "truncated",
            )
        room = limits.chars - used
        if len(unit.text) > room:
            if room > 0:
                kept.append(SourceUnit(unit.text[:room], unit.locator, unit.heading, unit.lines))
            return kept, SourceError(
                filename,
                f"truncated: only the first {limits.chars:,} characters of text were "
                f"kept (limit {limits.chars:,} per file), up to {unit.locator}",
                "truncated",
            )
        kept.append(unit)
        used += len(unit.text)
    return kept, None
