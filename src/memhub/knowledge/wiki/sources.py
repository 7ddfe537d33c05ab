"""Source archives: extract Markdown, text, PDF and DOCX files into text units with locators.

Every failure is data, not an exception: a corrupt PDF, an empty DOCX, a huge file, an unknown
extension or a path escaping the root becomes a `SourceError` on the result, so one bad file never
stops the rest of an ingest. Re-ingest is incremental: files are compared by sha256 of their bytes.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

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

# Plain text has no structure; cut it into paragraph-aligned chunks of about this size so a keyword
# hit points at a line range instead of "the whole file".
TEXT_CHUNK_CHARS = 2000
# libyaml's loader when PyYAML was built with it (about 12x faster); the same safe subset either way.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DOCX_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits in bytes; anything bigger is skipped with the limit named."""

    text_bytes: int = 5 * MB
    binary_bytes: int = 20 * MB

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
    """A file (or part of one) that could not be used; `skip` means deliberately left out."""

    filename: str
    reason: str
    kind: Literal["error", "skip"] = "error"


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


@dataclass(slots=True)
class IngestPlan:
    """What changed under a root since the previous ingest, by content hash."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)
    errors: list[SourceError] = field(default_factory=list)

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


class PathOutsideRoot(ValueError):
    """A relative name or symlink that would leave the source root."""


def content_hash(data: bytes) -> str:
    """sha256 hex digest of a file's bytes: the identity used for incremental re-ingest."""
    return hashlib.sha256(data).hexdigest()


def source_kind(filename: str) -> SourceKind | None:
    """The extractor a file name maps to, or None for an unsupported extension."""
    return _KINDS.get(Path(filename).suffix.lower())


def safe_path(root: str | os.PathLike[str], name: str) -> Path:
    """Resolve `name` under `root`, refusing absolute names, `..` escapes and symlinks leading outside."""
    base = Path(root).resolve()
    if not name or Path(name).is_absolute() or name.startswith(("/", "\\")):
        raise PathOutsideRoot(f"{name!r} is not a relative path inside the source root")
    target = (base / name).resolve()
    if target != base and base not in target.parents:
        raise PathOutsideRoot(f"{name!r} resolves outside the source root")
    return target


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
                return {}, body, i + 2, f"invalid YAML front matter: {_one_line(str(exc))}"
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


# --- PDF and DOCX -----------------------------------------------------------------------------


def _one_line(message: str, limit: int = 200) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _exc_reason(prefix: str, exc: BaseException) -> str:
    detail = _one_line(str(exc)) or type(exc).__name__
    return f"{prefix}: {type(exc).__name__}: {detail}" if detail != type(exc).__name__ else f"{prefix}: {detail}"


