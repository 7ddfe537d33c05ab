"""Build one wiki generation: source files → pages, two-layer index and source archive, in a fresh directory.

A generation is written completely before anyone reads it and never changed afterwards; the service
then points the wiki at it in one database commit (blue/green), so readers see either the old or
the new generation, never a half-built one. Builds are incremental by content hash: unchanged files
reuse the previous generation's page and extracted units.

Layout of a generation directory:
    pages/…            one Markdown page per source, plus every index.json of the two-layer index
    units.json         extracted units per source file (text + locator), for search_sources
    manifest.json      hashes, pages, per-file problems, how the index was made
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from memhub.knowledge.wiki.ai_index import Describe, cache_of, enrich
from memhub.knowledge.wiki.index import (
    INDEX_FILE,
    IndexInvalid,
    IndexIssue,
    dump_index_json,
    generate_index,
    validate_index,
    write_index_files,
)
from memhub.knowledge.wiki.pages import page_file, render_markdown
from memhub.knowledge.wiki.sources import (
    DEFAULT_LIMITS,
    MARKDOWN_EXTENSIONS,
    ExtractedSource,
    Limits,
    SourceError,
    SourceUnit,
    decode_text,
    extract,
    extract_directory,
)
from memhub.knowledge.wiki.sourcetree import SourceTree

PAGES_DIR = "pages"
UNITS_FILE = "units.json"
MANIFEST_FILE = "manifest.json"
IndexOrigin = Literal["authored", "generated", "ai"]


class BuildFailed(Exception):
    """The sources cannot make a valid wiki (an invalid authored index, or no usable source at all)."""

    def __init__(self, reason: str, issues: list[IndexIssue] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.issues = issues or []


@dataclass(slots=True)
class BuildReport:
    """What a build did, per file, for the ingest result and the `list_raw` statuses."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept_previous: list[str] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)
    pages: int = 0
    index: IndexOrigin = "generated"
    ai: dict[str, int] | None = None  # with an AI index: entries written, reused from the last build, failed

    def view(self) -> dict[str, Any]:
        """The report on the wire."""
        return {
            "added": self.added,
            "changed": self.changed,
            "unchanged": len(self.unchanged),
            "removed": self.removed,
            "kept_previous": self.kept_previous,
            "pages": self.pages,
            "index": self.index,
            "ai": self.ai,
            "errors": [{"filename": e.filename, "reason": e.reason, "kind": e.kind} for e in self.errors],
        }


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_manifest(generation_dir: Path) -> dict[str, Any]:
    """A generation's manifest, or {} when there is none (no previous build)."""
    data = _read_json(generation_dir / MANIFEST_FILE)
    return data if isinstance(data, dict) else {}


def read_units(generation_dir: Path) -> dict[str, list[SourceUnit]]:
    """Extracted units per source file of a generation."""
    data = _read_json(generation_dir / UNITS_FILE)
    if not isinstance(data, dict):
        return {}
    return {name: [SourceUnit(text, locator) for text, locator in units] for name, units in data.items()}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def _page_text(tree: SourceTree, source: ExtractedSource) -> str:
    if PurePosixPath(source.filename).suffix.lower() in MARKDOWN_EXTENSIONS:
        return decode_text(tree.read_bytes(source.filename))
    return render_markdown(source)


def _copy_authored_index(tree: SourceTree, index_files: list[str], pages: Path) -> None:
    """Copy every index.json of the sources next to its pages; `file` names of PDF/DOCX/text sources
    are pointed at their page (`manual.pdf` → `manual.pdf.md`) so authors can name what they uploaded."""
    for rel in index_files:
        try:
            data = json.loads(decode_text(tree.read_bytes(rel)))
        except OSError as exc:
            raise BuildFailed(f"{rel}: cannot read file: {exc.strerror or exc}") from exc
        except ValueError as exc:  # also a file that now resolves outside the source root
            raise BuildFailed(f"{rel}: not valid JSON ({exc})", [IndexIssue(rel, "", f"invalid JSON: {exc}")]) from exc
        docs = data.get("documents") if isinstance(data, dict) else None
        for doc in docs if isinstance(docs, list) else []:
            file = doc.get("file") if isinstance(doc, dict) else None
            if isinstance(file, str) and not file.lower().endswith(".md"):
                doc["file"] = page_file(file)
        _write(pages / rel, dump_index_json(data) if isinstance(data, dict) else json.dumps(data))


