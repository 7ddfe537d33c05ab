"""The chat-memory services of one store, built once and shared by every entry point."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.memory.atomic import AtomicService
from memhub.memory.conversation import ConversationService
from memhub.memory.core import CoreService
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
    def over(cls, store: MemoryStore) -> MemoryServices:
        """Build every service on the given store."""
        return cls(ConversationService(store), AtomicService(store), ScenarioService(store), CoreService(store))
