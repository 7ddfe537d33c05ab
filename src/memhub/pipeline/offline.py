"""The no-LLM L1 extractor: rules (English and Chinese) over what people say about themselves.

This is memhub's default path, so memories appear with no model configured. Extraction is pure and
deterministic: the same messages always give the same candidates, which keeps a retried job from
producing different memories. Everything is regex work on precompiled patterns (no segmenter, no
model), to sustain hundreds of messages a second.

Which messages are read and whose memories they become is decided in `offline_speakers`: the user's
own turns in plain chat ("User …"), and every turn of a named person in a transcript ("Ann …"), never
an AI's replies. A sentence joining independent clauses is cut into them first (`offline_clauses`), so each
memory holds one fact. Every candidate passes one fragment check (`quality.is_fragment`) before it is kept.
The deduplicator lives in `offline_dedup`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from memhub.formats.injection import looks_like_prompt_injection
from memhub.pipeline.offline_answers import answered_statement
from memhub.pipeline.offline_clauses import Clause, split_clauses
from memhub.pipeline.offline_dates import message_date
from memhub.pipeline.offline_rules import (
    CJK_CHAR,
    CODE_ARTIFACT,
    CODE_FACT,
    CODE_METHOD,
    CODE_TASK,
    EVENT,
    IDENTITY,
    INSTRUCTION,
    PREFERENCE,
    Context,
    RuleHit,
    accept,
    clip,
    run_rules,
    scene_label,
    with_time,
)
from memhub.pipeline.offline_rules_code import CODE_RULES_EN, CODE_RULES_ZH
from memhub.pipeline.offline_rules_en import DATED_EVENT_EN, FILLERS_EN, QUESTION_EN, RULES_EN, swap_pronouns
from memhub.pipeline.offline_rules_statement import (
    MIN_CONTENT_WORDS,
    REMARK_EN,
    STATEMENT_EN,
    content_words,
    third_person_we,
)
from memhub.pipeline.offline_rules_zh import DATED_EVENT_ZH, FILLERS_ZH, QUESTION_ZH, RULES_ZH, third_person
from memhub.pipeline.offline_speakers import Speaker, name_subject, read_speaker
from memhub.pipeline.quality import is_fragment, sanitize, should_extract
from memhub.pipeline.types import Candidate, PromptMode, SourceMessage

# The original's `maxMemoriesPerSession` default, counted per speaker: in a transcript of two people
# each keeps their own share, so one talkative speaker cannot crowd the other out of a batch.
MAX_CANDIDATES = 20
MAX_SCENE_NAME = 50
MIN_CLAUSE_CHARS_ZH = 4  # a Chinese clause naming something has a few characters besides its subject

_CHAT_FAMILIES = frozenset({PREFERENCE, IDENTITY, EVENT, INSTRUCTION})
# Between people nobody is instructing the assistant: "Don't give up!" is encouragement, not a rule.
_PEOPLE_FAMILIES = frozenset({PREFERENCE, IDENTITY, EVENT})
_CODE_FAMILIES = frozenset({CODE_METHOD, CODE_FACT, CODE_TASK, CODE_ARTIFACT, INSTRUCTION, EVENT})
# Table order is priority order: specific rules first, the dated event, then (chat only) any statement.
_TABLE_EN = (*RULES_EN, *CODE_RULES_EN, DATED_EVENT_EN, STATEMENT_EN, REMARK_EN)
_TABLE_EN_CODE = (*RULES_EN, *CODE_RULES_EN, DATED_EVENT_EN)
_TABLE_ZH = (*RULES_ZH, *CODE_RULES_ZH, DATED_EVENT_ZH)

# ---------------------------------------------------------------- sentences

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "＇": "'"})
_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_LOWER_I = re.compile(r"(?<![\w'])i(?=\s|'|$)")
_TRAILING = re.compile(r"[\s.!。！;；~…]+$")
_FIRST_WORD_CHAR = re.compile(r"\w")
_QUOTE_THEN_STOP = re.compile(r"([.!。！])([\"”'」])$")
_QUOTES = "\"'“”「」"
_QUESTION_END = re.compile(r"[?？]\s*$")
# "do not use emojis" is an instruction, not a question.
_DO_NOT = re.compile(r"^do\s+not\b", re.I)


def split_sentences(text: str) -> list[str]:
    """English (. ! ? ;) and Chinese (。！？；) sentences and lines, punctuation kept, blanks dropped."""
    return [s.strip() for s in _SPLIT.split(text.translate(_APOSTROPHES)) if s and s.strip()]


def is_chinese(sentence: str) -> bool:
    """Chinese when the sentence starts with a CJK word or talks about 我."""
    if not CJK_CHAR.search(sentence):
        return False
    first = _FIRST_WORD_CHAR.search(sentence)
    return bool(first and CJK_CHAR.match(first.group(0))) or "我" in sentence


_REMEMBER_EN = re.compile(
    r"(?:please\s+)?(?:remember|don't forget|do not forget|keep in mind)\s*(?:that\s+|:\s*)?(?P<r>.+)", re.I
)
_REMEMBER_TAIL_EN = re.compile(
    r"[,;:\s-]+(?:so\s+)?(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget)\s*(?:that|this|it)?$",
    re.I,
)
_REMEMBER_ZH = re.compile(r"(?:请)?(?:你)?(?:要)?(?:记住|记得|别忘了|不要忘了|不要忘记|记一下)[，,:：]?(?P<r>.+)")


def _table(zh: bool, mode: PromptMode) -> tuple[Any, ...]:
    return _TABLE_ZH if zh else _TABLE_EN_CODE if mode == "code" else _TABLE_EN


def _remember(rest: str, ctx: Context, families: frozenset[str], mode: PromptMode) -> RuleHit | None:
    """ "Remember that I'm vegan": the inner statement, with more weight because the user asked."""
    inner = run_rules(_table(ctx.zh, mode), rest, replace(ctx, sentence=rest), families)
    if inner is not None:
        boosted = inner.priority if inner.priority == -1 else max(inner.priority, 80)
        return replace(inner, priority=boosted, metadata={**inner.metadata, "explicit_remember": True})
    if INSTRUCTION not in families:
        return None  # between people "remember that …" is talk, not a request to the assistant
    if ctx.zh:
        if rest.startswith("我"):
            return RuleHit(
                "remember", IDENTITY, "", 75, f"用户希望助手记住：{third_person(clip(rest))}。", clip(rest, 12), {}
            )
        return RuleHit("remember", INSTRUCTION, "", 80, f"用户要求记得{third_person(clip(rest))}。", clip(rest, 12), {})
    if rest.lower().startswith("to "):
        text = swap_pronouns(clip(rest))
        return RuleHit("remember", INSTRUCTION, "", 80, f"User wants the assistant to remember {text}.", text[3:], {})
    text = swap_pronouns(clip(rest))
    return RuleHit(
        "remember", IDENTITY, "", 75, f"User asked the assistant to remember that {text}.", clip(text, 40), {}
    )


def match_sentence(
    sentence: str, today: date, mode: PromptMode = "chat", *, between_people: bool = False
) -> list[RuleHit]:
    """The memories one sentence yields (typed, time-resolved, above threshold): one per clause that states a
    fact (`offline_clauses`), in the order said; none for a question or small talk.

    `between_people`: the sentence is from a transcript of named people, where nobody instructs the assistant.
    """
    zh = is_chinese(sentence)
    if _QUESTION_END.search(sentence):
        return []
    text = _TRAILING.sub("", _QUOTE_THEN_STOP.sub(r"\2\1", sentence.strip()))
    if len(text) > 1 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()  # a quoted sentence; a quote closing a title ("… called "Up"") stays
    for end in (0, -1):
        if text and text[end] in _QUOTES and text.count(text[end]) % 2:
            text = text[1:] if end == 0 else text[:-1]  # a quote left open by the sentence split
    if zh:
        text = FILLERS_ZH.sub("", text)
        if QUESTION_ZH.search(text):
            return []
    else:
        text = FILLERS_EN.sub("", _LOWER_I.sub("I", text))
        if QUESTION_EN.match(text) and not _DO_NOT.match(text):
            return []
    if len(text) < 2:
        return []
    families = _CODE_FAMILIES if mode == "code" else _PEOPLE_FAMILIES if between_people else _CHAT_FAMILIES
    if between_people:
        families = families - {INSTRUCTION}
    remember = (_REMEMBER_ZH if zh else _REMEMBER_EN).match(text)
    tail = None if zh or remember else _REMEMBER_TAIL_EN.search(text)
    asked_to_remember = True
    if tail is not None and tail.start() > 0:  # "I can't stand cilantro, please remember that"
        text = text[: tail.start()]
    elif remember is not None:
        text = clip(remember["r"])
    else:
        asked_to_remember = False

    def memory_of(clause: Clause) -> RuleHit | None:
        ctx = Context(today, clause.text, zh, between_people)
        if asked_to_remember:
            hit = _remember(clause.text, ctx, families, mode)
        else:
            hit = run_rules(_table(zh, mode), clause.text, ctx, families)
        return None if hit is None else accept(with_time(hit, ctx), mode)

    kept: list[tuple[Clause, RuleHit | None]] = []
    for clause in split_clauses(text, zh, today):
        hit = memory_of(clause)
        if hit is None and kept and kept[-1][1] is not None and _says_something(clause.text, zh):
            # A clause that is no memory alone but says something ("… and I made it to the top") stays with
            # the clause before it, so that splitting never loses part of what was said.
            joined = kept[-1][0].joined(clause)
            if (with_it := memory_of(joined)) is not None:
                kept[-1] = (joined, with_it)
                continue
        kept.append((clause, hit))
    return [hit for _, hit in kept if hit is not None]


def _says_something(clause: str, zh: bool) -> bool:
    """Whether a clause names things, as opposed to small talk or a feeling ("I'm coping", "I loved it")."""
    if zh:
        return len(CJK_CHAR.findall(third_person(clause).replace("用户", ""))) >= MIN_CLAUSE_CHARS_ZH
    named = content_words(clause)
    proper = [w for w in content_words(clause.split(" ", 1)[-1]) if w[:1].isupper()]  # "… seen the Colosseum"
    return len(named) >= MIN_CONTENT_WORDS or bool(proper)


# ---------------------------------------------------------------- extractor


@dataclass(slots=True)
class _Found:
    hit: RuleHit
    content: str  # the hit's text, told about its speaker
    zh: bool
    ids: list[str]
    time_ms: int
    suspect: bool
    speaker: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def _scene_name(found: _Found, previous_scene: str | None) -> str:
    label = scene_label(found.hit.family, found.zh)
    if previous_scene and previous_scene.startswith(label):
        return previous_scene  # the batch continues the scene it was already in
    topic = clip(found.hit.topic, 12) if found.zh else " ".join(clip(found.hit.topic, 40).split()[:4])
    name = f"{label}{'：' if found.zh else ': '}{topic}" if topic else label
    return name[:MAX_SCENE_NAME].rstrip()


def _other_participant(a: tuple[SourceMessage, Speaker], b: tuple[SourceMessage, Speaker]) -> bool:
    """Whether two messages are from different participants: different names, or in plain chat different roles."""
    if a[1].name or b[1].name:
        return a[1].name != b[1].name
    return a[0].role != b[0].role


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]+", " ", unicodedata.normalize("NFKC", text).lower()).split())


class OfflineExtractor:
    """Rule-based L1 extraction from what people say about themselves, English and Chinese, no LLM."""

    def __init__(self, *, max_candidates: int = MAX_CANDIDATES) -> None:
        self.max_candidates = max_candidates

    def extract(
        self,
        batch: Sequence[SourceMessage],
        background: Sequence[SourceMessage],
        *,
        previous_scene: str | None = None,
        mode: PromptMode = "chat",
        custom_prompt: str | None = None,
    ) -> list[Candidate]:
        """Candidates from the batch's people's messages; background and custom prompts only guide an LLM
        (background also tells whether the transcript is between named people, and which question a
        short answer at the start of the batch replies to)."""
        speakers = [read_speaker(m.role, m.content, m.metadata) for m in batch]
        earlier = [read_speaker(m.role, m.content, m.metadata) for m in background]
        between_people = len({s.name for s in (*speakers, *earlier) if s.name and s.extract}) >= 2
        found: dict[str, _Found] = {}
        previous: tuple[SourceMessage, Speaker] | None = (background[-1], earlier[-1]) if background else None
        for message, who in zip(batch, speakers, strict=True):
            asked, previous = previous, (message, who)
            if not who.extract:
                continue  # what an AI said is context, never a fact about a person
            text = sanitize(who.text)
            if not should_extract(text):
                continue
            today = message_date(message.time_ms)
            sentences = split_sentences(text)
            if asked is not None and _other_participant(asked, (message, who)):
                statement = answered_statement(sanitize(asked[1].text), sentences)
                for hit in match_sentence(statement, today, mode, between_people=between_people) if statement else []:
                    hit = replace(hit, metadata={**hit.metadata, "answer_to": asked[0].id})
                    self._keep(found, hit, statement, message, who, [asked[0].id, message.id])
            for sentence in sentences:
                for hit in match_sentence(sentence, today, mode, between_people=between_people):
                    self._keep(found, hit, sentence, message, who, [message.id])
        return self._candidates(self._capped(list(found.values())), previous_scene)

    @staticmethod
    def _keep(
        found: dict[str, _Found], hit: RuleHit, sentence: str, message: SourceMessage, who: Speaker, ids: list[str]
    ) -> None:
        zh = is_chinese(sentence)
        # "we"/"our" left inside a memory are the speaker's circle, told in the third person like "I"/"my".
        content = name_subject(
            hit.content.replace("我们", "他们") if zh else third_person_we(hit.content), who.name, zh
        )
        if is_fragment(content):
            return  # the one gate every candidate passes: nothing that cannot stand alone
        suspect = looks_like_prompt_injection(sentence) or looks_like_prompt_injection(content)
        key = _normalise(content)
        if (seen := found.get(key)) is not None:
            # The same statement twice in one batch is one memory with every source.
            seen.ids.extend(i for i in ids if i not in seen.ids)
            seen.time_ms = max(seen.time_ms, message.time_ms)
            seen.suspect = seen.suspect or suspect
            return
        found[key] = _Found(hit, content, zh, list(ids), message.time_ms, suspect, who.name)

    def _capped(self, found: list[_Found]) -> list[_Found]:
        """At most `max_candidates` per speaker, in the order they were said."""
        counts: dict[str | None, int] = {}
        kept: list[_Found] = []
        for item in found:
            counts[item.speaker] = counts.get(item.speaker, 0) + 1
            if counts[item.speaker] <= self.max_candidates:
                kept.append(item)
        return kept

    @staticmethod
    def _candidates(found: list[_Found], previous_scene: str | None) -> list[Candidate]:
        scenes: dict[str, str] = {}
        for item in found:  # one scene per rule family, named after its first memory's topic
            scenes.setdefault(item.hit.family, _scene_name(item, previous_scene))
        out: list[Candidate] = []
        for item in found:
            meta: dict[str, Any] = {"extractor": "offline", "rule": item.hit.rule, **item.hit.metadata}
            meta["source_time_ms"] = item.time_ms
            if item.speaker is not None:
                meta["speaker"] = item.speaker
            if item.suspect:
                meta["injection_suspect"] = True
            out.append(
                Candidate(
                    content=item.content,
                    type=item.hit.type,
                    priority=item.hit.priority,
                    source_message_ids=tuple(item.ids),
                    scene_name=scenes[item.hit.family],
                    metadata=meta,
                )
            )
        return out
