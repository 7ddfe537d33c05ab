"""The catch-all English rule: any informative first-person statement, told in the third person.

The specific rules (`offline_rules_en`) write canonical forms that dedup and slots understand; most of
what people say about themselves fits none of them ("My sister just got married", "We adopted a puppy
from the shelter", "After work I volunteer at the food bank"). This rule keeps those: a sentence whose
subject is I/my/we/our, rewritten about the speaker ("User's sister just got married."), when it names
at least two things that are not pronouns, chit-chat or feelings. Conversation filler ("I know what you
mean", "I'm so happy for you", "I can't wait to see it") yields nothing.
"""

from __future__ import annotations

import re

from memhub.pipeline.offline_dates import find_time_en
from memhub.pipeline.offline_rules import EVENT, IDENTITY, Built, Context, rule
from memhub.pipeline.offline_rules_en import (
    PRONOUN_OBJECT,
    REQUEST,
    WITH_COMPANION,
    swap_pronouns,
    topic_of,
    user_clause,
)

MAX_STATEMENT = 220  # characters; a longer sentence is cut at a clause boundary

_I = re.IGNORECASE
_WE = re.compile(r"^(?:(we're|we are)|(we've|we have)|(we'll|we will)|(we'd)|(our)|(we))\b\s*", _I)
_WE_PRONOUNS = (
    (re.compile(r"\bourselves\b", _I), "themselves"),
    (re.compile(r"\bours\b", _I), "theirs"),
    (re.compile(r"\bour\b", _I), "their"),
    (re.compile(r"\bus\b"), "them"),
    (re.compile(r"\bwe're\b|\bwe are\b", _I), "they are"),
    (re.compile(r"\bwe've\b", _I), "they have"),
    (re.compile(r"\bwe\b", _I), "they"),
)
_FIRST_PERSON = re.compile(r"^(?:I|I'm|I've|I'll|I'd|my|we|we're|we've|we'll|we'd|our)\b", _I)
# "After the show, I went home" → "I went home after the show"; a vocative or interjection is dropped.
_LEAD = re.compile(
    r"^(?P<lead>[^,:;]{2,60}?)(?:,|:|\s+-+|\s+—)\s+(?:(?:and|but|so)\s+)?"
    r"(?P<rest>(?:I|I'm|I've|I'll|I'd|my|we|we're|we've|our)\b.*)$",
    _I,
)
_MOVABLE_LEAD = re.compile(
    r"^(?:after|before|when|while|since|during|in|on|at|last|this|next|yesterday|today|tonight|tomorrow|"
    r"back|once|as|for|over|every|each|on|around|by|until|a few|two|three|earlier|later|recently|"
    r"lately|these days|nowadays|growing up|as a kid|as a child)\b",
    _I,
)
# The addressee: in chat it is the assistant, between people the other person; a statement about "you"
# is about the conversation, not a fact about the speaker.
_YOU = re.compile(r"\b(?:you|your|yours|yourself|y'all|u)\b", _I)
_SET_PHRASES = re.compile(r"(?:^|,\s*)(?:you know|you see|if you ask me|as you know|mind you)(?:,\s*|$)", _I)
# Casual speech drops the "I": "Got a puppy last week!", "Just finished my thesis." A sentence opening
# on a past-tense verb (or "been") is read as the speaker's own; one on "looked"/"sounded" is about "it".
_ELIDED = re.compile(
    r"^(?:(?:just|finally|recently|also|actually|then|once|already)\s+)?"
    r"(?P<v>been(?!\s+(?:a while|ages|forever|so long|too long|a long time|a minute)\b)|"
    r"(?!(?:looked|sounded|seemed|felt|needed|used|called|named)\b)[a-z]{2,}ed|went|got|had|made|took|"
    r"saw|met|bought|found|started|tried|lost|won|left|came|gave|wrote|read|ran|sold|spent|finished|joined|"
    r"built|began|brought|caught|taught|quit|moved|visited|adopted)\b",
    _I,
)
_PLANNED = re.compile(r"\b(?:will|'ll|going to|gonna|plan|planning|about to|soon|tomorrow|next)\b", _I)
_PAST = re.compile(r"\b(?:was|were|went|did|had|got|met|saw|bought|ago|last|\w{3,}ed)\b", _I)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that say nothing about the world on their own: function words, pronouns, auxiliaries,
# intensifiers, feelings and the verbs of small talk.
_EMPTY = _words(
    """i i'm i've i'll i'd me my mine myself we we're we've we'll our ours us it it's its that that's this
    these those there here they them their he she him her his a an the and or but so to of in on at for
    with from by about as into than then too very really so such just also still even only quite pretty
    totally absolutely definitely actually honestly literally always never ever sometimes often again
    am is are was were be been being have has had do does did done doing will would can could should
    might must may can't don't didn't won't wasn't isn't aren't couldn't wouldn't shouldn't haven't
    not no yes yeah yep oh wow well okay ok sure lot lots bit little much many more most some any all
    both each every other others thing things stuff something anything everything nothing way time
    times one ones kind sort same what how why when where who which while if because like love loved
    loves know knew think thought guess mean meant agree bet wish hope hoped understand appreciate
    feel feeling felt felt see seen saw look looks looking seems seem seemed sound sounds sounded glad
    happy sad sorry fine thanks thank agreed okay proud excited thrilled grateful thankful amazed surprised
    tired busy sure great
    good nice cool awesome amazing fun wonderful fantastic beautiful lovely super awful terrible bad
    hard tough crazy wild best better worse worst new old want wanted needs need needed wait waiting try
    trying tried having
    let lets keep kept find found say said tell told talk talking chat chatting hear heard totally
    enjoy enjoyed right now today day days back out up down off over around together through""".replace("\n", " ")
)
_WORD = re.compile(r"[A-Za-z][\w'-]*|\d+")
MIN_CONTENT_WORDS = 2


