"""The files of one source root, reached only through checks: every file a build reads goes through here.

A wiki's sources live in a folder an operator allowed (or in its uploads); a symlink inside it may point
anywhere. So a name is resolved to its real path and refused unless that path is inside the root, the
file is opened without following a last-moment symlink, and (on Linux) the opened descriptor's own path
is checked again, so swapping a directory for a symlink between the check and the open gains nothing.
Only regular files are read: a FIFO named `notes.md` would otherwise block a build for ever.

The walk is iterative and bounded in depth: a tree a thousand directories deep is listed without
recursion, and what lies deeper than `MAX_DEPTH` is skipped with a reason instead of failing the build.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from memhub.knowledge.source_roots import under_roots
from memhub.knowledge.wiki.sourcetypes import SourceError

# Directory levels below the source root; real documentation trees stay well under this.
MAX_DEPTH = 32
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_FD_PATHS = Path("/proc/self/fd")


class PathOutsideRoot(ValueError):
    """A relative name or symlink that would leave the source root."""


class NotARegularFile(ValueError):
    """A name that is a directory, FIFO, socket or device rather than a file."""


class FileTooLarge(ValueError):
    """A file over the byte limit it was read with."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


def _inside(base: Path, path: Path) -> bool:
    return path == base or base in path.parents


def safe_path(root: str | os.PathLike[str], name: str) -> Path:
    """Resolve `name` under `root`, refusing absolute names, `..` escapes and symlinks leading outside."""
    return SourceTree(Path(root)).resolve(name)


class SourceTree:
    """One source root (resolved once) and the checked ways to list and read what is under it."""

    def __init__(self, root: Path, *, max_depth: int = MAX_DEPTH) -> None:
        self.root = Path(root).resolve()
        self.max_depth = max_depth

    def contains(self, path: Path) -> bool:
        """Whether the path, symlinks resolved, is the root or inside it (False when it cannot be resolved)."""
        return under_roots(path, (self.root,))

    def resolve(self, name: str) -> Path:
        """The real path of a relative name under the root; PathOutsideRoot for anything that leaves it."""
        if not name or "\x00" in name or Path(name).is_absolute() or name.startswith(("/", "\\")):
            raise PathOutsideRoot(f"{name!r} is not a relative path inside the source root")
        try:
            target = (self.root / name).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise PathOutsideRoot(f"{name!r} cannot be resolved: {exc}") from None
        if not _inside(self.root, target):
            raise PathOutsideRoot(f"{name!r} resolves outside the source root")
        return target

    def is_file(self, name: str) -> bool:
        """Whether the name is a regular file inside the root."""
        try:
            return self.resolve(name).is_file()
        except (PathOutsideRoot, OSError):
            return False

    def size(self, name: str) -> int:
        """The size of a regular file inside the root (OSError, PathOutsideRoot, NotARegularFile)."""
        info = os.stat(self.resolve(name))
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{name!r} is not a regular file")
        return info.st_size

    def read_bytes(self, name: str, max_bytes: int | None = None) -> bytes:
        """The bytes of a regular file inside the root, opened through the checks; FileTooLarge over `max_bytes`."""
        target = self.resolve(name)
        fd = os.open(target, _OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotARegularFile(f"{name!r} is not a regular file")
            real = _opened_path(fd)
            if real is not None and not _inside(self.root, real):
                raise PathOutsideRoot(f"{name!r} resolves outside the source root")
            if max_bytes is not None and info.st_size > max_bytes:
                raise FileTooLarge(info.st_size, max_bytes)
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(-1 if max_bytes is None else max_bytes + 1)
        finally:
            os.close(fd)
        if max_bytes is not None and len(data) > max_bytes:  # it grew after the fstat
            raise FileTooLarge(len(data), max_bytes)
        return data

    def read_text(self, name: str) -> str:
        """A file inside the root as UTF-8 text."""
        return self.read_bytes(name).decode("utf-8")

    def walk(self, errors: list[SourceError]) -> Iterator[tuple[str, Path]]:
        """(relative posix name, path) of every regular file under the root, hidden entries left out.

        Symlinks that lead outside the root, directories deeper than `max_depth` and special files are
        reported in `errors`; a symlinked directory inside the root is not walked twice.
        """
        stack: list[tuple[Path, str, int]] = [(self.root, "", 0)]
        while stack:
            directory, prefix, depth = stack.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as exc:
                errors.append(SourceError(prefix.rstrip("/") or ".", f"cannot list directory: {exc.strerror or exc}"))
                continue
            subdirs: list[tuple[Path, str, int]] = []
            for entry in entries:
                if entry.name.startswith("."):
                    continue  # .git, .venv, editor state: never source documents
                rel = prefix + entry.name
                path = Path(entry.path)
                try:
                    if entry.is_symlink():
                        if not self.contains(path):
                            errors.append(SourceError(rel, "symlink points outside the source root; refused"))
                        elif path.is_file():
                            yield rel, path
                        # A symlinked directory inside the root is reachable by its real path.
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if depth >= self.max_depth:
                            reason = f"more than {self.max_depth} directory levels below the source root; skipped"
                            errors.append(SourceError(rel, reason, "skip"))
                        else:
                            subdirs.append((path, rel + "/", depth + 1))
                    elif entry.is_file(follow_symlinks=False):
                        yield rel, path
                    else:
                        reason = "not a regular file (a FIFO, socket or device); skipped"
                        errors.append(SourceError(rel, reason, "skip"))
                except OSError as exc:
                    errors.append(SourceError(rel, f"cannot read file: {exc.strerror or exc}"))
            stack.extend(reversed(subdirs))


def _opened_path(fd: int) -> Path | None:
    """The real path of an open descriptor where the platform tells it (Linux), else None."""
    try:
        return Path(os.readlink(_FD_PATHS / str(fd)))
    except OSError:
        return None
