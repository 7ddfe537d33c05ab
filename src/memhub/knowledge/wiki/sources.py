"""Source archives: extract Markdown, text, PDF and DOCX files into text units with locators.

Every failure is data, not an exception: a corrupt PDF, an empty DOCX, a huge file, an unknown
extension or a path escaping the root becomes a `SourceError` on the result, so one bad file never
stops the rest of an ingest. Re-ingest is incremental: files are compared by sha256 of their bytes.
PDF and DOCX files are parsed in a child process under memory and time limits
(memhub.knowledge.wiki.docworker); every file is read through the checked open of
memhub.knowledge.wiki.sourcetree.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memhub.knowledge.wiki.docworker import DocumentWorker
from memhub.knowledge.wiki.sourcetree import (
    FileTooLarge,
    NotARegularFile,
    PathOutsideRoot,
    SourceTree,
    safe_path,
)
from memhub.knowledge.wiki.sourcetypes import (
    DEFAULT_LIMITS,
    INDEX_FILE,
    MARKDOWN_EXTENSIONS,
    MB,
    SUPPORTED_EXTENSIONS,
    TEXT_EXTENSIONS,
    ExtractedSource,
    Limits,
    SourceError,
    SourceKind,
    SourceUnit,
    cap_units,
    content_hash,
    exc_reason,
    one_line,
    source_kind,
)

__all__ = [
    "DEFAULT_LIMITS",
    "MARKDOWN_EXTENSIONS",
    "MB",
    "SUPPORTED_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "ExtractedSource",
    "IngestPlan",
    "IngestResult",
    "Limits",
    "PathOutsideRoot",
    "SourceError",
    "SourceKind",
    "SourceUnit",
    "content_hash",
    "decode_text",
    "extract",
    "extract_bytes",
    "extract_directory",
    "markdown_units",
    "plan_ingest",
    "read_checked",
    "safe_path",
    "source_kind",
    "split_front_matter",
    "text_units",
]

# Plain text has no structure; cut it into paragraph-aligned chunks of about this size so a keyword
# hit points at a line range instead of "the whole file".
TEXT_CHUNK_CHARS = 2000
# libyaml's loader when PyYAML was built with it (about 12x faster); the same safe subset either way.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

log = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestPlan:
    """What changed under a root since the previous ingest, by content hash."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)
    errors: list[SourceError] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)  # every index.json found, by relative name

    @property
    def to_extract(self) -> list[str]:
        """Files whose text must be (re-)extracted, sorted."""
        return sorted(self.added + self.changed)


@dataclass(slots=True)
class IngestResult:
    """A plan plus the extracted sources for its added and changed files."""

    plan: IngestPlan
    sources: list[ExtractedSource] = field(default_factory=list)

    @property
    def errors(self) -> list[SourceError]:
        """Every reported problem: walk-level ones first, then per-file ones in file order."""
        return self.plan.errors + [e for s in self.sources for e in s.errors]

    @property
    def hashes(self) -> dict[str, str]:
        """Hashes to remember for the next incremental ingest (files that failed are left out to be retried)."""
        failed = {s.filename for s in self.sources if not s.ok}
        kept = {name: h for name, h in self.plan.hashes.items() if name not in failed}
        # The extracted bytes are what the units came from, should the file change mid-ingest.
        kept.update({s.filename: s.hash for s in self.sources if s.ok})
        return kept


# --- text and Markdown ------------------------------------------------------------------------


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (BOM tolerated) or BOM-marked UTF-16, normalising newlines to LF."""
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ValueError("binary content (NUL bytes) in a text file")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 text (bad byte at offset {exc.start})") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(text: str) -> tuple[dict[str, Any], str, int, str | None]:
    """Split YAML front matter off a Markdown text: (front matter, body, body's first line number, error)."""
    if not text.startswith("---\n"):
        return {}, text, 1, None
    lines = text.split("\n")
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:i])
            body = "\n".join(lines[i + 1 :])
            try:
                data = yaml.load(raw, Loader=_YAML_LOADER) if raw.strip() else {}
            except (yaml.YAMLError, ValueError) as exc:
                # Report rather than silently ignore: quietly dropped front matter is the failure
                # mode users hit with other tools' `paths`/`globs` headers. ValueError: YAML's date
                # constructor accepts the form of `2020-13-01` and then fails on the value.
                return {}, body, i + 2, f"invalid YAML front matter: {one_line(str(exc))}"
            if data is None:
                data = {}
            if not isinstance(data, dict):
                return {}, body, i + 2, f"front matter is a {type(data).__name__}, not a mapping"
            return {str(k): v for k, v in data.items()}, body, i + 2, None
    return {}, text, 1, "front matter opened with '---' but never closed"