def build_generation(
    source_root: Path,
    target: Path,
    previous: Path | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
    describe: Describe | None = None,
) -> BuildReport:
    """Build a complete generation of the wiki whose sources are under `source_root` into `target`.

    Raises BuildFailed when no valid wiki can be made; per-file problems are reported, never raised:
    a file that fails is left out (or, if it was ingested before, its previous version is kept).
    With `describe` (an LLM), a generated index gets the summaries and tags authors left out.
    """
    if target.exists():
        shutil.rmtree(target)  # a leftover from a build that died half-way
    pages = target / PAGES_DIR
    pages.mkdir(parents=True)
    before = read_manifest(previous) if previous else {}
    old_hashes: dict[str, str] = before.get("hashes", {})
    old_units = read_units(previous) if previous else {}
    tree = SourceTree(source_root)
    result = extract_directory(source_root, old_hashes, limits=limits)
    plan = result.plan
    report = BuildReport(plan.added, plan.changed, plan.unchanged, plan.removed)
    report.errors = list(result.errors)
    units: dict[str, list[SourceUnit]] = {}
    hashes: dict[str, str] = {}
    owners: dict[str, str] = {}  # page file → the source it was made from

    def previous_page(name: str) -> str | None:
        if previous is None or name not in old_units:
            return None
        path = previous / PAGES_DIR / page_file(name)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def keep(name: str, text: str, source_units: list[SourceUnit], digest: str) -> None:
        owner = owners.setdefault(page_file(name), name)
        if owner != name:
            report.errors.append(
                SourceError(name, f"its page {page_file(name)} is already made from {owner}; rename one of them")
            )
            return
        _write(pages / page_file(name), text)
        units[name] = source_units
        hashes[name] = digest

    fresh = {s.filename: s for s in result.sources}
    old_errors = [e for e in before.get("errors", []) if isinstance(e, dict)]
    for name in sorted([*plan.unchanged, *fresh]):
        source = fresh.get(name)
        if source is None:  # unchanged: reuse the previous page, unless the previous generation lost it
            text = previous_page(name)
            if text is not None:
                keep(name, text, old_units[name], plan.hashes[name])
                # Its partial problems (bad front matter, an unreadable page) still hold.
                report.errors += [
                    SourceError(name, e["reason"], e.get("kind", "error"))
                    for e in old_errors
                    if e.get("filename") == name
                ]
                continue
            source = extract(name, root=source_root, limits=limits)
            report.errors += source.errors
        if source.ok:
            try:
                text = _page_text(tree, source)
            except (OSError, ValueError) as exc:
                report.errors.append(SourceError(name, f"cannot make a page: {exc}"))
                continue
            keep(name, text, source.units, source.hash)
        elif (text := previous_page(name)) is not None:
            # A changed file that no longer parses: keep serving what it said before rather than lose it.
            keep(name, text, old_units[name], old_hashes[name])
            report.kept_previous.append(name)
    if not units:
        raise BuildFailed("no usable source file: upload Markdown, text, PDF or DOCX files and ingest again")
    # Only index files the walk accepted: a symlinked index.json that leads outside the root is never read.
    authored = INDEX_FILE in plan.index_files
    report.index = "authored" if authored else "generated"
    ai_cache: dict[str, dict[str, Any]] = {}
    try:
        if authored:
            _copy_authored_index(tree, plan.index_files, pages)
            _, issues = validate_index(pages)
            if issues:
                raise IndexInvalid(issues)
        else:
            generated = generate_index(pages)
            if describe is not None:
                described = enrich(pages, generated, describe, cache_of(before))
                report.index = "ai"
                report.ai = {"written": described.written, "reused": described.reused, "failed": described.failed}
                ai_cache = described.cache
            write_index_files(pages, generated)
    except IndexInvalid as exc:
        raise BuildFailed(f"invalid index: {exc}", exc.issues) from exc
    report.hashes = hashes
    report.pages = len(units)
    _write(target / UNITS_FILE, json.dumps({n: [[u.text, u.locator] for u in us] for n, us in units.items()}))
    manifest = {"hashes": hashes, "index": report.index, "errors": report.view()["errors"], "ai_index": ai_cache}
    _write(target / MANIFEST_FILE, json.dumps(manifest, ensure_ascii=False))
    _fsync_tree(target)
    return report


def _fsync_tree(root: Path) -> None:
    """Flush a generation to disk before the database points at it (a crash must not leave it half-written)."""
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def source_statuses(report: BuildReport) -> dict[str, tuple[str, str | None]]:
    """Per source file after a build: (`ingested` | `failed` | `skipped`, what went wrong, if anything)."""
    out: dict[str, tuple[str, str | None]] = {name: ("ingested", None) for name in report.hashes}
    for error in report.errors:
        name = error.filename
        if name in report.kept_previous:
            out[name] = ("failed", f"{error.reason} (the previous version is kept)")
        elif name in out:
            out[name] = ("ingested", error.reason)  # usable with a partial problem, e.g. one unreadable PDF page
        else:
            out[name] = ("skipped" if error.kind == "skip" else "failed", error.reason)
    return out
