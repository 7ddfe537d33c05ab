"""The offline deduplicator: store / skip / update from text overlap and slot changes, no LLM.

Pure and deterministic like the offline extractor. A memory's subject ("User", or the named person it
is about: "Ann", "小王") is compared first: two people's memories never skip or supersede each other,
however alike their wording ("Ann likes tea." and "Bo likes tea." are two memories). Nor do memories about
what belongs to someone and about that someone ("User likes tea." and "User's wife likes tea.", the two
halves of "I like tea and my wife does too"): each is about its own holder.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.index.tokenize import CJK_RUN, STEMMER, WORD
from memhub.pipeline.types import Candidate, Decision, Neighbour

SKIP_OVERLAP = 0.8
UPDATE_OVERLAP = 0.5

_ANNOTATION = re.compile(r"\s*[(（][^()（）]*[)）]")
_PUNCT = re.compile(r"[^\w\s]+")
# Words every memory shares; negations are not here: "likes tea" and "does not like tea" differ.
_STOP = frozenset(
    re.findall(
        r"\w+",
        "user users the a an is are was were be to of and or in on at for with does do did "
        "has have their they them it its that this wants assistant",
    )
)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_PUNCT.sub(" ", text).split())


def _tokens(text: str) -> frozenset[str]:
    text = _ANNOTATION.sub("", unicodedata.normalize("NFKC", text)).lower().replace("用户", " ")
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        grams.extend([run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)])
    words = [w for w in WORD.findall(CJK_RUN.sub(" ", text)) if w not in _STOP]
    return frozenset(STEMMER.stemWords(words)) | frozenset(grams)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Token-set overlap in [0, 1]; two empty sets count as identical."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


_POS, _NEG = "+", "-"
_EN_PREF = re.compile(
    r"^user (?:really |also |still |absolutely |totally |just |genuinely |definitely |much |kind of |kinda )*"
    r"(?P<v>likes|loves|adores|enjoys|hates|dislikes|detests|loathes|cannot stand|does not like|does not enjoy|"
    r"does not eat|does not drink|no longer likes|is a fan of|is not a fan of|is into|is not into) (?P<o>.+)"
)
_ZH_PREF = re.compile(
    r"^用户(?:很|非常|特别|超级?|真的|比较|一直|也|还是|挺|蛮|都|最)*"
    r"(?P<v>不太喜欢|不喜欢|不爱吃|不爱喝|不爱|讨厌|受不了|不吃|不喝|更喜欢|更爱|喜欢|爱吃|爱喝|爱看|爱玩|热爱|偏爱|偏好|爱)(?P<o>.+)"
)
_LANGS = {"中文": "chinese", "简体中文": "chinese", "英文": "english", "英语": "english", "日语": "japanese"}
# (pattern, slot name, group holding a slot qualifier or None); the value is group "o".
_SLOTS: tuple[tuple[re.Pattern[str], str, str | None], ...] = tuple(
    (re.compile(p), name, qualifier)
    for p, name, qualifier in (
        (r"^user prefers (?P<o>.+)", "prefers", None),
        (r"^user's favou?rite (?P<w>.+?) (?:is|are) (?P<o>.+)", "favourite", "w"),
        (r"^user's name is (?P<o>.+)", "name", None),
        (r"^user wants to be called (?P<o>.+)", "call_me", None),
        (r"^user (?:lives (?:in|at|near)|moved to) (?P<o>.+)", "residence", None),
        (r"^user is (?P<o>\d+) years old", "age", None),
        (r"^user works (?P<w>as|at|for) (?P<o>.+)", "work", "w"),
        (r"^user is from (?P<o>.+)", "origin", None),
        (r"^user is (?P<o>married|single|divorced|engaged)\b", "marital", None),
        (
            r"^user's (?P<w>(?:[\w ]+?'s )?(?:birthday|email(?: address)?|phone(?: number)?|hometown|timezone|"
            r"time zone|nickname|username|job|profession|occupation|name)) is (?P<o>.+)",
            "attribute",
            "w",
        ),
        (
            r"^user wants the assistant to (?:always |never )?(?:answer|reply|respond|write|talk|speak) in (?P<o>\w+)",
            "reply_language",
            None,
        ),
        (r"^用户最喜欢的(?P<w>.+?)是(?P<o>.+)", "favourite", "w"),
        (r"^用户叫(?P<o>.+)", "name", None),
        (r"^用户希望被称呼为(?P<o>.+)", "call_me", None),
        (r"^用户(?:住在|搬到了)(?P<o>.+)", "residence", None),
        (r"^用户今年(?P<o>.+?)岁", "age", None),
        (r"^用户在(?P<o>.+?)(?:工作|上班|任职)", "work", None),
        (r"^用户来自(?P<o>.+)", "origin", None),
        (r"^用户的(?P<w>名字|生日|邮箱|电话|手机号|家乡|职业|(?:.{1,3})的名字)(?:是|叫)(?P<o>.+)", "attribute", "w"),
        (r"^用户要求(?:永远|始终|一律|以后|总是)?用(?P<o>简体中文|中文|英文|英语|日语)", "reply_language", None),
    )
)
_ALLERGY = (re.compile(r"^user is allergic to (?P<o>.+)"), re.compile(r"^用户对(?P<o>.+?)过敏"))
_SAME_SLOT = {"for": "at"}


def _value(text: str) -> str:
    text = _normalise(_ANNOTATION.sub("", text))
    return re.sub(r"^(?:a|an|the)\s+", "", text)


def memory_slot(content: str) -> tuple[tuple[str, ...], str] | None:
    """The (slot, value) a memory fills, for memories in the extractor's canonical forms.

    "User prefers tea." and "User prefers coffee." fill the same slot with different values, so the
    newer one supersedes the older; "User likes tea." and "User does not like tea." share the
    slot ("pref", "tea") with opposite values.
    """
    text = unicodedata.normalize("NFKC", content).strip().rstrip(".。").lower()
    if m := _EN_PREF.match(text) or _ZH_PREF.match(text):
        verb = m["v"]
        if verb in ("偏好", "更喜欢", "更爱"):
            return ("prefers",), _value(m["o"])
        negative = verb.startswith(("does not", "no longer", "hates", "dislikes", "detests", "loathes", "cannot"))
        negative = negative or verb.startswith(("is not", "不", "讨厌", "受不了"))
        return ("pref", _value(m["o"])), _NEG if negative else _POS
    for pattern in _ALLERGY:
        if m := pattern.match(text):
            return ("allergy", _value(m["o"])), _POS
    for pattern, name, qualifier in _SLOTS:
        if m := pattern.match(text):
            key = (name, _SAME_SLOT.get(m[qualifier], m[qualifier])) if qualifier else (name,)
            value = _value(m["o"])
            return key, _LANGS.get(value, value)
    return None


# The person a memory is about: "User", or a capitalised name of up to three words before a verb or
# a possessive ("Ann Lee moved …", "Ann's sister …").
_SUBJECT = re.compile(r"^(?P<s>[A-Z][\w-]*(?: [A-Z][\w-]*){0,2})(?='s\b| [a-z])")


def subject_of(content: str) -> tuple[str | None, str]:
    """The memory's subject (casefolded; "user" for the anonymous user) and its text told about "User".

    Telling every subject's memory in the "User" form lets one set of slot patterns serve them all.
    """
    text = unicodedata.normalize("NFKC", content).strip()
    if text.startswith("用户"):
        return "user", text
    m = _SUBJECT.match(text)
    if m is None:
        return None, text
    return m["s"].casefold(), "User" + text[m.end() :]


# "User's wife …", "Ann's build …": the memory is about what the subject has, not the subject.
_HOLDING = re.compile(r"^'s\s+(?P<held>[\w-]+)")


def _holder(subject: str | None, as_user: str) -> str | None:
    """The subject, or the subject's possession when the memory is about that ("user's wife")."""
    held = _HOLDING.match(as_user[len("User") :]) if subject and as_user.startswith("User") else None
    return f"{subject}'s {held['held'].lower()}" if held else subject


