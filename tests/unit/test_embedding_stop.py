"""The background embedder stops without waiting for its backlog, and what it drops is embedded later.

A real SQLite store, and either the fake OpenAI-compatible provider (a real local HTTP server) whose "held" mode
keeps a call in flight until the test releases it, or the real local model behind a gate that holds its first
call: where the worker is when the stop comes never depends on how fast the machine is.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memhub.ids import message_id
from memhub.memory.embedding import EmbeddingRuntime
from memhub.model import NewMessage
from memhub.retrieval.embed import LOCAL_MODELS, EmbeddingConfig, LocalEmbedder, OpenAIEmbedder
from memhub.retrieval.packing import estimate_tokens
from memhub.scope import MemoryScope
from memhub.store import MemoryStore
from memhub.store.factory import open_store
from tests.retrieval.fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(120)

DIM = 16
RECORDS = 12
SCOPE = MemoryScope("svc", "team", "user", "agent", "")
WAIT_S = 60.0


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_dim=DIM) as server:
        yield server


def stored_messages(path: Path, texts: Sequence[str]) -> MemoryStore:
    opened = open_store(path)
    stamp = 1_700_000_000_000
    opened.add_messages(SCOPE, "s1", [NewMessage(message_id(), "user", text, stamp, stamp) for text in texts])
    return opened


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = stored_messages(tmp_path / "data", [f"message {i} about the release train" for i in range(RECORDS)])
    try:
        yield opened
    finally:
        opened.close()


def runtime(store: MemoryStore, fake: FakeOpenAI, call_tokens: int | None = None) -> EmbeddingRuntime:
    config = EmbeddingConfig(provider="openai", model="fake-embed", base_url=fake.base_url, dimensions=DIM)
    embedder = OpenAIEmbedder(config)
    embedder.call_tokens = call_tokens
    return EmbeddingRuntime(store, embedder, provider="openai")


def vectors(store: MemoryStore) -> int:
    con = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)  # type: ignore[attr-defined]
    try:
        return int(con.execute("SELECT COUNT(*) FROM l0_vectors").fetchone()[0])
    finally:
        con.close()


def wait_for(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {WAIT_S} s")
        time.sleep(0.01)


def test_a_stop_between_slices_drops_the_batch_and_a_later_run_embeds_it(store: MemoryStore, fake: FakeOpenAI) -> None:
    worker = runtime(store, fake, call_tokens=1)  # one text per provider call
    fake.fail_next(1, "ok")  # the first slice is answered, the second is held in flight
    fake.mode = "held"
    worker.start()
    wait_for(lambda: fake.request_count == 2, "the second slice in flight")
    worker.request_stop()
    fake.release()
    assert worker.stop(timeout=WAIT_S)
    assert fake.batch_sizes == [1, 1]  # stopped after the slice in flight, not at the batch's end
    assert store.embedding_backlog() == RECORDS  # nothing of the dropped batch was stored
    assert vectors(store) == 0
    worker.close()

    fake.mode = "ok"
    again = runtime(store, fake)
    assert again.drain(WAIT_S)
    assert store.embedding_backlog() == 0
    assert vectors(store) == RECORDS
    again.close()


def test_a_worker_left_inside_a_call_stores_nothing_when_it_returns(store: MemoryStore, fake: FakeOpenAI) -> None:
    fake.mode = "held"
    worker = runtime(store, fake)
    worker.start()
    wait_for(lambda: fake.request_count == 1, "the batch in flight")
    assert not worker.stop(timeout=0.2)  # the call is held: the stop does not wait for it
    fake.release()  # the call returns with every vector …
    assert worker.stop(timeout=WAIT_S)
    assert fake.batch_sizes == [RECORDS]
    assert store.embedding_backlog() == RECORDS  # … and the stopped worker drops them
    assert vectors(store) == 0
    worker.close()


class GatedLocal(LocalEmbedder):
    """The real local model; records each document call, and holds the first one until the test opens the gate."""

    def __init__(self, config: EmbeddingConfig) -> None:
        super().__init__(config)
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self.entered.set()
        assert self.gate.wait(WAIT_S), "the test never opened the gate"
        return super().embed_documents(texts)


def test_the_local_model_is_called_in_slices_and_a_stop_waits_for_one(tmp_path: Path) -> None:
    pytest.importorskip(LOCAL_MODELS["e5-small"].module)
    # ~16 estimated tokens each, ~32 with the message before (an L0 text carries it): a 256-token slice holds ~8.
    store = stored_messages(
        tmp_path / "data", [f"note {i}: the release train leaves at noon, the deploy waits" for i in range(40)]
    )
    try:
        gated = GatedLocal(EmbeddingConfig(provider="local", model="e5-small"))
        assert gated.call_tokens == 256
        worker = EmbeddingRuntime(store, gated, provider="local", batch_size=32)
        worker.start()
        assert gated.entered.wait(WAIT_S), "the worker never called the model"
        worker.request_stop()
        gated.gate.set()
        assert worker.stop(timeout=WAIT_S)  # after the slice in hand, not the batch of 32
        [first] = gated.calls
        assert 1 < len(first) < 32
        assert sum(map(estimate_tokens, first)) <= 256
        assert store.embedding_backlog() == 40  # the batch was dropped, not stored
        assert vectors(store) == 0
        batch = [t.text for t in store.next_embedding_tasks(32)]
        assert batch[: len(first)] == first
        gated.close()

        model = LocalEmbedder(EmbeddingConfig(provider="local", model="e5-small"))
        # Slicing changes no vector: a slice embedded on its own equals its rows of the whole batch.
        np.testing.assert_allclose(model.embed_documents(first), model.embed_documents(batch)[: len(first)], atol=1e-5)
        again = EmbeddingRuntime(store, model, provider="local", batch_size=32)
        assert again.drain(WAIT_S)
        assert vectors(store) == 40
        again.close()
    finally:
        store.close()
