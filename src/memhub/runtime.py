"""Long-lived parts built from settings, shared by `memhub serve`, `memhub reembed` and tests."""

from __future__ import annotations

from memhub.memory.embedding import EmbeddingRuntime
from memhub.retrieval.embed import build_embedder
from memhub.settings import Settings
from memhub.store import MemoryStore


def embedding_runtime(settings: Settings, store: MemoryStore) -> EmbeddingRuntime:
    """The configured embedder over a store; nothing is loaded or contacted yet.

    A remote provider gets a second client for queries with the shorter query timeout; a local
    model serves queries from its own instance already.
    """
    documents = build_embedder(settings.embedding_config())
    queries = documents
    if documents is not None and settings.embedding_provider.strip().lower() == "openai":
        queries = build_embedder(settings.embedding_config(for_queries=True))
    return EmbeddingRuntime(
        store,
        documents,
        provider=settings.embedding_provider.strip().lower(),
        query_embedder=queries,
        batch_size=settings.embedding_batch_size,
        lexical_weight=settings.search_lexical_weight,
    )


def dimension_known_offline(settings: Settings) -> bool:
    """Whether the model's dimension is known without asking the provider (so it can be checked at start)."""
    provider = settings.embedding_provider.strip().lower()
    return provider == "local" or (provider == "openai" and settings.embedding_dimensions is not None)
