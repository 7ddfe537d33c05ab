"""A framework's chat messages read the same way everywhere in the SDK: role and text, whatever the shape.

Agent frameworks hand over dicts (`{"role", "content"}`) or objects with those attributes, and content as a
string or as OpenAI/Anthropic content parts. The client's `recall` and the agent kit's capture both read them
through here, so a history the kit can capture is one the client can send as recall context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memhub.formats.sanitize import DATA_IMAGE_URI

IMAGE_PLACEHOLDER = "[image]"

_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_IMAGE_PARTS = frozenset({"image", "image_url", "input_image"})


def message_field(message: object, name: str) -> Any:
    """A message's field: the key of a mapping, else the attribute of an object (None when absent)."""
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def extract_text(content: object) -> str:
    """A message's text: string or OpenAI/Anthropic parts, text joined by newlines, every image as `[image]`."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, Mapping):
        text = _part_text(content) or ""
    elif isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        pieces = (_part_text(part) for part in content)
        text = "\n".join(piece for piece in pieces if piece is not None)
    else:
        return ""
    return DATA_IMAGE_URI.sub(IMAGE_PLACEHOLDER, text)


def _part_text(part: object) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        text = part.get("text")
        return text if isinstance(text, str) else None
    if kind in _IMAGE_PARTS:
        # Inline or linked, an image is never memory text; the placeholder keeps "user sent a picture".
        return IMAGE_PLACEHOLDER
    return None  # tool_use, tool_result, thinking and anything unknown carry no conversation text


def role_and_text(messages: Iterable[object]) -> list[dict[str, Any]]:
    """Each message as `{role, content}` with its text extracted; every other field (ids, timestamps) left out.

    Nothing is dropped or judged here: the gateway checks roles and lengths and names what it refuses.
    """
    return [{"role": message_field(m, "role"), "content": extract_text(message_field(m, "content"))} for m in messages]
