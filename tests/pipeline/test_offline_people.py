"""The offline extractor on conversations between people: named speakers, statements, answers, fragments."""

from __future__ import annotations

import pytest

from memhub.pipeline.offline import OfflineExtractor
from memhub.pipeline.offline_dedup import OfflineDeduplicator
from memhub.pipeline.offline_speakers import read_speaker
from memhub.pipeline.quality import is_fragment
from memhub.pipeline.types import Candidate, Decision, Neighbour, SourceMessage

T = 1777593600000  # 2026-05-01 00:00 UTC, a Friday


def msg(content: str, mid: str = "m1", role: str = "user", **metadata: str) -> SourceMessage:
    return SourceMessage(mid, role, content, T, metadata)


def contents(*batch: SourceMessage) -> list[str]:
    return [c.content for c in OfflineExtractor().extract(list(batch), [])]


def extract_one(text: str) -> list[str]:
    return contents(msg(text))


# ---------------------------------------------------------------- named speakers


def test_a_transcript_names_each_speaker_whatever_the_role() -> None:
    batch = [
        msg("Priya: I adopted a greyhound from the rescue shelter last week.", "p1", "user"),
        msg("Tomas: My sister just got married in Valparaiso!", "t1", "assistant"),
    ]
    found = OfflineExtractor().extract(batch, [])
    assert [(c.content, c.source_message_ids, c.metadata["speaker"]) for c in found] == [
        (
            "Priya adopted a greyhound from the rescue shelter last week (2026-04-20 to 2026-04-26).",
            ("p1",),
            "Priya",
        ),
        ("Tomas's sister just got married in Valparaiso.", ("t1",), "Tomas"),
    ]
    assert not any(c.content.startswith("User") for c in found)


def test_metadata_names_the_speaker_and_a_matching_label_is_not_repeated() -> None:
    assert contents(msg("I volunteer at the harbour museum on weekends.", speaker="Noor")) == [
        "Noor volunteers at the harbour museum on weekends."
    ]
    assert contents(msg("Noor: I speak Tagalog and Dutch.", author="Noor")) == ["Noor speaks Tagalog and Dutch."]


def test_chinese_memories_name_the_speaker_too() -> None:
    assert contents(msg("小林：我住在杭州", "z1", "assistant"), msg("阿梅：我喜欢爬山", "z2")) == [
        "小林住在杭州。",
        "阿梅喜欢爬山。",
    ]


@pytest.mark.parametrize(
    ("role", "content", "metadata"),
    [
        ("assistant", "I love helping people plan trips to Kyoto.", {}),  # an unnamed assistant reply
        ("assistant", "Assistant: I grew up reading about marine biology.", {}),
        ("assistant", "Bot: My favourite language is Rust.", {}),
        ("assistant", "I moved to Oslo last year.", {"speaker": "GPT-4o"}),
        ("user", "System: I am a helpful assistant trained on the web.", {}),
    ],
)
def test_an_ai_never_becomes_a_person(role: str, content: str, metadata: dict[str, str]) -> None:
    assert contents(msg(content, role=role, **metadata)) == []


def test_a_heading_label_is_not_a_speaker() -> None:
    assert read_speaker("user", "Note: I moved to Porto.").name is None
    assert contents(msg("Note: I moved to Porto last month.")) == [
        "User moved to Porto last month (2026-04-01 to 2026-04-30)."
    ]
    assert contents(msg("User: I play the cello in a community orchestra.")) == [
        "User plays the cello in a community orchestra."
    ]


def test_between_people_nobody_instructs_the_assistant() -> None:
    people = [
        msg("Ines: Never give up on your drawing.", "i1"),
        msg("Kofi: Always answer my texts faster.", "k1", "assistant"),
    ]
    assert contents(*people) == []
    # One named person talking to an unnamed assistant still gives it instructions.
    assert contents(msg("Ines: Always answer in Portuguese.", "i1"), msg("Sure!", "a1", "assistant")) == [
        "Ines wants the assistant to always answer in Portuguese."
    ]


def test_we_is_the_speakers_circle_between_people_and_ambiguous_with_an_assistant() -> None:
    between = contents(msg("Ines: We adopted two kittens from a farm.", "i1"), msg("Kofi: Lovely!", "k1", "assistant"))
    assert between == ["Ines and others adopted two kittens from a farm."]
    assert extract_one("We adopted two kittens from a farm.") == []


def test_each_speaker_has_their_own_candidate_cap() -> None:
    ines = [msg(f"Ines: I collect stamps from country number {n}.", f"i{n}") for n in range(15)]
    kofi = [msg(f"Kofi: I repaired bicycle number {n} at the workshop.", f"k{n}", "assistant") for n in range(15)]
    found = OfflineExtractor().extract([m for pair in zip(ines, kofi, strict=True) for m in pair], [])
    assert len(found) == 30
    alone = OfflineExtractor().extract(
        ines + [msg(f"Ines: I sold painting number {n}.", f"s{n}") for n in range(10)], []
    )
    assert len(alone) == 20


