"""How recall picks items: best first, a memory stands for its source turns, and the budget holds."""

from __future__ import annotations

from memhub.memory.recall import ITEM_OVERHEAD_TOKENS, Budget, RecalledItem, choose
from memhub.retrieval.packing import estimate_tokens


def turn(id_: str, content: str, score: float) -> RecalledItem:
    return RecalledItem("l0", id_, content, score, 0, session_id="s", role="user")


def memory(id_: str, content: str, score: float, *sources: str) -> RecalledItem:
    return RecalledItem("l1", id_, content, score, 0, type="episodic", source_message_ids=sources)


def cost(text: str) -> int:
    return estimate_tokens(text) + ITEM_OVERHEAD_TOKENS


def test_a_memory_takes_the_place_of_turns_chosen_before_it_and_frees_their_room() -> None:
    long_turn = turn("t1", "Oh you know, I finally went and bought that red kayak for our lake trips " * 3, 0.9)
    other = turn("t2", "The lake was freezing in the morning but lovely by noon", 0.8)
    kayak = memory("m1", "Ana bought a red kayak for lake trips.", 0.7, "t1", "t9")
    late = turn("t3", "We paddled to the island and back before lunch", 0.6)
    # Room for the long turn and one more, not for three items, until the memory frees the long turn's room.
    budget = Budget(None, cost(long_turn.content) + cost(other.content) + 2)
    chosen = choose([long_turn, other, kayak, late], budget)
    assert [i.id for i in chosen] == ["t2", "m1", "t3"]
    assert budget.tokens == cost(long_turn.content) + 2 - cost(kayak.content) - cost(late.content)


def test_a_memory_that_does_not_fit_even_with_its_turns_refunded_leaves_them_in_place() -> None:
    short = turn("t1", "Bought a kayak", 0.9)
    wordy = memory("m1", "Ana bought a red kayak for the lake trips she takes every summer with her sister.", 0.8, "t1")
    chosen = choose([short, wordy], Budget(None, cost(short.content) + 1))
    assert [i.id for i in chosen] == ["t1"]


def test_covered_turns_turns_in_the_window_and_near_duplicates_are_skipped() -> None:
    items = [
        memory("m1", "Ana adopted a cat named Miso.", 0.9, "t1"),
        turn("t1", "We adopted a cat! Her name is Miso", 0.8),
        turn("t2", "Miso sleeps on the piano all day long", 0.7),
        turn("t3", "Miso sleeps on the piano all day long", 0.6),
        turn("t4", "Did you feed Miso this morning?", 0.5),
    ]
    chosen = choose(items, Budget(None, None), in_window=["did you feed  MISO this morning?"])
    assert [i.id for i in chosen] == ["m1", "t2"]


def test_character_budget_counts_contents() -> None:
    items = [turn(f"t{i}", f"note number {i} about the garden", 1 - i / 10) for i in range(5)]
    budget = Budget(70, None)
    chosen = choose(items, budget)
    assert sum(len(i.content) for i in chosen) <= 70 and len(chosen) == 2
    assert budget.chars == 70 - sum(len(i.content) for i in chosen)
