"""The vocabulary the memory proxy's parts share: who a turn is for, what kind of request it is, the blocks
injected into it and what the model answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


class WireProtocol(StrEnum):
    """The LLM API a request speaks; the proxy forwards it in the same protocol."""

    OPENAI_CHAT = "openai_chat"  # POST /v1/chat/completions
    ANTHROPIC = "anthropic"  # POST /v1/messages
    RESPONSES = "responses"  # POST /v1/responses (Codex)


class RequestKind(StrEnum):
    """What a request is to the conversation, as the original classifies Claude Code's requests.

    Only `main` turns are injected and captured; a `fork` (a summary or compaction reusing the main prompt) gets
    the cached blocks read-only so its prompt prefix matches the main turn's, and is not captured; a side query
    (a title, a key check) and auxiliary traffic (token counting, embeddings) pass through untouched.
    """

    MAIN = "main"
    FORK = "fork"
    SIDE_QUERY = "sidequery"
    AUXILIARY = "auxiliary"


@dataclass(frozen=True, slots=True)
class ProxyIdentity:
    """Who a proxied turn acts for, resolved from the caller's user key, the path and the headers.

    `team_id` and `agent_id` are None when neither a header nor the user's memberships decide them; such a turn
    is forwarded without memory (and says why in the `x-memhub-memory` response header).
    """

    service_id: str  # the path's space id
    user_id: str
    key_id: str | None
    session_id: str  # the conversation's id from the client's headers, or a stable derivation
    agent_source: str = "claude-code"  # the client kind: the first path segment (`proxy` means the default)
    team_id: str | None = None
    agent_id: str | None = None
    task_id: str | None = None
    user_type: str = "normal"

    @property
    def has_memory_scope(self) -> bool:
        """True when a team and an agent are known, so memory can be read and written for the turn."""
        return bool(self.team_id and self.agent_id)

    @property
    def cache_key(self) -> tuple[str, ...]:
        """The session's key in the block cache: blocks are computed once per (tenant, user, client, session)
        and identity they were computed for."""
        return (
            self.service_id,
            self.user_id,
            self.agent_source,
            self.session_id,
            self.team_id or "",
            self.agent_id or "",
            self.task_id or "",
        )


# Where a block goes: each point splices into the system prompt (a slot anchor first, the point as the fallback).
# Per-turn recall is not a block: it goes into the turn's last user message (`RecallOutcome`).
InjectionPoint = Literal[
    "system.prefix",
    "system.before_tools",
    "system.after_tools",
    "system.suffix",
]
# Semantic slots of a client's system prompt (Claude Code's `# Heading` sections, other clients' `<tag>`s).
Slot = Literal["persona", "tools", "skills", "memory", "knowledge", "rules", "task_context"]
Relation = Literal["before", "after", "inside_prepend", "inside_append"]

# The original's hook priorities: lower runs (and is placed) first within a point.
PRIORITY_SYSTEM = 0
PRIORITY_MEMORY = 100
PRIORITY_SKILL = 200
PRIORITY_WIKI = 300
PRIORITY_CUSTOM = 1000


@dataclass(frozen=True, slots=True)
class Block:
    """One rendered system-prompt injection, computed once per session: its text and where it goes."""

    hook_id: str  # e.g. "tdai-profile-memory-injector"
    text: str
    point: InjectionPoint
    priority: int
    slot: Slot | None = None
    relation: Relation = "after"


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One message of the request's conversation as plain text (its text parts joined), for recall's context."""

    role: str  # "user" | "assistant"
    text: str


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """What per-turn recall gave a turn: the block for its last user message ("" when none) and what the
    `x-memhub-memory` header says about it (`<n>` items, `none`, `off`, `timeout`, `error`)."""

    text: str
    status: str


@dataclass(frozen=True, slots=True)
class OffloadTurn:
    """What context offload reads of one request: its conversation and what else it sends the model."""

    messages: Sequence[Mapping[str, Any]]  # the conversation (`messages`, or a Responses request's `input`)
    fixed: tuple[Any, ...]  # the other parts the model reads (system prompt, tool schemas): counted, never changed
    window: int  # the model's context window, in tokens
    size: int  # the request's bytes: a bound on its tokens
    breakpoints: int  # the cache breakpoints the request carries (Anthropic's `cache_control`)
    prompt: str | None = None  # the user's words when this request opens a turn
    recent: tuple[ChatTurn, ...] = ()  # the conversation's last text messages, for the task stage


@dataclass(frozen=True, slots=True)
class OffloadOutcome:
    """What context offload did to a request: whether it is on for it, the conversation to send instead (None:
    the caller's own), what `x-memhub-memory` says (`off`, `none`, `<level>,tokens=<before>/<after>,…`,
    `prefix,tokens=<n>`, `timeout`, `error`) and the read tool's block for the system prompt when on."""

    on: bool
    messages: list[dict[str, Any]] | None
    status: str
    block: Block | None = None


@dataclass(slots=True)
class ToolCall:
    """A tool call the model made, assembled from the response (or its streamed deltas)."""

    id: str
    name: str
    arguments: str  # the raw JSON text the model produced


@dataclass(slots=True)
class TurnOutput:
    """What the model answered in one turn, parsed from the upstream's response or its SSE stream."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    complete: bool = False  # the response ended normally (a stream's final event arrived)
