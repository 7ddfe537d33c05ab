"""How a skill version goes on the wire: the original's summary and detail shapes, and the export zip."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

from memhub.knowledge.skill.files import SKILL_DOCUMENT, path_key
from memhub.model.skills import SkillFile, SkillVersion


def _or_none(value: str) -> str | None:
    return value or None


def summary(v: SkillVersion) -> dict[str, Any]:
    """The original's SkillSummary; `metadata` only when the skill has some."""
    out: dict[str, Any] = {
        "skill_id": v.skill_id,
        "name": v.name,
        "description": v.description,
        "version": v.version,
        "is_head": v.is_head,
        "status": v.status,
        "owner_user_id": _or_none(v.user_id),
        "owner_agent_id": v.owner_agent_id,
        "team_id": _or_none(v.team_id),
        "task_id": _or_none(v.task_id),
        "created_at_ms": v.created_ms,
        "updated_at_ms": v.updated_ms,
    }
    if v.metadata:
        out["metadata"] = dict(v.metadata)
    return out


def manifest_entry(f: SkillFile) -> dict[str, Any]:
    """One file of a version's manifest as the original lists it."""
    return {"path": f.path, "size_bytes": f.size_bytes, "mime_type": f.mime_type, "is_executable": f.is_executable}


def detail(v: SkillVersion, *, include_content: bool = True, include_manifest: bool = True) -> dict[str, Any]:
    """The summary plus `content_hash`, and the content and manifest unless left out."""
    out = summary(v)
    out["content_hash"] = v.content_hash
    if include_content:
        out["content"] = v.content
    if include_manifest:
        out["manifest"] = [manifest_entry(f) for f in v.files]
    return out


def build_zip(v: SkillVersion, read: Callable[[SkillFile], bytes | None]) -> tuple[bytes, int, list[str]]:
    """`<name>/SKILL.md` and `<name>/<path>` for each file (mode 755 when executable, else 644).

    Returns the zip, how many files it holds besides SKILL.md, and a warning per file whose bytes are gone.
    Entries carry the version's time, so exporting one version twice gives the same bytes. A file stored before
    the path rules refused it (one named SKILL.md in any case, or one differing from another only in case) is
    left out with a warning: unpacked, it would replace the skill's document or another file.
    """
    stamp = time.gmtime(max(v.created_ms // 1000, 315_532_800))[:6]  # zip dates start in 1980
    buffer = io.BytesIO()
    warnings: list[str] = []
    count = 0
    taken = {path_key(SKILL_DOCUMENT)}
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _add(archive, f"{v.name}/{SKILL_DOCUMENT}", v.content.encode("utf-8"), 0o644, stamp)
        for f in v.files:
            if path_key(f.path) in taken:
                warnings.append(f"{f.path}: would overwrite another entry when unpacked, skipped")
                continue
            taken.add(path_key(f.path))
            data = read(f)
            if data is None:
                warnings.append(f"{f.path}: missing in storage, skipped")
                continue
            _add(archive, f"{v.name}/{f.path}", data, 0o755 if f.is_executable else 0o644, stamp)
            count += 1
    return buffer.getvalue(), count, warnings


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int, stamp: tuple[int, ...]) -> None:
    info = zipfile.ZipInfo(name, date_time=stamp)  # type: ignore[arg-type]
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # unix, so the mode bits below are read by unzip
    info.external_attr = (0o100000 | mode) << 16
    archive.writestr(info, data)


def versions_item(v: SkillVersion, expired: bool) -> Mapping[str, Any]:
    """A version in `versions`: its summary and whether the TTL made it unreadable."""
    return {**summary(v), "is_expired": expired}
