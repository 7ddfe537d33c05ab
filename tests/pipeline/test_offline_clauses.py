"""One fact per memory: the offline extractor cuts coordinated statements into clauses and tells "our"/"we" about
the speaker; the deduplicator keeps the halves apart."""

from __future__ import annotations

from datetime import date

import pytest

from memhub.pipeline.offline import OfflineExtractor
from memhub.pipeline.offline_clauses import split_clauses
from memhub.pipeline.offline_dedup import OfflineDeduplicator
from memhub.pipeline.types import Candidate, Decision, Neighbour, SourceMessage

T = 1777593600000  # 2026-05-01 00:00 UTC, a Friday
TODAY = date(2026, 5, 1)


def msg(content: str, mid: str = "m1", role: str = "user") -> SourceMessage:
    return SourceMessage(mid, role, content, T)


def memories(text: str) -> list[str]:
    """What the user saying `text` to an assistant becomes."""
    return [c.content for c in OfflineExtractor().extract([msg(text)], [])]


def memories_of_ann(text: str) -> list[str]:
    """What Ann saying `text` to Bo in a transcript of two named people becomes."""
    batch = [msg(f"Ann: {text}", "a1"), msg("Bo: Oh nice.", "b1", "assistant")]
    return [c.content for c in OfflineExtractor().extract(batch, []) if c.metadata.get("speaker") == "Ann"]


def clauses(text: str, zh: bool = False) -> list[str]:
    return [c.text for c in split_clauses(text, zh, TODAY)]


# ---------------------------------------------------------------- the splitter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My favourite city is Lisbon and our build uses pnpm",
            ["My favourite city is Lisbon", "our build uses pnpm"],
        ),
        ("I like tea, but my wife prefers coffee", ["I like tea", "my wife prefers coffee"]),
        (
            "I like tea and my wife likes coffee and our dog likes water",
            ["I like tea", "my wife likes coffee", "our dog likes water"],
        ),
        # a second verb phrase gets the first one's subject where the verbs can be told apart from nouns
        ("She moved to Lisbon and started a bakery", ["She moved to Lisbon", "She started a bakery"]),
        ("I moved to Lisbon and then opened a bakery", ["I moved to Lisbon", "I then opened a bakery"]),
        ("I've moved to Lisbon and started a bakery", ["I've moved to Lisbon", "I've started a bakery"]),
        ("I live in Lisbon and work at a bakery", ["I live in Lisbon", "I work at a bakery"]),
        (
            "My sister lives in Lisbon and works at a bakery",
            ["My sister lives in Lisbon", "My sister works at a bakery"],
        ),
        ("Always answer in English and never use emojis", ["Always answer in English", "never use emojis"]),
        # a time said before the subject belongs to every clause
        (
            "Yesterday I went to the park and my son bought ice cream",
            ["Yesterday I went to the park", "Yesterday, my son bought ice cream"],
        ),
    ],
)
def test_independent_clauses_are_cut_apart(text: str, expected: list[str]) -> None:
    assert clauses(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # coordinated nouns and subjects are one fact
        "I like tea and coffee",
        "I buy salt and pepper at the market",
        "I work in research and development",
        "Tom and Jerry went to Paris",
        "My sister and I went to Paris last week",
        "Tom and I went to Paris",
        # verb phrases that cannot be told apart from nouns, adjectives or an infinitive's scope
        "I like art and work",
        "I love to cook and bake bread",
        "I'm tired and bored",
        "I like fried rice and baked beans",
        "I saved money so I could travel to Japan",  # a purpose, not a second fact
        # a clause that leans on the one before it
        "I went to the show and it was great",
        "I have two cats but my husband is allergic to them",
        "I adopted two kittens and they are so cute",
        # inside a subordinate clause, a report of thought, quotes or brackets
        "When I was young and my dad was alive we lived in Paris",
        "I think tea is great and coffee is bad",
        'I read "War and Peace and my cat sat on it" twice',
        "I visited Rome (my wife stayed home and my son was at camp) last year",
    ],
)
def test_one_fact_stays_whole(text: str) -> None:
    assert clauses(text) == [text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢绿茶，我老婆喜欢咖啡", ["我喜欢绿茶", "我老婆喜欢咖啡"]),
        ("我住在深圳，而且我在腾讯工作", ["我住在深圳", "我在腾讯工作"]),
        ("我住在深圳，而且在腾讯工作", ["我住在深圳", "我在腾讯工作"]),
        ("我喜欢茶，也喜欢咖啡", ["我喜欢茶", "我也喜欢咖啡"]),
        ("我是老师，并且我的丈夫是医生", ["我是老师", "我的丈夫是医生"]),
        ("昨天我去了公园，我还买了冰淇淋", ["昨天我去了公园", "昨天我还买了冰淇淋"]),
    ],
)
def test_chinese_clauses_are_cut_apart(text: str, expected: list[str]) -> None:
    assert clauses(text, zh=True) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢茶和咖啡",  # 和 joins nouns
        "我和小王去了北京",
        "昨天，我去了公园",  # a time before the comma is no clause
        "我有两只猫，我老公对它们过敏",  # the second clause leans on the first
        "我喜欢茶，她喜欢咖啡",  # a clause about someone else says nothing about the user alone
        "我去了公园，买了冰淇淋",  # no connective: whether 买 shares the subject is not said
    ],
)
def test_chinese_single_facts_stay_whole(text: str) -> None:
    assert clauses(text, zh=True) == [text]


