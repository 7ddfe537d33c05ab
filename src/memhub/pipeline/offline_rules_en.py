"""English rules of the offline extractor (see `offline_rules` for how rules are applied)."""

from __future__ import annotations

import calendar
import re
from dataclasses import replace

from memhub.pipeline.offline_dates import find_time_en
from memhub.pipeline.offline_rules import (
    EVENT,
    IDENTITY,
    INSTRUCTION,
    PREFERENCE,
    Built,
    Context,
    Rule,
    clip,
    rule,
)

# ---------------------------------------------------------------- first person → third person


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ADVERBS = (
    r"(?:really|truly|absolutely|totally|also|still|just|actually|definitely|genuinely|especially|usually|"
    r"often|sometimes|generally|mostly|rarely|recently|finally|already|only|even|kind of|kinda|no longer|"
    r"always|never|currently|now)"  # not "do": "I do yoga" is "does yoga", and so is the emphatic "does love"
)
_NO_S = _words(
    "will would can could should might must may shall was were used cannot went met saw bought left came "
    "took made got had ran began flew ate drank found gave wrote spoke felt kept lost paid sent sold "
    "spent told thought won read put set cut hit let quit did brought caught taught fought sought held built "
    "lent meant dealt heard understood drew grew knew threw blew wore tore chose rose drove rode broke "
    "woke froze stole forgave sang rang swam became sat hung shot fed led slept wept swept forgot hid lit "
    "fell shook stood struck stuck spun dug won sank fled bent bound ground wound"
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is", "'m": "is", "'ve": "has"}
_NEGATIONS = (
    (re.compile(r"^(?:don't|dont|do not)\b", re.I), "does not"),
    (re.compile(r"^(?:can't|cant|can not|cannot)\b", re.I), "cannot"),
    (re.compile(r"^(?:won't|will not)\b", re.I), "will not"),
    (re.compile(r"^(?:didn't|did not)\b", re.I), "did not"),
    (re.compile(r"^(?:haven't|have not)\b", re.I), "has not"),
    (re.compile(r"^(?:wasn't|was not)\b", re.I), "was not"),
)
_SUBJECT = re.compile(r"^(?:(I'm|I am)|(I've)|(I'll)|(I'd)|(my)|(I))\b\s*", re.I)
_LEAD_ADVERBS = re.compile(rf"^((?:{_ADVERBS}\s+)*)(\S+)", re.I)
_PRONOUNS = (
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"\bI'm\b|\bI am\b"), "they are"),
    (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI wasn't\b"), "they weren't"),
    (re.compile(r"\bI've\b"), "they have"),
    (re.compile(r"\bI'll\b"), "they will"),
    (re.compile(r"\bI\b"), "they"),
)
# In instructions "you" is the assistant.
_YOU = (
    (re.compile(r"\byou're\b|\byou are\b", re.I), "it is"),
    (re.compile(r"\byour\b", re.I), "its"),
    (re.compile(r"\byourself\b", re.I), "itself"),
    (re.compile(r"\byou\b", re.I), "it"),
)


def third_person_verb(word: str) -> str:
    """`like` → `likes`, `go` → `goes`, `study` → `studies`; past tenses and modals unchanged."""
    low = word.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _NO_S or (low.endswith("ed") and not low.endswith("eed")) or not low.isalpha():
        return word
    if low.startswith("re") and low[2:] in _NO_S:
        return word  # "retook", "rebuilt"
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return word + "es"
    if re.search(r"[^aeiou]y$", low):
        return word[:-1] + "ies"
    return word + "s"


def swap_pronouns(text: str) -> str:
    """The user's own words about themselves, told about them (my → their, me → them …)."""
    for pattern, repl in _PRONOUNS:
        text = pattern.sub(repl, text)
    return text


def assistant_view(text: str) -> str:
    """An instruction's words with "you" meaning the assistant and "me" the user."""
    for pattern, repl in _YOU:
        text = pattern.sub(repl, text)
    return swap_pronouns(text)


