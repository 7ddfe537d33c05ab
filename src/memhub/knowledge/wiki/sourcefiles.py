"""A wiki's source files as the service sees them: uploads, their limits, and their `wiki_source` rows.

A wiki reads its sources either from uploads (stored under its `raw/` directory by raw/write and
page/write) or from a local folder (`source_path`). Each source file has one `MetaKind.WIKI_SOURCE`
row with its size, hash and status (`uploaded` until a build says `ingested`, `skipped` or `failed`);
files of a local folder get their rows from the build that first sees them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from memhub.errors import BadRequest
from memhub.knowledge.wiki.extract_cache import BuiltUnits, ExtractionCache
from memhub.knowledge.wiki.pages import normalise_ref
from memhub.knowledge.wiki.sources import (
    SourceError,
    content_hash,
    decode_text,
    read_checked,
    source_kind,
    split_front_matter,
)
from memhub.knowledge.wiki.sourcetree import SourceTree
from memhub.knowledge.wiki.storage import WikiFiles, filename_problem
from memhub.meta.caller import Caller
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaWriter

# The reference's raw/write limits; PDF and DOCX files may be larger (they carry layout, not just text).
WRITE_FILES_MAX = 10
TEXT_FILE_MAX = 512 * 1024
BINARY_FILE_MAX = 5 * 1024 * 1024
WRITE_TOTAL_MAX = 5 * 1024 * 1024
PAGE_WRITE_MAX = 20
# Page names the reference reserves for its own structure files.
STRUCTURAL_PAGES = frozenset({"index", "schema", "purpose", "log", "overview"})


@dataclass(frozen=True, slots=True)
class RawFile:
    """One file of a raw/write: its name and decoded bytes."""

    filename: str
    data: bytes


def decode_upload(filename: str, content: str, encoding: str) -> bytes:
    """The bytes of an uploaded file; PDF and DOCX must come base64-encoded."""
    kind = source_kind(filename)
    if encoding == "base64":
        try:
            return base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"files: {filename}: content is not valid base64") from None
    if kind in ("pdf", "docx"):
        raise BadRequest(f"files: {filename}: {kind} files must be sent base64-encoded (encoding: base64)")
    return content.encode("utf-8")


def source_root(files: WikiFiles, service_id: str, row: Row) -> Path:
    """The directory a wiki's sources are read from: its local folder, or its uploads."""
    return Path(row["source_path"]) if row["source_path"] else files.raw_dir(service_id, row["wiki_id"])


def source_view(row: Row) -> Row:
    """A `wiki_source` row as raw/ls shows it."""
    return {
        "filename": row["filename"],
        "size": row["size"],
        "status": row["status"],
        "error": row["error"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "last_modified_by": row["last_modified_by"],
        "ingested_at": row["ingested_at"],
        "uploaded_at": row["uploaded_at"],
    }


def upsert_source(w: MetaWriter, wiki_id: str, filename: str, data: bytes, caller: Caller, now: str) -> None:
    """Record an uploaded file: its row is created, or reset to `uploaded` with the new size and hash."""
    existing = w.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": filename}, limit=1)
    changes = {
        "size": len(data),
        "sha256": content_hash(data),
        "status": "uploaded",
        "error": None,
        "last_modified_by": caller.actor,
        "uploaded_at": now,
        "updated_at": now,
    }
    if existing:
        w.update(MetaKind.WIKI_SOURCE, existing[0]["id"], changes)
    else:
        w.insert(
            MetaKind.WIKI_SOURCE,
            {
                "id": f"{wiki_id}:{content_hash(filename.encode())[:24]}",
                "wiki_id": wiki_id,
                "filename": filename,
                "ingested_at": None,
                "created_at": now,
                **changes,
            },
        )


def file_size(root: Path, name: str) -> int:
    """The size of a source file on disk, 0 if it is gone."""
    try:
        return (root / name).stat().st_size
    except OSError:
        return 0


def record_status(
    w: MetaWriter,
    wiki_id: str,
    filename: str,
    status: str,
    reason: str | None,
    digest: str | None,
    size: int,
    now: str,
) -> None:
    """Record what a build made of a source file, creating its row for a file of a local folder."""
    existing = w.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": filename}, limit=1)
    changes: Row = {"status": status, "error": reason, "size": size, "updated_at": now}
    if digest:
        changes["sha256"] = digest
    if status == "ingested":
        changes["ingested_at"] = now
    if existing:
        w.update(MetaKind.WIKI_SOURCE, existing[0]["id"], changes)
        return
    # A file of a local source folder: known from the build itself.
    w.insert(
        MetaKind.WIKI_SOURCE,
        {
            "id": f"{wiki_id}:{content_hash(filename.encode())[:24]}",
            "wiki_id": wiki_id,
            "filename": filename,
            "sha256": digest or "",
            "last_modified_by": None,
            "uploaded_at": None,
            "ingested_at": now if status == "ingested" else None,
            "created_at": now,
            **changes,
        },
    )


def read_source(name: str, tree: SourceTree, cache: ExtractionCache, built: Callable[[], BuiltUnits | None]) -> Row:
    """One raw/read item: the file's text (PDF and DOCX extracted once, with their locators), or why there is none."""
    data = read_checked(tree, name, cache.limits)
    if isinstance(data, SourceError):
        return {"filename": name, "content": "", "error": data.reason}
    if source_kind(name) in ("pdf", "docx"):
        extracted = cache.extracted(name, data, built)
        if not extracted.ok:
            reason = "; ".join(e.reason for e in extracted.errors) or "no text"
            return {"filename": name, "content": "", "error": reason}
        item: Row = {"filename": name, "content": "\n\n".join(f"[{u.locator}]\n{u.text}" for u in extracted.units)}
        if extracted.truncation:
            item["truncated"] = extracted.truncation
        return item
    try:
        return {"filename": name, "content": decode_text(data)}
    except ValueError as exc:
        return {"filename": name, "content": "", "error": str(exc)}


def page_ref(ref: str, where: str) -> str:
    """A page ref for page/write and page/rm: a relative name, not a reserved structure file."""
    pid = normalise_ref(ref)
    problem = filename_problem(pid + ".md")
    if problem:
        raise BadRequest(f"{where}: {problem}")
    if PurePosixPath(pid).name.lower() in STRUCTURAL_PAGES:
        raise BadRequest(f"{where}: {PurePosixPath(pid).name}.md is a reserved structure file")
    return pid


def with_locked_front_matter(content: str) -> str:
    """The page with `locked: true` in its front matter (added, or set when the front matter exists)."""
    meta, body, _, problem = split_front_matter(content.replace("\r\n", "\n"))
    if problem:
        raise BadRequest(f"pages: content: {problem}")
    meta["locked"] = True
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + body.lstrip("\n")
