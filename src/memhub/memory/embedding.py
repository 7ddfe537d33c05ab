"""The instance's embedder at work: vectors for records in the background, and for queries on demand.

Writes never wait for a model. `conversation/add` and `atomic/add` commit with BM25 indexed and the
record queued; a worker thread embeds the queue in batches and stores the vectors. When the
provider is down or slow the worker backs off and the queue simply waits — searches meanwhile use
BM25 and say so — and it drains once the provider answers again.

Stopping never waits for the backlog: the queue is durable (records stored without a vector yet), so
the worker stops between provider calls, drops a batch it has not stored (its records stay queued and
are embedded at the next start) and, if it is inside a call that outlasts the stop's budget (a remote
provider waiting on its timeout), is left behind: nothing it returns after the stop is stored.

Vectors of two models are never compared: the store records the model that made its vectors, and
a different model is refused (`ModelMismatch`) until `memhub reembed` has rebuilt them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memhub.background import lower_thread_priority
from memhub.model import EmbeddingModel
from memhub.model.query import QueryTerms
from memhub.retrieval.embed import Embedder, EmbeddingError
from memhub.retrieval.hybrid import Channels, R, RecordView, SearchOptions, SearchOutcome, hybrid_search
from memhub.retrieval.packing import estimate_tokens, truncate_to_tokens
from memhub.retrieval.query_focus import focus_query
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.embedding")

QUERY_CACHE_SIZE = 1024
# A query embeds in time proportional to its tokens (e5: ~1 ms each on one core). One that reads like a question
# (every LoCoMo question is under 40 estimated tokens) is embedded whole; a longer one is a prompt, embedded from
# the sentences most likely to hold its ask (memhub.retrieval.query_focus) within the focus cap, so a 300-word
# prompt costs about what a question does. With focusing off, a query is embedded from its first 128 tokens.
QUERY_WHOLE_TOKENS = 40
QUERY_FOCUS_TOKENS = 24
QUERY_MAX_TOKENS = 128
QUERY_COOL_DOWN_S = 10.0  # after a failed query embedding, searches skip the provider this long
MAX_BACKOFF_S = 30.0


class ModelMismatch(RuntimeError):
    """The configured embedder is not the one whose vectors the store holds."""


def mismatch_message(stored: EmbeddingModel, model_id: str, dim: int) -> str:
    """What to tell an operator who changed the embedding model."""
    return (
        f"the store holds vectors of {stored.model_id} ({stored.dim}-d) but the configured embedder is "
        f"{model_id} ({dim}-d); run `memhub reembed` to rebuild the vectors with the new model, "
        "or configure the old one again"
    )


@dataclass(frozen=True, slots=True)
class WorkerState:
    """What /health reports about embedding."""

    provider: str
    model: str | None
    dim: int | None
    backlog: int
    state: str  # off | starting | running | idle | backing-off | error
    last_error: str | None


class EmbeddingRuntime:
    """Owns the embedder: a background worker for records, and cached query vectors for searches."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None,
        *,
        provider: str,
        query_embedder: Embedder | None = None,
        batch_size: int = 32,
        idle_poll_s: float = 0.25,
        lexical_weight: float | None = None,
        query_focus_tokens: int = QUERY_FOCUS_TOKENS,
    ) -> None:
        self.store = store
        self.lexical_weight_override = lexical_weight
        self.embedder = embedder
        self.query_embedder = query_embedder or embedder
        self.provider = provider if embedder is not None else "none"
        self.batch_size = batch_size
        self.idle_poll_s = idle_poll_s
        self.query_focus_tokens = query_focus_tokens
        self._ready = False
        self._state = "off" if embedder is None else "starting"
        self._last_error: str | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        # Queries being embedded now: a second search for the same text (recall searches L1 and L0 at once)
        # waits for the first one's vector instead of embedding it again.
        self._in_flight: dict[str, Future[np.ndarray]] = {}
        self._query_down_until = 0.0

    # -- model identity --------------------------------------------------------------------------
    def check_model(self) -> bool:
        """Adopt or verify the store's model; False while the provider cannot tell its dimension yet.

        Raises ModelMismatch when the store holds vectors of another model.
        """
        if self.embedder is None:
            return False
        dim = self.embedder.dim  # an OpenAI-compatible provider may need a first call to know it
        stored = self.store.embedding_model()
        if stored is None:
            self.store.reset_embeddings(EmbeddingModel(self.embedder.model_id, dim))
        elif (stored.model_id, stored.dim) != (self.embedder.model_id, dim):
            raise ModelMismatch(mismatch_message(stored, self.embedder.model_id, dim))
        self._ready = True
        return True

    # -- background worker -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread (no-op without an embedder)."""
        if self.embedder is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="memhub-embedder", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the worker to stop at its next provider call's end, without waiting for it."""
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the worker within `timeout` seconds; False if it is still busy then (inside a provider call,
        or storing the batch it had embedded before the stop).

        A batch not stored yet is dropped (its records stay queued for the next start); a worker left in a
        call stores nothing when the call returns.
        """
        self.request_stop()
        thread = self._thread
        if thread is None:
            return True
        thread.join(max(timeout, 0.0))
        if thread.is_alive():
            log.info("embedding worker still in a provider call: left behind, its batch stays queued")
            return False
        self._thread = None
        return True

    def nudge(self) -> None:
        """New records were queued: wake the worker now instead of at its next poll."""
        self._wake.set()

    def _run(self) -> None:
        lower_thread_priority()
        backoff = 1.0
        while not self._stop.is_set():
            try:
                if not self._ready and not self.check_model():
                    return
                worked = self.run_once()
                backoff = 1.0
                if not worked:
                    self._state = "idle"
                    self._wake.wait(self.idle_poll_s)
                    self._wake.clear()
            except ModelMismatch as exc:
                self._state, self._last_error = "error", str(exc)
                log.error("embedding stopped: %s", exc)
                return
            except Exception as exc:  # the worker must outlive any failure
                # Provider down or slow, a storage hiccup: the records stay queued; try again later.
                self._state, self._last_error = "backing-off", _describe(exc)
                log.warning("embedding batch failed (retrying in %.0f s): %s", backoff, self._last_error)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    def run_once(self) -> bool:
        """Embed one batch of queued records; False when the queue is empty.

        A stop requested meanwhile drops the batch before it is stored (True is still returned: work was
        there); the embedder is called in slices of at most `call_tokens`, so a stop waits for one slice.
        """
        assert self.embedder is not None
        tasks = self.store.next_embedding_tasks(self.batch_size)
        if not tasks:
            return False
        self._state = "running"
        vectors = self._embed_unless_stopped([t.text for t in tasks])
        if vectors is None:
            return True
        try:
            self.store.store_embeddings(EmbeddingModel(self.embedder.model_id, self.embedder.dim), tasks, vectors)
        except ValueError as exc:
            # `memhub reembed` switched the store to another model under this process.
            raise ModelMismatch(str(exc)) from exc
        self._last_error = None
        return True

    def _embed_unless_stopped(self, texts: list[str]) -> np.ndarray | None:
        """The texts' vectors, or None when a stop was requested before all of them were embedded."""
        assert self.embedder is not None
        parts: list[np.ndarray] = []
        for first, last in _slices(texts, self.embedder.call_tokens):
            if self._stop.is_set():
                return None
            parts.append(self.embedder.embed_documents(texts[first:last]))
        if self._stop.is_set():
            return None
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def drain(self, timeout: float = 60.0) -> bool:
        """Embed until the queue is empty (for `memhub reembed` and tests); False on timeout."""
        deadline = time.monotonic() + timeout
        if not self._ready:
            self.check_model()
        while time.monotonic() < deadline and not self._stop.is_set():
            if not self.run_once():
                return True
        return self.store.embedding_backlog() == 0

    # -- queries -------------------------------------------------------------------------------------
    @property
    def lexical_weight(self) -> float | None:
        """BM25's share of the fused score: the setting if given, else what suits the query model."""
        if self.lexical_weight_override is not None:
            return self.lexical_weight_override
        return self.query_embedder.lexical_weight if self.query_embedder is not None else None

    def search_options(self, options: SearchOptions) -> SearchOptions:
        """Options with this model's fusion weight filled in (an explicit weight is kept)."""
        if options.lexical_weight is not None:
            return options
        return replace(options, lexical_weight=self.lexical_weight)

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query's vector, or None when vectors cannot be used now (no model, provider down)."""
        if self.query_embedder is None or not self._ready:
            return None
        stored = self.store.embedding_model()
        if stored is None or stored.model_id != self.query_embedder.model_id:
            # Another process (`memhub reembed`) moved the store to another model: never compare across models.
            self._ready = False
            self._state, self._last_error = "error", "the store's embedding model changed; restart memhub"
            return None
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
            pending = self._in_flight.get(text)
            if pending is None:
                pending = self._in_flight[text] = Future()
                owner = True
            else:
                owner = False
        if not owner:
            return pending.result()  # the first caller's vector, or its EmbeddingError
        try:
            vector = self._embed_new_query(text)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        else:
            pending.set_result(vector)
            return vector
        finally:
            with self._cache_lock:
                del self._in_flight[text]

    def _embed_new_query(self, text: str) -> np.ndarray:
        assert self.query_embedder is not None
        if time.monotonic() < self._query_down_until:
            raise EmbeddingError("the embedding provider failed recently; cooling down")
        try:
            vector = self.query_embedder.embed_query(self.query_text(text))
        except EmbeddingError:
            self._query_down_until = time.monotonic() + QUERY_COOL_DOWN_S
            raise
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector

    def query_text(self, text: str) -> str:
        """What of a search query is embedded: all of a question, the likeliest ask of a long prompt."""
        if not self.query_focus_tokens:
            return truncate_to_tokens(text, QUERY_MAX_TOKENS)
        if estimate_tokens(text) <= QUERY_WHOLE_TOKENS:
            return text
        return focus_query(text, self.query_focus_tokens)

    def warm_up(self) -> None:
        """Load the query model now, so the first search does not pay for it (failures only logged)."""
        if self.query_embedder is None or not self._ready:
            return
        try:
            self.query_embedder.embed_query("warm up")
        except EmbeddingError as exc:
            log.warning("embedding model not available yet: %s", exc)

    # -- status ----------------------------------------------------------------------------------------
    def status(self) -> WorkerState:
        """Provider, model, backlog and worker state."""
        stored = self.store.embedding_model()
        return WorkerState(
            provider=self.provider,
            model=stored.model_id if stored else None,
            dim=stored.dim if stored else None,
            backlog=self.store.embedding_backlog(),
            state=self._state,
            last_error=self._last_error,
        )

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker and release the models; a worker still busy after `timeout` keeps them (they are
        left to the process's exit)."""
        if not self.stop(timeout):
            return
        for embedder in {id(e): e for e in (self.embedder, self.query_embedder) if e is not None}.values():
            embedder.close()


def _slices(texts: list[str], max_tokens: int | None) -> list[tuple[int, int]]:
    """[first, last) ranges of consecutive texts of at most `max_tokens` estimated tokens each (one text at
    least); the whole list at once without a limit."""
    if max_tokens is None or not texts:
        return [(0, len(texts))]
    out: list[tuple[int, int]] = []
    first, tokens = 0, 0
    for i, text in enumerate(texts):
        cost = estimate_tokens(text)
        if i > first and tokens + cost > max_tokens:
            out.append((first, i))
            first, tokens = i, 0
        tokens += cost
    out.append((first, len(texts)))
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, EmbeddingError) else f"{type(exc).__name__}: {text}"


def status_view(state: WorkerState) -> dict[str, Any]:
    """The embedding block of /health."""
    return {
        "provider": state.provider,
        "model": state.model,
        "dim": state.dim,
        "backlog": state.backlog,
        "state": state.state,
        "last_error": state.last_error,
    }


def search_with(
    embedding: EmbeddingRuntime | None,
    query: str,
    terms: QueryTerms,
    channels: Channels[R],
    view: RecordView[R],
    options: SearchOptions,
) -> SearchOutcome[R]:
    """Hybrid search with the runtime's query vectors and fusion weight; BM25 only without a runtime."""
    if embedding is None:
        return hybrid_search(query, not terms.empty, channels, view, options, None, now_ms())
    options = embedding.search_options(options)
    return hybrid_search(query, not terms.empty, channels, view, options, embedding.embed_query, now_ms())