# ---------------------------------------------------------------- what people say about themselves


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My sister just got married.", "User's sister just got married."),
        ("After work, I volunteer at the food bank.", "User volunteers at the food bank after work."),
        (
            "Honestly, I've been restoring an old sailboat with my uncle.",
            "User has been restoring an old sailboat with their uncle.",
        ),
        (
            "Got a new road bike for my commute yesterday!",
            "User got a new road bike for their commute yesterday (2026-04-30).",
        ),
        ("I was nervous before my violin recital, Sam.", "User was nervous before their violin recital."),
        (
            "The scarf I'm wearing was a gift from my grandmother in Tbilisi.",
            "User said that the scarf they are wearing was a gift from their grandmother in Tbilisi.",
        ),
        ('I finally watched a film called "Paper Moons".', 'User finally watched a film called "Paper Moons".'),
    ],
)
def test_informative_statements_are_kept_about_the_speaker(text: str, expected: str) -> None:
    assert extract_one(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "I know what you mean.",
        "I'm so happy for you!",
        "I can't wait to see it.",
        "I totally agree.",
        "I love that!",
        "It made me so happy.",
        "I think so too.",
        "I'll let you know once I finish it.",
        "I read it on the train this morning.",  # "it" is whatever the conversation was about
        "I need a Python script that renames my photos.",  # the task at hand, said to an assistant
        "I got this error when running my migration.",
    ],
)
def test_small_talk_and_tasks_are_not_facts(text: str) -> None:
    assert extract_one(text) == []


# ---------------------------------------------------------------- answers and their questions


def test_a_short_answer_takes_its_meaning_and_a_source_from_the_question() -> None:
    batch = [msg("Did you go to the jazz concert?", "a1", "assistant"), msg("Yes, last Saturday!", "u1")]
    found = OfflineExtractor().extract(batch, [])
    assert [(c.content, c.source_message_ids) for c in found] == [
        ("User did go to the jazz concert last Saturday (2026-04-25).", ("a1", "u1"))
    ]
    assert found[0].metadata["answer_to"] == "a1"


def test_answers_between_named_people_and_from_the_background() -> None:
    question = msg("Kofi: Have you ever climbed Mount Kenya?", "k1", "assistant")
    found = OfflineExtractor().extract([msg("Ines: Nope, never.", "i1")], [question])
    assert [(c.content, c.source_message_ids) for c in found] == [
        ("Ines has not ever climbed Mount Kenya.", ("k1", "i1"))
    ]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Did you like the soup I made?", "Yes!"),  # about the asker: whose soup would be lost
        ("The concert was fun.", "Yes, last Saturday!"),  # not a question
        ("Did you go to the jazz concert?", "Maybe."),  # not a yes or a no
    ],
)
def test_no_answer_statement_without_a_clear_question_and_answer(question: str, answer: str) -> None:
    assert contents(msg(question, "a1", "assistant"), msg(answer, "u1")) == []


def test_the_same_fact_from_two_turns_keeps_both_sources() -> None:
    found = OfflineExtractor().extract(
        [
            msg("Ines: My brother is a paramedic in Leeds.", "i1"),
            msg("Ines: My brother is a paramedic in Leeds!", "i2"),
        ],
        [],
    )
    assert [(c.content, c.source_message_ids) for c in found] == [
        ("Ines's brother is a paramedic in Leeds.", ("i1", "i2"))
    ]


# ---------------------------------------------------------------- fragments


@pytest.mark.parametrize(
    "content",
    [
        "User loves to.",
        "User likes the.",
        "User likes it.",
        "User loves that so much.",
        "User swims.",
        "User said that (they went.",
        "Ines is into.",
        "用户喜欢。",
        "用户最喜欢的颜色是。",
        "",
    ],
)
def test_fragments(content: str) -> None:
    assert is_fragment(content)


@pytest.mark.parametrize(
    "content",
    [
        "User is vegan.",
        "User's name is Al.",
        "User wants the assistant to keep answers short from now on.",
        "Ines cannot stop thinking about the script she wrote, or how the first one did.",
        "User went hiking (2026-04-30).",
        "用户喜欢绿茶。",
    ],
)
def test_not_fragments(content: str) -> None:
    assert not is_fragment(content)


@pytest.mark.parametrize(
    "text", ["I love to", "I like the", "I really love it", "I'm allergic to the", "I went to the"]
)
def test_the_extractor_never_emits_a_fragment(text: str) -> None:
    assert extract_one(text) == []


# ---------------------------------------------------------------- dedup keeps people apart


def cand(content: str) -> Candidate:
    return Candidate(content, "persona", 70, ("m",), metadata={"source_time_ms": 2000})


def near(nid: str, content: str) -> Neighbour:
    return Neighbour(nid, content, "persona", 70, 1000)


@pytest.mark.parametrize(
    ("candidate", "neighbour", "expected"),
    [
        ("Ines likes green tea.", "Kofi likes green tea.", Decision("store")),
        ("Ines prefers coffee.", "Kofi prefers tea.", Decision("store")),
        ("Ines prefers coffee.", "Ines prefers tea.", Decision("update", ("n",))),
        ("Ines likes green tea.", "Ines likes green tea", Decision("skip")),
        ("Ines's sister lives in Leeds.", "Kofi's sister lives in Leeds.", Decision("store")),
    ],
)
def test_two_people_are_never_merged(candidate: str, neighbour: str, expected: Decision) -> None:
    assert OfflineDeduplicator().decide([cand(candidate)], [[near("n", neighbour)]]) == [expected]


def test_within_a_batch_two_peoples_slots_are_apart() -> None:
    candidates = [cand("Ines prefers tea."), cand("Kofi prefers coffee.")]
    assert OfflineDeduplicator().decide(candidates, [[], []]) == [Decision("store"), Decision("store")]


def test_a_trailing_remember_that_asks_to_keep_the_fact_and_is_not_part_of_it() -> None:
    (found,) = OfflineExtractor().extract([msg("I can't stand pickled herring, please remember that.")], [])
    assert (found.content, found.priority, found.metadata["explicit_remember"]) == (
        "User cannot stand pickled herring.",
        80,
        True,
    )
