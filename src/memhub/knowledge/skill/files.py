"""Resource files of a skill: path rules, decoding, size limits, content hashes and media types.

A path names a file inside the skill's folder (it becomes `<name>/<path>` in an export's zip), so it may
not leave that folder or mean different things on different systems: no empty path or segment, no absolute
path or drive, no `.` or `..` segment, no backslash, no control character, at most 512 characters.

A file written now must also be unambiguous where it is unpacked: no Unicode format character (bidi controls,
zero-width spaces and joiners, the BOM: a name that displays as something it is not), not the skill's own
`SKILL.md` in any case, and no two files of a version whose paths differ only in case or Unicode normalisation
(`SKILL.md`/`skill.md`, `Run.sh`/`run.sh` are one file on macOS and Windows, and the unpacked copy would be
whichever came last). Paths are compared for this as `path_key` folds them; reads and removals still take a
stored path exactly, so a file kept from before these rules can still be read and removed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.ids import has_control
from memhub.knowledge.skill.config import SkillConfig
from memhub.knowledge.skill.errors import InvalidPath, ResourceTooLarge, SkillBadRequest
from memhub.model.skills import SkillFile

MAX_PATH_CHARS = 512
SKILL_DOCUMENT = "SKILL.md"  # an export's `<name>/SKILL.md`: no resource may take its place
SKILL_DOCUMENT_KEY = SKILL_DOCUMENT.casefold()
ENCODINGS = ("utf-8", "base64")
_DRIVE = re.compile(r"^[A-Za-z]:")
_WHITESPACE = re.compile(r"[ \t\r\n]")
DEFAULT_MIME = "application/octet-stream"
# The original's table: a file's media type when the request does not name one.
MIME_BY_EXTENSION = {
    ".sh": "text/x-shellscript",
    ".bash": "text/x-shellscript",
    ".js": "application/javascript",
    ".mjs": "application/javascript",
    ".ts": "application/typescript",
    ".json": "application/json",
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".yml": "application/yaml",
    ".yaml": "application/yaml",
    ".py": "text/x-python",
    ".html": "text/html",
    ".css": "text/css",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
}


@dataclass(frozen=True, slots=True)
class ResourcePayload:
    """One file as a request sends it."""

    path: str
    content: str
    encoding: str  # utf-8 | base64
    mime_type: str | None = None
    is_executable: bool = False


@dataclass(frozen=True, slots=True)
class DecodedFile:
    """A checked file: its manifest entry and its bytes."""

    entry: SkillFile
    data: bytes


def check_path(path: str, field: str) -> str:
    """The path when it is a safe relative path inside the skill; InvalidPath naming the field otherwise."""

    def refuse(rule: str) -> InvalidPath:
        return InvalidPath(f"{field}: {rule}")

    if not path:
        raise refuse("must not be empty")
    if len(path) > MAX_PATH_CHARS:
        raise refuse(f"must be at most {MAX_PATH_CHARS} characters")
    if has_control(path):
        raise refuse("must not contain NUL or other control characters")
    if "\\" in path:
        raise refuse("must not contain a backslash (use '/')")
    if path.startswith("/") or _DRIVE.match(path):
        raise refuse("must be relative (no leading '/' or drive letter)")
    segments = path.split("/")
    if ".." in segments:
        raise refuse("must not contain a '..' segment")
    if "." in segments or "" in segments:
        raise refuse("must not contain empty or '.' segments")
    return path


def path_key(path: str) -> str:
    """A path as the file systems an export is unpacked on may see it: NFC-normalised and case-folded."""
    return unicodedata.normalize("NFC", path).casefold()


def check_new_path(path: str, field: str) -> str:
    """`check_path`, and the rules for a file written now: no format character, not SKILL.md in any case."""
    check_path(path, field)
    for ch in path:
        if unicodedata.category(ch) == "Cf":
            raise InvalidPath(
                f"{field}: must not contain invisible formatting characters (bidi controls, zero-width "
                f"characters), found U+{ord(ch):04X}"
            )
    if path_key(path) == SKILL_DOCUMENT_KEY:
        raise InvalidPath(f"{field}: must not be {SKILL_DOCUMENT} in any case (it is the skill's own document)")
    return path


def decode(content: str, encoding: str, field: str) -> bytes:
    """The bytes a payload carries (utf-8 text or base64); bad base64 is refused, never guessed at."""
    if encoding == "utf-8":
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError:
            raise SkillBadRequest(field, "must be valid UTF-8 text (lone surrogates are not)") from None
    if encoding == "base64":
        try:
            return base64.b64decode(_WHITESPACE.sub("", content), validate=True)
        except (binascii.Error, ValueError):
            raise SkillBadRequest(field, "must be valid base64") from None
    raise SkillBadRequest(field, f"encoding must be one of {', '.join(ENCODINGS)}")


def sha256_hex(data: bytes) -> str:
    """The content address of a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def guess_mime(path: str) -> str:
    """The media type the original gives a file by its extension (octet-stream when unknown)."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return DEFAULT_MIME
    return MIME_BY_EXTENSION.get(path[dot:].lower(), DEFAULT_MIME)


def decode_files(payloads: Sequence[ResourcePayload], field: str, config: SkillConfig) -> list[DecodedFile]:
    """Every payload checked and decoded, in order; a path given twice in one call is refused."""
    if len(payloads) > config.max_resources_per_call:
        raise SkillBadRequest(field, f"must contain at most {config.max_resources_per_call} items")
    seen: dict[str, int] = {}
    out: list[DecodedFile] = []
    for i, p in enumerate(payloads):
        where = f"{field}[{i}]"
        path = check_new_path(p.path, f"{where}.path")
        key = path_key(path)
        if key in seen:
            earlier = payloads[seen[key]].path
            same = "is the same path as" if earlier == path else "differs only in case or normalisation from"
            raise SkillBadRequest(f"{where}.path", f"{same} {field}[{seen[key]}].path")
        seen[key] = i
        data = decode(p.content, p.encoding, f"{where}.content")
        if len(data) > config.max_resource_bytes:
            raise ResourceTooLarge(
                f"{where} ({path}) is {len(data)} bytes, over the limit of {config.max_resource_bytes} bytes"
            )
        entry = SkillFile(
            path=path,
            sha256=sha256_hex(data),
            size_bytes=len(data),
            mime_type=p.mime_type or guess_mime(path),
            is_executable=p.is_executable,
        )
        out.append(DecodedFile(entry, data))
    return out


def check_kept(written: Sequence[DecodedFile], kept: Sequence[SkillFile], field: str) -> None:
    """No written file may differ only in case or normalisation from a file the version keeps."""
    by_key = {path_key(f.path): f.path for f in kept}
    for i, d in enumerate(written):
        other = by_key.get(path_key(d.entry.path))
        if other is not None and other != d.entry.path:
            raise SkillBadRequest(
                f"{field}[{i}].path", f"differs only in case or normalisation from the skill's file {other}"
            )


def check_total(files: Sequence[SkillFile], config: SkillConfig) -> None:
    """All of a version's files together stay within the per-skill limit."""
    total = sum(f.size_bytes for f in files)
    if total > config.max_skill_total_bytes:
        raise ResourceTooLarge(
            f"the skill's files would total {total} bytes, over the limit of {config.max_skill_total_bytes} bytes"
        )
