"""Safe relative paths for scene files: no traversal, no absolute paths, no odd characters."""

from __future__ import annotations

import re

MAX_PATH_CHARS = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def path_problem(path: str, *, allow_directory: bool = True) -> str | None:
    """Why a path is unsafe, or None when it is a safe relative path."""
    if not path:
        return "must not be empty"
    if len(path) > MAX_PATH_CHARS:
        return f"must be at most {MAX_PATH_CHARS} characters"
    if "\x00" in path or "\\" in path or path.startswith("/"):
        return "must be relative (no '..', no leading '/', no backslash/NUL)"
    if _CONTROL.search(path):
        return "must not contain control characters"
    parts = path.split("/")
    if path.endswith("/"):
        if not allow_directory:
            return "must name a file, not a directory"
        parts = parts[:-1]
    if any(part == ".." for part in parts):
        return "must be relative (no '..', no leading '/', no backslash/NUL)"
    if any(part in ("", ".") for part in parts):
        return "must not contain empty or '.' segments"
    return None