def _verb_phrase(rest: str) -> str:
    m = _LEAD_ADVERBS.match(rest)
    adverbs = m[1] if m else ""
    for pattern, repl in _NEGATIONS:  # "I still haven't …" → "still has not …"
        if pattern.match(rest[len(adverbs) :]):
            return adverbs + pattern.sub(repl, rest[len(adverbs) :], count=1)
    if m is None:
        return rest
    return f"{m[1]}{third_person_verb(m[2])}{rest[m.end() :]}"


# "My girlfriend and I went fishing", "Tom and I", "me and my team had a blast": the speaker and someone else.
_COMPANION = r"(?:(?i:my|our)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+|[A-Z][a-z]+)"
_TOGETHER_VERB = "|".join(sorted(_NO_S | _words("are have do live love like both all also just often"), key=len))
WITH_COMPANION = re.compile(
    rf"^(?:(?P<a>{_COMPANION})\s+and\s+(?:I|me)|(?i:me|I)\s+and\s+(?P<b>{_COMPANION}))\s+"
    rf"(?P<rest>(?:{_TOGETHER_VERB}|\w+ed)\b.*)",
)


def user_clause(clause: str) -> str | None:
    """ "I went hiking with my dad" → "User went hiking with their dad"; None if not about "I"/"my".

    The speaker and a companion together stay the plural subject: "My girlfriend and I went fishing" →
    "User and their girlfriend went fishing".
    """
    if together := WITH_COMPANION.match(clause):
        return f"User and {swap_pronouns(together['a'] or together['b'])} {swap_pronouns(together['rest'])}"
    m = _SUBJECT.match(clause)
    if m is None:
        return None
    rest = clause[m.end() :]
    if m[1]:
        head = "User is"
    elif m[2]:
        head = "User has"
    elif m[3]:
        head = "User will"
    elif m[4]:
        head = "User would"
    elif m[5]:
        return "User's " + swap_pronouns(rest)
    else:
        return "User " + swap_pronouns(_verb_phrase(rest))
    return f"{head} {swap_pronouns(rest)}"


def sentence_of(text: str) -> str:
    """Capitalised, with a final full stop."""
    text = clip(text)
    return text[:1].upper() + text[1:] + "." if text else ""


def topic_of(text: str) -> str:
    """A few leading content words of an object phrase, for scene names."""
    words = re.sub(r"\s*\(.*?\)", "", text).split()
    while words and words[0].lower() in _DETERMINERS:
        words = words[1:]
    return clip(" ".join(words[:4]), 40)


_DETERMINERS = _words("a an the their my some to being")

# Objects that only make sense inside the conversation ("I like it", "I love you").
_DEICTIC = re.compile(
    r"^(?:it|this|that|these|those|them|him|her|you|your|yours|how|what|when|where|the way|it's|that's|so much|"
    r"here|there)\b",
    re.I,
)
_FEELINGS = _words(
    "tired happy sad fine good great okay ok bored hungry sorry sure glad excited busy back here done "
    "ready stressed angry upset confused lost exhausted sick worried nervous scared afraid lonely "
    "thirsty sleepy curious interested lucky in out home so very really just kidding joking wondering "
    "thinking trying looking not well alright annoyed frustrated pleased thrilled grateful thankful "
    "amazed surprised"
)


def _object(text: str) -> str | None:
    obj = clip(text, 160)
    if len(obj) < 2 or _DEICTIC.match(obj):
        return None
    return obj


# ---------------------------------------------------------------- instructions

_PERSIST = re.compile(r"\b(?:always|never|every time|from now on|going forward|in future|in the future)\b", re.I)


