"""The L2 scene file format: a META block, then the narrative."""

from __future__ import annotations

import re
from dataclasses import dataclass

META_START = "-----META-START-----"
META_END = "-----META-END-----"

_META_BLOCK = re.compile(rf"^\s*{re.escape(META_START)}\s*\n(?P<meta>.*?)\n?{re.escape(META_END)}[ \t]*\n?", re.DOTALL)


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
