"""The domain vocabulary: records, filters and query types shared by the store, the services and the routes.

Plain data only: nothing here reads a database, a setting or a request. Memory records are exported here;
the management plane (`model.meta`), memory prompts (`model.prompts`), the pipeline (`model.pipeline`), code
graphs (`model.graph`) and search queries (`model.query`) have their own modules.
"""

from memhub.model.records import (
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
    "MessageFilter",
    "MessageRecord",
    "NewAtomic",
    "NewMessage",
]
