"""Rarest-first term pruning keeps rankings honest while bounding the postings ranked per query."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memhub.ids import message_id
from memhub.index.tokenize import query_terms
from memhub.model import MessageFilter, NewMessage
from memhub.scope import MemoryScope
from memhub.store.sqlite import SQLiteStore
from memhub.store.sqlite import fts as sqlite_fts

SCOPE = MemoryScope("svc", "team", "user", "agent", "")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setattr(sqlite_fts, "POSTING_BUDGET", 10)
    s = SQLiteStore(tmp_path)
    yield s
    s.close()


def _add(store: SQLiteStore, texts: list[str]) -> list[str]:
    messages = [NewMessage(message_id(), "user", t, 1_000 + i, 1_000 + i) for i, t in enumerate(texts)]
    return store.add_messages(SCOPE, "s", messages)[0]


def test_document_with_every_term_ranks_first_although_common_terms_were_pruned(store: SQLiteStore) -> None:
    # "coffee" is in 40 documents (over the budget of 10) and would be left out of the MATCH;
    # the one document that also has it must still beat documents with only the rare term.
    _add(store, [f"coffee note {i}" for i in range(40)])
    rare_only = _add(store, ["zanzibar trip planning", "zanzibar flights booked"])
    both = _add(store, ["zanzibar coffee tasting"])
    hits = store.search_messages(SCOPE, query_terms("zanzibar coffee"), MessageFilter(), 3)
    assert hits[0][0].id == both[0]
    assert {m.id for m, _ in hits[1:]} == set(rare_only)
    assert hits[0][1] > hits[1][1]


def test_a_query_of_only_very_common_terms_ranks_the_newest_postings(store: SQLiteStore) -> None:
    old = _add(store, ["meeting meeting meeting agenda"] + [f"meeting {i}" for i in range(30)])
    newest = _add(store, [f"meeting minutes {i}" for i in range(10)])
    hits = store.search_messages(SCOPE, query_terms("meeting"), MessageFilter(), 5)
    assert len(hits) == 5
    # Only the newest 10 postings were ranked, so the old triple-"meeting" message cannot win.
    assert {m.id for m, _ in hits} <= set(newest)
    assert old[0] not in {m.id for m, _ in hits}


def test_filters_still_apply_before_the_limit_when_terms_are_pruned(store: SQLiteStore) -> None:
    _add(store, [f"budget line {i}" for i in range(40)])
    late = [NewMessage(message_id(), "user", "budget zebra review", 90_000, 90_000)]
    store.add_messages(SCOPE, "late", late)
    hits = store.search_messages(SCOPE, query_terms("budget zebra"), MessageFilter(session_id="late"), 5)
    assert [m.id for m, _ in hits] == [late[0].id]


def test_bounded_scores_equal_fts5_bm25(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates scored in Python get exactly the score FTS5's bm25() gives on the unbounded path."""
    texts = [f"beta filler {i} words here" for i in range(25)]
    texts += ["alpha beta beta gamma", "alpha only here", "alpha beta", "gamma 数据库 alpha", "数据库 迁移 计划"]
    _add(store, texts)
    for query in ("alpha beta", "alpha gamma beta", "数据库 alpha"):
        bounded = store.search_messages(SCOPE, query_terms(query), MessageFilter(), 3)
        monkeypatch.setattr(sqlite_fts, "POSTING_BUDGET", 10**9)
        exact = dict(
            (m.id, score) for m, score in store.search_messages(SCOPE, query_terms(query), MessageFilter(), 30)
        )
        monkeypatch.setattr(sqlite_fts, "POSTING_BUDGET", 10)
        assert bounded and bounded[0][0].id == max(exact, key=exact.__getitem__), query
        # A document matching only left-out (common) terms may be missing, but never mis-scored.
        for message, score in bounded:
            assert score == pytest.approx(exact[message.id], rel=1e-9), query


def test_varint_decoding_matches_sqlite_format() -> None:
    assert sqlite_fts._varints(bytes([0x03, 0x81, 0x00, 0x7F])) == [3, 128, 127]


def test_a_prompt_with_more_terms_than_the_cap_is_searched_by_its_rarest(tmp_path: Path) -> None:
    # Unbounded postings: only the term cap decides what is searched.
    store = SQLiteStore(tmp_path / "cap")
    try:
        words = [f"common{i}" for i in range(sqlite_fts.MAX_QUERY_TERMS + 10)]
        # Each filler word in three documents, each document in a session of its own (so no neighbouring turn
        # lends it words); the wanted one has three terms found once: invoic, zx, 4471.
        for n, word in enumerate(word for word in words for _ in range(3)):
            store.add_messages(SCOPE, f"s{n}", [NewMessage(message_id(), "user", word, 1_000 + n, 1_000 + n)])
        wanted = store.add_messages(
            SCOPE, "rare", [NewMessage(message_id(), "user", "the invoice ZX-4471 was paid", 9_000, 9_000)]
        )[0]
        prompt = " ".join(words) + " what about invoice ZX-4471"
        terms = query_terms(prompt)
        assert len(set(terms.words)) > sqlite_fts.MAX_QUERY_TERMS
        hits = store.search_messages(SCOPE, terms, MessageFilter(), 1_000)
        assert hits[0][0].id == wanted[0]
        # The three rare terms and the 29 filler words that fill the cap are matched; the other filler words not.
        assert len(hits) == 1 + 3 * (sqlite_fts.MAX_QUERY_TERMS - 3)
    finally:
        store.close()


def test_a_query_under_the_term_cap_matches_every_term(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "under")
    try:
        filler = _add(store, ["common0 common1 common2"])
        rare = _add(store, ["invoice ZX-4471"])
        hits = store.search_messages(SCOPE, query_terms("common0 common1 common2 invoice ZX-4471"), MessageFilter(), 5)
        assert {m.id for m, _ in hits} == {*filler, *rare}
    finally:
        store.close()


def test_the_focus_terms_are_kept_although_more_common_than_the_rest(tmp_path: Path) -> None:
    """A long query cut to its rarest terms keeps every term of its ask (the focus), however common: the rarest
    filler words fill only what the focus leaves of the cap."""
    store = SQLiteStore(tmp_path / "focus")
    try:
        words = [f"filler{i}" for i in range(sqlite_fts.MAX_QUERY_TERMS + 10)]
        for n, word in enumerate(words):
            store.add_messages(SCOPE, f"f{n}", [NewMessage(message_id(), "user", word, 1_000 + n, 1_000 + n)])
        # "deploy" is in more documents than any filler word: the rarest-first cut alone would drop it.
        for n in range(5):
            store.add_messages(SCOPE, f"d{n}", [NewMessage(message_id(), "user", "deploy", 5_000 + n, 5_000 + n)])
        prompt = " ".join(words) + " deploy"
        plain = store.search_messages(SCOPE, query_terms(prompt), MessageFilter(), 1_000)
        focused = store.search_messages(SCOPE, query_terms(prompt, focus="deploy"), MessageFilter(), 1_000)
        assert not any(m.content == "deploy" for m, _ in plain)
        assert sum(m.content == "deploy" for m, _ in focused) == 5
        # The focus took one place of the cap: one filler word fewer is matched.
        assert len(focused) == 5 + sqlite_fts.MAX_QUERY_TERMS - 1
    finally:
        store.close()