# ---------------------------------------------------------------- memories, one fact each


def test_the_reported_compound_memory_becomes_two_with_our_resolved() -> None:
    assert memories("My favourite city is Lisbon and our build uses pnpm.") == [
        "User's favourite city is Lisbon.",
        "User's build uses pnpm.",
    ]
    assert memories_of_ann("My favourite city is Lisbon and our build uses pnpm.") == [
        "Ann's favourite city is Lisbon.",
        "Ann's build uses pnpm.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Lisbon and started a bakery.", ["User moved to Lisbon.", "User started a bakery."]),
        ("I like tea and my wife likes coffee.", ["User likes tea.", "User's wife likes coffee."]),
        (
            "Yesterday I went to the park and my son bought ice cream.",
            ["User went to the park yesterday (2026-04-30).", "User's son bought ice cream yesterday (2026-04-30)."],
        ),
        (
            "Remember that I'm vegan and my son is allergic to nuts.",
            ["User is vegan.", "User's son is allergic to nuts."],
        ),
        ("我喜欢绿茶，我老婆喜欢咖啡。", ["用户喜欢绿茶。", "用户的老婆喜欢咖啡。"]),
        ("我喜欢茶，也喜欢咖啡。", ["用户喜欢茶。", "用户也喜欢咖啡。"]),
    ],
)
def test_each_clause_is_its_own_memory(text: str, expected: list[str]) -> None:
    assert memories(text) == expected


def test_code_mode_splits_team_facts_too() -> None:
    found = OfflineExtractor().extract([msg("We use pnpm and our CI runs on GitHub Actions.")], [], mode="code")
    assert [(c.content, c.type) for c in found] == [
        ("The team uses pnpm.", "work_method"),
        ("The team's CI runs on GitHub Actions.", "work_fact"),
    ]


def test_two_instructions_are_two_memories() -> None:
    assert memories("Please don't use tables and always cite sources.") == [
        "User wants the assistant not to use tables.",
        "User wants the assistant to always cite sources.",
    ]


def test_every_half_keeps_the_statements_source() -> None:
    found = OfflineExtractor().extract(
        [msg("I like jazz.", "u0"), msg("I moved to Oslo and started a choir.", "u1")], []
    )
    assert [(c.content, c.source_message_ids) for c in found] == [
        ("User likes jazz.", ("u0",)),
        ("User moved to Oslo.", ("u1",)),
        ("User started a choir.", ("u1",)),
    ]


