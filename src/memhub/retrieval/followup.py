"""Reading a query in the light of the recent turns: follow-up questions, and names that blur a query vector.

A user rarely repeats what they said a moment ago. After "Did Alice move to Lisbon?" comes "and what about her
sister?" or "And Bob?": searched as they stand, the first has no name to find and the second no predicate.
`contextual_query` completes such a query from the conversation's last user turn (what the agent sends as its
window), and leaves a self-contained query alone:

- a query with an anaphor (he, she, they, it, that, there …; 他, 她, 这 …) and no name of its own gets the names
  (capitalised words) of the last user turn, or, when that turn names nobody, the turn itself (cut to 300
  characters); only the names, when there are some, so the previous question's topic does not pull its own
  answers back in;
- otherwise a short or elliptical query ("and Bob?", "what about the budget?", 那她呢？) gets the last user turn's
  words, less the names the query replaces (its own names take their place).

`participant_free` is the other half: in a transcript of named people every turn starts with a name ("Alice: …")
and many address one ("Thanks, Bob!"), so a query's vector that holds a participant's name comes out close to every
turn by or to that person instead of to what the query asks. The participant is found by the speaker channel
(BM25 on the name and the speaker bonus); the query vector is made from the query without the name. On LoCoMo
this lifted `/v3/recall`'s coverage of the evidence from 0.807 to 0.823, every category gaining.

Nothing here reads a store: it works on the query, the recent turns and the participants the caller found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Words that point back at something said before, when the query does not itself say what.
_ANAPHORA_EN = frozenset(
    re.findall(r"\S+", "he she him her his hers they them their theirs it its this that these those there")
)
_ANAPHORA_ZH = ("他们", "她们", "它们", "他", "她", "它", "这个", "那个", "这些", "那些", "这", "那", "其")
# Openers of a query that continues the previous one ("and Bob?", "what about …", "how about …").
_CONTINUATIONS = re.compile(
    r"^\s*(?:and|also|plus|what about|how about|and what about|same for|what else|anything else)\b"
    r"|^\s*(?:那|还有|另外|并且)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][\w'’-]*|\d+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")
# Function words: a query of only these (plus up to two content words) is too short to stand alone.
_FUNCTION = frozenset(
    re.findall(
        r"\S+",
        "a an the of to in on at for with and or but is are was were be been do does did what when where who whom which"
        " why how has have had i you we me my your our us about from as by into than then so if not no yes just also"
        " else too any anything something tell more please again",
    )
)
SHORT_QUERY_WORDS = 3  # content words; fewer and the query leans on the turn before
CONTEXT_CHARS = 300  # of the last user turn, at most, added to a query


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _names(text: str) -> list[str]:
    """Capitalised words that are not a sentence's first word: the text's names, in order, each once."""
    found: list[str] = []
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip()
        if not before or before[-1] in ".!?:;\"'“”(":
            continue  # capitalised by grammar
        name = re.sub(r"['’]s$", "", match.group(0))
        if name.casefold() not in _FUNCTION and name not in found and name != "I":
            found.append(name)
    return found


def _content_words(text: str) -> list[str]:
    return [w for w in _words(text) if w.casefold() not in _FUNCTION and w.casefold() not in _ANAPHORA_EN]


def has_anaphor(query: str) -> bool:
    """Whether the query points back at something it does not name (a pronoun, a demonstrative)."""
    if any(w.casefold() in _ANAPHORA_EN for w in _words(query)):
        return True
    return bool(_CJK.search(query)) and any(p in query for p in _ANAPHORA_ZH)


def is_elliptical(query: str) -> bool:
    """Whether the query is too short, or opens as a continuation, to be searched on its own."""
    if _CONTINUATIONS.search(query) and len(_content_words(query)) <= SHORT_QUERY_WORDS:
        return True
    if _CJK.search(query):
        return len(_CJK.findall(query)) <= 4
    return len(_content_words(query)) < 2


def contextual_query(query: str, recent_user_turns: Sequence[str]) -> str:
    """The query completed from the last user turn when it leans on it; the query itself otherwise.

    `recent_user_turns` are the user's turns of the window, oldest first (the current one excluded).
    """
    previous = next((t.strip() for t in reversed(recent_user_turns) if t.strip() and t.strip() != query.strip()), "")
    if not previous:
        return query
    own_names = _names(query)
    if has_anaphor(query) and not own_names:
        names = _names(previous)
        return f"{query} {' '.join(names)}" if names else f"{query} {previous[:CONTEXT_CHARS]}"
    if is_elliptical(query):
        if _CJK.search(previous):
            return f"{query} {previous[:CONTEXT_CHARS]}"
        replaced = set(_names(previous)) if own_names else set()
        words = [w for w in _content_words(previous) if w not in replaced]
        return f"{query} {' '.join(words)}" if words else query
    return query


def candidate_names(query: str) -> list[str]:
    """The words of the query that may name a participant (capitalised, not by grammar)."""
    return _names(query)


def participant_free(query: str, participants: Iterable[str]) -> str:
    """The query without the participants' names ("Alice's" becomes "their"), for its vector; the query itself
    when it names none, or when nothing but names would be left."""
    text = query
    for name in sorted({p.split()[0] for p in participants if p.strip()}, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(name)}(['’]s)?\b", lambda m: "their" if m.group(1) else "", text)
    text = " ".join(text.split())
    return text if _content_words(text) or _CJK.search(text) else query
