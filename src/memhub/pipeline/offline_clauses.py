"""Coordinated statements cut into clauses before the rules run, so that each memory holds one fact.

"My favourite city is Lisbon and our build uses pnpm" says two things; kept whole, a rule reads it as one
fact whose object runs on into the second ("User's favourite city is Lisbon and our build uses pnpm.").
A sentence is cut where "and", "but", "yet" or "so" (with or without a comma) open a clause with a subject
and a finite verb of its own, after a part that has its own verb too:

- "I like tea and my wife likes coffee" → "I like tea" + "my wife likes coffee";
- a coordinated noun phrase is one fact and stays whole: "I like tea and coffee", "salt and pepper",
  "research and development", "Tom and I went to Paris" (no verb before the "and");
- a second verb phrase without a subject gets the first one's subject ("I moved to Lisbon and started a
  bakery" → "I moved to Lisbon" + "I started a bakery") only where a verb can be told from a noun without
  a dictionary: both verbs in the simple past, both after "have", or a present verb from a short list
  ("I live in Lisbon and work at a bakery"); "I love to cook and bake" and "I'm tired and bored" stay whole;
- a clause that points back at the one before stays with it ("I went to the show and it was great", "I have
  two cats but my husband is allergic to them", "… and they are so cute"): alone it would not say what "it",
  "them" or "they" is;
- inside a subordinate clause ("When I was young and my dad was alive, …"), after a verb of saying or
  thinking ("I think tea is great and coffee is bad"), inside quotes or brackets, nothing is cut;
- a time said before the subject ("Yesterday I went to the park and my son bought ice cream") belongs to
  every clause and is repeated in each that has no time of its own;
- two instructions are two clauses ("Always answer in English and never use emojis"); a purpose after "so"
  ("I saved money so I could travel") is part of the first.

Chinese clauses are cut at a comma (or 而且/并且) followed by a clause about the speaker (我, 我的…, 我们),
or by a comma and 而且/并且/同时/还/也/又 followed by a verb, where 我 is carried over ("我喜欢茶，也喜欢咖啡"
→ "我喜欢茶" + "我也喜欢咖啡"); a clause about 他/她/它 or with 这/那 points back and stays. 和 joins nouns in
Chinese ("我喜欢茶和咖啡", "我和小王去了北京"): never cut. Nor is a comma followed by a bare verb ("我去了
公园，买了冰淇淋"): whether the verb shares the subject is not said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

from memhub.pipeline.offline_dates import find_time_en, find_time_zh

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a statement: `statement[start:end]`, after `prefix` (a subject or a time it shares with the
    clause before it)."""

    statement: str
    start: int
    end: int
    prefix: str = ""

    @property
    def text(self) -> str:
        """The clause as a sentence of its own."""
        return self.prefix + self.statement[self.start : self.end].strip()

    def joined(self, following: Clause) -> Clause:
        """This clause and the one after it, as they were said."""
        return replace(self, end=following.end)


# ---------------------------------------------------------------- English


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BOUNDARY = re.compile(r",?\s+(?P<conjunction>and|but|yet|so)\s+(?=\S)", _I)
# "I saved money so I could travel": a purpose, not a second fact.
_PURPOSE = re.compile(r"^(?:I|we|you)(?:\s+(?:can|could|would|will|might|may)\b|'(?:d|ll)\b)", _I)
# "Always answer in English and never use emojis": two instructions, neither with a subject.
_IMPERATIVE = re.compile(r"^(?:please\s+)?(?:always|never|don't|do not|stop|avoid)\b", _I)
_SUBORDINATE = re.compile(
    r"\b(?:when|whenever|if|because|cause|while|since|although|though|unless|until|whether|once|as soon as|"
    r"as long as|even if|where|wherever)\b",
    _I,
)
# "I think tea is great and coffee is bad": the second clause is still what the speaker thinks.
_REPORTING = re.compile(
    r"\b(?:think|thought|said|say|says|believe|believed|feel|felt|guess|hope|hoped|know|knew|mean|meant|"
    r"realised|realized|heard|told|wish|bet|suppose|figured|noticed|learned|learnt)\b(?!\s+(?:about|of|for)\b)",
    _I,
)
# Where the clause before a boundary starts; not after "and", which joins nouns as often as clauses.
_CLAUSE_START = re.compile(r"(?:^|[,;:]\s+|\s+[-—]+\s+|\b(?:that|but|so|yet)\s+)", _I)

