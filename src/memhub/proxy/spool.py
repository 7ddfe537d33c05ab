"""The capture spool: finished turns kept on disk, one JSON file each, until the store has them.

Layout under the spool root (`<data_dir>/proxy-capture/`):

    run-<pid>-<hex>/          one per running capture; its `.lock` is locked for as long as the run lives
        <submitted ms>-<turn key>.json
    rejected/                 turns the store refused for good, with the reason, kept for an operator
    <name>.json               a file put back by hand (e.g. out of rejected/): replayed at the next start

Every write is atomic and durable: a temporary name, flush + fsync, rename, fsync of the directory. A run owns
only its own directory, so two processes over one data dir (`memhub serve` and `memhub proxy`) never work on the
same file. At start a run adopts what ended runs left (their lock is free once the process is gone, `kill -9`
included): it moves their files into its own directory and replays them in submitted order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memhub.durable import fsync_directory

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_nonblocking(fd: int) -> None:
        """An exclusive lock on the file's first byte; OSError when another open file holds it."""
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

else:
    import fcntl

    def _lock_nonblocking(fd: int) -> None:
        """An exclusive flock on the file; BlockingIOError when another open file holds it."""
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


log = logging.getLogger("memhub.proxy.capture")

SPOOL_DIR = "proxy-capture"  # under the data dir
REJECTED_DIR = "rejected"
LOCK_FILE = ".lock"
RUN_PREFIX = "run-"
NEW_PREFIX = ".new-"  # a run directory being made: locked before it gets its run- name
SUFFIX = ".json"
TMP_SUFFIX = ".tmp"


def _write_durably(path: Path, record: dict[str, Any]) -> None:
    """`record` at `path`, all of it or nothing, on disk when this returns."""
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        # Owner-only, as the database is: a turn holds what the user said and what the model answered.
        with os.fdopen(os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def _try_lock(path: Path, *, create: bool) -> int | None:
    """An fd holding an exclusive lock on `path`; None when another open file holds it (or, without `create`,
    when there is no such file)."""
    try:
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        return None
    try:
        _lock_nonblocking(fd)
    except OSError:  # held by another open file (BlockingIOError on POSIX, PermissionError on Windows)
        os.close(fd)
        return None
    return fd


def turn_file_name(submitted_ms: int, key: str) -> str:
    """A turn's file name: sorting names sorts turns by when they were submitted."""
    return f"{submitted_ms:015d}-{key}{SUFFIX}"


def key_of(path: Path) -> str:
    """The turn key a spool file name carries."""
    return path.name.removesuffix(SUFFIX).partition("-")[2]


class Spool:
    """One run's share of the spool root. `claim` first (from the thread that writes), `release` last."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.rejected = root / REJECTED_DIR
        self.dir: Path | None = None  # this run's directory, once claimed
        self._lock_fd: int | None = None

    def claim(self) -> list[Path]:
        """Make this run's directory, adopt every turn an ended run left, and return this run's turn files in
        submitted order (the ones to replay)."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        new = self.root / f"{NEW_PREFIX}{name}"
        new.mkdir(mode=0o700)
        fd = _try_lock(new / LOCK_FILE, create=True)
        assert fd is not None  # a directory nobody else knows yet
        own = self.root / f"{RUN_PREFIX}{name}"
        # Locked before it is named as a run: another run never sees this directory unlocked while it lives.
        new.rename(own)
        fsync_directory(self.root)
        self.dir, self._lock_fd = own, fd
        for entry in sorted(self.root.iterdir()):
            if entry == own or entry.name == REJECTED_DIR:
                continue
            if entry.is_dir() and entry.name.startswith((RUN_PREFIX, NEW_PREFIX)):
                self._adopt_run(entry)
            elif entry.is_file() and entry.name.endswith(SUFFIX):
                self._move_in(entry)
        fsync_directory(own)
        return sorted(self.files())

    def files(self) -> Iterator[Path]:
        """This run's turn files, in no order."""
        assert self.dir is not None
        return (p for p in self.dir.iterdir() if p.name.endswith(SUFFIX))

    def write(self, name: str, record: dict[str, Any]) -> Path:
        """A new turn file in this run's directory (atomic, durable)."""
        assert self.dir is not None
        path = self.dir / name
        _write_durably(path, record)
        return path

    def replace(self, path: Path, record: dict[str, Any]) -> None:
        """A turn file's new content (atomic, durable): its progress so far."""
        _write_durably(path, record)

    @staticmethod
    def read(path: Path) -> dict[str, Any]:
        record = json.loads(path.read_bytes())
        if not isinstance(record, dict):
            raise ValueError(f"{path.name}: not a JSON object")
        return record

    def remove(self, path: Path) -> None:
        """The turn is written: its file goes (durably, so a restart does not replay it)."""
        path.unlink(missing_ok=True)
        fsync_directory(path.parent)

    def reject(self, path: Path, record: dict[str, Any] | None) -> Path:
        """Move a turn the store refused for good to rejected/: `record` (with the reason) as its content, or the
        file as it is when it could not be read."""
        self.rejected.mkdir(exist_ok=True, mode=0o700)
        target = self.rejected / path.name
        if record is None:
            path.rename(target)
            fsync_directory(self.rejected)
            fsync_directory(path.parent)
            return target
        _write_durably(target, record)
        self.remove(path)
        return target

    def release(self) -> None:
        """Let go of this run's directory: removed when empty, else left for the next run to adopt."""
        if self._lock_fd is None or self.dir is None:
            return
        try:
            if not any(self.files()):
                (self.dir / LOCK_FILE).unlink(missing_ok=True)
                self.dir.rmdir()
        except OSError as exc:
            log.warning("spool directory %s not removed: %s", self.dir, exc)
        finally:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _adopt_run(self, run: Path) -> None:
        fd = _try_lock(run / LOCK_FILE, create=False)
        if fd is None:
            if run.name.startswith(RUN_PREFIX) and not (run / LOCK_FILE).exists():
                # A run directory has its lock from birth to its removal: this one is being removed (or its
                # removal was cut short), and holds no turn.
                with contextlib.suppress(OSError):
                    run.rmdir()
            return  # else: a live run's, or one a starting run is making
        try:
            for entry in sorted(run.iterdir()):
                if entry.name.endswith(SUFFIX):
                    self._move_in(entry)
                elif entry.name.endswith(TMP_SUFFIX):
                    # A write cut short by the end of its process: the turn never reached the spool.
                    log.error("capture spool: %s was never completed (the process ended mid-write)", entry)
                    entry.unlink()
            (run / LOCK_FILE).unlink()
            run.rmdir()
        except OSError as exc:
            log.warning("capture spool: %s not fully adopted (the next start tries again): %s", run, exc)
        finally:
            os.close(fd)

    def _move_in(self, path: Path) -> None:
        assert self.dir is not None
        target = self.dir / path.name
        if target.exists():
            # The same turn (same key, same millisecond) spooled twice: one copy is enough.
            path.unlink()
            return
        try:
            path.rename(target)
        except FileNotFoundError:
            return  # another run starting at the same moment took it
        log.info("capture spool: replaying %s", path)
