"""Plain records the store reads and writes; no behaviour, no storage details."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DocumentKind = Literal["scene", "core"]


@dataclass(frozen=True, slots=True)
class NewMessage:
    """An L0 message about to be stored."""

    id: str
    role: str
    content: str
    recorded_ms: int
    message_ms: int
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A stored L0 message with its owner."""

    id: str
    service_id: str
    team_id: str
    user_id: str
    agent_id: str
    task_id: str
    session_id: str
    role: str
    content: str
    recorded_ms: int
    message_ms: int
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """Optional narrowing of an L0 read inside a scope."""

    session_id: str | None = None
    time_start_ms: int | None = None
    time_end_ms: int | None = None


@dataclass(frozen=True, slots=True)
class NewAtomic:
    """An L1 memory about to be stored."""

    id: str
    type: str
    content: str
    priority: int
    scene_name: str | None
    session_id: str
    created_ms: int
    source_message_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AtomicRecord:
    """A stored L1 memory with its owner."""

    id: str
    service_id: str
    team_id: str
    user_id: str
    agent_id: str
    task_id: str
    session_id: str
    type: str
    content: str
    priority: int
    scene_name: str | None
    version: int
    created_ms: int
    updated_ms: int
    source_message_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AtomicFilter:
    """Optional narrowing of an L1 read inside a scope (times apply to the update time)."""

    type: str | None = None
    time_start_ms: int | None = None
    time_end_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """An L2 scene file or the L3 persona of one (team, agent, user) profile."""

    service_id: str
    team_id: str
    agent_id: str
    user_id: str
    kind: DocumentKind
    path: str
    content: str
    summary: str | None
    version: int
    content_md5: str
    created_ms: int
    updated_ms: int


@dataclass(frozen=True, slots=True)
class AuditContext:
    """Who asked for a change; written beside it in the same transaction, never with content."""

    request_id: str
    team_id: str
    agent_id: str
    user_id: str
    task_id: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClearTarget:
    """One agent's memory to empty: every L0/L1 record of its (team, agent), and every user's L2/L3 profile."""

    service_id: str
    team_id: str
    agent_id: str
    record_id: str  # what the audit rows name (the chat_memory asset id)
    audit: AuditContext


@dataclass(frozen=True, slots=True)
class ClearedMemory:
    """What one clear removed; zero everywhere when the memory was already empty."""

    l0_deleted: int
    l1_deleted: int
    profile_deleted: int  # L2 scene files plus the L3 persona
    jobs_cancelled: int  # open pipeline jobs of the (team, agent) that were settled unrun


EmbeddingKind = Literal["l0", "l1", "skill"]  # skill: a head version, by its skill_versions rowid


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """The model whose vectors the store holds; vectors of two models are never mixed."""

    model_id: str
    dim: int


@dataclass(frozen=True, slots=True)
class EmbeddingTask:
    """A record waiting for its vector: the text to embed and the queue position it was read at."""

    kind: EmbeddingKind
    ref: int
    seq: int
    text: str
