"""Gitignore-style globs of wiki `paths` entries: validation (never-matching globs are errors) and matching."""

from __future__ import annotations

import re
from functools import lru_cache


def glob_problem(pattern: object) -> str | None:
    """Why a `paths` glob is malformed or can never match a file path, or None when it is fine."""
    if not isinstance(pattern, str):
        return "glob must be a string"
    if not pattern.strip():
        return "glob is empty"
    if pattern != pattern.strip():
        return "glob has leading or trailing whitespace"
    if any(ord(c) < 32 for c in pattern):
        return "glob contains a control character"
    if "\\" in pattern:
        return "glob uses a backslash; use '/' as the separator"
    if "{" in pattern or "}" in pattern:
        return "brace expansion {a,b} is not supported; list each glob separately"
    if pattern.startswith("/"):
        return "glob is absolute; globs are relative to the repository root"
    if pattern.endswith("/"):
        return "glob ends with '/', so it names a directory and can never match a file; add '**'"
    segments = pattern.split("/")
    if "" in segments:
        return "glob has an empty path segment ('//') and can never match"
    for seg in segments:
        if seg in (".", ".."):
            return f"glob has a '{seg}' segment and can never match a normalised path"
        if "**" in seg and seg != "**":
            return "'**' must be a whole path segment"
        problem = _class_problem(seg)
        if problem:
            return problem
    return None


def _class_problem(segment: str) -> str | None:
    i = 0
    while i < len(segment):
        if segment[i] == "[":
            j = i + 1
            if j < len(segment) and segment[j] in "!^":
                j += 1
            if j < len(segment) and segment[j] == "]":
                return "glob has an empty character class '[]' and can never match"
            end = segment.find("]", j)
            if end < 0:
                return "glob has an unclosed '['"
            i = end + 1
            continue
        if segment[i] == "]":
            return "glob has an unmatched ']'"
        i += 1
    return None


def _segment_regex(seg: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = seg.index("]", i + 2 if seg[i + 1 : i + 2] in ("!", "^") else i + 1)
            body = seg[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    segments = pattern.split("/")
    if len(segments) == 1:
        segments = ["**", *segments]  # no '/': match the file name at any depth, like gitignore
    parts: list[str] = []
    for idx, seg in enumerate(segments):
        last = idx == len(segments) - 1
        if seg == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(seg) + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z")


def normalise_path(path: str) -> str:
    """A message path as POSIX, without `./`, leading `/` or drive, so globs can be matched."""
    text = path.strip().replace("\\", "/")
    text = re.sub(r"^[A-Za-z]:/", "", text)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    return "/".join(parts)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether a valid glob matches a path or any trailing part of it (absolute paths in messages)."""
    norm = normalise_path(path)
    if not norm:
        return False
    regex = _glob_regex(pattern)
    parts = norm.split("/")
    # A message may name `/home/me/repo/src/x.py` or just `src/x.py`; try each suffix at a '/'.
    return any(regex.match("/".join(parts[i:])) for i in range(len(parts)))


# ---------------------------------------------------------------------------------------------
# Loading and validation
