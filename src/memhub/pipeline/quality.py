"""Text hygiene before extraction: what is worth extracting, what to strip, what looks like an attack.

These follow the original's server-side `sanitize` and `shouldCaptureL0` (both defined once in
`memhub.formats.sanitize`) and its L1 quality gate `shouldExtractL1`.
`looks_like_prompt_injection` (in `memhub.formats.injection`, shared with recall) flags a memory in its
metadata (`injection_suspect`): conversation text is data, and nothing in it changes what the pipeline does.
A flagged memory is kept (it is what the user said) but never placed in a prompt: scenes and the persona are
built without it (`trusted`), and recall leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memhub.formats.sanitize import sanitize_server_text, should_capture_l0
from memhub.model import AtomicRecord


def _split(words: str) -> list[str]:
    return words.split()


# ---------------------------------------------------------------- quality gate and sanitize

# One rule table serves client and gateway (the SDK never imports the server, the server may import the SDK).
# The gateway variant leaves out the client-only rule 5.
sanitize = sanitize_server_text
should_capture = should_capture_l0

# 1–5 characters of nothing but punctuation/symbols ("...", "👍", "?!") carry no memory.
_SYMBOLS_ONLY = re.compile(r"^(?:[^\w\s]|_){1,5}$")
_QUESTION_MARKS_ONLY = re.compile(r"^[?？\s]+$")


def should_extract(text: str) -> bool:
    """The original's `shouldExtractL1`: `should_capture`, and not 1–5 bare symbols or only question marks."""
    if not should_capture(text):
        return False
    stripped = text.strip()
    return not (_SYMBOLS_ONLY.match(stripped) or _QUESTION_MARKS_ONLY.match(stripped))


def trusted(memories: Sequence[AtomicRecord]) -> list[AtomicRecord]:
    """The memories not flagged `injection_suspect`: what may be built into scenes, the persona or a prompt."""
    return [m for m in memories if not (m.metadata or {}).get("injection_suspect")]


# ---------------------------------------------------------------- fragments

# Words that cannot end a statement: a memory ending in one lost its object ("User loves to."). Particles
# that end phrasal verbs ("from now on", "gave in", "stop by") are not among them.
_DANGLING = frozenset(
    _split("""to the a an of for with and or but nor at from about as into onto than that which who whose their his
    her its our your my some any every this these those very because if when while whether though although
    since until unless such also not no""")
)
# Auxiliaries may end a sentence ("… how the first one did."); they only count as saying nothing.
_AUXILIARIES = frozenset(
    _split(
        "is are was were be been being am will would can could should shall may might must has have had do does did "
        "so just really like"
    )
)
# Words that carry no fact on their own: pronouns, deictics, auxiliaries, intensifiers and bare verbs of
# liking or doing. A memory made only of these ("User likes it.", "User loves that so much.") says nothing.
_EMPTY = (
    _DANGLING
    | _AUXILIARIES
    | frozenset(
        _split("""user users it it's that's they them theirs themselves he him she we us i me you yours there here
    now then what how why where something anything everything nothing stuff thing things one ones lot lots
    likes like loves love enjoys enjoy hates hate prefers prefer wants want needs need gets get got goes go
    went does done doing make makes made feels feel felt thinks think thought knows know knew said says
    too much many well way really quite pretty totally absolutely definitely always never still already
    again even only all both either neither each other others""")
    )
)
_WORD_EN = re.compile(r"[A-Za-z0-9][\w'-]*")
_ANNOTATIONS = re.compile(r"\s*[(（][^()（）]*[)）]")
_FINAL_PUNCT = re.compile(r"[\s.。!！?？,，;；:：…~\"'”“]+$")
_CJK_OR_ALNUM = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaffA-Za-z0-9]")
_ZH_DANGLING = re.compile(r"(?:[的和跟与在把被对给从向是叫去有想要]|喜欢|讨厌|(?<!可)爱)$")
_MIN_WORDS_EN = 3
_MIN_CHARS_ZH = 2


def _balanced(text: str) -> bool:
    return text.count("(") == text.count(")") and text.count("（") == text.count("）") and text.count('"') % 2 == 0


def is_fragment(content: str) -> bool:
    """True when a memory cannot stand alone: an object is missing ("User loves to."), it ends on a word
    that needs one ("… the."), it only points at the conversation ("User likes it."), it is too short
    to say anything ("User swims."), or a bracket or quote was cut open. Every offline candidate passes
    this one check, whichever rule produced it."""
    if not _balanced(content):
        return True
    core = _FINAL_PUNCT.sub("", _ANNOTATIONS.sub("", content)).strip()
    if not core:
        return True
    if _CJK_OR_ALNUM.search(core) and re.search(r"[\u3400-\u9fff]", core):
        body = core.replace("用户", "", 1)
        return len(_CJK_OR_ALNUM.findall(body)) < _MIN_CHARS_ZH or bool(_ZH_DANGLING.search(body))
    words = [w.lower() for w in _WORD_EN.findall(core)]
    if len(words) < _MIN_WORDS_EN or words[-1] in _DANGLING or core.endswith(("-", "—", "–", "/", "&")):
        return True
    return all(w in _EMPTY for w in words[1:])  # the first word is the subject ("User", a name)