def pdf_units(filename: str, data: bytes) -> tuple[list[SourceUnit], list[SourceError]]:
    """Per-page text of a PDF (`page N`, 1-based); parse failures and encryption are reported."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password only to restrict printing.
            try:
                if not reader.decrypt(""):
                    return [], [SourceError(filename, "encrypted PDF: a password is required")]
            except (FileNotDecryptedError, NotImplementedError) as exc:
                return [], [SourceError(filename, _exc_reason("encrypted PDF cannot be opened", exc))]
        pages = reader.pages
        count = len(pages)
    except Exception as exc:  # pypdf raises many types on broken files; none may stop the ingest
        return [], [SourceError(filename, _exc_reason("PDF could not be parsed", exc))]
    units: list[SourceUnit] = []
    errors: list[SourceError] = []
    for number in range(1, count + 1):
        try:
            text = pages[number - 1].extract_text() or ""
        except Exception as exc:  # one broken page must not lose the others
            errors.append(SourceError(filename, _exc_reason(f"page {number} could not be read", exc)))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        if text:
            units.append(SourceUnit(text, f"page {number}"))
    if not units and not errors:
        errors.append(SourceError(filename, f"no extractable text in {count} page(s) (scanned images?)", "skip"))
    return units, errors


def _docx_heading_level(style_name: str) -> int | None:
    if style_name.strip().lower() == "title":
        return 0
    match = _DOCX_HEADING.match(style_name.strip())
    return int(match.group(1)) if match else None


def _table_markdown(table: Any) -> str:
    rows: list[str] = []
    for index, row in enumerate(table.rows):
        cells: list[str] = []
        last = None
        for cell in row.cells:
            # python-docx repeats a horizontally merged cell once per grid column; keep it once.
            if cell._tc is last:
                continue
            last = cell._tc
            cells.append(" ".join(cell.text.split()).replace("|", "\\|"))
        rows.append("| " + " | ".join(cells) + " |")
        if index == 0:
            rows.append("|" + "---|" * len(cells))
    return "\n".join(rows)


def docx_units(filename: str, data: bytes) -> tuple[list[SourceUnit], list[SourceError]]:
    """Paragraphs (`paragraph N`) and tables (`table N`) of a DOCX in body order, with heading paths."""
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
    except Exception as exc:  # not a zip, missing parts, bad XML: all reported, never raised
        return [], [SourceError(filename, _exc_reason("DOCX could not be parsed", exc))]
    try:
        style_names = {style.style_id: style.name or "" for style in document.styles}
    except Exception:  # a broken styles part only costs heading paths, not the text
        style_names = {}
    units: list[SourceUnit] = []
    stack: list[tuple[int, str]] = []
    paragraph_no = table_no = 0
    for block in blocks:
        if isinstance(block, Table):
            table_no += 1
            text = _table_markdown(block)
            if text.strip(" |-\n"):
                units.append(SourceUnit(text, f"table {table_no}", tuple(t for _, t in stack)))
            continue
        # Every body paragraph is counted, empty ones included, so `paragraph N` is reproducible.
        paragraph_no += 1
        text = block.text.strip()
        if not text:
            continue
        # `Paragraph.style` rescans every style to find the default on each call (~1 ms each);
        # reading the style id and mapping it through one table is ~100x faster on long documents.
        style_id = block._p.style
        level = _docx_heading_level(style_names.get(style_id, style_id) or "") if style_id else None
        if level is not None:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, " ".join(text.split())))
        units.append(SourceUnit(text, f"paragraph {paragraph_no}", tuple(t for _, t in stack)))
    if not units:
        return [], [SourceError(filename, "DOCX has no text", "skip")]
    return units, []


# --- single files -----------------------------------------------------------------------------


def extract_bytes(filename: str, data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ExtractedSource:
    """Extract an uploaded (or already read) file; problems are reported on the result."""
    ext = Path(filename).suffix.lower()
    kind = _KINDS.get(ext)
    result = ExtractedSource(filename, kind, hash=content_hash(data))
    if kind is None:
        result.errors.append(SourceError(filename, f"unsupported file type {ext or '(no extension)'!r}", "skip"))
        return result
    limit = limits.for_extension(ext)
    if len(data) > limit:
        result.errors.append(SourceError(filename, _too_large(len(data), limit, ext), "skip"))
        return result
    if kind == "pdf":
        result.units, result.errors = pdf_units(filename, data)
        return result
    if kind == "docx":
        result.units, result.errors = docx_units(filename, data)
        return result
    try:
        text = decode_text(data)
    except ValueError as exc:
        result.errors.append(SourceError(filename, str(exc)))
        return result
    if kind == "markdown":
        front, body, first_line, problem = split_front_matter(text)
        result.front_matter = front
        if problem:
            result.errors.append(SourceError(filename, problem))
        result.units = markdown_units(body, first_line)
    else:
        result.units = text_units(text)
    if not result.units and not result.errors:
        result.errors.append(SourceError(filename, "file has no text", "skip"))
    return result


def _too_large(size: int, limit: int, ext: str) -> str:
    return f"file too large: {_human(size)} exceeds the {_human(limit)} limit for {ext} files ({size} > {limit} bytes)"


def _human(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB else f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"


def extract(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ExtractedSource:
    """Extract one file; with `root`, `path` is relative to it and may not escape it."""
    if root is not None:
        name = Path(path).as_posix()
        try:
            full = safe_path(root, name)
        except PathOutsideRoot as exc:
            return ExtractedSource(name, source_kind(name), errors=[SourceError(name, str(exc))])
    else:
        full = Path(path)
        name = full.name
    kind = source_kind(name)
    try:
        size = full.stat().st_size
    except OSError as exc:
        return ExtractedSource(name, kind, errors=[SourceError(name, f"cannot read file: {exc.strerror or exc}")])
    limit = limits.for_extension(full.suffix.lower())
    if kind is not None and size > limit:
        # Refuse before reading: a multi-gigabyte file must not be pulled into memory just to be rejected.
        return ExtractedSource(
            name, kind, errors=[SourceError(name, _too_large(size, limit, full.suffix.lower()), "skip")]
        )
    if kind is None:
        return ExtractedSource(
            name,
            None,
            errors=[SourceError(name, f"unsupported file type {full.suffix.lower() or '(no extension)'!r}", "skip")],
        )
    try:
        data = full.read_bytes()
    except OSError as exc:
        return ExtractedSource(name, kind, errors=[SourceError(name, f"cannot read file: {exc.strerror or exc}")])
    return extract_bytes(name, data, limits=limits)


# --- directories and incremental re-ingest ----------------------------------------------------


def _walk(root: Path, errors: list[SourceError]) -> Iterator[tuple[str, Path]]:
    """Yield (relative posix name, path) for regular files under root, skipping hidden entries."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept: list[str] = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue  # .git, .venv, editor state: never source documents
            full = here / d
            if full.is_symlink():
                rel = full.relative_to(root).as_posix()
                if not _inside(root, full):
                    errors.append(SourceError(rel, "symlink points outside the source root; refused"))
                # A symlinked directory inside the root is reachable by its real path; don't walk it twice.
                continue
            kept.append(d)
        dirnames[:] = kept
        for f in sorted(filenames):
            if f.startswith("."):
                continue
            full = here / f
            rel = full.relative_to(root).as_posix()
            if full.is_symlink() and not _inside(root, full):
                errors.append(SourceError(rel, "symlink points outside the source root; refused"))
                continue
            yield rel, full


