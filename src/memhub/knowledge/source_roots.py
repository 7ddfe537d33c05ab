"""Local folders a knowledge asset may be built from: only those under the roots an operator allowed
(none by default), so nobody can make the server read its own disk through a wiki or a code graph."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memhub.errors import BadRequest, Forbidden


def under_roots(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the path, symlinks resolved, is one of the roots or inside one (False when it cannot be resolved)."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return False
    return any(resolved == root or root in resolved.parents for root in roots)


def local_source_dir(source_path: str, roots: Sequence[Path], setting: str) -> str:
    """The resolved directory a `source_path` names; 400 when relative or not a directory, 403 outside the roots."""
    if "\x00" in source_path:
        raise BadRequest("source_path: must not contain NUL characters")
    path = Path(source_path)
    if not path.is_absolute():
        raise BadRequest("source_path: must be an absolute path")
    if not under_roots(path, roots):
        raise Forbidden(f"source_path: not under an allowed source root (set {setting} to allow local folders)")
    resolved = path.resolve()
    if not resolved.is_dir():
        raise BadRequest("source_path: not a directory")
    return str(resolved)
