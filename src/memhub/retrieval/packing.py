"""Fit ranked hits into a prompt budget (characters and/or estimated tokens).

Recall is useless if it overflows the prompt, and cutting the list at the first hit that does not
fit wastes the room left: one long message would push out every shorter, still relevant one after
it. `pack` walks the hits best first, takes each one that still fits and skips the rest, so the
result keeps the ranking's order and fills the budget with the best hits that fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: one per CJK character, one per ~4 other characters.

    BPE tokenizers (OpenAI, Qwen, DeepSeek) give English about 4 characters per token and spend
    roughly one token per Chinese/Japanese/Korean character; rounding up keeps the estimate on the
    safe side of a budget.
    """
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def pack(
    hits: Sequence[T],
    text: Callable[[T], str],
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    max_items: int | None = None,
    separator: str = "\n",
) -> list[T]:
    """The best hits (in their given order) whose texts, joined by `separator`, fit every budget."""
    if any(b is not None and b < 0 for b in (max_chars, max_tokens, max_items)):
        raise ValueError("budgets must be ≥ 0")
    chosen: list[T] = []
    chars = tokens = 0
    sep_chars, sep_tokens = len(separator), estimate_tokens(separator)
    for hit in hits:
        if max_items is not None and len(chosen) >= max_items:
            break
        body = text(hit)
        extra_chars = len(body) + (sep_chars if chosen else 0)
        extra_tokens = estimate_tokens(body) + (sep_tokens if chosen else 0)
        if max_chars is not None and chars + extra_chars > max_chars:
            continue
        if max_tokens is not None and tokens + extra_tokens > max_tokens:
            continue
        chosen.append(hit)
        chars += extra_chars
        tokens += extra_tokens
    return chosen


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` whose estimated token count is at most `max_tokens`."""
    budget = max_tokens * 4  # in quarter tokens: a CJK character costs 4, any other character 1
    for index, char in enumerate(text):
        budget -= 4 if _CJK.match(char) else 1
        if budget < 0:
            return text[:index]
    return text
