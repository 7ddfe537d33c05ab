"""L0: the raw conversation, immutable once written, searchable across sessions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memhub.errors import Conflict
from memhub.ids import message_id
from memhub.retrieval.tokenize import query_terms
from memhub.scope import Isolation
from memhub.store import MemoryStore, MessageFilter, MessageRecord, NewMessage
from memhub.timeutil import now_ms


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


class ConversationService:
    """Writes, reads, searches and deletes L0 messages of one scope."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

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

    def search(self, iso: Isolation, query: str, flt: MessageFilter, limit: int) -> list[tuple[MessageRecord, float]]:
        """BM25 search over the scope's messages (time and session filters are honoured)."""
        return self.store.search_messages(iso.memory, query_terms(query), flt, limit)

    def delete(self, iso: Isolation, message_ids: Sequence[str], session_ids: Sequence[str]) -> int:
        """Delete by message ids and/or whole sessions, only inside the caller's scope."""
        return self.store.delete_messages(iso.memory, message_ids, session_ids)
