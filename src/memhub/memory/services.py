"""The chat-memory services of one store, built once and shared by every entry point."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.memory.atomic import AtomicService
from memhub.memory.conversation import ConversationService
from memhub.memory.core import CoreService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.memory.recall import RecallService
from memhub.memory.scenario import ScenarioService
from memhub.store import MemoryStore


@dataclass(frozen=True, slots=True)
class MemoryServices:
    """L0–L3 services over one store, and recall across them."""

    conversation: ConversationService
    atomic: AtomicService
    scenario: ScenarioService
    core: CoreService
    recall: RecallService

    @classmethod
    def over(cls, store: MemoryStore, embedding: EmbeddingRuntime | None = None) -> MemoryServices:
        """Build every service on the given store (and embedder, for vector search)."""
        conversation = ConversationService(store, embedding)
        atomic = AtomicService(store, embedding)
        scenario = ScenarioService(store)
        core = CoreService(store)
        return cls(conversation, atomic, scenario, core, RecallService(conversation, atomic, scenario, core))
