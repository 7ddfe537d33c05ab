"""The optional BM25 re-scoring of the retrieval walk: off by default, full-text evidence when on."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.knowledge.wiki.indexer import build_generation
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from tests.conftest import build_gateway

DOCS = {
    # Index summaries (front matter) that say little; the bodies say what the documents are about.
    "ops/runbook-a.md": "---\nsummary: Notes.\n---\n# Runbook A\n\nRestart the ingest worker when the queue stalls.\n",
    "ops/runbook-b.md": "---\nsummary: Notes.\n---\n# Runbook B\n\nRotate the TLS certificate before it expires.\n",
    "ops/runbook-c.md": "---\nsummary: Notes.\n---\n# Runbook C\n\nDrain the node, then patch the kernel.\n",
}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> WikiSnapshot:
    root = tmp_path_factory.mktemp("src")
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    target = tmp_path_factory.mktemp("gen") / "1"
    build_generation(root, target)
    return WikiSnapshot(1, target)


def _ids(result: dict[str, object]) -> list[str]:
    return [d["id"] for d in result["documents"]]  # type: ignore[index, union-attr]


def test_off_by_default_the_index_alone_decides(snapshot: WikiSnapshot) -> None:
    # No index entry mentions certificates: the theme opens by fallback and its first documents are taken.
    plain = snapshot.retrieve("How do I rotate the TLS certificate?")
    assert plain["themes"][0]["fallback"] is True  # type: ignore[index]
    assert _ids(plain) == ["ops/runbook-a", "ops/runbook-b"]
    assert snapshot.retrieve("How do I rotate the TLS certificate?", rescore="none") == plain


def test_bm25_rescoring_puts_the_document_whose_text_answers_first(snapshot: WikiSnapshot) -> None:
    result = snapshot.retrieve("How do I rotate the TLS certificate?", rescore="bm25")
    assert _ids(result)[0] == "ops/runbook-b"
    assert result["documents"][0]["score"] == 3.0  # type: ignore[index]
    assert "Rotate the TLS certificate" in str(result["text"])


def test_bm25_rescoring_with_no_text_hit_changes_nothing(snapshot: WikiSnapshot) -> None:
    question = "Where is the holiday calendar?"
    assert snapshot.retrieve(question, rescore="bm25") == snapshot.retrieve(question)


def test_the_retrieve_route_takes_the_switch(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "data")
    try:
        wiki_id = gw.post("/v3/wiki/create", {"team_id": "t", "name": "ops"}).json()["data"]["wiki_id"]
        files = [{"filename": name, "content": text} for name, text in DOCS.items()]
        gw.ok("/v3/wiki/raw/write", {"team_id": "t", "wiki_id": wiki_id, "files": files})
        gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True})
        question = {"wiki_id": wiki_id, "question": "How do I rotate the TLS certificate?"}
        assert _ids(gw.ok("/v3/wiki/retrieve", question))[0] == "ops/runbook-a"
        assert _ids(gw.ok("/v3/wiki/retrieve", {**question, "rescore": "bm25"}))[0] == "ops/runbook-b"
        failure = gw.fails("/v3/wiki/retrieve", {**question, "rescore": "vectors"}, 400)
        assert "rescore" in failure["message"]
    finally:
        gw.close()
