"""LoCoMo questions rewritten as follow-ups, for measuring recall on questions that lean on the recent turns.

A user rarely repeats a name they said a moment ago: after "What did Caroline research?" comes "And where
did she move from?". Recall then has the recent turns (the agent's window) besides the query, and must use
them to know who "she" is. Each question that names exactly one participant P is rewritten as a follow-up to
the nearest earlier question of the same conversation that also names P:

- the window is that earlier question (the user's turn) and its gold answer (the assistant's turn);
- the query is the question with P replaced by a pronoun ("Caroline's" → "her", "Caroline" → "she" as a
  subject, "her" as an object), opened with "And " ("And what did she research?").

A question naming no participant or both, or with no earlier question about P, is asked as it stands, with
the previous question and answer as its window (recall must not be thrown off by a window that does not
matter). `rewritten` counts the questions that became follow-ups.

The pronouns come from the participants' first names (LoCoMo-10's twenty speakers); a name not listed gets
"they"/"them"/"their".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Window = list[tuple[str, str]]  # (role, content), oldest first

_FEMININE = {"Caroline", "Melanie", "Gina", "Maria", "Joanna", "Audrey", "Deborah", "Jolene"}
_MASCULINE = {"Jon", "John", "Nate", "Tim", "Andrew", "James", "Evan", "Sam", "Calvin", "Dave"}
# A name right after one of these is the subject of the question ("What did Caroline …", "Is Caroline …").
_BEFORE_SUBJECT = frozenset(
    [
        "what",
        "when",
        "where",
        "why",
        "how",
        "who",
        "which",
        "whom",
        "whose",
        "did",
        "does",
        "do",
        "is",
        "was",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "are",
        "were",
        "might",
        "should",
        "may",
        "must",
        "and",
    ]
)


def pronouns(name: str) -> tuple[str, str, str]:
    """(subject, object, possessive) pronouns for a participant's first name."""
    if name in _FEMININE:
        return "she", "her", "her"
    if name in _MASCULINE:
        return "he", "him", "his"
    return "they", "them", "their"


def named(question: str, participants: Sequence[str]) -> list[str]:
    """The participants a question names (whole words, possessives included)."""
    return [p for p in participants if re.search(rf"\b{re.escape(p)}\b", question)]


def as_followup(question: str, name: str) -> str:
    """The question with `name` replaced by pronouns, opened with "And "."""
    subject, obj, possessive = pronouns(name)

    def replace(match: re.Match[str]) -> str:
        if match.group(2):  # "Caroline's"
            return possessive
        before = question[: match.start()].split()
        previous = before[-1].lower().strip(",") if before else ""
        return subject if not before or previous in _BEFORE_SUBJECT else obj

    text = re.sub(rf"\b({re.escape(name)})(['’]s)?\b", replace, question.strip())
    return "And " + text[0].lower() + text[1:] if text else text


def followup_questions(asked: Sequence[dict[str, Any]], sample: dict[str, Any]) -> list[tuple[str, Window]]:
    """(query, window) for each question of `asked` (in the order of the sample's `qa` list)."""
    participants = [sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]]
    order = sample["qa"]
    position = {id(q): i for i, q in enumerate(order)}
    out: list[tuple[str, Window]] = []
    for question in asked:
        at = position[id(question)]
        text = question["question"].strip()
        names = named(text, participants)
        earlier = None
        if len(names) == 1:
            earlier = next(
                (order[j] for j in range(at - 1, -1, -1) if names[0] in named(order[j]["question"], [names[0]])), None
            )
        if earlier is not None:
            out.append((as_followup(text, names[0]), _window(earlier)))
        else:
            out.append((text, _window(order[at - 1]) if at > 0 else []))
    return out


def rewritten(pairs: Sequence[tuple[str, Window]]) -> int:
    """How many queries became follow-ups."""
    return sum(query.startswith("And ") for query, _ in pairs)


def _window(question: dict[str, Any]) -> Window:
    answer = question.get("answer", question.get("adversarial_answer", ""))
    return [("user", question["question"].strip()), ("assistant", str(answer))]