@dataclass(frozen=True, slots=True)
class _Shape:
    norm: str
    subject: str | None
    holder: str | None
    tokens: frozenset[str]
    slot: tuple[str, ...] | None
    value: str | None
    type: str


def _shape(content: str, kind: str) -> _Shape:
    subject, as_user = subject_of(content)
    slot, value = memory_slot(as_user) or (None, None)
    if slot is not None:
        slot = (subject or "", *slot)  # Ann's favourite tea and Bo's are two slots
    return _Shape(_normalise(content), subject, _holder(subject, as_user), _tokens(as_user), slot, value, kind)


def _other_person(a: _Shape, b: _Shape) -> bool:
    return a.subject is not None and b.subject is not None and a.holder != b.holder


def _same(a: _Shape, b: _Shape) -> bool:
    """Already known: identical text, the same slot value, or near-identical wording of one type."""
    if a.norm == b.norm:
        return True
    if _other_person(a, b):
        return False
    if a.slot is not None and a.slot == b.slot:
        return a.value == b.value
    return a.type == b.type and jaccard(a.tokens, b.tokens) >= SKIP_OVERLAP


def _supersedes(a: _Shape, b: _Shape) -> float:
    """How strongly `a` replaces `b` (0: it does not): a changed slot value, or a close rewording."""
    if _other_person(a, b):
        return 0.0
    if a.slot is not None and a.slot == b.slot:
        return 1.0 if a.value != b.value else 0.0
    if a.slot is not None and b.slot is not None:
        return 0.0  # different slots ("likes tea", "likes coffee") coexist
    overlap = jaccard(a.tokens, b.tokens)
    return overlap if a.type == b.type and overlap >= UPDATE_OVERLAP else 0.0


