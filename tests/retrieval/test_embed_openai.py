"""The OpenAI-compatible embedder against a real local HTTP server (tests/retrieval/fake_openai.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from memhub.retrieval.embed import (
    LOCAL_MODELS,
    EmbeddingConfig,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    build_embedder,
)
from tests.fake_clock import FakeClock
from tests.retrieval.fake_openai import FakeOpenAI

MODEL = "fake-embed"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def make(fake: FakeOpenAI) -> Iterator[object]:
    """Build OpenAI embedders pointed at the fake server; all are closed after the test."""
    built: list[OpenAIEmbedder] = []

    def _make(**overrides: object) -> OpenAIEmbedder:
        settings: dict[str, object] = {"provider": "openai", "model": MODEL, "base_url": fake.base_url}
        settings.update(overrides)
        embedder = build_embedder(EmbeddingConfig(**settings))  # type: ignore[arg-type]
        assert isinstance(embedder, OpenAIEmbedder)
        built.append(embedder)
        return embedder

    yield _make
    for embedder in built:
        embedder.close()


def on_clock(fake: FakeOpenAI, clock: FakeClock, **overrides: object) -> OpenAIEmbedder:
    """An embedder of the fake server whose retry budget runs on `clock` (close it after use)."""
    settings: dict[str, object] = {"provider": "openai", "model": MODEL, "base_url": fake.base_url, **overrides}
    return OpenAIEmbedder(EmbeddingConfig(**settings), clock.clock())  # type: ignore[arg-type]


def texts(n: int) -> list[str]:
    return [f"memory number {i} about topic {i % 7} and item {i * 31 % 101}" for i in range(n)]


# -- the happy path ---------------------------------------------------------------------------------------------


def test_batches_by_batch_size_and_keeps_order(fake: FakeOpenAI, make) -> None:
    fake.shuffle = True  # data[] comes back reversed; the client must order by "index"
    embedder = make(batch_size=64)
    inputs = texts(150)
    out = embedder.embed_documents(inputs)

    assert fake.batch_sizes == [64, 64, 22]
    assert [r.inputs for r in fake.requests] == [inputs[:64], inputs[64:128], inputs[128:]]
    assert out.shape == (150, 64) and out.dtype == np.float32 and out.flags.c_contiguous
    expected = np.stack([fake.expected(t) for t in inputs])
    np.testing.assert_allclose(out, expected, atol=1e-5)
    assert embedder.model_id == f"openai:{MODEL}"


def test_rows_are_normalised_and_query_matches_document(fake: FakeOpenAI, make) -> None:
    fake.scale = 7.5  # the server's vectors are far from unit length
    embedder = make()
    docs = embedder.embed_documents(["Alice is allergic to peanuts", "the train leaves at noon"])
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-6)
    query = embedder.embed_query("Alice is allergic to peanuts")
    assert query.shape == (64,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-6
    np.testing.assert_allclose(query, docs[0], atol=1e-6)
    # The fake's vectors are bag-of-words, so sharing words must mean closer.
    assert float(docs[0] @ embedder.embed_query("is Alice allergic")) > float(docs[1] @ query)


def test_dimensions_are_sent_and_known_without_a_request(fake: FakeOpenAI, make) -> None:
    embedder = make(dimensions=32)
    assert embedder.dim == 32
    assert fake.request_count == 0
    out = embedder.embed_documents(["a b c", "d e f"])
    assert out.shape == (2, 32)
    body = fake.requests[0].body
    assert body["dimensions"] == 32
    assert body["model"] == MODEL
    assert body["encoding_format"] == "float"
    assert body["input"] == ["a b c", "d e f"]


def test_send_dimensions_false_omits_the_field_but_still_checks_it(fake: FakeOpenAI, make) -> None:
    ok = make(dimensions=64, send_dimensions=False)
    assert ok.embed_query("hello").shape == (64,)
    assert "dimensions" not in fake.requests[-1].body

    mismatched = make(dimensions=32, send_dimensions=False)  # the server answers with its default 64
    with pytest.raises(EmbeddingError, match="64-dim vectors, expected 32"):
        mismatched.embed_query("hello")


def test_dim_is_learned_from_the_first_response(fake: FakeOpenAI, make) -> None:
    embedder = make()
    assert embedder.dim == 64  # a probe request
    assert fake.request_count == 1
    assert "dimensions" not in fake.requests[0].body
    assert embedder.embed_documents([]).shape == (0, 64)
    assert fake.request_count == 1  # nothing sent for an empty batch once dim is known

    fake.default_dim = 48  # the provider changed model under us: refuse, never mix dimensions
    with pytest.raises(EmbeddingError, match="48-dim vectors, expected 64"):
        embedder.embed_query("hello")


def test_api_key_is_sent_as_bearer(fake: FakeOpenAI, make) -> None:
    fake.api_key = "sk-test-123"
    assert make(api_key="sk-test-123").embed_query("hi").shape == (64,)
    assert fake.requests[-1].authorization == "Bearer sk-test-123"

    fake.reset()
    with pytest.raises(EmbeddingError, match="HTTP 401") as info:
        make().embed_query("hi")
    assert fake.requests[-1].authorization is None
    assert fake.request_count == 1  # a 4xx other than 429 is not retried
    assert "sk-test-123" not in str(info.value)


def test_api_key_never_appears_in_errors_or_reprs(fake: FakeOpenAI, make) -> None:
    key = "sk-very-secret-0123456789"
    fake.mode = "bad_request"  # its error message echoes the Authorization header back
    embedder = make(api_key=key)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_query("hi")
    message = str(info.value)
    assert "HTTP 400" in message and "***" in message
    assert key not in message
    config = EmbeddingConfig(provider="openai", model=MODEL, base_url=fake.base_url, api_key=key)
    assert key not in repr(config)
    assert key not in repr(embedder)


def test_inputs_are_truncated_and_blanks_replaced(fake: FakeOpenAI, make) -> None:
    embedder = make(max_chars=10)
    out = embedder.embed_documents(["abcdefghij and a long tail", "", "  \n\t", "a\x00b", "x\ud800y"])
    assert out.shape == (5, 64)
    # The fake rejects empty strings with 400 exactly like OpenAI, so "" must have been replaced.
    assert fake.requests[0].inputs == ["abcdefghij", " ", " ", "a b", "x?y"]
    np.testing.assert_allclose(out[0], fake.expected("abcdefghij"), atol=1e-5)
    assert embedder.embed_query("").shape == (64,)
    assert fake.requests[-1].inputs == [" "]


# -- failures ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "message", "attempts"),
    [
        ("down", "HTTP 503", 3),
        ("drop", "connection failed", 3),
        ("rate_limited", "HTTP 429", 3),
        ("wrong_dims", "63-dim vectors, expected 64", 1),
        ("wrong_count", "returned 2 vectors for 3 inputs", 1),
        ("bad_json", "invalid JSON", 1),
        ("zeros", "zero vector", 1),
    ],
)
def test_provider_failures_raise_embedding_error(
    fake: FakeOpenAI, make, mode: str, message: str, attempts: int
) -> None:
    clock = FakeClock()
    embedder = on_clock(fake, clock, dimensions=64, timeout_ms=5_000)
    fake.mode = mode
    try:
        with pytest.raises(EmbeddingError, match=message):
            embedder.embed_documents(["one", "two", "three"])
        # Retryable failures are retried twice after 0.1 s and 0.4 s backoffs; the others fail at once.
        assert fake.request_count == attempts
        assert clock.slept == [0.1, 0.4][: attempts - 1]

        fake.mode = "ok"  # the same embedder recovers once the provider does
        assert embedder.embed_documents(["one", "two", "three"]).shape == (3, 64)
    finally:
        embedder.close()


def test_slow_provider_times_out_within_the_budget(fake: FakeOpenAI, make) -> None:
    fake.mode = "slow"
    fake.slow_seconds = 600  # no answer until the fake stops
    embedder = make(timeout_ms=400)
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.4s"):
        embedder.embed_query("hello")
    # timeout_ms bounds the whole call including retries, so a timeout is not retried.
    assert fake.request_count == 1

    fake.mode = "ok"
    assert embedder.embed_query("hello").shape == (64,)


def test_transient_failures_are_retried(fake: FakeOpenAI, make) -> None:
    embedder = make()
    fake.fail_next(2, "down")
    assert embedder.embed_query("hello").shape == (64,)
    assert [r.mode for r in fake.requests] == ["down", "down", "ok"]

    fake.reset()
    fake.fail_next(3, "drop")
    with pytest.raises(EmbeddingError, match="after 3 attempt"):
        embedder.embed_query("hello")


def test_retry_after_beyond_the_budget_fails_fast(fake: FakeOpenAI, make) -> None:
    fake.mode = "rate_limited"
    fake.retry_after = 30
    clock = FakeClock()
    embedder = on_clock(fake, clock, timeout_ms=2_000)
    try:
        with pytest.raises(EmbeddingError, match="HTTP 429"):
            embedder.embed_query("hello")
    finally:
        embedder.close()
    assert clock.slept == []  # a 30 s wait cannot fit in 2 s: the call ends at once
    assert fake.request_count == 1


def test_nothing_listening_then_recovery(fake: FakeOpenAI, make) -> None:
    clock = FakeClock()
    embedder = on_clock(fake, clock, timeout_ms=3_000)
    assert embedder.embed_query("warm the connection pool").shape == (64,)
    fake.stop()
    with pytest.raises(EmbeddingError, match="connection failed"):
        embedder.embed_query("hello")
    assert clock.slept == [0.1, 0.4]  # refused at once, retried after the two short backoffs

    fake.start()  # same port
    try:
        assert embedder.embed_query("hello").shape == (64,)
    finally:
        embedder.close()


def test_closed_embedder_raises(make) -> None:
    embedder = make()
    embedder.close()
    embedder.close()  # idempotent
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed_query("hello")


# -- concurrency ------------------------------------------------------------------------------------------------


def test_concurrent_queries_and_document_batches(fake: FakeOpenAI, make) -> None:
    embedder = make(batch_size=16)
    docs = texts(200)
    queries = [f"question {i} about topic {i % 7}" for i in range(40)]
    results: dict[str, np.ndarray] = {}
    errors: list[BaseException] = []

    def run_documents() -> None:
        try:
            results["__docs__"] = embedder.embed_documents(docs)
        except BaseException as exc:
            errors.append(exc)

    def run_queries(chunk: list[str]) -> None:
        try:
            for q in chunk:
                results[q] = embedder.embed_query(q)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run_documents)]
    threads += [threading.Thread(target=run_queries, args=(queries[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    np.testing.assert_allclose(results["__docs__"], np.stack([fake.expected(t) for t in docs]), atol=1e-5)
    for q in queries:
        np.testing.assert_allclose(results[q], fake.expected(q), atol=1e-5)


# -- build_embedder ---------------------------------------------------------------------------------------------


def test_build_embedder_choices() -> None:
    assert build_embedder(EmbeddingConfig(provider="none")) is None
    local = build_embedder(EmbeddingConfig())  # nothing is loaded until first use
    assert isinstance(local, LocalEmbedder)
    assert local.model_id == "local:multilingual-e5-small-q4" and local.dim == 384
    use = build_embedder(EmbeddingConfig(model="use-m3"))
    assert use is not None and use.model_id == "local:use-multilingual-v3" and use.dim == 512
    assert {name: info.dim for name, info in LOCAL_MODELS.items()} == {"e5-small": 384, "use-m3": 512}
    remote = build_embedder(
        EmbeddingConfig(provider="openai", model="text-embedding-3-small", base_url="https://api.openai.com/v1/")
    )
    assert remote is not None and remote.model_id == "openai:text-embedding-3-small"
    remote.close()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (EmbeddingConfig(provider="pinecone"), "unknown embedding provider 'pinecone'"),
        (EmbeddingConfig(provider="local", model="bge-m3"), "unknown local embedding model 'bge-m3'"),
        (EmbeddingConfig(provider="openai", model="m"), "needs base_url"),
        (EmbeddingConfig(provider="openai", base_url="https://api.openai.com/v1"), "needs a model name"),
        (EmbeddingConfig(provider="openai", model="m", base_url="ftp://example.com/v1"), "http"),
        (EmbeddingConfig(provider="openai", model="m", base_url="http://x/v1", dimensions=0), "dimensions"),
        (EmbeddingConfig(batch_size=0), "batch_size"),
        (EmbeddingConfig(max_chars=0), "max_chars"),
        (EmbeddingConfig(threads=0), "threads"),
        (EmbeddingConfig(provider="openai", model="m", base_url="http://x/v1", timeout_ms=0), "timeout_ms"),
    ],
)
def test_build_embedder_rejects_bad_configs(config: EmbeddingConfig, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_embedder(config)
