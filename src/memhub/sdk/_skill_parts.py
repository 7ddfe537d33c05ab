"""The skill clients' parts that are not calls: the error-code table, resource payloads, defaults, local checks."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memhub.sdk._errors import ParamError, TDAMError
from memhub.sdk._isolation import strip_none
from memhub.sdk._request import JsonObject

SKILL_ERROR_CODE: Final[dict[str, int]] = {
    # the original SDK's table
    "BAD_REQUEST": 40001,
    "NOT_OWNER": 40301,
    "TEAM_MISMATCH": 40302,
    "NOT_FOUND": 40401,
    "VERSION_STALE": 40901,
    "VERSION_EXPIRED": 41002,
    "RESOURCE_TOO_LARGE": 41301,
    "QUOTA_EXCEEDED": 4291,
    "NAME_DUPLICATE": 42201,
    "PATCH_NOT_UNIQUE": 42202,
    "FRONTMATTER_INVALID": 42203,
    "QUEUE_UNAVAILABLE": 50301,
    "STORAGE_NOT_FOUND": 50301,
    "LLM_UNAVAILABLE": 50302,
    "COS_REQUIRED": 50303,
    # codes the original's gateway also answers with, missing from its SDK's table
    "EXPORT_TOO_LARGE": 41301,
    "ID_COLLISION": 50304,
    "INTERNAL": 50001,
}
"""The envelope codes of `/v3/skill/*`, by name (the original SDK's names, plus the gateway's other codes)."""

# Aliases for the clients' annotations: inside the client classes `list` is a method's name.
Payload = dict[str, Any]
Messages = Sequence[Mapping[str, Any]]


# -- resource payloads ----------------------------------------------------------------------------------------
def encode_utf8(path: str, content: str, *, mime_type: str | None = None, is_executable: bool | None = None) -> Payload:
    """A text resource file for `create(resources=…)` / `write_files(files=…)`."""
    return strip_none(
        {"path": path, "content": content, "encoding": "utf-8", "mime_type": mime_type, "is_executable": is_executable}
    )


def encode_base64(
    path: str,
    data: bytes | bytearray | memoryview | str,
    *,
    mime_type: str | None = None,
    is_executable: bool | None = None,
) -> Payload:
    """A binary resource file from raw bytes (encoded here) or from a string already in base64."""
    encoded = data if isinstance(data, str) else base64.b64encode(bytes(data)).decode("ascii")
    return strip_none(
        {"path": path, "content": encoded, "encoding": "base64", "mime_type": mime_type, "is_executable": is_executable}
    )


# -- defaults and client-side checks ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SkillDefaults:
    """The ids a client sends when a call gives none; every one optional."""

    team_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    task_id: str | None = None

    def merge(
        self, team_id: str | None, agent_id: str | None, user_id: str | None, task_id: str | None
    ) -> dict[str, str | None]:
        """The call's ids over the defaults (None keeps the default), as body fields."""
        return {
            "team_id": self.team_id if team_id is None else team_id,
            "agent_id": self.agent_id if agent_id is None else agent_id,
            "user_id": self.user_id if user_id is None else user_id,
            "task_id": self.task_id if task_id is None else task_id,
        }


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_extract(messages: object, body: Mapping[str, Any]) -> None:
    """The original SDK's extract check: a non-empty message list and the three ids, before anything is sent."""
    if not isinstance(messages, list | tuple) or not messages:
        raise ParamError("extract requires at least one message")
    missing = [name for name in ("user_id", "team_id", "agent_id") if not _nonempty(body.get(name))]
    if missing:
        raise ParamError(f"extract requires non-empty {', '.join(missing)}")


def check_owner(body: Mapping[str, Any], operation: str) -> None:
    """A name is unique per (team, owner agent) only, so a lookup by name needs both."""
    missing = [name for name in ("team_id", "agent_id") if not _nonempty(body.get(name))]
    if missing:
        raise ParamError(f"{operation} requires non-empty {', '.join(missing)}: a skill name is unique per team agent")


def decode_export(data: JsonObject, *, raw: bool = False) -> bytes | JsonObject:
    """An export answer as the zip's bytes; the answer itself when `raw` or when it carries no `zip_base64`."""
    encoded = data.get("zip_base64")
    if raw or not isinstance(encoded, str):
        return data
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise TDAMError(-1, "export answer: zip_base64 is not valid base64", str(data.get("trace_id") or "")) from exc
