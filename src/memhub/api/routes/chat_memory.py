"""`POST /v3/chat-memory/clear` (the original's route): empty chat-memory assets, keeping the assets, their
ACL and bindings.

Authentication is the data plane's (the gateway key, or a user key). The ids name
the scope, so no isolation fields are read and strict isolation does not apply (as in the original). Who may
clear what is decided by memhub.memory.chat_memory.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.json_rules import trimmed_id
from memhub.api.meta_schemas import MetaBody
from memhub.api.schemas import MAX_ID_CHARS
from memhub.ids import NO_CONTROL_RULE, has_control
from memhub.memory.chat_memory import ChatMemoryService

MAX_CLEAR_IDS = 100


def _memory_id(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    if len(value.strip()) > MAX_ID_CHARS:
        raise ValueError(f"must be at most {MAX_ID_CHARS} characters")
    if has_control(value.strip()):
        raise ValueError(NO_CONTROL_RULE)
    return value.strip()


MemoryId = Annotated[str, BeforeValidator(_memory_id), Field(json_schema_extra=trimmed_id(MAX_ID_CHARS))]


class ChatMemoryClear(MetaBody):
    """chat-memory/clear: 1..100 chat-memory asset ids (`chat_memory-{team}-{agent}`), trimmed and de-duplicated."""

    memory_ids: list[MemoryId] = Field(json_schema_extra={"minItems": 1, "maxItems": MAX_CLEAR_IDS})

    @field_validator("memory_ids", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        # Counted as sent (before de-duplication), like the original's schema.
        if isinstance(value, list) and not 1 <= len(value) <= MAX_CLEAR_IDS:
            raise ValueError(f"must have 1..{MAX_CLEAR_IDS} items")
        return value


def routes(service: ChatMemoryService) -> list[GuardedRoute]:
    """The chat-memory routes, served by `service`."""

    def clear(call: GuardedCall, body: ChatMemoryClear) -> Any:
        return service.clear(call.caller, body.memory_ids)

    return [
        GuardedRoute(
            "clear",
            ChatMemoryClear,
            clear,
            guard=Guard.DATA,
            summary="Empty chat-memory assets: L0–L3 of each (team, agent); the assets stay",
        )
    ]