_AUXILIARIES = _words(
    "am is are was were be has have had do does did will would can could should may might must shall "
    "isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't wouldn't can't couldn't "
    "shouldn't cannot"
)
_COPULAS = _words("am is are was were 'm 's 're be been being")
# Simple-past and past-participle forms that do not end in -ed.
_IRREGULAR_PAST = _words(
    "went gone got gotten made took taken saw seen met came left gave given found kept lost paid sent sold spent "
    "told thought won read put ran run began begun brought bought caught taught felt heard knew known grew grown "
    "wore worn chose chosen drove driven rode ridden broke broken woke woken wrote written ate eaten drank drunk "
    "became sat stood fell fallen flew flown held built led slept did done swam sang spoke spoken threw thrown "
    "forgot forgotten hid lit shook stole understood"
)
# -ed words that describe a state far more often than they report an action: never a carried-over verb.
_STATES = _words(
    "tired bored excited interested married engaged scared worried pleased surprised amazed thrilled stressed "
    "annoyed confused exhausted relieved stuck obsessed inspired motivated determined blessed overwhelmed "
    "hooked used supposed based called named"
)
# Present-tense verbs that start a second verb phrase often enough, and are rarely a noun after "and".
_PRESENT_VERBS = _words(
    "live work study teach play own volunteer coach train practise practice attend run write paint cook bake "
    "love like enjoy hate prefer have speak collect grow"
)
_LEAD_ADVERBS = re.compile(
    r"^(?:(?:then|also|just|later|finally|eventually|even|recently|soon|now|still|really|actually|"
    r"immediately|quickly|both|all)\s+)+",
    _I,
)
_NOUN = r"(?!(?i:I|me|we|us|you|he|him|she|her|they|them|it|this|that|there)\b)[A-Za-z][\w-]*"
# A subject that opens a clause of its own; he/she/they/it point back, so they are not among them.
_PRONOUN_SUBJECT = re.compile(r"^(?:I|we|you)(?:(?P<contracted>'(?:m|re|ve|ll|d|s))\b|\s+)", _I)
_NOUN_SUBJECTS = tuple(
    re.compile(p)
    for p in (
        rf"^(?:my|our|your|his|her|their|the)\s+{_NOUN}\s+",
        rf"^(?:my|our|your|his|her|their|the)\s+{_NOUN}\s+{_NOUN}\s+",
        rf"^(?:my|our|your|his|her|their|the)\s+{_NOUN}'s\s+{_NOUN}\s+",
        r"^(?!(?:I|It|This|That|There|Then|So|But|And|The|My|Our)\b)[A-Z][a-z]+(?:'s\s+[a-z][\w-]*)?\s+",
    )
)
_WORD = re.compile(r"[A-Za-z][\w']*")
_NOT_VERBS = _words("and or but who that which whose with of to in on at for from by as than so too both all")
_AFTER_PLURAL_NOUNS = _words("of and or to")
_DETERMINERS = _words("my our your his her their the a an this that these those some any every")
# Words that point back into the clause before ("… and they are so cute", "… allergic to them").
_LEANS_BACK = re.compile(r"\b(?:it|its|it's|them|they|they're|they've|this|these|those|there|he|she|him|his|her)\b", _I)
# A subject at the start of the first clause, for carrying over: "I", "we", "my sister", "Ann".
_FIRST_SUBJECT = re.compile(
    r"^(?P<s>I|(?i:we|he|she|they)|(?i:my|our|his|her|their)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+|[A-Z][a-z]+)"
    r"(?P<aux>'ve|\s+have|\s+has|'s)?\s+(?P<v>[a-z][\w' ]*)",
)
_TIME_LEAD = re.compile(r"^(?P<t>[^,]+?)(?:,\s*|\s+)(?=(?:I|I'm|I've|I'll|I'd|my|we|we're|we've|our)\b)", _I)


def _finite(word: str, after_pronoun: bool) -> bool:
    """Whether `word` can be the finite verb right after a subject."""
    low = word.lower()
    if low in _AUXILIARIES or low in _IRREGULAR_PAST or (low.endswith("ed") and len(low) > 3):
        return True
    if after_pronoun:  # "I like", "they need": any content word after a pronoun subject
        return low.isalpha() and low not in _NOT_VERBS
    return low.endswith("s") and not low.endswith(("ss", "us", "is"))  # "my wife likes", not "the bus"


