"""The store interface, in domain terms. Every backend implements it and passes the same tests."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from memhub.model.query import QueryTerms
from memhub.model.records import (
    AtomicFilter,
    AtomicRecord,
    AuditContext,
    ClearedMemory,
    ClearTarget,
    DocumentKind,
    DocumentRecord,
    EmbeddingModel,
    EmbeddingTask,
    MessageFilter,
    MessageRecord,
    NewAtomic,
    NewMessage,
)
from memhub.scope import MemoryScope, ProfileScope
from memhub.store.meta import MetaStore
from memhub.store.offload import OffloadStore
from memhub.store.pipeline import PipelineStore
from memhub.store.prompts import PromptStore
from memhub.store.skills import SkillStore


class MemoryStore(ABC):
    """Everything memhub persists: instance settings, L0–L3 and the audit trail."""

    # -- instance settings -------------------------------------------------------------------
    @abstractmethod
    def get_setting(self, name: str) -> str | None:
        """An instance-wide setting, or None."""

    @abstractmethod
    def put_setting(self, name: str, value: str, *, only_if_absent: bool = False) -> str:
        """Store a setting; with only_if_absent the first writer wins. Returns the stored value."""

    # -- L0 conversation ---------------------------------------------------------------------
    @abstractmethod
    def add_messages(
        self,
        scope: MemoryScope,
        session_id: str,
        messages: Sequence[NewMessage],
        *,
        idempotency_key: str | None = None,
        request_hash: str | None = None,
    ) -> tuple[list[str], str | None]:
        """Store messages in one transaction and return their ids.

        With an idempotency key that was used before in this scope, nothing is written and the
        first call's ids are returned together with the first call's request hash.
        """

    @abstractmethod
    def query_messages(
        self, scope: MemoryScope, flt: MessageFilter, limit: int, offset: int
    ) -> tuple[list[MessageRecord], int]:
        """Messages in time order with the total that matched."""

    @abstractmethod
    def count_messages(self, scope: MemoryScope, flt: MessageFilter) -> int:
        """How many messages match."""

    @abstractmethod
    def search_messages(
        self, scope: MemoryScope, terms: QueryTerms, flt: MessageFilter, limit: int
    ) -> list[tuple[MessageRecord, float]]:
        """BM25 search filtered by scope inside the index; best first with a score in (0, 1)."""

    @abstractmethod
    def delete_messages(self, scope: MemoryScope, message_ids: Sequence[str], session_ids: Sequence[str]) -> int:
        """Delete the given messages and whole sessions inside the scope; returns how many went."""

    # -- L1 atomic memories ------------------------------------------------------------------
    @abstractmethod
    def add_atomic(self, scope: MemoryScope, records: Sequence[NewAtomic]) -> list[AtomicRecord]:
        """Store new memories in one transaction."""

    @abstractmethod
    def get_atomic(self, service_id: str, atomic_id: str) -> AtomicRecord | None:
        """One memory of a service by id, whatever its scope."""

    @abstractmethod
    def update_atomic(
        self,
        service_id: str,
        atomic_id: str,
        content: str,
        scene_name: str | None,
        now_ms: int,
        audit: AuditContext,
    ) -> AtomicRecord | None:
        """Replace content (and scene when given), bump the version, audit; None if gone."""

    @abstractmethod
    def query_atomic(
        self, scope: MemoryScope, flt: AtomicFilter, limit: int, offset: int
    ) -> tuple[list[AtomicRecord], int]:
        """Memories, most recently updated first, with the total that matched."""

    @abstractmethod
    def count_atomic(self, scope: MemoryScope, flt: AtomicFilter) -> int:
        """How many memories match."""

    @abstractmethod
    def search_atomic(
        self, scope: MemoryScope, terms: QueryTerms, flt: AtomicFilter, limit: int
    ) -> list[tuple[AtomicRecord, float]]:
        """BM25 search filtered by scope (and type) inside the index; best first."""

    @abstractmethod
    def delete_atomic(self, scope: MemoryScope, ids: Sequence[str], audit: AuditContext) -> list[AtomicRecord]:
        """Delete memories of the scope, one audit row each; returns what was deleted."""

    # -- vectors -------------------------------------------------------------------------------
    @abstractmethod
    def embedding_model(self) -> EmbeddingModel | None:
        """The model the stored vectors belong to, or None before the first one is chosen."""

    @abstractmethod
    def reset_embeddings(self, model: EmbeddingModel) -> None:
        """Switch models: drop every vector and queue every record to be embedded again."""

    @abstractmethod
    def embedding_backlog(self) -> int:
        """How many records are still waiting for a vector."""

    @abstractmethod
    def next_embedding_tasks(self, limit: int) -> list[EmbeddingTask]:
        """The oldest records waiting for a vector, with the text to embed."""

    @abstractmethod
    def store_embeddings(self, model: EmbeddingModel, tasks: Sequence[EmbeddingTask], vectors: np.ndarray) -> int:
        """Write vectors for tasks still current (a record changed or deleted since is skipped).

        Raises ValueError, writing nothing, if `model` is not the store's model (vectors are never mixed).
        """

    def warm_vectors(self, limit: int) -> None:  # noqa: B027 - optional: a backend may have nothing to warm
        """Start loading the vector indexes of the `limit` scopes written last, in the background, so that their
        first searches need not; 0 loads none. A backend without in-memory indexes has nothing to do."""

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait for `warm_vectors`' loads to end (tests); False when they still run after `timeout`."""
        return True

    @abstractmethod
    def vector_search_messages(
        self, scope: MemoryScope, vector: np.ndarray, flt: MessageFilter, limit: int
    ) -> list[tuple[MessageRecord, float]]:
        """Nearest messages by cosine, filtered by scope (and session/time) before the top-k."""

    @abstractmethod
    def vector_search_atomic(
        self, scope: MemoryScope, vector: np.ndarray, flt: AtomicFilter, limit: int
    ) -> list[tuple[AtomicRecord, float]]:
        """Nearest memories by cosine, filtered by scope (and type/time) before the top-k."""

    @abstractmethod
    def message_similarities(self, scope: MemoryScope, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of the given messages to a vector (messages without a vector are left out)."""

    @abstractmethod
    def atomic_similarities(self, scope: MemoryScope, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of the given memories to a vector (memories without a vector are left out)."""

    # -- L2 scenes and L3 persona ------------------------------------------------------------
    @abstractmethod
    def get_document(self, scope: ProfileScope, kind: DocumentKind, path: str) -> DocumentRecord | None:
        """One scene file or the persona."""

    @abstractmethod
    def list_documents(self, scope: ProfileScope, kind: DocumentKind, path_prefix: str = "") -> list[DocumentRecord]:
        """Documents of a kind whose path starts with the prefix, in path order."""

    @abstractmethod
    def put_document(
        self, doc: DocumentRecord, audit: AuditContext, *, expect_exists: bool | None
    ) -> DocumentRecord | None:
        """Insert or replace a document and audit it in one transaction.

        expect_exists=True refuses to create (returns None when missing), False refuses to
        replace (returns None when present), None upserts.
        """

    @abstractmethod
    def delete_documents(
        self,
        scope: ProfileScope,
        kind: DocumentKind,
        paths: Sequence[str],
        prefixes: Sequence[str],
        audit: AuditContext,
    ) -> list[str]:
        """Delete documents by exact path or path prefix, audit each; returns the deleted paths."""

    # -- whole agents --------------------------------------------------------------------------
    @abstractmethod
    def clear_agent_memory(self, targets: Sequence[ClearTarget]) -> list[ClearedMemory]:
        """Empty each target's L0–L3 in one transaction: all of them, or (on any error) none.

        Per target: the L0 messages and L1 memories of every user and task of the (team, agent),
        with their full-text entries, vectors, embedding-queue entries and L1 version history; the
        scene files and persona of every user's profile of the (team, agent); the pipeline's
        progress for them, and its open jobs, settled as done so that no queued or in-flight job
        writes into the emptied memory. One audit row per layer (L0–L3, action `clear`) names
        `record_id`.
        """

    # -- audit -------------------------------------------------------------------------------
    @abstractmethod
    def list_audit(self, service_id: str, limit: int = 100) -> list[dict[str, object]]:
        """Most recent audit rows of a service."""

    # -- management plane ----------------------------------------------------------------------
    @property
    @abstractmethod
    def meta(self) -> MetaStore:
        """Users, keys, teams, agents, tasks, assets, ACL, the knowledge registry and their audit."""

    @property
    @abstractmethod
    def pipeline(self) -> PipelineStore:
        """Durable pipeline jobs and the extraction progress of every session and profile."""

    @property
    @abstractmethod
    def prompts(self) -> PromptStore:
        """Custom memory prompts, their settings and setting log, and the memory generation log."""

    @property
    @abstractmethod
    def skills(self) -> SkillStore:
        """Versioned skills with their files by content hash, their search channels, and the mining buffers."""

    @property
    @abstractmethod
    def offload(self) -> OffloadStore:
        """Context offload: sessions' tool pairs with their full results, summaries, prompts and task graphs."""

    # -- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def backend_name(self) -> str:
        """Short name of the backend, reported by /health."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""