class OfflineDeduplicator:
    """Store / skip / update decisions from text overlap and slot changes, no LLM (never merges)."""

    def decide(self, candidates: Sequence[Candidate], neighbours: Sequence[Sequence[Neighbour]]) -> list[Decision]:
        """One decision per candidate, in order; later candidates also dedupe against earlier ones."""
        shapes = [_shape(c.content, c.type) for c in candidates]
        decisions: list[Decision] = []
        for i, candidate in enumerate(candidates):
            decisions.append(
                self._against_batch(i, shapes, decisions)
                or self._against_store(candidate, shapes[i], neighbours[i] if i < len(neighbours) else ())
            )
        return decisions

    @staticmethod
    def _against_batch(i: int, shapes: list[_Shape], decisions: list[Decision]) -> Decision | None:
        for j in range(i):
            if decisions[j].action == "skip":
                continue
            if _same(shapes[i], shapes[j]):
                return Decision("skip")
            if shapes[i].slot is not None and shapes[i].slot == shapes[j].slot:
                # A later statement in the same batch wins ("tea … actually, coffee"): the earlier one
                # is dropped and the later takes over whatever it was going to supersede.
                inherited = decisions[j]
                decisions[j] = Decision("skip")
                return inherited if inherited.action == "update" else None
        return None

    @staticmethod
    def _against_store(candidate: Candidate, shape: _Shape, neighbours: Sequence[Neighbour]) -> Decision:
        newer_than = candidate.metadata.get("source_time_ms")
        best: tuple[float, str] | None = None
        for n in neighbours:
            other = _shape(n.content, n.type)
            if _same(shape, other):
                return Decision("skip")
            score = _supersedes(shape, other)
            if score and isinstance(newer_than, int) and newer_than < n.time_ms and score < 1.0:
                continue  # an older restatement does not replace a newer memory
            if score and (best is None or score > best[0]):
                best = (score, n.id)
        return Decision("update", (best[1],)) if best else Decision("store")
