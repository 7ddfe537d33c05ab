"""L1: atomic memories (facts, preferences, instructions, events) with versions and provenance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memhub.errors import NotFound
from memhub.ids import atomic_id
from memhub.memory.embedding import EmbeddingRuntime, search_with
from memhub.model import AtomicFilter, AtomicRecord, AuditContext, NewAtomic
from memhub.model.query import QueryTerms
from memhub.retrieval.hybrid import RecordView, SearchOptions, SearchOutcome, priority_boost
from memhub.retrieval.query_focus import search_terms
from memhub.scope import Isolation, MemoryScope
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

CHAT_TYPES = ("persona", "episodic", "instruction")
CODE_TYPES = ("work_fact", "work_task", "work_method", "work_artifact")
MEMORY_TYPES = CHAT_TYPES + CODE_TYPES
DEFAULT_PRIORITY = 50


@dataclass(frozen=True, slots=True)
class AtomicInput:
    """A memory written directly by a user, an importer or the pipeline."""

    content: str
    type: str
    priority: int = DEFAULT_PRIORITY
    background: str | None = None
    source_message_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None


def audit_context(iso: Isolation, request_id: str) -> AuditContext:
    """The audit identity of a request."""
    return AuditContext(
        request_id=request_id, team_id=iso.team_id, agent_id=iso.agent_id, user_id=iso.user_id, task_id=iso.task_id
    )


ATOMIC_VIEW: RecordView[AtomicRecord] = RecordView(
    key=lambda a: a.id,
    text=lambda a: a.content,
    time_ms=lambda a: a.updated_ms,
    # Heat: every update and every extra source message is a time the memory was confirmed.
    boost=lambda a: priority_boost(a.priority, a.version + max(len(a.source_message_ids) - 1, 0)),
)


def in_scope(record: AtomicRecord, iso: Isolation) -> bool:
    """True when the memory belongs to the caller's team, user, agent and task."""
    return (record.team_id, record.user_id, record.agent_id, record.task_id) == (
        iso.team_id,
        iso.user_id,
        iso.agent_id,
        iso.task_id,
    )


@dataclass(frozen=True, slots=True)
class _AtomicChannels:
    """L1 search channels of one scope and filter."""

    store: MemoryStore
    scope: MemoryScope
    terms: QueryTerms
    flt: AtomicFilter

    def lexical(self, limit: int) -> list[tuple[AtomicRecord, float]]:
        return self.store.search_atomic(self.scope, self.terms, self.flt, limit)

    def semantic(self, vector: np.ndarray, limit: int) -> list[tuple[AtomicRecord, float]]:
        return self.store.vector_search_atomic(self.scope, vector, self.flt, limit)

    def similarities(self, vector: np.ndarray, records: Sequence[AtomicRecord]) -> dict[str, float]:
        return self.store.atomic_similarities(self.scope, vector, [a.id for a in records])


class AtomicService:
    """Adds, updates, reads, searches and deletes L1 memories of one scope."""

    def __init__(self, store: MemoryStore, embedding: EmbeddingRuntime | None = None) -> None:
        self.store = store
        self.embedding = embedding

    def add(self, iso: Isolation, items: Sequence[AtomicInput]) -> list[AtomicRecord]:
        """Store new memories (the pipeline and `atomic/add` share this path)."""
        stamp = now_ms()
        records = [
            NewAtomic(
                id=atomic_id(stamp),
                type=item.type,
                content=item.content,
                priority=item.priority,
                scene_name=item.background,
                session_id=iso.session_id or "default",
                created_ms=stamp,
                source_message_ids=item.source_message_ids,
                metadata=item.metadata,
            )
            for item in items
        ]
        added = self.store.add_atomic(iso.memory, records)
        if self.embedding is not None:
            self.embedding.nudge()
        return added

    def update(
        self, iso: Isolation, memory_id: str, content: str, background: str | None, request_id: str
    ) -> AtomicRecord:
        """Replace a memory's content; 404 if unknown to the caller's scope (another scope's id included)."""
        current = self.store.get_atomic(iso.service_id, memory_id)
        # Another scope's memory answers exactly like a missing one: a 403 would confirm that the id exists.
        if current is None or not in_scope(current, iso):
            raise NotFound(f"Atomic memory not found: {memory_id}")
        updated = self.store.update_atomic(
            iso.service_id, memory_id, content, background, now_ms(), audit_context(iso, request_id)
        )
        if updated is None:  # deleted between the check and the write
            raise NotFound(f"Atomic memory not found: {memory_id}")
        if self.embedding is not None:
            self.embedding.nudge()
        return updated

    def query(self, iso: Isolation, flt: AtomicFilter, limit: int, offset: int) -> tuple[list[AtomicRecord], int]:
        """A page of memories, most recently updated first, and how many match."""
        return self.store.query_atomic(iso.memory, flt, limit, offset)

    def count(self, iso: Isolation, flt: AtomicFilter) -> int:
        """How many memories match."""
        return self.store.count_atomic(iso.memory, flt)

    def search(
        self, iso: Isolation, query: str, flt: AtomicFilter, options: SearchOptions
    ) -> SearchOutcome[AtomicRecord]:
        """Hybrid search weighted by priority and heat; type and time filters apply before the top-k."""
        terms = search_terms(query)
        channels = _AtomicChannels(self.store, iso.memory, terms, flt)
        return search_with(self.embedding, query, terms, channels, ATOMIC_VIEW, options)

    def delete(self, iso: Isolation, ids: Sequence[str], request_id: str) -> int:
        """Delete memories of the caller's scope; ids of other scopes are left alone."""
        return len(self.store.delete_atomic(iso.memory, ids, audit_context(iso, request_id)))
