"""Embedding provider faults through the HTTP app, with a real background worker.

The provider is the only fake here: an OpenAI-compatible HTTP server on loopback
(tests/retrieval/fake_openai.py) that can be switched to down, slow, wrong-shaped … at run time.
Writes must never wait for it, searches must answer from BM25 (and say so) while it misbehaves, and
the backlog must drain once it is back.
"""

from __future__ import annotations

import math
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memhub.memory import embedding
from memhub.model import EmbeddingModel
from memhub.retrieval.embed import EmbeddingError
from memhub.store.factory import open_store
from tests.conftest import Gateway
from tests.retrieval.fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(180)

DIM = 64
API_KEY = "sk-test-embedding-key-0123456789"
MESSAGES = [
    "The quarterly budget review moved to Thursday.",
    "Alice is allergic to peanuts.",
    "Our flight to Tokyo was delayed by three hours.",
]
# Long enough that a busy machine's loopback never looks like a provider fault; the tests about a provider
# that stops answering make it answer never, so no assertion depends on how fast this machine is.
QUERY_TIMEOUT_MS = 5_000
WAIT_S = 60.0  # the most a test waits for the background worker to reach a state
COOL_DOWN_S = 0.5


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_dim=DIM, api_key=API_KEY) as server:
        yield server


@pytest.fixture
def openai_gateway(make_gateway: Callable[..., Gateway], fake: FakeOpenAI) -> Callable[..., Gateway]:
    def make(name: str = "openai", **overrides: Any) -> Gateway:
        settings: dict[str, Any] = {
            "embedding": True,
            "start_worker": True,
            "embedding_provider": "openai",
            "embedding_base_url": fake.base_url,
            "embedding_api_key": API_KEY,
            "embedding_model": "fake-embed",
            "embedding_dimensions": DIM,
            "embedding_timeout_ms": 10_000,
            "embedding_query_timeout_ms": QUERY_TIMEOUT_MS,
            **overrides,
        }
        return make_gateway(name, **settings)

    return make


def write_all(gw: Gateway) -> None:
    """The writes every test starts with (a provider that never answers would hang them if they waited for it)."""
    body = {"session_id": "s1", "messages": [{"role": "user", "content": t} for t in MESSAGES]}
    gw.ok("/v3/conversation/add", body)
    gw.ok("/v3/atomic/add", {"content": "Prefers aisle seats on long flights.", "type": "persona"})


def search(gw: Gateway, query: str, path: str = "/v3/conversation/search") -> tuple[list[str], str]:
    data = gw.ok(path, {"query": query, "limit": 10})
    key = "messages" if "conversation" in path else "items"
    return [m["content"] for m in data[key]], data["strategy"]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S, poll: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(poll)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


def vector_rows(gw: Gateway) -> int:
    con = sqlite3.connect(gw.store.path)
    try:
        return sum(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("l0_vectors", "l1_vectors"))
    finally:
        con.close()


def backing_off(gw: Gateway) -> dict[str, Any] | None:
    block = gw.health()["embedding"]
    return block if block["state"] == "backing-off" and block["last_error"] else None


