"""PDF and DOCX parsing, with caps: pages, paragraphs, tables, text units and characters per file.

These functions parse untrusted bytes with pypdf and python-docx, so the server runs them in a child
process under memory and CPU limits (memhub.knowledge.wiki.docworker), never in its own.

A DOCX is a zip. Before python-docx sees one, its central directory is checked (member count, declared
uncompressed sizes, compression ratios, in total and per member), then every member is inflated through
a bounded stream that stops at the limits whatever the directory declared: a 600 KB file that inflates
to 200 MB is refused in a fraction of a second with the limit named. A document over a cap is not
refused: what fits is kept and a `truncated` problem says what was left out.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from memhub.knowledge.wiki.sourcetypes import Limits, SourceError, SourceUnit, exc_reason

_DOCX_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_INFLATE_CHUNK = 64 * 1024

Extracted = tuple[list[SourceUnit], list[SourceError]]


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


# --- PDF --------------------------------------------------------------------------------------


def pdf_units(filename: str, data: bytes, limits: Limits) -> Extracted:
    """Per-page text of a PDF (`page N`, 1-based), at most `limits.pdf_pages` pages; parse failures and
    encryption are reported."""
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
                return [], [SourceError(filename, exc_reason("encrypted PDF cannot be opened", exc))]
        pages = reader.pages
        count = len(pages)
    except MemoryError:
        raise  # the process's memory limit: the worker reports it as such, not as a broken file
    except Exception as exc:  # pypdf raises many types on broken files; none may stop the ingest
        return [], [SourceError(filename, exc_reason("PDF could not be parsed", exc))]
    units: list[SourceUnit] = []
    errors: list[SourceError] = []
    read = min(count, limits.pdf_pages)
    chars = 0
    for number in range(1, read + 1):
        if chars > limits.chars or len(units) > limits.units:
            return units, errors  # over a per-file cap already: the caller cuts there and says so
        try:
            text = pages[number - 1].extract_text() or ""
        except MemoryError:
            raise
        except Exception as exc:  # one broken page must not lose the others
            errors.append(SourceError(filename, exc_reason(f"page {number} could not be read", exc)))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        if text:
            units.append(SourceUnit(text, f"page {number}"))
            chars += len(text)
    if count > read:
        reason = f"truncated: only the first {read:,} of {count:,} pages were extracted (limit {read:,} pages per PDF)"
        errors.append(SourceError(filename, reason, "truncated"))
    if not units and not any(e.kind == "error" for e in errors):
        errors.append(SourceError(filename, f"no extractable text in {read} page(s) (scanned images?)", "skip"))
    return units, errors


# --- DOCX -------------------------------------------------------------------------------------


def docx_zip_problem(filename: str, data: bytes, limits: Limits) -> SourceError | None:
    """Why this DOCX is refused before parsing (not a zip, or over a zip limit), or None when it may be parsed."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        return SourceError(filename, exc_reason("DOCX could not be parsed", exc))
    with archive:
        refused = _declared_problem(members, limits)
        if refused is None:
            try:
                refused = _inflated_problem(archive, members, limits)
            except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError, OSError) as exc:
                return SourceError(filename, exc_reason("DOCX could not be parsed", exc))
    return SourceError(filename, f"DOCX refused: {refused}", "skip") if refused else None


def _declared_problem(members: list[zipfile.ZipInfo], limits: Limits) -> str | None:
    """A zip limit the central directory already breaks (what the members claim to be)."""
    if len(members) > limits.zip_members:
        return f"{len(members):,} zip members (limit {limits.zip_members:,})"
    total = sum(m.file_size for m in members)
    if total > limits.zip_uncompressed_bytes:
        return f"declares {_mb(total)} uncompressed (limit {_mb(limits.zip_uncompressed_bytes)})"
    for member in members:
        problem = _ratio_problem(member.filename, member.file_size, member.compress_size, limits)
        if problem:
            return problem
    compressed = sum(m.compress_size for m in members)
    return _ratio_problem("the whole file", total, compressed, limits)


def _ratio_problem(what: str, size: int, compressed: int, limits: Limits) -> str | None:
    if size < limits.zip_ratio_min_bytes:
        return None
    ratio = size / max(compressed, 1)
    if ratio > limits.zip_ratio:
        return f"{what} inflates {ratio:,.0f}x ({_mb(size)} from {_mb(compressed)}; limit {limits.zip_ratio}x)"
    return None


def _inflated_problem(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], limits: Limits) -> str | None:
    """A zip limit the members break when actually inflated, read through a bounded stream."""
    total = 0
    for member in members:
        size = 0
        with archive.open(member) as stream:
            while chunk := stream.read(_INFLATE_CHUNK):
                size += len(chunk)
                total += len(chunk)
                if size > member.file_size:
                    return f"{member.filename} inflates past its declared {member.file_size:,} bytes"
                if total > limits.zip_uncompressed_bytes:
                    return f"inflates past {_mb(limits.zip_uncompressed_bytes)} (limit)"
        problem = _ratio_problem(member.filename, size, member.compress_size, limits)
        if problem:
            return problem
    return None


def _docx_heading_level(style_name: str) -> int | None:
    if style_name.strip().lower() == "title":
        return 0
    match = _DOCX_HEADING.match(style_name.strip())
    return int(match.group(1)) if match else None


def _table_markdown(table: Any, budget: int) -> str:
    """A table as Markdown, stopping after the row that passes `budget` characters."""
    rows: list[str] = []
    used = 0
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
        used += sum(len(r) + 1 for r in rows[-2 if index == 0 else -1 :])
        if used > budget:
            break
    return "\n".join(rows)


def docx_units(filename: str, data: bytes, limits: Limits) -> Extracted:
    """Paragraphs (`paragraph N`) and tables (`table N`) of a DOCX in body order, with heading paths,
    up to the paragraph, table and character caps; a zip over its limits is refused unparsed."""
    refused = docx_zip_problem(filename, data, limits)
    if refused is not None:
        return [], [refused]
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = document.iter_inner_content()
    except MemoryError:
        raise  # the process's memory limit: the worker reports it as such, not as a broken file
    except Exception as exc:  # missing parts, bad XML: all reported, never raised
        return [], [SourceError(filename, exc_reason("DOCX could not be parsed", exc))]
    try:
        style_names = {style.style_id: style.name or "" for style in document.styles}
    except MemoryError:
        raise
    except Exception:  # a broken styles part only costs heading paths, not the text
        style_names = {}
    units: list[SourceUnit] = []
    stack: list[tuple[int, str]] = []
    paragraph_no = table_no = chars = 0
    cut: str | None = None
    for block in blocks:
        if chars > limits.chars or len(units) > limits.units:
            break  # over a per-file cap already: the caller cuts there and says so
        if isinstance(block, Table):
            if table_no >= limits.docx_tables:
                cut = f"the first {limits.docx_tables:,} tables (limit per DOCX)"
                break
            table_no += 1
            text = _table_markdown(block, limits.chars - chars)
            if text.strip(" |-\n"):
                units.append(SourceUnit(text, f"table {table_no}", tuple(t for _, t in stack)))
                chars += len(text)
            continue
        if paragraph_no >= limits.docx_paragraphs:
            cut = f"the first {limits.docx_paragraphs:,} paragraphs (limit per DOCX)"
            break
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
        chars += len(text)
    errors: list[SourceError] = []
    if cut is not None:
        where = units[-1].locator if units else "the start"
        errors.append(SourceError(filename, f"truncated: only {cut} were extracted, up to {where}", "truncated"))
    if not units:
        return [], [*errors, SourceError(filename, "DOCX has no text", "skip")]
    return units, errors