def _opens_clause(text: str) -> bool:
    """Whether `text` starts with a subject of its own and a finite verb."""
    if m := _PRONOUN_SUBJECT.match(text):
        if m["contracted"]:
            return True  # "I'm", "they've"
        rest = _LEAD_ADVERBS.sub("", text[m.end() :])
        word = _WORD.match(rest)
        return word is not None and _finite(word.group(0), after_pronoun=True)
    for pattern in _NOUN_SUBJECTS:
        if m := pattern.match(text):
            words = _WORD.findall(_LEAD_ADVERBS.sub("", text[m.end() :]))[:2]
            if words and _finite(words[0], after_pronoun=False):
                plural_noun = words[0].lower() not in _AUXILIARIES and words[0].endswith("s")
                if not (plural_noun and (len(words) < 2 or words[1].lower() in _AFTER_PLURAL_NOUNS)):
                    return True  # "our build uses pnpm", "our CI runs on …", not "their marketing skills to …"
    return False


def _has_verb(part: str) -> bool:
    """Whether a clause (the text since its last clause start) has a finite verb."""
    words = _WORD.findall(part[max(m.end() for m in _CLAUSE_START.finditer(part)) :])
    for i, word in enumerate(words):
        low = word.lower()
        if low in _AUXILIARIES or low in _IRREGULAR_PAST or re.search(r"'(?:m|re|ve|ll|d)$", low):
            return True
        before = words[i - 1] if i else ""
        if before.lower() in ("i", "we", "you", "they", "he", "she") and low not in _NOT_VERBS:
            return True
        if i and before.lower() not in _DETERMINERS and _finite(word, after_pronoun=False):
            return True
    return False


def _past(word: str) -> bool:
    """A simple-past or participle form that reports an action ("moved", "went"), not a state ("tired")."""
    low = word.lower()
    return low not in _STATES and (low in _IRREGULAR_PAST or (low.endswith("ed") and len(low) > 3))


def _carried_subject(left: str, right: str) -> str | None:
    """The subject (with "have") the second verb phrase shares with the first, when that is safe to say."""
    first = _FIRST_SUBJECT.match(left)
    second = _WORD.match(_LEAD_ADVERBS.sub("", right))
    if first is None or second is None:
        return None
    verbs = _WORD.findall(_LEAD_ADVERBS.sub("", first["v"]))
    if not verbs:
        return None
    v1, v2 = verbs[0], second.group(0)
    if v1.lower() in _COPULAS or v1.lower() in _AUXILIARIES - {"have", "has", "had"}:
        return None  # "I'm tired and bored", "I can swim and dive": adjectives, or a modal's own scope
    subject = first["s"]
    if first["aux"]:
        return f"{subject}{first['aux']}" if first["aux"] != "'s" and _past(v1) and _past(v2) else None
    if _past(v1) and _past(v2):
        return subject
    if len(_WORD.findall(right)) < 2 or " to " in f" {left} " or _past(v1):
        return None  # "I like art and work", "I love to cook and bake": the second word may be a noun or "to …"
    low = v2.lower()
    if subject.lower() in ("i", "we") and low in _PRESENT_VERBS:
        return subject  # "I live in Lisbon and work at a bakery"
    if v1.endswith("s") and low.endswith("s") and (low[:-1] in _PRESENT_VERBS or low[:-2] in _PRESENT_VERBS):
        return subject  # "my sister lives in Lisbon and works at a bakery"
    return None


def _clause_end(text: str, start: int) -> int:
    """Where the clause starting at `start` ends: at the next boundary, or the end of the text."""
    following = _BOUNDARY.search(text, start)
    return following.start() if following else len(text)


def _shielded(text: str, at: int) -> bool:
    """Whether position `at` is inside quotes or brackets."""
    head = text[:at]
    if head.count('"') % 2:
        return True
    return any(head.count(o) > head.count(c) for o, c in (("(", ")"), ("（", "）"), ("“", "”"), ("「", "」")))


