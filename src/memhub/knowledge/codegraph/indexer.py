"""Index a source tree into a code-graph generation, re-parsing only files whose content changed.

Files are found by walking the tree (hidden directories, dependency and build folders skipped; symlinks
not followed, so a link loop cannot trap the walk), filtered by extension, size and a binary check, and
hashed. A file whose hash matches the previous generation keeps its stored facts; the others are parsed
again. Resolution then runs over the facts of every file, so references into and out of changed files
are re-resolved and the result equals a clean rebuild by construction.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from memhub.knowledge.build_queue import BuildStopped
from memhub.knowledge.codegraph.go_facts import extract_go
from memhub.knowledge.codegraph.java_facts import extract_java
from memhub.knowledge.codegraph.javascript_facts import LANGUAGES as JS_LANGUAGES
from memhub.knowledge.codegraph.javascript_facts import extract_javascript
from memhub.knowledge.codegraph.python_facts import extract_python
from memhub.knowledge.codegraph.resolve import resolve, resolve_changes
from memhub.knowledge.codegraph.rust_facts import extract_rust
from memhub.knowledge.codegraph.syntax import FileTooComplex
from memhub.model.graph import FileFacts, FileRecord
from memhub.model.graph_codec import decode_facts, encode_facts
from memhub.store.graph_files import GRAPH_FORMAT, copy_graph, new_graph, open_graph

log = logging.getLogger("memhub.codegraph")

Extractor = Callable[[str, bytes], FileFacts]
FILE_MAX_BYTES = 1024 * 1024
# Directory levels below the root that are indexed; deeper folders are skipped with a reason (real code stays far
# above this: a Java package path is rarely 20 levels deep).
MAX_DEPTH = 64
# Below this many files to parse, starting worker processes costs more than it saves.
PARALLEL_MIN_FILES = 200
# A change of up to this many files re-resolves only what it can affect; a bigger one resolves everything.
INCREMENTAL_MAX_FILES = 50
# Generations whose file facts stay in memory (a large repository's facts take tens of MB).
FACTS_CACHED = 2
_FACTS: OrderedDict[str, dict[str, FileFacts]] = OrderedDict()
# Folders that hold dependencies, build output or tool state, never the repository's own code.
SKIPPED_DIRS = frozenset(
    {"node_modules", "__pycache__", "venv", ".venv", "env", "dist", "build", "target", "vendor", "site-packages"}
)


def _extractors() -> dict[str, tuple[str, Extractor]]:
    """Suffix → (language, extractor). JS/TS facts are made from the file alone (no view of other files),
    so a stored file's facts stay valid whatever else changes, which incremental indexing relies on."""
    table: dict[str, tuple[str, Extractor]] = {".py": ("python", extract_python), ".pyi": ("python", extract_python)}
    for suffix, (language, _) in JS_LANGUAGES.items():
        table[suffix] = (language, extract_javascript)
    table[".java"] = ("java", extract_java)
    table[".go"] = ("go", extract_go)
    table[".rs"] = ("rust", extract_rust)
    return table


@dataclass(slots=True)
class Skipped:
    """A file left out, and why (binary, too large, unreadable, too complex to extract)."""

    path: str
    reason: str


