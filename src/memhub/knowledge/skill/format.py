"""SKILL.md: YAML front matter between `---` fences, then a Markdown body; parsed and checked in one step.

The rules are the original's: the document starts with a `---` line and the front matter ends at the next
`---` line (or at the end of the text); CRLF is read as LF; `name` (^[a-z0-9][a-z0-9-]*$, ≤64) and
`description` (≤1024) are required, and values that are not strings (a number, a date) are read as text;
the body holds at most 50,000 characters; `resources[].type`, where given, is text, executable or binary.
Any failure is SKILL_FRONTMATTER_INVALID (42203) naming the field.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from memhub.knowledge.skill.config import SkillConfig
from memhub.knowledge.skill.errors import FrontmatterInvalid

NAME_PATTERN = "^[a-z0-9][a-z0-9-]*$"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
RESOURCE_TYPES = ("text", "executable", "binary")
_FENCE = "---"


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """A parsed, valid SKILL.md."""

    name: str
    description: str
    front_matter: Mapping[str, Any]
    body: str


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases: a few aliased lists make a front matter expand exponentially."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(None, None, "aliases are not allowed", event.start_mark)
        return super().compose_node(parent, index)


def content_hash(content: str) -> str:
    """md5 hex of the whole SKILL.md, as the original's `content_hash` (an identity, not a security hash)."""
    return hashlib.md5(content.encode("utf-8"), usedforsecurity=False).hexdigest()


def _invalid(rule: str) -> FrontmatterInvalid:
    return FrontmatterInvalid(f"content: {rule}")


def _split(text: str) -> tuple[str, str]:
    """(front matter YAML, body) of LF text."""
    if not text.startswith(_FENCE + "\n"):
        raise _invalid("must start with a '---' line opening the front matter")
    rest = text[len(_FENCE) + 1 :]
    if rest.startswith(_FENCE + "\n") or rest == _FENCE:
        return "", rest[len(_FENCE) + 1 :]
    end = rest.find("\n" + _FENCE + "\n")
    if end < 0:
        if not rest.endswith("\n" + _FENCE):
            raise _invalid("missing the closing '---' line of the front matter")
        return rest[: -len(_FENCE) - 1], ""
    return rest[:end], rest[end + len(_FENCE) + 2 :]


def _text(value: Any) -> str:
    """A front-matter value as text, the way the original reads a non-string (`true`, `42`, `2024-01-01`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return str(value)


def _check_resources(value: Any) -> None:
    if not isinstance(value, list):
        return
    for i, item in enumerate(value):
        # Malformed entries are ignored, as the original does; a named type must be a known one.
        typed = isinstance(item, Mapping) and isinstance(item.get("type"), str) and isinstance(item.get("path"), str)
        if typed and item["type"] not in RESOURCE_TYPES:
            raise _invalid(f"resources[{i}].type: must be one of {', '.join(RESOURCE_TYPES)}")


def parse_skill(content: str, config: SkillConfig) -> SkillDocument:
    """The document's name, description, front matter and body; FrontmatterInvalid naming what is wrong."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    front, body = _split(text)
    if len(front) > config.max_front_matter_chars:
        raise _invalid(f"front matter must be at most {config.max_front_matter_chars} characters")
    try:
        loaded = yaml.load(front, Loader=_NoAliasLoader) if front.strip() else {}
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise _invalid(f"front matter is not valid YAML ({problem})") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise _invalid("front matter must be a YAML mapping of fields")
    name, description = _text(loaded.get("name")), _text(loaded.get("description"))
    if not name.strip():
        raise _invalid("front matter field 'name' is required")
    if not description.strip():
        raise _invalid("front matter field 'description' is required")
    if not _NAME.fullmatch(name):
        raise _invalid(f"name {name[:80]!r} must match {NAME_PATTERN}")
    if len(name) > config.max_name_chars:
        raise _invalid(f"name must be at most {config.max_name_chars} characters (it has {len(name)})")
    if len(description) > config.max_description_chars:
        raise _invalid(
            f"description must be at most {config.max_description_chars} characters (it has {len(description)})"
        )
    if body.startswith("\n"):
        body = body[1:]
    if len(body) > config.max_body_chars:
        raise _invalid(f"body must be at most {config.max_body_chars} characters (it has {len(body)})")
    _check_resources(loaded.get("resources"))
    return SkillDocument(name=name, description=description, front_matter=loaded, body=body)
