"""Persistence: one store interface in domain terms (`memhub.model`), with an embedded SQLite backend."""

from memhub.store.base import MemoryStore

__all__ = ["MemoryStore"]
