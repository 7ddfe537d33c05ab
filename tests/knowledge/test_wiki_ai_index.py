"""`index: "ai"` ingests: an LLM (a real local HTTP server speaking the OpenAI API) writes the summaries and
tags authors left out; front matter always wins; answers are reused by content hash; failures fall back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.pipeline.fake_llm import FakeChat, Reply

TEAM = "team-ai"

DOCS = {
    "payments/refunds.md": (
        "# Refunds\n\nThis page was written in a hurry.\n\nRefunds above 500 EUR need a finance lead.\n"
    ),
    "payments/chargebacks.md": (
        "---\ntitle: Chargebacks\nsummary: How to answer a card chargeback.\ntags: [cards, disputes]\n---\n\n"
        "# Chargebacks\n\nAnswer within 7 days.\n"
    ),
    "ops/oncall.md": "# On-call\n\nSome intro text.\n\nPage the secondary after 15 minutes.\n",
}


def _describe(body: dict[str, Any]) -> Reply:
    text = body["messages"][-1]["content"]
    title = text.splitlines()[0].removeprefix("Title: ")
    return Reply.json({"summary": f"What {title} covers", "tags": [title.lower(), "ai"]})


@pytest.fixture
def fake() -> Iterator[FakeChat]:
    with FakeChat() as server:
        server.script = _describe
        yield server


@pytest.fixture
def gw(tmp_path: Path, fake: FakeChat) -> Iterator[Gateway]:
    gateway = build_gateway(tmp_path / "data", llm_base_url=fake.base_url, llm_model="fake-chat", llm_timeout_ms=30_000)
    yield gateway
    gateway.client.app.state.knowledge.wikis.wait_idle()
    gateway.close()


def _wiki(gw: Gateway, docs: dict[str, str] = DOCS) -> str:
    created = gw.post("/v3/wiki/create", {"team_id": TEAM, "name": "ops"})
    assert created.status_code == 201, created.json()
    wiki_id: str = created.json()["data"]["wiki_id"]
    files = [{"filename": name, "content": text} for name, text in docs.items()]
    gw.ok("/v3/wiki/raw/write", {"team_id": TEAM, "wiki_id": wiki_id, "files": files})
    return wiki_id


def _index(gw: Gateway, wiki_id: str, theme: str | None = None) -> dict[str, Any]:
    params = {"theme": theme} if theme else {}
    body = {"knowledge_id": wiki_id, "tool_name": "get_index", "params": params}
    return gw.ok("/v3/tools/call", body)["index"]


def test_ai_index_fills_missing_summaries_and_tags_but_never_overrides_front_matter(gw: Gateway) -> None:
    wiki_id = _wiki(gw)
    done = gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    assert done["status"] == "ready"
    assert done["report"]["index"] == "ai"
    # Two documents without an authored summary, and two themes without one.
    assert done["report"]["ai"] == {"written": 4, "reused": 0, "failed": 0}
    docs = {d["id"]: d for d in _index(gw, wiki_id, "payments")["documents"]}
    assert docs["payments/refunds"]["summary"] == "What Refunds covers"
    assert docs["payments/refunds"]["tags"] == ["refunds", "ai"]
    assert docs["payments/chargebacks"]["summary"] == "How to answer a card chargeback."
    assert docs["payments/chargebacks"]["tags"] == ["cards", "disputes"]
    themes = {t["id"]: t for t in _index(gw, wiki_id)["themes"]}
    assert themes["ops"]["summary"] == "What ops covers"


def test_ai_answers_are_reused_when_pages_did_not_change(gw: Gateway, fake: FakeChat) -> None:
    wiki_id = _wiki(gw)
    gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    asked = fake.request_count
    changed = {"filename": "ops/oncall.md", "content": DOCS["ops/oncall.md"] + "\nEscalate to the lead after 30.\n"}
    gw.ok("/v3/wiki/raw/write", {"team_id": TEAM, "wiki_id": wiki_id, "files": [changed]})
    again = gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    # The changed page and its theme (whose listing includes the page's summary, unchanged here) are asked again.
    assert again["report"]["ai"]["written"] == 1
    assert again["report"]["ai"]["reused"] == 3
    assert fake.request_count == asked + 1


def test_a_failing_model_keeps_the_rule_based_entry(gw: Gateway, fake: FakeChat) -> None:
    wiki_id = _wiki(gw)
    fake.script = Reply.fail(400, "bad request")
    done = gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    assert done["status"] == "ready"
    assert done["report"]["ai"]["written"] == 0 and done["report"]["ai"]["failed"] == 4
    docs = {d["id"]: d for d in _index(gw, wiki_id, "payments")["documents"]}
    assert docs["payments/refunds"]["summary"] == "This page was written in a hurry."


def test_an_unusable_answer_is_a_failure_not_a_summary(gw: Gateway, fake: FakeChat) -> None:
    wiki_id = _wiki(gw, {"a/x.md": "# X\n\nBody.\n"})
    fake.script = Reply.json(["not", "an", "object"])
    done = gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    assert done["report"]["ai"]["failed"] == 2
    assert _index(gw, wiki_id, "a")["documents"][0]["summary"] == "Body."


def test_ai_index_needs_a_configured_model(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "plain")
    try:
        wiki_id = _wiki(gw)
        failure = gw.fails("/v3/wiki/ingest", {"wiki_id": wiki_id, "index": "ai"}, 400)
        assert "index: 'ai' needs an LLM" in failure["message"]
        assert gw.ok("/v3/wiki/get", {"wiki_id": wiki_id})["status"] == "draft"
        gw.fails("/v3/wiki/ingest", {"wiki_id": wiki_id, "index": "llm"}, 400)
    finally:
        gw.close()


def test_an_authored_index_is_used_as_written(gw: Gateway, fake: FakeChat) -> None:
    index = {
        "schema_version": 1,
        "themes": [],
        "documents": [{"id": "x", "title": "X", "file": "x.md", "summary": "Authored."}],
    }
    wiki_id = _wiki(gw, {"x.md": "# X\n\nBody.\n", "index.json": json.dumps(index)})
    done = gw.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True, "index": "ai"})
    assert done["report"]["index"] == "authored" and done["report"]["ai"] is None
    assert fake.request_count == 0
