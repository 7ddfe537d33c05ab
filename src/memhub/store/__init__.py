"""Persistence: one store interface in domain terms, with an embedded SQLite backend."""

from memhub.store.base import MemoryStore
from memhub.store.records import (
    AtomicFilter,
    AtomicRecord,
    AuditContext,
    ClearedMemory,
    ClearTarget,
    DocumentRecord,
    EmbeddingKind,
    EmbeddingModel,
    EmbeddingTask,
    MessageFilter,
    MessageRecord,
    NewAtomic,
    NewMessage,
)

__all__ = [
    "AtomicFilter",
    "AtomicRecord",
    "AuditContext",
    "ClearTarget",
    "ClearedMemory",
    "DocumentRecord",
    "EmbeddingKind",
    "EmbeddingModel",
    "EmbeddingTask",
    "MemoryStore",
    "MessageFilter",
    "MessageRecord",
    "NewAtomic",
    "NewMessage",
]