def split_clauses_en(text: str, today: date) -> list[Clause]:
    """An English statement cut into its independent clauses (see the module docstring); one clause if none."""
    lead = _TIME_LEAD.match(text)
    ref = find_time_en(text, today)
    time_lead = lead["t"].strip() if lead and ref and ref.pos == 0 and lead["t"].strip() == ref.text else None
    offset = lead.end() if time_lead and lead else 0
    body = text[offset:]
    clauses = [Clause(text, 0, len(text))]
    start, carried = 0, ""
    for boundary in _BOUNDARY.finditer(body):
        left, right = carried + body[start : boundary.start()], body[boundary.end() :]
        if _shielded(body, boundary.start()) or _SUBORDINATE.search(left) or _REPORTING.search(left):
            continue
        if _IMPERATIVE.match(left) and _IMPERATIVE.match(right):
            clauses[-1] = replace(clauses[-1], end=offset + boundary.start())
            clauses.append(Clause(text, offset + boundary.end(), len(text)))
            start, carried = boundary.end(), ""
            continue
        if not _has_verb(left) or (boundary["conjunction"].lower() == "so" and _PURPOSE.match(right)):
            continue
        if _LEANS_BACK.search(body[boundary.end() : _clause_end(body, boundary.end())]):
            continue  # "I have two cats but my husband is allergic to them": alone it loses what "them" is
        if _opens_clause(right):
            carried = ""
        elif (subject := _carried_subject(left, right)) is not None:
            carried = f"{subject} "
        else:
            continue
        clauses[-1] = replace(clauses[-1], end=offset + boundary.start())
        clauses.append(Clause(text, offset + boundary.end(), len(text), carried))
        start = boundary.end()
    if time_lead is None:
        return clauses
    # The time said first belongs to every clause that names none of its own.
    return [
        c if i == 0 or find_time_en(c.text, today) else replace(c, prefix=f"{time_lead}, {c.prefix}")
        for i, c in enumerate(clauses)
    ]


# ---------------------------------------------------------------- Chinese

_SUBJECT_ZH = "我"  # 我, 我的…, 我们: a clause about someone else (他, 她) points back at the one before
_BOUNDARY_ZH = re.compile(
    rf"[，,]\s*(?:而且|并且|但是|但|可是|不过|所以|而)?(?={_SUBJECT_ZH})|(?:而且|并且)(?={_SUBJECT_ZH})"
    r"|[，,]\s*(?P<carry>(?:而且|并且|同时)(?P<also>还(?!是)|也|又)?|(?P<adverb>还(?!是)|也|又))"
)
_LEAD_SUBJECT_ZH = re.compile(r"^(?P<s>我(?!们)|我们)")
_CJK_OR_WORD = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]+")
_MIN_CLAUSE_ZH = 3
_LEANS_BACK_ZH = re.compile(r"[它他她]|这|那")


def _clause_end_zh(text: str, start: int) -> int:
    """Where the clause starting at `start` ends: at the next boundary, or the end of the text."""
    following = _BOUNDARY_ZH.search(text, start)
    return following.start() if following else len(text)


def split_clauses_zh(text: str, today: date) -> list[Clause]:
    """A Chinese statement cut into its clauses (see the module docstring); one clause if none."""
    ref = find_time_zh(text, today)
    time_lead = ref.text if ref is not None and ref.pos == 0 else None
    body = text[len(time_lead) :].lstrip("，, ") if time_lead else text
    offset = len(text) - len(body)
    subject = _LEAD_SUBJECT_ZH.match(body)
    clauses = [Clause(text, 0, len(text))]
    start = 0
    for boundary in _BOUNDARY_ZH.finditer(body):
        left = body[start : boundary.start()]
        if len(_CJK_OR_WORD.findall(left)) < _MIN_CLAUSE_ZH or _shielded(body, boundary.start()):
            continue  # "昨天，我…": the part before the comma is no clause
        if _LEANS_BACK_ZH.search(body[boundary.end() : _clause_end_zh(body, boundary.end())]):
            continue  # "我有两只猫，我老公对它们过敏": alone it loses what 它们 is
        if boundary["carry"] and subject is None:
            continue  # "…，也…" with no 我 to carry over
        clauses[-1] = replace(clauses[-1], end=offset + boundary.start())
        if boundary["carry"] and subject is not None:  # "，也喜欢咖啡" → "我也喜欢咖啡"; "，而且在…" → "我在…"
            adverb = boundary["also"] or boundary["adverb"]
            begins = boundary.end() - len(adverb) if adverb else boundary.end()
            clauses.append(Clause(text, offset + begins, len(text), subject["s"]))
        else:
            clauses.append(Clause(text, offset + boundary.end(), len(text)))
        start = boundary.end()
    if time_lead is None:
        return clauses
    return [
        c if i == 0 or find_time_zh(c.text, today) else replace(c, prefix=f"{time_lead}{c.prefix}")
        for i, c in enumerate(clauses)
    ]


def split_clauses(text: str, zh: bool, today: date) -> list[Clause]:
    """A statement's independent clauses, each a sentence of its own, in the order said."""
    return split_clauses_zh(text, today) if zh else split_clauses_en(text, today)
