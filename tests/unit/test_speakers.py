"""Speaker-aware ranking: who wrote a message, and which participants a query names."""

from __future__ import annotations

from memhub.retrieval.packing import estimate_tokens, truncate_to_tokens
from memhub.retrieval.speakers import named_speakers, speaker_of


def test_speaker_comes_from_metadata_first_then_a_name_prefix() -> None:
    assert speaker_of("Alice: I moved to Lyon") == "Alice"
    assert speaker_of("Dr. Smith: take two a day") == "Dr. Smith"
    assert speaker_of("Jean-Luc Picard: engage") == "Jean-Luc Picard"
    assert speaker_of("anything", {"speaker": "Bob"}) == "Bob"
    assert speaker_of("Alice: hi", {"author": " Carol "}) == "Carol"
    assert speaker_of("Alice: hi", {"speaker": 3}) == "Alice"  # not a string: ignored


def test_text_that_is_not_a_transcript_line_has_no_speaker() -> None:
    assert speaker_of("I prefer green tea") is None
    assert speaker_of("note: buy milk") is None  # lower case is not a name
    assert speaker_of("Remember this:no space after the colon") is None
    assert speaker_of("Meeting at 10:30 with the team") is None
    assert speaker_of("The Very Long Title Of Four Words: x") is None


def test_a_query_names_a_participant_by_a_capitalised_word_after_the_first() -> None:
    people = {"Caroline", "Melanie"}
    assert named_speakers("When did Caroline go to the support group?", people) == {"Caroline"}
    assert named_speakers("What is Melanie's favourite book?", people) == {"Melanie"}
    assert named_speakers("Caroline went where?", people) == set()  # the first word is grammar
    assert named_speakers("what did caroline say", people) == set()  # not capitalised
    assert named_speakers("Did Caroline and Melanie meet?", people) == {"Caroline", "Melanie"}
    assert named_speakers("Where is Paris?", people) == set()


def test_multi_word_labels_match_on_their_first_word() -> None:
    assert named_speakers("What did Jean-Luc order?", {"Jean-Luc Picard"}) == {"Jean-Luc Picard"}


def test_query_text_is_cut_to_a_token_budget() -> None:
    assert truncate_to_tokens("short question", 128) == "short question"
    long_en = "word " * 400
    cut = truncate_to_tokens(long_en, 128)
    assert estimate_tokens(cut) <= 128 < estimate_tokens(long_en)
    assert long_en.startswith(cut)
    assert truncate_to_tokens("记" * 600, 128) == "记" * 128
    assert truncate_to_tokens("", 5) == ""