@dataclass(slots=True)
class IndexReport:
    """What one index run did."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    parse_errors: dict[str, int] = field(default_factory=dict)
    lines_parsed: int = 0
    resolved_files: int = 0
    parse_seconds: float = 0.0
    resolve_seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)


def discover(root: Path, *, max_bytes: int = FILE_MAX_BYTES) -> tuple[list[tuple[str, Path]], list[Skipped]]:
    """Source files under `root` (relative POSIX path, full path) and the ones skipped with a reason.

    The walk keeps its own stack (os.walk recurses once per level, so a tree ~1,000 directories deep would end
    the build with a RecursionError), never follows symlinks, and skips directories more than MAX_DEPTH levels
    down with a reason.
    """
    extractors = _extractors()
    found: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            rel = here.relative_to(root).as_posix()
            skipped.append(Skipped(rel, f"unreadable: {exc.strerror or exc}"))
            continue
        subdirs: list[Path] = []
        for entry in entries:
            name = entry.name
            if name.startswith(".") or entry.is_symlink():
                continue
            full = here / name
            if entry.is_dir(follow_symlinks=False):
                if name in SKIPPED_DIRS:
                    continue
                if depth >= MAX_DEPTH:
                    reason = f"more than {MAX_DEPTH} directory levels below the root; skipped"
                    skipped.append(Skipped(full.relative_to(root).as_posix(), reason))
                else:
                    subdirs.append(full)
                continue
            if full.suffix not in extractors or not entry.is_file(follow_symlinks=False):
                continue
            rel = full.relative_to(root).as_posix()
            try:
                size = entry.stat(follow_symlinks=False).st_size
            except OSError as exc:
                skipped.append(Skipped(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            if size > max_bytes:
                skipped.append(Skipped(rel, f"too large: {size} bytes (limit {max_bytes})"))
                continue
            found.append((rel, full))
        # Depth first, in name order: the same order os.walk(topdown=True) with sorted directories gives.
        stack.extend((d, depth + 1) for d in reversed(subdirs))
    return found, skipped


def _extract_one(job: tuple[str, str, bytes, str]) -> tuple[FileFacts, str] | str:
    """The file's facts and their encoding, or why the file is skipped: one file the extractors cannot
    read (too complex, or a bug they hit) is left out of the graph instead of failing the whole build."""
    rel, suffix, data, _ = job
    try:
        facts = _extractors()[suffix][1](rel, data)
    except FileTooComplex as exc:
        return str(exc)
    except RecursionError:
        return "too complex: nested too deep to read"
    except Exception as exc:
        log.exception("code graph: extracting %s failed", rel)
        return f"could not be read: {type(exc).__name__}"
    return facts, encode_facts(facts)


def _extract_encoded(job: tuple[str, str, bytes, str]) -> tuple[int, str] | str:
    """A worker's answer: the error count and the encoded facts (a string pickles fast; dataclasses do not),
    or why the file is skipped."""
    extracted = _extract_one(job)
    if isinstance(extracted, str):
        return extracted
    facts, document = extracted
    return facts.parse_errors, document


def _extract_all(
    todo: list[tuple[str, str, bytes, str]], workers: int, stop: threading.Event | None
) -> Iterator[tuple[FileFacts, str] | str]:
    """Parse in worker processes when there is enough to do (tree walking is CPU-bound Python); each file's
    facts in order, checking `stop` between files."""
    if workers <= 1 or len(todo) < PARALLEL_MIN_FILES:
        for job in todo:
            _check(stop)
            yield _extract_one(job)
        return
    extractors = _extractors()
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        answers = pool.map(_extract_encoded, todo, chunksize=16)
        for (rel, suffix, _, _), answer in zip(todo, answers, strict=True):
            _check(stop)
            yield answer if isinstance(answer, str) else (decode_facts(rel, extractors[suffix][0], *answer), answer[1])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a stopped build does not wait for the files left


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise BuildStopped("the build was stopped at its time limit")


def _external_meta(by_file: dict[str, int]) -> dict[str, object]:
    kept = {k: v for k, v in sorted(by_file.items()) if v}
    return {"external_by_file": kept, "external_calls": sum(kept.values())}


def _format_of(generation: Path) -> int:
    graph = open_graph(generation)
    try:
        return graph.graph_format()
    finally:
        graph.close()


def _remember(generation: Path, facts: dict[str, FileFacts]) -> None:
    """Keep the facts of the newest generations in memory, so a sync need not read every file's facts."""
    _FACTS[str(generation)] = facts
    _FACTS.move_to_end(str(generation))
    while len(_FACTS) > FACTS_CACHED:
        _FACTS.popitem(last=False)