@rule(
    "call_me", INSTRUCTION, 85, r"(?:please\s+)?(?:just\s+)?(?:call me|address me as|refer to me as)\s+(?P<o>.{1,40})$"
)
def _call_me(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User wants to be called {obj}.", obj) if obj else None


@rule(
    "absolute", INSTRUCTION, -1, r"(?:please\s+)?(?:you\s+(?:should|must|need to)\s+)?(?P<m>always|never)\s+(?P<r>.+)"
)
def _absolute(m: re.Match[str], ctx: Context) -> Built | None:
    rest = clip(assistant_view(m["r"]))
    return Built(f"User wants the assistant to {m['m'].lower()} {rest}.", rest) if len(rest) > 2 else None


_MARKER = r"(?:from now on|going forward|from here on(?: out)?|henceforth|in (?:the )?future)"


@rule("from_now_on", INSTRUCTION, 90, rf"(?:{_MARKER}[,\s]+(?P<a>.+)|(?P<b>.+?)[,\s]+{_MARKER})")
def _from_now_on(m: re.Match[str], ctx: Context) -> Built | None:
    rest = re.sub(r"^(?:please\s+|you\s+(?:should|must)\s+)+", "", clip(m["a"] or m["b"]), flags=re.I)
    if re.match(r"(?:I|my|we)\b", rest, re.I):
        return None  # the user's own resolution, not an instruction
    for inner in (_call_me, _absolute, _dont, _language):  # "from now on, call me Al"
        if (a := inner.pattern.match(rest)) and (built := inner.build(a, ctx)):
            return built if inner is not _dont else replace(built, content=built.content[:-1] + " from now on.")
    rest = re.sub(r"^(?:don't|dont|do not)\b", "not", rest, flags=re.I)
    rest = assistant_view(rest)
    return Built(f"User wants the assistant to {rest} from now on.", rest)


@rule("dont", INSTRUCTION, 80, r"(?:please\s+)?(?:don't|dont|do not)\s+(?P<r>.+)")
def _dont(m: re.Match[str], ctx: Context) -> Built | None:
    if re.match(r"(?:worry|mind|be\b|bother|hesitate|get me wrong|know|care|forget|even|panic)", m["r"], re.I):
        return None  # chit-chat, or "don't forget" which the remember rule reads
    rest = clip(assistant_view(m["r"]))
    return Built(f"User wants the assistant not to {rest}.", rest)


@rule("stop", INSTRUCTION, 80, r"please\s+stop\s+(?P<r>.+)")
def _stop(m: re.Match[str], ctx: Context) -> Built | None:
    rest = clip(assistant_view(m["r"]))
    return Built(f"User wants the assistant to stop {rest}.", rest)


@rule("want_you_to", INSTRUCTION, 85, r"I(?:\s+would|'d)?\s+(?:want|like|need)\s+you\s+to\s+(?P<r>.+)")
def _want_you_to(m: re.Match[str], ctx: Context) -> Built | None:
    if not _PERSIST.search(m["r"]):
        return None  # a one-off request, not a standing instruction
    rest = clip(assistant_view(m["r"]))
    return Built(f"User wants the assistant to {rest}.", rest)


@rule(
    "language",
    INSTRUCTION,
    75,
    r"(?:please\s+)?(?P<v>answer|reply|respond|write|talk|speak)\s+(?:to me\s+)?in\s+(?P<l>[A-Za-z]+)\b(?P<r>.*)",
)
def _language(m: re.Match[str], ctx: Context) -> Built | None:
    lang = m["l"].capitalize()
    return Built(f"User wants the assistant to {m['v'].lower()} in {lang}{clip(m['r'])}.", lang)


# ---------------------------------------------------------------- persona: preferences and identity


@rule(
    "favourite",
    PREFERENCE,
    75,
    r"my\s+(?:all[- ]time\s+)?(?:favou?rite|fav)\s+(?P<w>[\w' -]{1,40}?)\s+(?:is|are)\s+(?P<o>.+)",
)
def _favourite(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User's favourite {m['w'].lower()} is {swap_pronouns(obj)}.", obj) if obj else None


@rule(
    "name",
    IDENTITY,
    90,
    r"(?:my name is|my name's|I'm called|I am called|people call me|everyone calls me)\s+(?P<o>[\w .'-]{1,40})$",
)
def _name(m: re.Match[str], ctx: Context) -> Built | None:
    name = clip(m["o"])
    return Built(f"User's name is {name}.", name) if name else None


@rule("name", IDENTITY, 90, r"I(?:'m| am)\s+(?P<o>[A-Z][a-z]+(?:\s[A-Z][a-z]+)?)$", 0)
def _name_intro(m: re.Match[str], ctx: Context) -> Built | None:
    if m["o"].split()[0].lower() in _FEELINGS:
        return None
    return Built(f"User's name is {m['o']}.", m["o"])


@rule("age", IDENTITY, 75, r"I(?:'m| am)\s+(?P<n>\d{1,3})(?:\s*(?:years?\s+old|yo|y/o))?$")
def _age(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"User is {m['n']} years old.", "age")


@rule("allergy", IDENTITY, 95, r"I(?:'m| am)\s+(?:(?:very|severely|mildly|also|really)\s+)?allergic\s+to\s+(?P<o>.+)")
def _allergy(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User is allergic to {obj}.", obj) if obj else None


@rule("origin", IDENTITY, 70, r"(?:I(?:'m| am)\s+(?:originally\s+)?from|I\s+(?:originally\s+)?come\s+from)\s+(?P<o>.+)")
def _origin(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User is from {obj}.", obj) if obj else None


@rule(
    "residence",
    IDENTITY,
    80,
    r"I\s+(?:currently\s+|now\s+|still\s+)?(?:live|reside|am living|'m living)\s+(?P<p>in|at|near)\s+(?P<o>.+)",
)
def _residence(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User lives {m['p'].lower()} {swap_pronouns(obj)}.", obj) if obj else None


@rule("residence", IDENTITY, 80, r"I(?:\s+just|\s+recently|'ve|\s+have)?\s+moved\s+to\s+(?P<o>.+)")
def _moved(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User moved to {swap_pronouns(obj)}.", obj) if obj else None


@rule("work", IDENTITY, 80, r"I\s+(?:currently\s+|now\s+)?work\s+(?P<p>as|at|for|in|on)\s+(?P<o>.+)")
def _work(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User works {m['p'].lower()} {swap_pronouns(obj)}.", obj) if obj else None


_STATUS = (
    r"vegetarian|vegan|pescatarian|married|single|divorced|engaged|pregnant|retired|left-handed|right-handed|"
    r"colou?r-?blind|diabetic|lactose intolerant|gluten intolerant|unemployed|self-employed|a student"
)


@rule("status", IDENTITY, 80, rf"I(?:'m| am)\s+(?:now\s+|also\s+)?(?P<o>(?:{_STATUS})\b.*)")
def _status(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"User is {swap_pronouns(obj)}.", obj)


@rule("identity", IDENTITY, 75, r"I(?:'m| am)\s+(?:now\s+|also\s+)?(?P<a>an?)\s+(?P<o>.+)")
def _identity(m: re.Match[str], ctx: Context) -> Built | None:
    if re.match(r"(?:bit|little|lot|big fan|huge fan|fan)\b", m["o"], re.I):
        return None
    obj = _object(m["o"])
    return Built(f"User is {m['a'].lower()} {swap_pronouns(obj)}.", obj) if obj else None


_RELATIONS = (
    r"wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kid|child|baby|mom|mother|mum|dad|"
    r"father|brother|sister|grandma|grandmother|grandpa|grandfather|dog|cat|pet|boss|manager|best friend"
)
_ATTRIBUTES = (
    r"birthday|email(?: address)?|phone(?: number)?|hometown|blood type|address|time ?zone|native language|"
    r"first language|major|job|profession|occupation|nickname|username|github(?: handle)?|nationality|height"
)


@rule(
    "attribute", IDENTITY, 80, rf"my\s+(?:(?P<r>{_RELATIONS})'s\s+)?(?P<a>{_ATTRIBUTES}|name)\s+(?:is|are)\s+(?P<o>.+)"
)
def _attribute(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    if obj is None or (m["a"].lower() == "name" and not m["r"]):
        return None  # "my name is" has its own rule
    owner = f"User's {m['r'].lower()}'s" if m["r"] else "User's"
    return Built(f"{owner} {m['a'].lower()} is {swap_pronouns(obj)}.", m["a"].lower())


@rule("family", IDENTITY, 75, rf"my\s+(?P<r>{_RELATIONS})\s+is\s+(?:(?P<n>named|called)\s+)?(?P<o>.+)")
def _family(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    if obj is None:
        return None
    if m["n"]:
        return Built(f"User's {m['r'].lower()}'s name is {obj}.", m["r"].lower())
    return Built(f"User's {m['r'].lower()} is {swap_pronouns(obj)}.", m["r"].lower())


@rule(
    "household",
    IDENTITY,
    65,
    r"I\s+have\s+(?P<o>(?:a|an|one|two|three|four|five|\d+)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:dogs?|cats?|kids?|children|sons?|daughters?|brothers?|sisters?|pets?|rabbits?|birds?|fish|hamsters?|parrots?)\b.*)",
)
def _household(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"User has {swap_pronouns(obj)}.", obj)


@rule("language_skill", IDENTITY, 70, r"I\s+(?:can\s+)?speak\s+(?P<o>.+)")
def _speaks(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User speaks {obj}.", obj) if obj else None


@rule("learning", IDENTITY, 65, r"I(?:'m| am)\s+(?:currently\s+|now\s+)?(?P<v>learning|studying)\s+(?P<o>.+)")
def _learning(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User is {m['v'].lower()} {swap_pronouns(obj)}.", obj) if obj else None


_PREF_VERBS = {
    "like": "likes",
    "love": "loves",
    "adore": "adores",
    "enjoy": "enjoys",
    "prefer": "prefers",
    "hate": "hates",
    "dislike": "dislikes",
    "detest": "detests",
    "loathe": "loathes",
    "can't stand": "cannot stand",
    "cannot stand": "cannot stand",
    "don't like": "does not like",
    "do not like": "does not like",
    "don't enjoy": "does not enjoy",
    "do not enjoy": "does not enjoy",
    "don't eat": "does not eat",
    "do not eat": "does not eat",
    "don't drink": "does not drink",
    "do not drink": "does not drink",
    "no longer like": "no longer likes",
}
_PREF_RE = "|".join(sorted((re.escape(v) for v in _PREF_VERBS), key=len, reverse=True))
_PREF_ADVERBS = (
    r"(?:really|truly|absolutely|totally|also|still|just|actually|definitely|genuinely|much|kind of|kinda|do)"
)


@rule("preference", PREFERENCE, 70, rf"I\s+(?P<a>(?:{_PREF_ADVERBS}\s+)*)(?P<v>{_PREF_RE})\s+(?P<o>.+)")
def _preference(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    verb = _PREF_VERBS[m["v"].lower()]
    adverbs = re.sub(r"\bdo\s+", "", m["a"].lower())  # emphatic "I do like" adds nothing
    return Built(f"User {adverbs}{verb} {swap_pronouns(obj)}.", obj) if obj else None


@rule(
    "preference",
    PREFERENCE,
    70,
    r"I(?:'m| am)\s+(?P<v>(?:not\s+)?(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into))\s+(?P<o>.+)",
)
def _fan(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    verb = re.sub(r"\s+", " ", m["v"].lower()).replace("big ", "").replace("huge ", "")
    return Built(f"User is {verb} {swap_pronouns(obj)}.", obj) if obj else None


# ---------------------------------------------------------------- plans and dated events


@rule("plan", EVENT, 70, r"I(?:'m| am|\s+was)?\s+(?:planning|plan|intend|intending|hoping|hope)\s+to\s+(?P<o>.+)")
def _plan(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"User plans to {swap_pronouns(obj)}.", obj) if obj else None


# "I read it on the train": the object is whatever the conversation was about.
PRONOUN_OBJECT = re.compile(r"^(?:I|we)(?:'\w+)?\s+(?:\w+\s+){0,2}?(?:it|them)\b", re.I)
# With an assistant, "I need a script that …" or "I got this error" is the task at hand, not a lasting fact.
REQUEST = re.compile(
    r"^I\s+(?:\w+\s+)?(?:need|want|would like|'d like)\s+(?:a|an|some|help|the|you)\b|"
    r"\b(?:this|that|these|those|the following)\s+(?:error|issue|problem|bug|code|snippet|article|message|text|"
    r"link|file|question|answer|output|document|email|essay|paragraph|list|table|function|script)s?\b",
    re.I,
)


_TIME_LEAD = re.compile(r"^(?P<t>.+?)[,\s]+(?=(?:I|I'm|I've|I'll|I'd|my)\b)", re.I)


@rule("dated_event", EVENT, 65, r".+")
def _dated_event(m: re.Match[str], ctx: Context) -> Built | None:
    sentence = m.group(0)
    ref = find_time_en(sentence, ctx.today)
    if ref is None:
        return None
    clause = sentence
    if ref.pos == 0 and (lead := _TIME_LEAD.match(sentence)) and lead["t"].strip().lower() == ref.text.lower():
        when = ref.text if ref.text.split()[0].lower() in _CAPITALISED else ref.text[:1].lower() + ref.text[1:]
        clause = f"{sentence[lead.end() :]} {when}"  # "Yesterday I went …" → "I went … yesterday"
    text = user_clause(clause)
    if text is None:
        return None
    core = re.sub(re.escape(ref.text), "", text, flags=re.I).split()
    if len(core) < 3 or (core[1] in ("is", "was") and core[2].lower() in _FEELINGS):
        return None  # "I'm tired today": a passing feeling, not an event
    if len(core) <= 5 and any(w.lower() in ("it", "this", "that") for w in core):
        return None  # "I'll do it tomorrow": not self-contained
    if PRONOUN_OBJECT.match(clause) or (not ctx.between_people and REQUEST.search(clause)):
        return None  # "I read it this morning", "I need a script by Friday": context, or the task at hand
    words = core[2:]
    while words and words[0].lower() in _AUXILIARIES:
        words = words[1:]
    return Built(sentence_of(text), topic_of(" ".join(words)), priority=65 if ref.relative else 75)


_CAPITALISED = frozenset(w.lower() for w in (*calendar.month_name[1:], *calendar.month_abbr[1:], *calendar.day_name))
_AUXILIARIES = _words("going to gonna will be have has had a an the their is are was")


RULES_EN: tuple[Rule, ...] = (
    _call_me,
    _absolute,
    _from_now_on,
    _dont,
    _stop,
    _want_you_to,
    _language,
    _favourite,
    _name,
    _name_intro,
    _age,
    _allergy,
    _origin,
    _residence,
    _moved,
    _work,
    _status,
    _attribute,
    _family,
    _household,
    _speaks,
    _learning,
    _preference,
    _fan,
    _identity,
    _plan,
)
# Any sentence about the user with a time in it; tried last, after every more specific rule.
DATED_EVENT_EN = _dated_event

# ---------------------------------------------------------------- sentence cleanup and questions

FILLERS_EN = re.compile(
    r"^(?:(?:well|oh|ok|okay|so|and|but|also|actually|honestly|btw|by the way|anyway|yeah|yes|no|hey|hi|hello|"
    r"fyi|just so you know|for the record|i think|i guess|in fact|to be honest|plus|oh and|ah|um|uh)\b[\s,:;-]+)+",
    re.I,
)
QUESTION_EN = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|is|are|am|was|were|what|why|how|where|when|who|which|whose|"
    r"shall|may|have you|has|any idea|any chance)\b",
    re.I,
)
