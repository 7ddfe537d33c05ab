"""Follow-up queries completed from the recent turns, and participants' names kept out of a query's vector
(memhub.retrieval.followup)."""

from __future__ import annotations

import pytest

from memhub.retrieval.followup import (
    candidate_names,
    contextual_query,
    has_anaphor,
    is_elliptical,
    participant_free,
)

ABOUT_ALICE = ["Where did Alice move to last spring?"]


@pytest.mark.parametrize(
    ("query", "recent", "expected"),
    [
        # A pronoun with no name of its own takes the names of the last user turn, not its topic.
        ("And what does she do for work?", ABOUT_ALICE, "And what does she do for work? Alice"),
        ("what about her sister?", ABOUT_ALICE, "what about her sister? Alice"),
        # An elliptical query takes the last turn's words, less the names its own name replaces.
        ("And Bob?", ABOUT_ALICE, "And Bob? move last spring"),
        ("and the budget?", ["Did the Lisbon office sign off?"], "and the budget? Lisbon office sign off"),
        # A pronoun whose turn names nobody takes that turn itself.
        (
            "how much did it cost?",
            ["I bought a new laptop yesterday."],
            "how much did it cost? I bought a new laptop yesterday.",
        ),
        # Chinese: a pronoun or a short query takes the last user turn.
        ("那她呢？", ["小王上个月搬到了深圳"], "那她呢？ 小王上个月搬到了深圳"),
        # Self-contained queries are left alone, as is any query without a window.
        ("What did Alice paint last week?", ABOUT_ALICE, "What did Alice paint last week?"),
        ("What is the capital of France?", ABOUT_ALICE, "What is the capital of France?"),
        ("And what does she do for work?", [], "And what does she do for work?"),
        # The current turn repeated in the window is not its own context.
        ("And what does she do?", ["And what does she do?"], "And what does she do?"),
    ],
)
def test_a_follow_up_is_completed_from_the_last_user_turn(query: str, recent: list[str], expected: str) -> None:
    assert contextual_query(query, recent) == expected


def test_anaphora_and_ellipsis() -> None:
    assert has_anaphor("Did they like it?") and has_anaphor("她喜欢吗") and not has_anaphor("Did Alice like the cake?")
    assert is_elliptical("And Bob?") and is_elliptical("what about Paris?") and not is_elliptical("When does Bob fly?")


def test_names_are_capitalised_words_not_opening_a_sentence() -> None:
    assert candidate_names("What did Caroline's friend Sam give her? Then Ana left.") == ["Caroline", "Sam", "Ana"]
    assert candidate_names("Where is the Berlin office and Tim?") == ["Berlin", "Tim"]


def test_a_participant_name_is_left_out_of_the_vector_text() -> None:
    assert participant_free("What is Caroline's identity?", ["Caroline"]) == "What is their identity?"
    assert participant_free("When did Caroline meet Melanie in Paris?", ["Caroline", "Melanie"]) == (
        "When did meet in Paris?"
    )
    assert participant_free("Where does Sam live?", []) == "Where does Sam live?"
    # Nothing but names left: the query stays as it was.
    assert participant_free("Caroline?", ["Caroline"]) == "Caroline?"