def index_tree(
    root: Path,
    target: Path,
    previous: Path | None = None,
    *,
    max_bytes: int = FILE_MAX_BYTES,
    meta: dict | None = None,
    workers: int | None = None,
    stop: threading.Event | None = None,
) -> IndexReport:
    """Write a complete generation for the tree at `root` into the database file `target`.

    `workers` parse processes (default: the CPU count) are used when over PARALLEL_MIN_FILES files changed.
    Once `stop` is set (the build's time limit passed) it ends with BuildStopped between two files.
    """
    workers = workers if workers is not None else (os.cpu_count() or 1)
    extractors = _extractors()
    report = IndexReport()
    if previous is not None and _format_of(previous) != GRAPH_FORMAT:
        previous = None  # written by another version: its facts and edges are rebuilt from the sources
    graph = copy_graph(previous, target) if previous is not None else new_graph(target)
    try:
        stored = {f.path: f for f in graph.files()}
        files, report.skipped = discover(root, max_bytes=max_bytes)
        seen: set[str] = set()
        todo: list[tuple[str, str, bytes, str]] = []  # (path, suffix, content, sha256) to parse
        started = time.perf_counter()
        for rel, full in files:
            try:
                data = full.read_bytes()
            except OSError as exc:
                report.skipped.append(Skipped(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            if b"\x00" in data[:8192]:
                report.skipped.append(Skipped(rel, "binary content"))
                continue
            seen.add(rel)
            digest = hashlib.sha256(data).hexdigest()
            old = stored.get(rel)
            if old is not None and old.sha256 == digest:
                report.unchanged += 1
                continue
            (report.changed if old is not None else report.added).append(rel)
            todo.append((rel, full.suffix, data, digest))
        batch: list[tuple[FileRecord, FileFacts, str]] = []
        for (rel, suffix, data, digest), extracted in zip(todo, _extract_all(todo, workers, stop), strict=True):
            if isinstance(extracted, str):
                # Left out like a file too large: a version indexed before is removed with its symbols.
                report.skipped.append(Skipped(rel, extracted))
                seen.discard(rel)
                (report.changed if rel in stored else report.added).remove(rel)
                continue
            facts, document = extracted
            report.lines_parsed += data.count(b"\n") + 1
            if facts.parse_errors:
                report.parse_errors[rel] = facts.parse_errors
            record = FileRecord(rel, extractors[suffix][0], digest, len(data), facts.parse_errors)
            batch.append((record, facts, document))
        report.removed = sorted(set(stored) - seen)
        changed = {*report.changed, *report.added, *report.removed}
        incremental = previous is not None and len(changed) <= INCREMENTAL_MAX_FILES
        # The facts of every file, for the resolver: kept in memory from the previous build when this
        # process made it (a sync), else read from the previous generation.
        facts_by_path: dict[str, FileFacts] = {}
        if incremental and previous is not None:
            cached = _FACTS.get(str(previous))
            facts_by_path = dict(cached) if cached is not None else {f.path: f for f in graph.file_facts()}
        before = [facts_by_path[p] for p in sorted(changed) if p in facts_by_path]
        graph.drop_files(report.removed)
        graph.put_files([(record, document) for record, _, document in batch])
        report.parse_seconds = time.perf_counter() - started
        _check(stop)
        started = time.perf_counter()
        if incremental:
            for path in report.removed:
                facts_by_path.pop(path, None)
            facts_by_path.update((record.path, facts) for record, facts, _ in batch)
        else:
            # Facts just parsed are at hand; only unchanged files' facts are read back from the store.
            facts_by_path = {record.path: facts for record, facts, _ in batch}
            kept = [path for path in stored if path in seen and path not in facts_by_path]
            facts_by_path.update((f.path, f) for f in graph.file_facts(kept))
        ordered = [facts_by_path[p] for p in sorted(facts_by_path)]
        externals: dict[str, int] = {}
        if incremental:
            resolved, affected = resolve_changes(ordered, changed, before)
            touched = {
                s.qname
                for f in (*before, *(facts_by_path[p] for p in changed if p in facts_by_path))
                for s in f.symbols
            }
            rows = [sym for sym in resolved.symbols.values() if sym.file in affected or sym.qname in touched]
            externals = {
                k: v for k, v in graph.meta().get("external_by_file", {}).items() if k not in affected
            } | resolved.external_by_file
            graph.patch_graph(
                sorted(affected),
                sorted(touched),
                rows,
                resolved.edges,
                resolved.unresolved,
                {**(meta or {}), **_external_meta(externals), "indexed_at": time.time()},
            )
            report.resolved_files = len(affected)
        else:
            resolved = resolve(ordered)
            graph.put_graph(
                resolved.symbols.values(),
                resolved.edges,
                resolved.unresolved,
                {**(meta or {}), **_external_meta(resolved.external_by_file), "indexed_at": time.time()},
            )
            report.resolved_files = len(ordered)
        _remember(target, facts_by_path)
        report.resolve_seconds = time.perf_counter() - started
        graph.commit()
        report.counts = graph.counts()
    finally:
        graph.close()
    return report