def test_an_answer_split_in_two_keeps_both_turns_as_sources() -> None:
    batch = [
        msg("Did you go to the jazz concert?", "a1", "assistant"),
        msg("Yes, and my sister played the drums.", "u1"),
    ]
    found = OfflineExtractor().extract(batch, [])
    assert [(c.content, c.source_message_ids) for c in found] == [
        ("User did go to the jazz concert.", ("a1", "u1")),
        ("User's sister played the drums.", ("a1", "u1")),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one fact with coordinated nouns stays one memory
        ("I like tea and coffee.", ["User likes tea and coffee."]),
        ("I speak French and German.", ["User speaks French and German."]),
        # small talk after the "and" is dropped, as it would be on its own
        ("I'm reading a book about whales and I'm totally hooked!", ["User is reading a book about whales."]),
        ("I went to Lisbon and I'm so happy.", ["User went to Lisbon."]),
        # a clause that says something but is no memory alone stays with the one before: nothing said is lost
        ("I've visited Rome and seen the Colosseum.", ["User has visited Rome and seen the Colosseum."]),
    ],
)
def test_splitting_loses_nothing_that_was_said(text: str, expected: list[str]) -> None:
    assert memories(text) == expected


# ---------------------------------------------------------------- the speaker's possessives and pronouns


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Our build uses pnpm.", ["User's build uses pnpm."]),
        ("Our dog is twelve years old.", ["User's dog is twelve years old."]),
        ("I love the garden behind our house.", ["User loves the garden behind their house."]),
        ("My girlfriend and I went fishing at the lake.", ["User and their girlfriend went fishing at the lake."]),
        ("Me and my team won the regional hackathon.", ["User and their team won the regional hackathon."]),
        ("Tom and I went to Paris last week.", ["User and Tom went to Paris last week (2026-04-20 to 2026-04-26)."]),
        ("I still haven't gotten a dog.", ["User still has not gotten a dog."]),
        ("我喜欢我们的新家。", ["用户喜欢他们的新家。"]),
    ],
)
def test_first_person_words_are_told_about_the_speaker(text: str, expected: list[str]) -> None:
    assert memories(text) == expected


def test_our_conversation_is_not_a_fact_about_the_user() -> None:
    assert memories("Our conversation yesterday was really useful.") == []


def test_a_named_speakers_companion_and_circle() -> None:
    assert memories_of_ann("My girlfriend and I went fishing at the lake.") == [
        "Ann and their girlfriend went fishing at the lake."
    ]
    assert memories_of_ann("We adopted a puppy and our kids chose the name Miso.") == [
        "Ann and others adopted a puppy.",
        "Ann's kids chose the name Miso.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "My favourite city is Lisbon and our build uses pnpm.",
        "We adopted a cat, and our kids named her Miso.",
        "Me and my brother fixed our old bikes and we rode to the coast.",
        "我们的房子很大，我和我们的狗住在一起。",
    ],
)
def test_no_first_person_word_is_left_in_a_memory(text: str) -> None:
    for content in memories(text) + memories_of_ann(text):
        assert not {"I", "my", "My", "our", "Our", "we", "We", "me", "us"} & set(content.replace(".", " ").split()), (
            content
        )
        assert "我" not in content, content


# ---------------------------------------------------------------- dedup keeps the halves


def cand(content: str) -> Candidate:
    return Candidate(content, "persona", 70, ("m1",), metadata={"source_time_ms": 2000})


def test_dedup_keeps_both_halves_in_one_batch() -> None:
    found = OfflineExtractor().extract([msg("I like tea and my wife likes tea too.")], [])
    assert [c.content for c in found] == ["User likes tea.", "User's wife likes tea too."]
    assert OfflineDeduplicator().decide(found, [[], []]) == [Decision("store"), Decision("store")]


@pytest.mark.parametrize(
    ("candidate", "neighbour"),
    [
        ("User likes tea.", "User's wife likes tea."),
        ("User's wife likes tea.", "User likes tea."),
        ("Ann's build uses pnpm.", "Ann uses pnpm."),
    ],
)
def test_a_memory_about_someones_possession_never_replaces_one_about_them(candidate: str, neighbour: str) -> None:
    decision = OfflineDeduplicator().decide([cand(candidate)], [[Neighbour("n", neighbour, "persona", 70, 1000)]])
    assert decision == [Decision("store")]


def test_a_holders_own_memories_still_update() -> None:
    neighbours = [[Neighbour("n", "User's wife's name is Anna.", "persona", 70, 1000)]]
    assert OfflineDeduplicator().decide([cand("User's wife's name is Maria.")], neighbours) == [
        Decision("update", ("n",))
    ]
