"""Per-scope snapshots of the in-memory vector indexes, in a directory beside the database file.

A large scope's first search after a restart would otherwise read every vector of the scope from SQLite and, above
the exact limit, rebuild its HNSW graph (about a minute at 100k vectors). A snapshot holds what the index holds:
the int64 keys, the float32 matrix, and the graph as usearch saves it with its pending and recently added keys.

Files, for each (kind, scope) — named by a hash of both, so no scope key ever appears in a file name:
- `<kind>-<hash>.<token>.vec`: the sections one after the other (keys, matrix, pending, recent, graph);
- `<kind>-<hash>.meta.json`: which data file is current, and everything a reader checks before trusting it:
  format version, the database's identity, the scope's epoch, model, dimension, count, and each section's
  offset, size and checksum (`checksum`).

Writing: the data file is written to a temporary name, fsynced and renamed; then the meta the same way (the meta is
the commit point: a crash before its rename leaves the previous snapshot whole); then older data files of the scope
go. Reading trusts a snapshot only when the meta matches the database as a read transaction sees it (`find`) and
every section has its size and checksum (`read_rows`, `read_graph`); anything else is reported so the caller can
delete it and load from SQL.

Epochs count each scope's changes and start at 1 again in a new database, so the meta carries a random id kept in
the database (`database_id`): a snapshot of another database (one replaced, or restored from elsewhere) is never
used even when its epoch happens to match.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import secrets
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memhub.durable import fsync_directory
from memhub.index.vectors import IndexState

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
SUFFIX = ".vectors"  # the directory is `<db file>.vectors`
_META = ".meta.json"
_DATA = ".vec"
_TEMP = ".tmp"
_CHUNK = 16 * 1024 * 1024  # bytes per write; a stop request is seen between them
_BLOCK_WORDS = 8192  # the checksum sums 64 KiB blocks
_STALE_TEMP_SECONDS = 3600  # a temporary file this old was left by a crash (a live writer finishes in seconds)
_SECTIONS = ("keys", "matrix", "pending", "recent", "graph")


class SnapshotCorrupt(Exception):
    """A snapshot that cannot be trusted: unreadable, truncated, a checksum or field that does not match."""


@dataclass(frozen=True, slots=True)
class Section:
    offset: int
    size: int
    checksum: int


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """A snapshot as its meta file describes it."""

    database_id: str
    kind: str
    scope_key: str
    epoch: int
    model_id: str
    dim: int
    count: int
    data: str  # the data file's name
    sections: dict[str, Section]
    graph: dict[str, int] | None  # pending, recent, tombstones, size; None without a graph
    written_ms: int


@dataclass(frozen=True, slots=True)
class SnapshotRows:
    keys: np.ndarray  # int64 (count,)
    matrix: np.ndarray  # float32 (count, dim)
    pending: np.ndarray  # int64, empty without a graph
    recent: np.ndarray


class VectorSnapshots:
    """The snapshot directory of one database."""

    def __init__(self, directory: Path, database_id: str) -> None:
        self.directory = directory
        self.database_id = database_id

    @classmethod
    def beside(cls, db_file: Path, database_id: str) -> VectorSnapshots:
        return cls(db_file.with_name(db_file.name + SUFFIX), database_id)

    # -- names ---------------------------------------------------------------------------------
    @staticmethod
    def _stem(kind: str, scope_key: str) -> str:
        digest = hashlib.sha256(f"{kind}\0{scope_key}".encode()).hexdigest()[:32]
        return f"{kind}-{digest}"

    def _meta_path(self, kind: str, scope_key: str) -> Path:
        return self.directory / (self._stem(kind, scope_key) + _META)

    # -- finding and reading -------------------------------------------------------------------
    def find(self, kind: str, scope_key: str, *, epoch: int, model_id: str, dim: int) -> SnapshotMeta | None:
        """The scope's snapshot when it is of this database at exactly this epoch, model and dimension.

        A snapshot that can never be used again (another database, another format, an epoch behind, an unreadable
        meta) is deleted; one ahead of `epoch` (written by another process after this read began) is left alone.
        """
        path = self._meta_path(kind, scope_key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("vector snapshot meta %s unreadable (%s): loading from SQL", path.name, exc)
            return None
        try:
            meta = _parse_meta(raw)
        except SnapshotCorrupt as exc:
            log.warning("vector snapshot %s corrupt (%s): deleted, loading from SQL", path.name, exc)
            self._delete_if_current(path, raw)
            return None
        if (meta.kind, meta.scope_key) != (kind, scope_key):
            return None  # a hash collision: the other scope's snapshot, valid for it
        why = None
        if meta.database_id != self.database_id:
            why = "another database's"
        elif meta.epoch < epoch:
            why = f"stale (epoch {meta.epoch}, the database is at {epoch})"
        if why is not None:
            log.info("vector snapshot %s is %s: deleted", path.name, why)
            self._delete_if_current(path, raw)
            return None
        if meta.epoch != epoch or meta.model_id != model_id or meta.dim != dim:
            return None
        return meta

    def read_rows(self, meta: SnapshotMeta) -> SnapshotRows:
        """The keys, matrix and graph key lists, each checked against its size and checksum.

        The keys and the matrix are copy-on-write views of the file's pages, which a restart finds in the OS page
        cache: nothing is copied, and only rows the index changes get private pages. (Reading them into fresh memory
        instead costs several times the checksum on a VM, where a process's first touch of a page is slow.)
        """
        path = self.directory / meta.data
        expected = sum(s.size for s in meta.sections.values())
        try:
            with open(path, "rb") as f:
                actual = os.fstat(f.fileno()).st_size
                if actual != expected or not actual:
                    raise SnapshotCorrupt(f"{meta.data} has {actual} bytes, its meta says {expected}")
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except OSError as exc:
            raise SnapshotCorrupt(f"{meta.data}: {exc}") from exc
        graph = meta.graph or {}
        keys = _view(mapped, meta.sections["keys"], "<i8", (meta.count,), "keys")
        matrix = _view(mapped, meta.sections["matrix"], "<f4", (meta.count, meta.dim), "matrix")
        pending = _view(mapped, meta.sections["pending"], "<i8", (graph.get("pending", 0),), "pending").copy()
        recent = _view(mapped, meta.sections["recent"], "<i8", (graph.get("recent", 0),), "recent").copy()
        return SnapshotRows(keys, matrix, pending, recent)

    def read_graph(self, meta: SnapshotMeta) -> bytearray:
        """The saved graph's bytes, checked against their size and checksum."""
        section = meta.sections["graph"]
        buffer = bytearray(section.size)
        try:
            with open(self.directory / meta.data, "rb", buffering=0) as f:
                _read_section(f, section, memoryview(buffer), "graph")
        except OSError as exc:
            raise SnapshotCorrupt(f"{meta.data}: {exc}") from exc
        return buffer

    def delete(self, meta: SnapshotMeta) -> None:
        """Delete a snapshot found unusable, unless the scope's meta already names a newer one."""
        path = self._meta_path(meta.kind, meta.scope_key)
        try:
            raw = path.read_bytes()
        except OSError:
            raw = b""
        try:
            current = _parse_meta(raw).data if raw else None
        except SnapshotCorrupt:
            current = meta.data
        if current == meta.data:
            _unlink(path)
        _unlink(self.directory / meta.data)

    def _delete_if_current(self, path: Path, raw: bytes) -> None:
        """Delete a meta (and the data it names) if it still holds what was read; a rewritten one stays."""
        try:
            if path.read_bytes() != raw:
                return
        except OSError:
            return
        _unlink(path)
        with contextlib.suppress(Exception):
            _unlink(self.directory / json.loads(raw)["data"])

    # -- writing -------------------------------------------------------------------------------
    def write(
        self,
        kind: str,
        scope_key: str,
        *,
        epoch: int,
        model_id: str,
        state: IndexState,
        stop: Callable[[], bool] = lambda: False,
    ) -> bool:
        """Write the scope's snapshot atomically; False when `stop()` turned true meanwhile (nothing is left)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        stem = self._stem(kind, scope_key)
        name = f"{stem}.{secrets.token_hex(8)}{_DATA}"
        graph = state.graph
        empty = np.empty(0, dtype="<i8")
        parts: list[tuple[str, memoryview]] = [
            ("keys", _bytes_of(state.keys.astype("<i8", copy=False))),
            ("matrix", _bytes_of(state.matrix.astype("<f4", copy=False))),
            ("pending", _bytes_of(graph.pending.astype("<i8", copy=False) if graph else empty)),
            ("recent", _bytes_of(graph.recent.astype("<i8", copy=False) if graph else empty)),
            ("graph", memoryview(graph.data).cast("B") if graph else memoryview(b"")),
        ]
        temp = self.directory / (name + _TEMP)
        committed = False
        try:
            sections = _write_file(temp, parts, stop)
            if sections is None:
                return False
            os.replace(temp, self.directory / name)
            meta: dict[str, Any] = {
                "format": FORMAT_VERSION,
                "database_id": self.database_id,
                "kind": kind,
                "scope_key": scope_key,
                "epoch": epoch,
                "model_id": model_id,
                "dim": int(state.matrix.shape[1]),
                "count": int(state.keys.shape[0]),
                "data": name,
                "sections": {k: [s.offset, s.size, s.checksum] for k, s in sections.items()},
                "graph": None
                if graph is None
                else {
                    "pending": int(graph.pending.shape[0]),
                    "recent": int(graph.recent.shape[0]),
                    "tombstones": graph.tombstones,
                    "size": graph.size,
                },
                "written_ms": int(time.time() * 1000),
            }
            meta_temp = self.directory / f"{stem}.{secrets.token_hex(8)}{_META}{_TEMP}"
            if _write_file(meta_temp, [("meta", memoryview(json.dumps(meta).encode()))], stop) is None:
                return False
            os.replace(meta_temp, self._meta_path(kind, scope_key))
            committed = True
            fsync_directory(self.directory)
        finally:
            if not committed:  # the previous snapshot stays the scope's; this one's files go
                _unlink(temp)
                _unlink(self.directory / name)
        for old in self.directory.glob(f"{stem}.*{_DATA}"):
            if old.name != name:
                _unlink(old)
        return True

    def prune(self, epoch_of: Callable[[str, str], int]) -> int:
        """Delete the snapshots that can never be used again: damaged, of another database, or behind the epoch
        `epoch_of(kind, scope_key)` gives (a scope written since, cleared, or re-embedded). Returns how many went."""
        pruned = 0
        with contextlib.suppress(OSError):
            for path in self.directory.glob(f"*{_META}"):
                try:
                    raw = path.read_bytes()
                    meta = _parse_meta(raw)
                    stale = meta.database_id != self.database_id or meta.epoch < epoch_of(meta.kind, meta.scope_key)
                except SnapshotCorrupt:
                    stale = True
                except OSError:
                    continue
                if stale:
                    self._delete_if_current(path, raw)
                    pruned += 1
        return pruned

    def delete_all(self) -> None:
        """Delete every snapshot (all vectors were dropped: none of them can match again)."""
        with contextlib.suppress(OSError):
            for path in self.directory.iterdir():
                if path.name.endswith((_META, _DATA)):
                    _unlink(path)

    def remove_stale_temp_files(self) -> None:
        """Temporary files a crashed writer left behind (a live writer's are younger than an hour)."""
        cutoff = time.time() - _STALE_TEMP_SECONDS
        with contextlib.suppress(OSError):
            for path in self.directory.glob(f"*{_TEMP}"):
                with contextlib.suppress(OSError):
                    if path.stat().st_mtime < cutoff:
                        path.unlink()


# -- format ---------------------------------------------------------------------------------------
def _parse_meta(raw: bytes) -> SnapshotMeta:
    try:
        doc = json.loads(raw)
        if doc["format"] != FORMAT_VERSION:
            raise SnapshotCorrupt(f"format {doc['format']}, this memhub reads {FORMAT_VERSION}")
        sections = {name: Section(*(int(v) for v in doc["sections"][name])) for name in _SECTIONS}
        offset = 0
        for name in _SECTIONS:
            if sections[name].offset != offset or sections[name].size < 0:
                raise SnapshotCorrupt(f"section {name} out of place")
            offset += sections[name].size
        graph = doc["graph"]
        meta = SnapshotMeta(
            database_id=str(doc["database_id"]),
            kind=str(doc["kind"]),
            scope_key=str(doc["scope_key"]),
            epoch=int(doc["epoch"]),
            model_id=str(doc["model_id"]),
            dim=int(doc["dim"]),
            count=int(doc["count"]),
            data=str(doc["data"]),
            sections=sections,
            graph=None if graph is None else {k: int(graph[k]) for k in ("pending", "recent", "tombstones", "size")},
            written_ms=int(doc["written_ms"]),
        )
    except SnapshotCorrupt:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotCorrupt(f"meta unreadable: {exc!r}") from exc
    if "/" in meta.data or "\\" in meta.data or not meta.data.endswith(_DATA):
        raise SnapshotCorrupt(f"data file name {meta.data!r}")
    if meta.count < 0 or meta.dim <= 0:
        raise SnapshotCorrupt("count or dimension out of range")
    return meta


def _bytes_of(array: np.ndarray) -> memoryview:
    return memoryview(np.ascontiguousarray(array)).cast("B")


def _write_file(path: Path, parts: list[tuple[str, memoryview]], stop: Callable[[], bool]) -> dict[str, Section] | None:
    """Write the parts one after the other, fsynced; their sections, or None (and no file) when stopped."""
    sections: dict[str, Section] = {}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with open(fd, "wb", buffering=0) as f:
            offset = 0
            for name, data in parts:
                for start in range(0, len(data), _CHUNK):
                    if stop():
                        raise _Stopped
                    f.write(data[start : start + _CHUNK])
                sections[name] = Section(offset, len(data), checksum(data))
                offset += len(data)
            os.fsync(f.fileno())
    except _Stopped:
        _unlink(path)
        return None
    except BaseException:
        _unlink(path)
        raise
    return sections


def checksum(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 of the wrapping 64-bit sums of the data's 64 KiB blocks, its length and its last bytes.

    Any changed word changes its block's sum, and the CRC-32 of the sums catches a changed sum like CRC-32 over the
    data would; but summing runs at memory speed, about six times faster than CRC-32 over 150 MB, and a first
    search waits for the matrix's check.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    n_words = raw.shape[0] // 8
    words = raw[: n_words * 8].view("<u8")
    full = n_words - n_words % _BLOCK_WORDS
    sums = words[:full].reshape(-1, _BLOCK_WORDS).sum(axis=1, dtype=np.uint64).astype("<u8")
    rest = np.array([words[full:].sum(dtype=np.uint64), raw.shape[0]], dtype="<u8")
    crc = zlib.crc32(rest.tobytes(), zlib.crc32(sums.tobytes()))
    return zlib.crc32(raw[n_words * 8 :].tobytes(), crc)


class _Stopped(Exception):
    pass


def _view(mapped: mmap.mmap, section: Section, dtype: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    """A checked section of a mapped file as an array of `shape` (sharing the mapping's pages)."""
    count = int(np.prod(shape))
    if count * np.dtype(dtype).itemsize != section.size:
        raise SnapshotCorrupt(f"section {name} has {section.size} bytes, {shape} of {dtype} expected")
    if checksum(memoryview(mapped)[section.offset : section.offset + section.size]) != section.checksum:
        raise SnapshotCorrupt(f"section {name} checksum mismatch")
    if not count:
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=section.offset).reshape(shape)


def _read_section(f: Any, section: Section, target: memoryview, name: str) -> None:
    if len(target) != section.size:
        raise SnapshotCorrupt(f"section {name} has {section.size} bytes, {len(target)} expected")
    f.seek(section.offset)
    done = 0
    while done < section.size:
        got = f.readinto(target[done : done + _CHUNK])
        if not got:
            raise SnapshotCorrupt(f"section {name} truncated")
        done += got
    if checksum(target) != section.checksum:
        raise SnapshotCorrupt(f"section {name} checksum mismatch")


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError, PermissionError):
        path.unlink()
