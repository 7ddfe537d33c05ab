"""The chat-memory services of one store, built once and shared by every entry point."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.memory.atomic import AtomicService
from memhub.memory.conversation import ConversationService
from memhub.memory.core import CoreService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.memory.scenario import ScenarioService
from memhub.store import MemoryStore


@dataclass(frozen=True, slots=True)
class MemoryServices:
    """L0–L3 services over one store."""

    conversation: ConversationService
    atomic: AtomicService
    scenario: ScenarioService
    core: CoreService

    @classmethod
    def over(cls, store: MemoryStore, embedding: EmbeddingRuntime | None = None) -> MemoryServices:
        """Build every service on the given store (and embedder, for vector search)."""
        return cls(
            ConversationService(store, embedding),
            AtomicService(store, embedding),
            ScenarioService(store),
            CoreService(store),
        )
