"""The L2 scene file format (META block + narrative) and the Scene Navigation footer of L3."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.sdk.scene_navigation import PATH_LINE_PREFIX
from memhub.store import DocumentRecord
from memhub.timeutil import ms_to_iso

META_START = "-----META-START-----"
META_END = "-----META-END-----"
NAVIGATION_HEADING = "## 🗺️ Scene Navigation (Scene Index)"

_META_BLOCK = re.compile(rf"^\s*{re.escape(META_START)}\s*\n(?P<meta>.*?)\n?{re.escape(META_END)}[ \t]*\n?", re.DOTALL)
_HEAT_FLAMES = (50, 100, 200, 500, 1000)


@dataclass(frozen=True, slots=True)
class SceneMeta:
    """The META header of a scene file."""

    created: str
    updated: str
    summary: str
    heat: int


def split_scene(content: str) -> tuple[dict[str, str], str]:
    """A scene file → (META fields, narrative body). Files without META are all body."""
    match = _META_BLOCK.match(content)
    if match is None:
        return {}, content.strip("\n")
    fields: dict[str, str] = {}
    for line in match.group("meta").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return fields, content[match.end() :].strip("\n")


def render_scene(meta: SceneMeta, body: str) -> str:
    """META block, a blank line, then the narrative."""
    summary = " ".join(meta.summary.split())  # one line: the block is line-oriented
    return (
        f"{META_START}\ncreated: {meta.created}\nupdated: {meta.updated}\nsummary: {summary}\n"
        f"heat: {meta.heat}\n{META_END}\n\n{body.strip(chr(10))}\n"
    )


def parse_heat(value: str | None, default: int) -> int:
    """The heat field as an int, or the default when absent or malformed."""
    try:
        return max(int(value), 0) if value is not None else default
    except ValueError:
        return default


def render_navigation(scenes: Sequence[DocumentRecord], heats: dict[str, int]) -> str:
    """The footer appended to the persona on read: scenes by heat, hottest first."""
    ordered = sorted(scenes, key=lambda d: (-heats.get(d.path, 0), -d.updated_ms, d.path))
    lines = ["---", NAVIGATION_HEADING, ""]
    for doc in ordered:
        heat = heats.get(doc.path, 0)
        flames = "🔥" * sum(heat >= t for t in _HEAT_FLAMES)
        lines.append(f"{PATH_LINE_PREFIX}{doc.path}")
        lines.append(f"**热度**: {heat} {flames}".rstrip() + f" | **更新**: {ms_to_iso(doc.updated_ms)}")
        lines.append(f"Summary: {doc.summary or ''}".rstrip())
        lines.append("")
    lines.append(
        "> Read a scene with `scenario/read` (or your read-file tool) using its path when the "
        "persona above is not enough."
    )
    return "\n".join(lines)
