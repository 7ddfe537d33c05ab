"""Short answers that only make sense with the question before them.

"Did you go to the concert?" / "Yes, last Friday!" holds a fact neither turn states alone. When a
participant's message opens with a yes or a no and the previous message, from someone else, ends with
a yes/no question about "you", the two read as one first-person statement from the one answering
("I did go to the concert last Friday"), which the ordinary rules then turn into a memory whose
sources are both turns. Questions about the asker ("Did you like my cake?") are left alone: whose
cake it is would be lost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memhub.pipeline.offline_rules_statement import content_words

_I = re.IGNORECASE
_QUESTION = re.compile(
    r"^(?:(?:so|and|but|oh|hey|wait|well|also)[,\s]+)?(?P<aux>did|do|have|are|were|will)\s+you\s+"
    r"(?P<rest>[^?]{3,160}?)\s*\?+$",
    _I,
)
_ASKER = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|we|us|our)\b", _I)
_YES = re.compile(
    r"^(?:(?P<no>no|nope|nah|not yet|not really|i didn't|i haven't|i'm not|i wasn't|i don't|i won't)|"
    r"yes|yeah|yep|yup|yea|sure|of course|definitely|absolutely|totally|indeed|i did|i have|i am|i do|"
    r"i was|i will)\b[\s,!.:;-]*(?P<rest>.*)$",
    _I,
)
_POSITIVE = {"did": "I did", "have": "I have", "are": "I am", "were": "I was", "will": "I will"}
_NEGATIVE = {"did": "I did not", "do": "I do not", "have": "I have not", "are": "I am not", "were": "I was not"}
_NEGATIVE["will"] = "I will not"
_YOURS = ((re.compile(r"\byourself\b", _I), "myself"), (re.compile(r"\byour\b", _I), "my"))
_YOU = re.compile(r"\byou\b", _I)
_ANY = re.compile(r"\bany\b", _I)
_OWN_STATEMENT = re.compile(r"^(?:I|I'm|I've|I'll|I'd|my|we|we're|we've|our|it|it's|that|that's)\b", _I)
MAX_ADDED_WORDS = 6


def _last_question(text: str) -> str | None:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return sentences[-1] if sentences and sentences[-1].endswith("?") else None


def answered_statement(question_text: str, answer: Sequence[str]) -> str | None:
    """The first-person statement a yes/no answer makes about its speaker, or None.

    `question_text` is the previous message (by someone else), `answer` the answering message's sentences.
    """
    if not answer:
        return None
    question = _last_question(question_text)
    q = _QUESTION.match(question) if question else None
    a = _YES.match(answer[0].strip())
    if q is None or a is None or _ASKER.search(q["rest"]):
        return None
    rest = q["rest"]
    for pattern, repl in _YOURS:
        rest = pattern.sub(repl, rest)
    if _YOU.search(rest):
        return None  # "did you tell him you were leaving": two people to keep apart
    aux = q["aux"].lower()
    if a["no"]:
        statement = f"{_NEGATIVE[aux]} {rest}"
    else:  # "Do you have any pets?" / "Yes" → "I have some pets"
        rest = _ANY.sub("some", rest)
        statement = f"I {rest}" if aux == "do" else f"{_POSITIVE[aux]} {rest}"
    added = a["rest"].strip().rstrip(".!")
    # "Yes, last Friday!" completes the statement; "Yes! I loved it" is a statement of its own.
    short = len(added.split()) <= MAX_ADDED_WORDS and "?" not in added
    if added and short and not _OWN_STATEMENT.match(added) and content_words(added):  # not "Nope, never."
        statement = f"{statement} {added.lstrip(',;:- ')}"
    return statement
