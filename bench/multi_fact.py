"""One memory, one fact: the rule `bench/recall_quality.py` counts memories that hold more than one.

A memory holds several facts when, once its date notes in parentheses are set aside, a coordinating
conjunction (and, but, yet, so) or ';' opens a second independent clause: a subject — a personal pronoun,
a name, "User", or a noun phrase after my/our/his/her/their/the — followed by a finite verb, after a part
that has a finite verb of its own. Not counted:
- a coordinated noun phrase ("likes tea and coffee", "salt and pepper", "research and development");
- a coordinated subject ("Tom and Jerry went to Paris", "Ann's sister and they went fishing": no verb
  before the "and");
- a second clause about "it"/"this"/"that", which comments on the one before ("… went to the show and it
  was fun") rather than stating a fact of its own;
- a second verb phrase sharing the first one's subject ("moved to Lisbon and started a bakery").
Chinese: a comma, ';' or 而且/并且/但是… followed by a new subject (用户, 他/她, 他们, 我们).
"""

from __future__ import annotations

import re

_DATE_NOTES = re.compile(r"\s*[(（][^()（）]*[)）]")
_BOUNDARY = re.compile(r"(?:;|,?\s+(?:and|but|yet|so))\s+(?=\S)")
# Where the clause before a boundary starts: the text's start, a comma or dash, "that" or a subordinator.
_CLAUSE_START = re.compile(
    r"(?:^|[,;:]\s+|\s+[-—]+\s+|\b(?:that|if|when|whether|because|while|since|where|how|what|why|though|"
    r"although|until|unless|after|before)\s+)"
)
_NOUN = r"(?!(?:I|we|you|he|she|they|it|them|him|her|us|me)\b)[a-z][\w-]*"
_SUBJECTS = tuple(  # tried in turn, so "our build uses …" and "the festival crowd was …" both read
    re.compile(p)
    for p in (
        r"^(?:I|we|you|he|she|they)(?=\s|')",
        rf"^(?:User|[A-Z][a-z]+)(?:'s\s+{_NOUN})?(?=\s)",
        rf"^(?:my|our|your|his|her|their|the|User's)\s+{_NOUN}(?=\s)",
        rf"^(?:my|our|your|his|her|their|the|User's)\s+{_NOUN}\s+{_NOUN}(?=\s)",
    )
)
_PRONOUN_SUBJECT = 0
_ADVERB = re.compile(r"^(?:also|just|still|really|then|never|always|all|both|even|finally|actually|now|often)\s+")
_WORD = re.compile(r"[A-Za-z][\w']*")
_FINITE = frozenset(
    re.findall(
        r"\S+",
        """am is are was were be has have had do does did will would can could should may might must isn't aren't
        wasn't weren't hasn't haven't don't doesn't didn't won't wouldn't can't couldn't went got made took saw met
        came left gave found kept lost paid sent sold spent told thought won read put ran began brought bought
        caught taught felt heard knew grew wore chose drove rode broke woke wrote ate became sat stood fell flew
        held built led slept""",
    )
)
_CONTRACTED = ("'m", "'re", "'ve", "'ll", "'d", "'s")
# Words after which an "-s" word is a plural noun ("their marketing skills to …"), not a verb.
_NOT_AFTER_VERB = frozenset(re.findall(r"\w+", "to of in on at for from with and or"))
_NOT_A_VERB = frozenset(re.findall(r"\w+", "and or who that which whose with of to in on at for from by as than"))
_PERSONAL = frozenset(("I", "we", "you", "they", "he", "she", "User"))
_DETERMINERS = frozenset(re.findall(r"\w+", "my our your his her their the a an this that"))
_CJK = re.compile(r"[\u4e00-\u9fff]")
_CLAUSE_ZH = re.compile(
    r"(?<=[\u4e00-\u9fff]{2})(?:[，,；;]\s*(?:而且|并且|但是|但|而|可是|不过|所以)?|而且|并且)(?:用户|我们|他们|她们|他|她)"
)


def _finite(word: str, after_pronoun: bool) -> bool:
    low = word.lower()
    if low in _FINITE or (low.endswith("ed") and len(low) > 3):
        return True
    if after_pronoun:
        return low.isalpha() and low not in _NOT_A_VERB  # "they need", "I love"
    return low.endswith("s") and not low.endswith(("ss", "us"))  # "our build uses", not "the bus"


def _opens_clause(text: str, kind: int) -> bool:
    """Whether `text` starts with a subject of that kind and a finite verb."""
    subject = _SUBJECTS[kind].match(text)
    if subject is None:
        return False
    predicate = text[subject.end() :]
    if kind == _PRONOUN_SUBJECT and predicate.startswith("'"):
        return True  # "they're", "I've"
    predicate = predicate.lstrip()
    while adverb := _ADVERB.match(predicate):
        predicate = predicate[adverb.end() :]
    words = _WORD.findall(predicate)[:2]
    if not words or not _finite(words[0], kind == _PRONOUN_SUBJECT):
        return False
    plural_noun = kind != _PRONOUN_SUBJECT and words[0].lower() not in _FINITE and not words[0].endswith("ed")
    return not (plural_noun and (len(words) < 2 or words[1].lower() in _NOT_AFTER_VERB))


def _has_finite_verb(part: str) -> bool:
    words = _WORD.findall(part)
    for i, word in enumerate(words):
        low = word.lower()
        if low in _FINITE or (low.endswith(_CONTRACTED) and not low.endswith("'s")):
            return True
        before = words[i - 1] if i else ""
        if before in _PERSONAL and low not in _NOT_A_VERB:
            return True
        if low.endswith("ed") and len(low) > 3 and before and before.lower() not in _DETERMINERS:
            return True
        named = before[:1].isupper() or (
            i > 1 and (words[i - 2].lower() in _DETERMINERS or words[i - 2].endswith("'s"))
        )
        if named and _finite(word, False):
            return True  # "Ann likes", "their dog loves", "User's sister lives"
    return False


def holds_several_facts(content: str) -> bool:
    """Whether a memory states two independent clauses, by the rule in this module's docstring."""
    text = _DATE_NOTES.sub("", content)
    if _CJK.search(text):
        return bool(_CLAUSE_ZH.search(text))
    for boundary in _BOUNDARY.finditer(text):
        rest = text[boundary.end() :]
        if not any(_opens_clause(rest, kind) for kind in range(len(_SUBJECTS))):
            continue
        left = text[: boundary.start()]
        if _has_finite_verb(left[max(m.end() for m in _CLAUSE_START.finditer(left)) :]):
            return True
    return False
