"""The Scene Navigation block older gateways appended to the persona on `core/read`, recognised exactly.

memhub's `core/read` now returns the persona as stored, as the original does; agents get the scene index from
`scenario/ls`. A client that read a persona from an older gateway may still write it back with the generated block
inside. `core/write` removes that block, and the agent kit does the same with what it reads, but only the block as
the gateway generated it: a text a user wrote after it, or a heading of their own that merely says "Scene
Navigation", is kept. One definition here, importable by the SDK without the server.

The generated block, line by line (`memhub.memory.scene_format.render_navigation` wrote it)::

    ---                                         (optional rule)
    ## 🗺️ Scene Navigation (Scene Index)
                                                (blank lines anywhere below)
    ### Path: <path>                            (per scene: the path line …
    **热度**: <n> 🔥… | **更新**: <time>         … then at most a heat line …
    Summary: <summary>                          … and a summary line)
    > Read a scene with `scenario/read` … (the footer, optional)

The block ends at the first line that is none of these. The `<scene-navigation>…</scene-navigation>` form (what
recall injects, echoed back by a client) is removed as a whole too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAVIGATION_HEADING = "## 🗺️ Scene Navigation (Scene Index)"
NAVIGATION_FOOTER = (
    "> Read a scene with `scenario/read` (or your read-file tool) using its path when the persona above is not enough."
)

_RULE = re.compile(r"^[ \t]*-{3,}[ \t]*$")
_HEADING = re.compile(r"^##[ \t]*(?:🗺\ufe0f?[ \t]*)?Scene Navigation \(Scene Index\)[ \t]*$")
_PATH_LINE = re.compile(r"^###[ \t]*Path:[ \t]*(\S+)[ \t]*$")
_TAGGED_PATH_LINE = re.compile(r"^#+[ \t]*Path:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_HEAT_LINE = re.compile(r"^\*\*热度\*\*: \d+(?: 🔥+)? \| \*\*更新\*\*: \S+$")
_SUMMARY_LINE = re.compile(r"^Summary:(?: .*)?$")
NAVIGATION_TAG = re.compile(r"<scene-navigation>.*?</scene-navigation>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Removal:
    """A persona with the generated blocks taken out (trimmed), whether any was, and the scene paths they listed."""

    text: str
    removed: bool
    paths: tuple[str, ...] = ()


def _block_end(lines: list[str], start: int) -> tuple[int, list[str]] | None:
    """Where a generated block whose heading is `lines[start]` ends (exclusive), and its paths; None if no block."""
    if not _HEADING.match(lines[start]):
        return None
    paths: list[str] = []
    n = start + 1
    after_path = 0  # how many of the heat and summary lines may still follow the last path line
    while n < len(lines):
        line = lines[n]
        if not line.strip():
            n += 1
            continue
        if match := _PATH_LINE.match(line):
            paths.append(match.group(1))
            after_path = 2
        elif after_path and (_HEAT_LINE.match(line) or _SUMMARY_LINE.match(line)):
            after_path -= 1
        elif line == NAVIGATION_FOOTER:
            n += 1
            break
        else:
            break
        n += 1
    return n, paths


def remove_generated(persona: str) -> Removal:
    """The persona without generated Scene Navigation blocks; everything else, in order, trimmed."""
    text, tagged = NAVIGATION_TAG.subn("", persona)
    lines = text.split("\n")
    kept: list[str] = []
    paths: list[str] = []
    removed = tagged > 0
    n = 0
    while n < len(lines):
        found = _block_end(lines, n)
        if found is None:
            kept.append(lines[n])
            n += 1
            continue
        end, listed = found
        paths += listed
        removed = True
        # The rule the gateway put above its heading belongs to the block.
        while kept and not kept[-1].strip():
            kept.pop()
        if kept and _RULE.match(kept[-1]):
            kept.pop()
        while kept and not kept[-1].strip():
            kept.pop()
        while end < len(lines) and not lines[end].strip():
            end += 1
        if kept and end < len(lines):
            kept.append("")  # what followed the block stays a paragraph of its own
        n = end
    return Removal("\n".join(kept).strip(), removed, tuple(paths))


def navigation_paths(persona: str) -> list[str]:
    """The scene paths the persona's generated blocks (either form) list, sorted and distinct."""
    tagged = [path for block in NAVIGATION_TAG.findall(persona) for path in _TAGGED_PATH_LINE.findall(block)]
    return sorted({*remove_generated(persona).paths, *tagged})