# -- down, then back -----------------------------------------------------------------------------------
def test_provider_down_degrades_to_bm25_and_the_backlog_drains_once_it_is_back(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cool-down's length is not what this test checks: a short one spares it ten seconds of waiting.
    monkeypatch.setattr(embedding, "QUERY_COOL_DOWN_S", COOL_DOWN_S)
    fake.mode = "down"
    gw = openai_gateway()
    write_all(gw)

    found, strategy = search(gw, "budget review")
    assert (found[:1], strategy) == (["The quarterly budget review moved to Thursday."], "fts")
    items, strategy = search(gw, "aisle seats", "/v3/atomic/search")
    assert (items, strategy) == (["Prefers aisle seats on long flights."], "fts")

    block = wait_for(lambda: backing_off(gw), "worker backing off")
    assert "503" in block["last_error"] or "overloaded" in block["last_error"], block
    assert API_KEY not in block["last_error"]
    health = gw.health()
    assert health["embedding_backlog"] == 4 and block["backlog"] == 4
    assert (block["provider"], block["model"], block["dim"]) == ("openai", "openai:fake-embed", DIM)
    assert vector_rows(gw) == 0

    fake.mode = "ok"
    wait_for(lambda: gw.health()["embedding_backlog"] == 0, "backlog drained")
    assert vector_rows(gw) == 4
    assert gw.health()["embedding"]["last_error"] is None
    # Searches skip the provider for a cool-down after a failure; then they use vectors again.
    wait_for(lambda: search(gw, "budget review")[1] == "hybrid", "hybrid search", COOL_DOWN_S + WAIT_S, 0.05)
    found, strategy = search(gw, "budget review")
    assert strategy == "hybrid" and found[0] == "The quarterly budget review moved to Thursday."
    assert search(gw, "aisle seats", "/v3/atomic/search") == (["Prefers aisle seats on long flights."], "hybrid")


def test_provider_unreachable_degrades_to_bm25(openai_gateway: Callable[..., Gateway], fake: FakeOpenAI) -> None:
    fake.stop()  # connection refused
    gw = openai_gateway()
    write_all(gw)
    found, strategy = search(gw, "flight delayed")
    assert (found[:1], strategy) == (["Our flight to Tokyo was delayed by three hours."], "fts")
    block = wait_for(lambda: backing_off(gw), "worker backing off")
    assert block["backlog"] == 4
    fake.start()  # the same port again
    wait_for(lambda: gw.health()["embedding_backlog"] == 0, "backlog drained")
    assert vector_rows(gw) == 4


# -- slow ----------------------------------------------------------------------------------------------
def test_a_slow_provider_never_holds_a_search_past_the_query_timeout(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    # The provider answers nothing until it stops (the test's end), and a provider request may take ten
    # minutes: writes, searches and health that waited for it would never return, so returning is the check.
    fake.mode = "slow"
    fake.slow_seconds = 600
    gw = openai_gateway(embedding_timeout_ms=600_000, embedding_query_timeout_ms=300)
    try:
        write_all(gw)
        wait_for(lambda: fake.request_count, "the worker's batch at the provider")
        for _ in range(3):
            found, strategy = search(gw, "peanuts allergy")
            assert (found[:1], strategy) == (["Alice is allergic to peanuts."], "fts")
        assert gw.health()["embedding_backlog"] == 4  # health answers while the worker's batch is stuck
    finally:
        fake.stop()  # wakes the worker's request still waiting on the slow provider


# -- wrong shape -----------------------------------------------------------------------------------------
def test_vectors_of_the_wrong_dimension_are_never_stored(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    fake.mode = "wrong_dims"
    gw = openai_gateway()
    write_all(gw)
    block = wait_for(lambda: backing_off(gw), "worker backing off")
    assert "shape" in block["last_error"] or str(DIM - 1) in block["last_error"], block
    assert fake.request_count >= 1  # it did ask, and refused the answer
    assert gw.health()["embedding_backlog"] == 4
    assert vector_rows(gw) == 0
    found, strategy = search(gw, "flight delayed")
    assert (found[:1], strategy) == (["Our flight to Tokyo was delayed by three hours."], "fts")
    asked = fake.request_count
    wait_for(lambda: fake.request_count > asked, "one more attempt of the worker")
    assert vector_rows(gw) == 0 and gw.health()["embedding_backlog"] == 4


@pytest.mark.parametrize("mode", ["zeros", "wrong_count", "bad_json"])
def test_other_malformed_answers_are_never_stored(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI, mode: str
) -> None:
    fake.mode = mode
    gw = openai_gateway()
    write_all(gw)
    wait_for(lambda: backing_off(gw), "worker backing off")
    assert vector_rows(gw) == 0 and gw.health()["embedding_backlog"] == 4
    assert search(gw, "budget review")[1] == "fts"


def test_a_provider_error_never_puts_the_api_key_in_health(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    fake.mode = "bad_request"  # its error message echoes the Authorization header
    gw = openai_gateway()
    write_all(gw)
    block = wait_for(lambda: backing_off(gw), "worker backing off")
    assert "400" in block["last_error"]
    assert API_KEY not in gw.client.get("/health").text


# -- another model's vectors ------------------------------------------------------------------------------
def test_a_provider_of_another_dimension_is_refused_and_search_stays_bm25(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    first = openai_gateway("shared")
    write_all(first)
    wait_for(lambda: first.health()["embedding_backlog"] == 0, "first backlog drained")
    first.close()

    # Same data dir, dimension not configured: the provider answers with 32-d vectors.
    fake.default_dim = 32
    second = openai_gateway("shared", embedding_dimensions=None)
    second.ok("/v3/conversation/add", {"session_id": "s2", "messages": [{"role": "user", "content": "new budget"}]})
    block = wait_for(
        lambda: (b := second.health()["embedding"])["state"] == "error" and b, "worker stopped on the mismatch"
    )
    assert "memhub reembed" in block["last_error"], block
    assert (block["model"], block["dim"]) == ("openai:fake-embed", DIM)  # the store keeps its model
    found, strategy = search(second, "budget")
    assert strategy == "fts" and "new budget" in found
    assert vector_rows(second) == 4  # the old vectors are kept, nothing of the new model mixed in
    assert second.health()["embedding_backlog"] == 1


def test_a_reembed_by_another_process_while_serving_falls_back_to_bm25(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    gw = openai_gateway()
    write_all(gw)
    wait_for(lambda: gw.health()["embedding_backlog"] == 0, "backlog drained")
    assert search(gw, "budget review")[1] == "hybrid"
    other = open_store(gw.data_dir)  # `memhub reembed` with another model, run against the docs' advice
    try:
        other.reset_embeddings(EmbeddingModel("openai:other-model", 32))
    finally:
        other.close()
    found, strategy = search(gw, "budget review")  # never compares 64-d queries with 32-d vectors
    assert strategy == "fts" and found[0] == "The quarterly budget review moved to Thursday."
    block = wait_for(lambda: (b := gw.health()["embedding"])["state"] == "error" and b, "worker stopped")
    assert block["last_error"], block
    assert block["model"] == "openai:other-model"
    gw.ok("/v3/conversation/add", {"session_id": "s9", "messages": [{"role": "user", "content": "still writable"}]})
    assert "still writable" in search(gw, "writable")[0]


# -- batching ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("records", "batch"), [(10, 4), (11, 4), (8, 8), (3, 32)])
def test_records_are_embedded_in_batches(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI, records: int, batch: int
) -> None:
    gw = openai_gateway(embedding_batch_size=batch)
    body = {"session_id": "s", "messages": [{"role": "user", "content": f"note {i}"} for i in range(records)]}
    gw.ok("/v3/conversation/add", body)  # one transaction: the worker sees all of them at once
    wait_for(lambda: gw.health()["embedding_backlog"] == 0, "backlog drained")
    assert fake.request_count == math.ceil(records / batch), fake.batch_sizes
    assert sum(fake.batch_sizes) == records
    assert all(size <= batch for size in fake.batch_sizes)
    bodies = [r.body for r in fake.requests]
    assert all(b["model"] == "fake-embed" and b["dimensions"] == DIM for b in bodies)
    assert all(r.authorization == f"Bearer {API_KEY}" for r in fake.requests)
    assert vector_rows(gw) == records


def _waiting_on_a_future(thread: threading.Thread) -> bool:
    """Whether `thread` is blocked in `Future.result` (waiting for another caller's work)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "result" and "concurrent" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def test_one_query_in_flight_is_embedded_once_for_every_caller(
    openai_gateway: Callable[..., Gateway], fake: FakeOpenAI
) -> None:
    """Recall searches L1 and L0 at once: the second search waits for the first one's query vector."""
    gw = openai_gateway(start_worker=False)
    runtime = gw.embedding
    assert runtime is not None
    fake.mode, fake.slow_seconds = "slow", 600.0  # held until the fake stops
    answers: dict[str, Any] = {}

    def embed(name: str) -> None:
        try:
            answers[name] = runtime.embed_query("when is the budget review")
        except EmbeddingError as exc:
            answers[name] = exc

    first = threading.Thread(target=embed, args=("first",))
    first.start()
    deadline = time.monotonic() + WAIT_S
    while fake.request_count < 1:
        assert time.monotonic() < deadline, "the first query never reached the provider"
        time.sleep(0.01)
    second = threading.Thread(target=embed, args=("second",))
    second.start()
    while not _waiting_on_a_future(second):
        assert fake.request_count == 1, "the second caller asked the provider again"
        assert second.is_alive() and time.monotonic() < deadline, "the second caller did not wait"
        time.sleep(0.01)
    fake.stop()  # the held request fails: both callers get that one failure
    first.join(WAIT_S)
    second.join(WAIT_S)
    assert fake.request_count == 1
    assert isinstance(answers["first"], EmbeddingError) and answers["second"] is answers["first"]
