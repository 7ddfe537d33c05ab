"""BM25's share of the fused score follows the embedding model, unless a request or setting fixes it."""

from __future__ import annotations

from pathlib import Path

from memhub.memory.embedding import EmbeddingRuntime
from memhub.retrieval.embed import EmbeddingConfig, build_embedder
from memhub.retrieval.hybrid import SearchOptions
from memhub.store.factory import open_store


def _runtime(tmp_path: Path, model: str, override: float | None = None) -> EmbeddingRuntime:
    embedder = build_embedder(EmbeddingConfig(provider="local", model=model))
    return EmbeddingRuntime(open_store(tmp_path / model), embedder, provider="local", lexical_weight=override)


def test_each_local_model_brings_its_tuned_weight(tmp_path: Path) -> None:
    e5, use = _runtime(tmp_path, "e5-small"), _runtime(tmp_path, "use-m3")
    assert e5.search_options(SearchOptions(limit=5)).lexical_weight == 0.15
    # USE's vectors are weaker, so the ranking leans more on exact words.
    assert use.search_options(SearchOptions(limit=5)).lexical_weight == 0.5


def test_a_setting_overrides_the_model_and_an_explicit_option_wins(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "e5-small", override=0.4)
    assert runtime.search_options(SearchOptions(limit=5)).lexical_weight == 0.4
    assert runtime.search_options(SearchOptions(limit=5, lexical_weight=0.9)).lexical_weight == 0.9


def test_a_remote_model_of_unknown_quality_gets_the_middle_weight(tmp_path: Path) -> None:
    config = EmbeddingConfig(provider="openai", model="m", base_url="http://127.0.0.1:9", dimensions=8)
    runtime = EmbeddingRuntime(open_store(tmp_path / "r"), build_embedder(config), provider="openai")
    assert runtime.search_options(SearchOptions(limit=5)).lexical_weight == 0.3