def _heading_locator(path: tuple[str, ...], start: int, end: int) -> str:
    span = f"line {start}" if start == end else f"lines {start}-{end}"
    return f"{' > '.join(path)}, {span}" if path else span


def markdown_units(body: str, first_line: int = 1) -> list[SourceUnit]:
    """One unit per heading section; the locator is the heading path plus the section's line range."""
    units: list[SourceUnit] = []
    stack: list[tuple[int, str]] = []
    section: list[str] = []
    start = first_line
    fence: str | None = None

    def flush(end_line: int) -> None:
        # Trim blank edges so the line range points at real content.
        lo, hi = 0, len(section)
        while lo < hi and not section[lo].strip():
            lo += 1
        while hi > lo and not section[hi - 1].strip():
            hi -= 1
        if lo < hi:
            path = tuple(title for _, title in stack)
            text = "\n".join(section[lo:hi])
            units.append(
                SourceUnit(text, _heading_locator(path, start + lo, start + hi - 1), path, (start + lo, start + hi - 1))
            )

    lines = body.split("\n")
    for offset, line in enumerate(lines):
        lineno = first_line + offset
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            section.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            section.append(line)
            continue
        heading = _ATX_HEADING.match(line)
        if heading:
            flush(lineno - 1)
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, (heading.group(2) or "").strip()))
            # The heading line starts its own section so its words are searchable too.
            section = [line]
            start = lineno
            continue
        section.append(line)
    flush(first_line + len(lines) - 1)
    return units


def text_units(text: str, chunk_chars: int = TEXT_CHUNK_CHARS) -> list[SourceUnit]:
    """Plain text cut at blank lines into chunks of about `chunk_chars`, located by line range."""
    units: list[SourceUnit] = []
    chunk: list[str] = []
    size = 0
    start = 1

    def flush(end: int) -> None:
        while chunk and not chunk[-1].strip():
            chunk.pop()
            end -= 1
        if chunk:
            units.append(SourceUnit("\n".join(chunk), _heading_locator((), start, end), (), (start, end)))

    for lineno, line in enumerate(text.split("\n"), start=1):
        if not chunk and not line.strip():
            start = lineno + 1
            continue
        if size >= chunk_chars and not line.strip():
            flush(lineno - 1)
            chunk, size, start = [], 0, lineno + 1
            continue
        chunk.append(line)
        size += len(line) + 1
    flush(start + len(chunk) - 1)
    return units


# --- single files -----------------------------------------------------------------------------


def extract_bytes(
    filename: str, data: bytes, *, limits: Limits = DEFAULT_LIMITS, worker: DocumentWorker | None = None
) -> ExtractedSource:
    """Extract an uploaded (or already read) file; problems are reported on the result.

    PDF and DOCX files are parsed by `worker` (a process of its own for this one file without one).
    """
    ext = Path(filename).suffix.lower()
    kind = source_kind(filename)
    result = ExtractedSource(filename, kind, hash=content_hash(data))
    if kind is None:
        result.errors.append(SourceError(filename, f"unsupported file type {ext or '(no extension)'!r}", "skip"))
        return result
    limit = limits.for_extension(ext)
    if len(data) > limit:
        result.errors.append(SourceError(filename, _too_large(len(data), limit, ext), "skip"))
        return result
    if kind in ("pdf", "docx"):
        if worker is None:
            with DocumentWorker() as own:
                result.units, result.errors = own.extract(filename, kind, data, limits)
        else:
            result.units, result.errors = worker.extract(filename, kind, data, limits)
    else:
        _extract_text(result, kind, data)
    result.units, cut = cap_units(filename, result.units, limits)
    if cut is not None:
        result.errors.append(cut)
    return result


def _extract_text(result: ExtractedSource, kind: SourceKind, data: bytes) -> None:
    try:
        text = decode_text(data)
    except ValueError as exc:
        result.errors.append(SourceError(result.filename, str(exc)))
        return
    if kind == "markdown":
        front, body, first_line, problem = split_front_matter(text)
        result.front_matter = front
        if problem:
            result.errors.append(SourceError(result.filename, problem))
        result.units = markdown_units(body, first_line)
    else:
        result.units = text_units(text)
    if not result.units and not result.errors:
        result.errors.append(SourceError(result.filename, "file has no text", "skip"))


