"""The part of a long prompt that carries its question, for embedding within a token cap.

An agent's recall query is often its user's whole message: a paragraph of context, a pasted log, then the ask.
The query embedding costs time in proportion to its tokens (e5-small on one core: ~10 ms plus ~1 ms a word), so
embedding a 300-word prompt takes ten times a short question's time, and truncating it to its head, as a fixed
cap does, keeps the preamble and drops the question at its end. `focus_query` keeps whole sentences instead, in
the order an ask is most likely found: questions (the last one first), then the last sentence, then the first,
then the rest from the end; it stops when the cap is reached and puts the chosen sentences back in their order.
Fenced code blocks are left out while there is prose: a stack trace says little about what to remember.

BM25 reads a long prompt by its terms, capped (memhub.index.tokenize, then the store's rarest-terms cut):
`search_terms` puts the focus's terms first and marks them to be kept, so the ask's words are matched wherever it
stands and the rest of the cap goes to the prompt's other words, rarest first.
"""

from __future__ import annotations

import re

from memhub.index.tokenize import query_terms
from memhub.model.query import QueryTerms
from memhub.retrieval.packing import estimate_tokens, truncate_to_tokens

__all__ = ["LEXICAL_FOCUS_TOKENS", "focus_query", "search_terms"]

# The ask whose terms BM25 keeps first in a long query: the query embedding's default focus.
LEXICAL_FOCUS_TOKENS = 24

# A sentence ends at ., ! or ? followed by a space, at CJK full stops (no space follows them), or at a line break.
_CJK_STOPS = ("。", "！", "？", "；")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_QUESTION_START = re.compile(
    r"^(?:what|when|where|who|whom|whose|why|how|which|do|does|did|is|are|was|were|can|could|should|would|will"
    r"|has|have|had|tell me|remind me)\b",
    re.IGNORECASE,
)
_CHINESE_QUESTION = re.compile(r"(?:吗|呢|什么|怎么|为什么|哪|谁|几|多少|是否)")


def focus_query(text: str, max_tokens: int) -> str:
    """`text` itself when it fits in `max_tokens` (estimated), else its most question-like sentences that fit."""
    if estimate_tokens(text) <= max_tokens:
        return text
    sentences = _sentences(text)
    if not sentences:
        return truncate_to_tokens(text, max_tokens)
    chosen: set[int] = set()
    used = 0
    for index in _by_likelihood_of_the_ask(sentences):
        cost = estimate_tokens(sentences[index]) + (1 if chosen else 0)
        if used + cost <= max_tokens:
            chosen.add(index)
            used += cost
        elif not chosen:
            # The likeliest sentence alone is over the cap: its head, where a question's subject comes first.
            return truncate_to_tokens(sentences[index], max_tokens).strip()
    return _joined([sentences[i] for i in sorted(chosen)])


def search_terms(query: str) -> QueryTerms:
    """The BM25 terms of a search query: a long one's focus (`focus_query`) first and kept, then the rest."""
    focus = focus_query(query, LEXICAL_FOCUS_TOKENS)
    return query_terms(query, focus=None if focus == query else focus)


def _sentences(text: str) -> list[str]:
    prose = _FENCE.sub("\n", text)
    source = prose if prose.strip() else text
    return [s for s in (part.strip() for part in _SENTENCE_END.split(source)) if s]


def _joined(sentences: list[str]) -> str:
    """Sentences back in one text: a space after Western punctuation, none after a CJK full stop."""
    text = ""
    for sentence in sentences:
        text += sentence if not text or text.endswith(_CJK_STOPS) else " " + sentence
    return text


def _is_question(sentence: str) -> bool:
    return (
        sentence.endswith(("?", "？"))
        or _QUESTION_START.match(sentence) is not None
        or _CHINESE_QUESTION.search(sentence) is not None
    )


def _by_likelihood_of_the_ask(sentences: list[str]) -> list[int]:
    """Sentence indexes: questions from the last, then the last sentence, the first, and the rest from the end."""
    last = len(sentences) - 1
    questions = [i for i in range(last, -1, -1) if _is_question(sentences[i])]
    order = [*questions, last, 0, *range(last - 1, 0, -1)]
    return list(dict.fromkeys(order))
