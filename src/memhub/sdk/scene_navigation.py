"""The Scene Navigation section the gateway appends to the persona it serves (spec §2.5), read and written alike.

The gateway renders it (`memhub.memory.scene_format`) and strips it before saving a persona; the agent kit strips
it from what it reads and lists the scene paths itself. One definition here, importable by the SDK without the
server, keeps the writer and both readers from drifting apart.
"""

from __future__ import annotations

import re

# The section starts at its heading (optionally preceded by a `---` rule, or wrapped in <scene-navigation> tags)
# and runs to the end of the persona.
NAVIGATION = re.compile(
    r"(?:\n[ \t]*-{3,}[ \t]*\n\s*)?^[ \t]*#{1,6}[ \t]*(?:🗺️?\s*)?Scene Navigation\b.*\Z", re.DOTALL | re.MULTILINE
)
NAVIGATION_TAG = re.compile(r"<scene-navigation>.*?</scene-navigation>", re.DOTALL)
PATH_LINE_PREFIX = "### Path: "
_PATH_LINE = re.compile(r"^#+\s*Path:\s*(\S+)\s*$", re.MULTILINE)


def strip_navigation(persona: str) -> str:
    """Remove the generated Scene Navigation section (and its tag form); trims the rest."""
    return NAVIGATION.sub("", NAVIGATION_TAG.sub("", persona)).strip()


def navigation_paths(persona: str) -> list[str]:
    """The scene paths a persona's navigation section lists, sorted and distinct."""
    sections = [m.group(0) for m in NAVIGATION.finditer(persona)] + NAVIGATION_TAG.findall(persona)
    return sorted({path for section in sections for path in _PATH_LINE.findall(section)})