def _too_large(size: int, limit: int, ext: str) -> str:
    return f"file too large: {_human(size)} exceeds the {_human(limit)} limit for {ext} files ({size} > {limit} bytes)"


def _human(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB else f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"


def _unsupported(name: str) -> str:
    return f"unsupported file type {Path(name).suffix.lower() or '(no extension)'!r}"


def read_checked(tree: SourceTree, name: str, limits: Limits) -> bytes | SourceError:
    """A file's bytes through the tree's checked open, or the problem that kept it from being read."""
    ext = Path(name).suffix.lower()
    limit = limits.for_extension(ext)
    try:
        # Refuse before reading: a multi-gigabyte file must not be pulled into memory just to be rejected.
        return tree.read_bytes(name, limit)
    except FileTooLarge as exc:
        return SourceError(name, _too_large(exc.size, limit, ext), "skip")
    except (PathOutsideRoot, NotARegularFile) as exc:
        return SourceError(name, str(exc))
    except OSError as exc:
        return SourceError(name, f"cannot read file: {exc.strerror or exc}")


def extract(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    worker: DocumentWorker | None = None,
) -> ExtractedSource:
    """Extract one file; with `root`, `path` is relative to it and may not escape it."""
    if root is not None:
        name = Path(path).as_posix()
        tree = SourceTree(Path(root))
    else:
        full = Path(path).absolute()
        name = full.name
        tree = SourceTree(full.parent)
    kind = source_kind(name)
    if kind is None:
        return ExtractedSource(name, None, errors=[SourceError(name, _unsupported(name), "skip")])
    data = read_checked(tree, name, limits)
    if isinstance(data, SourceError):
        return ExtractedSource(name, kind, errors=[data])
    return extract_bytes(name, data, limits=limits, worker=worker)


# --- directories and incremental re-ingest ----------------------------------------------------


def plan_ingest(
    root: str | os.PathLike[str],
    previous: Mapping[str, str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> IngestPlan:
    """Compare the files under `root` with `previous` {filename: hash}: added / changed / unchanged / removed.

    `index.json` files are listed in `index_files`, not as sources.
    """
    tree = SourceTree(Path(root))
    previous = dict(previous or {})
    plan = IngestPlan()
    if not tree.root.is_dir():
        plan.errors.append(SourceError(str(root), "source root is not a directory"))
        plan.removed = sorted(previous)
        return plan
    for name, _ in tree.walk(plan.errors):
        if Path(name).name == INDEX_FILE:
            plan.index_files.append(name)
            continue
        if Path(name).suffix.lower() not in SUPPORTED_EXTENSIONS:
            plan.errors.append(SourceError(name, _unsupported(name), "skip"))
            continue
        data = read_checked(tree, name, limits)
        if isinstance(data, SourceError):
            plan.errors.append(data)
            continue
        digest = content_hash(data)
        plan.hashes[name] = digest
        if name not in previous:
            plan.added.append(name)
        elif previous[name] != digest:
            plan.changed.append(name)
        else:
            plan.unchanged.append(name)
    # The walk yields a directory's files before its subdirectories; sort so plans are stable to compare.
    plan.added.sort()
    plan.changed.sort()
    plan.unchanged.sort()
    plan.index_files.sort()
    plan.removed = sorted(set(previous) - set(plan.hashes))
    return plan


def extract_directory(
    root: str | os.PathLike[str],
    previous_hashes: Mapping[str, str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> IngestResult:
    """Plan an incremental ingest of `root` and extract its added and changed files; never raises per file.

    One document worker serves every PDF and DOCX of the ingest, so each costs a fork, not a new interpreter.
    """
    plan = plan_ingest(root, previous_hashes, limits=limits)
    result = IngestResult(plan)
    with DocumentWorker() as worker:
        for name in plan.to_extract:
            try:
                source = extract(name, root=root, limits=limits, worker=worker)
            except Exception as exc:  # last line of defence: an extractor bug must not end the ingest
                log.exception("extraction of %s failed", name)
                source = ExtractedSource(
                    name, source_kind(name), errors=[SourceError(name, exc_reason("extraction failed", exc))]
                )
            result.sources.append(source)
    return result
