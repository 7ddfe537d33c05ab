"""L0: the raw conversation, immutable once written, searchable across sessions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from memhub.errors import Conflict
from memhub.ids import message_id
from memhub.index.tokenize import query_terms
from memhub.memory.embedding import EmbeddingRuntime, search_with
from memhub.model import MessageFilter, MessageRecord, NewMessage
from memhub.model.query import QueryTerms
from memhub.retrieval.hybrid import RecordView, SearchOptions, SearchOutcome
from memhub.retrieval.query_focus import search_terms
from memhub.retrieval.speakers import speaker_of
from memhub.scope import Isolation, MemoryScope
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

MESSAGE_VIEW: RecordView[MessageRecord] = RecordView(
    key=lambda m: m.id,
    text=lambda m: m.content,
    time_ms=lambda m: m.message_ms,
    speaker=lambda m: speaker_of(m.content, m.metadata),
)


@dataclass(frozen=True, slots=True)
class MessageInput:
    """One message as a client sends it (already validated)."""

    role: str
    content: str
    message_ms: int | None = None
    recorded_ms: int | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AddResult:
    """What `conversation/add` acknowledges."""

    ids: list[str]
    replayed: bool


# Messages read to tell whether a name is a participant's: enough to meet both sides of a busy transcript.
PARTICIPANT_PROBE = 50


@dataclass(frozen=True, slots=True)
class _MessageChannels:
    """L0 search channels of one scope and filter."""

    store: MemoryStore
    scope: MemoryScope
    terms: QueryTerms
    flt: MessageFilter

    def lexical(self, limit: int) -> list[tuple[MessageRecord, float]]:
        return self.store.search_messages(self.scope, self.terms, self.flt, limit)

    def semantic(self, vector: np.ndarray, limit: int) -> list[tuple[MessageRecord, float]]:
        return self.store.vector_search_messages(self.scope, vector, self.flt, limit)

    def similarities(self, vector: np.ndarray, records: Sequence[MessageRecord]) -> dict[str, float]:
        return self.store.message_similarities(self.scope, vector, [m.id for m in records])


class ConversationService:
    """Writes, reads, searches and deletes L0 messages of one scope."""

    def __init__(self, store: MemoryStore, embedding: EmbeddingRuntime | None = None) -> None:
        self.store = store
        self.embedding = embedding

    def add(
        self,
        iso: Isolation,
        session_id: str,
        messages: Sequence[MessageInput],
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Store messages atomically; a repeated idempotency key returns the first call's ids."""
        stamp = now_ms()
        request_hash = None
        if idempotency_key is not None:
            canonical = json.dumps(
                {"session_id": session_id, "messages": [asdict(m) for m in messages]},
                sort_keys=True,
                ensure_ascii=False,
            )
            request_hash = hashlib.sha256(canonical.encode()).hexdigest()
        new = [
            NewMessage(
                id=message_id(),
                role=m.role,
                content=m.content,
                recorded_ms=m.recorded_ms if m.recorded_ms is not None else stamp,
                message_ms=m.message_ms
                if m.message_ms is not None
                else (m.recorded_ms if m.recorded_ms is not None else stamp),
                metadata=m.metadata,
            )
            for m in messages
        ]
        ids, earlier_hash = self.store.add_messages(
            iso.memory, session_id, new, idempotency_key=idempotency_key, request_hash=request_hash
        )
        if self.embedding is not None:
            self.embedding.nudge()
        if earlier_hash is None:
            return AddResult(ids=ids, replayed=False)
        if earlier_hash != request_hash:
            raise Conflict(
                "idempotency_key: already used for a different request in this scope",
                data={"accepted_ids": ids},
            )
        return AddResult(ids=ids, replayed=True)

    def query(self, iso: Isolation, flt: MessageFilter, limit: int, offset: int) -> tuple[list[MessageRecord], int]:
        """A page of messages in time order, and how many match in all."""
        return self.store.query_messages(iso.memory, flt, limit, offset)

    def count(self, iso: Isolation, flt: MessageFilter) -> int:
        """How many messages match."""
        return self.store.count_messages(iso.memory, flt)

    def search(
        self, iso: Isolation, query: str, flt: MessageFilter, options: SearchOptions
    ) -> SearchOutcome[MessageRecord]:
        """Hybrid search over the scope's messages; session and time filters apply before the top-k."""
        terms = search_terms(query)
        channels = _MessageChannels(self.store, iso.memory, terms, flt)
        return search_with(self.embedding, query, terms, channels, MESSAGE_VIEW, options)

    def participants(self, iso: Isolation, names: Sequence[str]) -> set[str]:
        """Which of `names` speak in the scope's conversations (a message's speaker label or metadata names them).

        One BM25 probe for the names; a name a transcript never opens a turn with is no participant.
        """
        if not names:
            return set()
        found = self.store.search_messages(iso.memory, query_terms(" ".join(names)), MessageFilter(), PARTICIPANT_PROBE)
        first_words = {
            label.split()[0].casefold() for record, _ in found if (label := speaker_of(record.content, record.metadata))
        }
        return {name for name in names if name.casefold() in first_words}

    def delete(self, iso: Isolation, message_ids: Sequence[str], session_ids: Sequence[str]) -> int:
        """Delete by message ids and/or whole sessions, only inside the caller's scope."""
        return self.store.delete_messages(iso.memory, message_ids, session_ids)
