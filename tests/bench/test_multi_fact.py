"""The rule `bench/recall_quality.py` counts multi-fact memories by: compound memories count, single facts do not."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multi_fact", BENCH / "multi_fact.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


holds_several_facts = _load().holds_several_facts


@pytest.mark.parametrize(
    "content",
    [
        "User's favourite city is Lisbon and our build uses pnpm.",
        "User likes tea, but their wife prefers coffee.",
        "Caroline moved to Lisbon and she started a bakery.",
        "Nate was in the final last Saturday, and they won (2022-11-05).",
        "Sam has been thinking and they made a meal plan.",
        "Tim is reading this book and they're hooked.",
        "Calvin said that the city was buzzing with energy and the festival crowd was so lively.",
        "User went to Paris; Tom stayed home.",
        "用户喜欢绿茶，而且用户的妻子喜欢咖啡。",
        "用户住在深圳，他们在腾讯工作。",
    ],
)
def test_two_independent_clauses_count(content: str) -> None:
    assert holds_several_facts(content)


@pytest.mark.parametrize(
    "content",
    [
        "User likes tea and coffee.",
        "User buys salt and pepper at the market.",
        "User works in research and development.",
        "Tom and Jerry went to Paris.",
        "User said that Tom and Jerry went to Paris.",
        "Andrew's girlfriend and they went fishing last weekend (2023-08-19 to 2023-08-20).",
        "User and their sister went to Rome and Milan.",
        "Caroline went to a support group yesterday and it was so powerful (2026-04-30).",  # a comment on the first
        "User moved to Lisbon and started a bakery.",  # one subject, two verb phrases
        "User thinks about the paths they have taken and the progress they have made.",
        "John used their contacts in the industry and their marketing skills to make connections.",
        "Andrew thought it would be cool if you and the pups could come along.",
        "User went to the market (and their sister came too) on Friday.",  # inside the date note's brackets
        "用户喜欢茶和咖啡。",
        "用户和小王去了北京。",
        "用户昨天去了公园，买了冰淇淋（2026-04-30）。",
    ],
)
def test_one_fact_does_not_count(content: str) -> None:
    assert not holds_several_facts(content)