def content_words(text: str) -> list[str]:
    """The words of a statement that name something (not pronouns, chit-chat, feelings or auxiliaries)."""
    return [w for w in _WORD.findall(text) if w.lower() not in _EMPTY and (len(w) > 2 or w.isdigit())]


def we_clause(clause: str) -> str | None:
    """ "We adopted a cat" → "User and others adopted a cat"; "Our dog is old" → "User's dog is old"."""
    m = _WE.match(clause)
    if m is None:
        return None
    rest = clause[m.end() :]
    for pattern, repl in _WE_PRONOUNS:
        rest = pattern.sub(repl, rest)
    rest = swap_pronouns(rest)
    heads = ("User and others are", "User and others have", "User and others will", "User and others would")
    for group, head in enumerate(heads, start=1):
        if m[group]:
            return f"{head} {rest}"
    if m[5]:
        return f"User's {rest}"
    return f"User and others {rest}"


def cut(text: str, limit: int = MAX_STATEMENT) -> str:
    """The text within `limit` characters, cut at the last clause boundary, never mid-word."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    for boundary in (" - ", "; ", ", ", " and ", " but "):
        at = head.rfind(boundary)
        if at > limit // 2:
            return head[:at]
    return head[: head.rfind(" ")] if " " in head else head


def _reorder(sentence: str) -> str | None:
    """The sentence starting with its first-person subject, or None when it has none."""
    for _ in range(2):  # "Sam, last week I …": a vocative, then a time
        if _FIRST_PERSON.match(sentence) or WITH_COMPANION.match(sentence):
            return sentence
        if m := _ELIDED.match(sentence):
            return ("I've " if m["v"].lower() == "been" else "I ") + sentence[:1].lower() + sentence[1:]
        m = _LEAD.match(sentence)
        if m is None:
            return None
        lead = m["lead"].strip()
        if _MOVABLE_LEAD.match(lead):
            return f"{m['rest'].rstrip()} {lead[:1].lower()}{lead[1:]}"
        if len(lead.split()) > 3:
            return None
        sentence = m["rest"]  # "Hey Sam, I …", "Guess what - I …"
    return sentence if _FIRST_PERSON.match(sentence) else None


def _family(clause: str, ctx: Context) -> str:
    """Past or planned activities (and anything dated) are events; the rest describes the speaker."""
    timed = find_time_en(clause, ctx.today) is not None
    return EVENT if timed or _PLANNED.search(clause) or _PAST.search(clause) else IDENTITY


def third_person_we(text: str) -> str:
    """ "our kids" → "their kids", "with us" → "with them", "we" → "they"."""
    for pattern, repl in _WE_PRONOUNS:  # "… with our kids" → "… with their kids"
        text = pattern.sub(repl, text)
    return text


def _clean(sentence: str) -> str:
    return _VOCATIVE_END.sub("", _SET_PHRASES.sub("", sentence)).strip()


_OUR_OWN = re.compile(
    r"^our\s+(?!(?:conversation|chat|discussion|talk|session|thread|exchange|last|previous|earlier|first|next)\b)",
    _I,
)
# "…, Sam" at the end of a sentence addresses someone; it is not part of the fact.
_VOCATIVE_END = re.compile(r",\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?\s*$")


@rule("statement", IDENTITY, 60, r".+")
def _statement(m: re.Match[str], ctx: Context) -> Built | None:
    sentence = _clean(m.group(0))
    clause = _reorder(sentence)
    if clause is None or _YOU.search(clause) or PRONOUN_OBJECT.match(clause):
        return None
    if not ctx.between_people and REQUEST.search(clause):
        return None
    if len(content_words(clause)) < MIN_CONTENT_WORDS:
        return None
    # Talking with an assistant, "we" is often the user and the assistant; between people it is the speaker's circle.
    # "Our build", "our dog" are the user's own either way, unless "our" is this conversation ("our chat").
    ours = ctx.between_people or _OUR_OWN.match(clause) is not None
    text = user_clause(clause) or (we_clause(clause) if ours else None)
    if text is None:
        return None
    text = cut(third_person_we(text).strip())
    body = text.split(" ", 1)[1] if " " in text else ""
    return Built(text[:1].upper() + text[1:] + ".", topic_of(body), family=_family(clause, ctx))


_MENTIONS_SELF = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself)\b")
_MENTIONS_US = re.compile(r"\b(?:we|we're|we've|our|ours|us)\b", _I)
MIN_REMARK_WORDS = 3
# A remark opening on a pronoun or a pointer ("It made me …", "Here's my …", "Let's …") leans on the
# conversation for its subject and would not stand alone; one opening on an imperative is advice, not a fact.
_LEANING_START = re.compile(
    r"^(?:it|it's|its|that|that's|this|these|those|they|they're|them|he|he's|she|she's|him|her|there|there's|"
    r"here|here's|let's|lets|seems|so|but|and|or|unless|which|what|who|because|if|though|although|cause|cuz|"
    r"same|too|also|anyway|yeah|yes|no|not|nothing|something|everything|anything|one|all|"
    r"always|never|please|don't|dont|do|remember|keep|try|make|let|go|take|stop|check|tell|ask|give|get)\b",
    _I,
)


@rule("remark", IDENTITY, 60, r"[A-Za-z0-9\"'].+")
def _remark(m: re.Match[str], ctx: Context) -> Built | None:
    """A sentence that is about the speaker without starting with them ("This necklace is a gift from my
    grandma", "Playing chess is my favourite hobby"), reported: "User said that …"."""
    sentence = _clean(m.group(0))
    if _reorder(sentence) is not None:
        return None  # a first-person statement: the statement rule kept it or had reason not to
    if not (_MENTIONS_SELF.search(sentence) or (ctx.between_people and _MENTIONS_US.search(sentence))):
        return None
    if _LEANING_START.match(sentence) or _YOU.search(sentence) or len(content_words(sentence)) < MIN_REMARK_WORDS:
        return None
    if not ctx.between_people and REQUEST.search(sentence):
        return None
    text = cut(third_person_we(swap_pronouns(sentence)).strip())
    return Built(f"User said that {text[:1].lower()}{text[1:]}.", topic_of(text), family=_family(sentence, ctx))


STATEMENT_EN = _statement
REMARK_EN = _remark