def _inside(root: Path, path: Path) -> bool:
    try:
        target = path.resolve()
    except OSError:
        return False
    return target == root or root in target.parents


def plan_ingest(
    root: str | os.PathLike[str],
    previous: Mapping[str, str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> IngestPlan:
    """Compare the files under `root` with `previous` {filename: hash}: added / changed / unchanged / removed."""
    base = Path(root).resolve()
    previous = dict(previous or {})
    plan = IngestPlan()
    if not base.is_dir():
        plan.errors.append(SourceError(str(root), "source root is not a directory"))
        plan.removed = sorted(previous)
        return plan
    for name, full in _walk(base, plan.errors):
        ext = full.suffix.lower()
        if ext not in SUPPORTED_EXTENSIONS:
            plan.errors.append(SourceError(name, f"unsupported file type {ext or '(no extension)'!r}", "skip"))
            continue
        try:
            size = full.stat().st_size
            limit = limits.for_extension(ext)
            if size > limit:
                plan.errors.append(SourceError(name, _too_large(size, limit, ext), "skip"))
                continue
            digest = content_hash(full.read_bytes())
        except OSError as exc:
            plan.errors.append(SourceError(name, f"cannot read file: {exc.strerror or exc}"))
            continue
        plan.hashes[name] = digest
        if name not in previous:
            plan.added.append(name)
        elif previous[name] != digest:
            plan.changed.append(name)
        else:
            plan.unchanged.append(name)
    # os.walk yields a directory's files before its subdirectories; sort so plans are stable to compare.
    plan.added.sort()
    plan.changed.sort()
    plan.unchanged.sort()
    plan.removed = sorted(set(previous) - set(plan.hashes))
    return plan


def extract_directory(
    root: str | os.PathLike[str],
    previous_hashes: Mapping[str, str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> IngestResult:
    """Plan an incremental ingest of `root` and extract its added and changed files; never raises per file."""
    plan = plan_ingest(root, previous_hashes, limits=limits)
    result = IngestResult(plan)
    for name in plan.to_extract:
        try:
            source = extract(name, root=root, limits=limits)
        except Exception as exc:  # last line of defence: an extractor bug must not end the ingest
            log.exception("extraction of %s failed", name)
            source = ExtractedSource(
                name, source_kind(name), errors=[SourceError(name, _exc_reason("extraction failed", exc))]
            )
        result.sources.append(source)
    return result
