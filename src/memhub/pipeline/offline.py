"""The no-LLM pipeline stages: a rule-based extractor (English and Chinese) and a deduplicator.

This is memhub's default path, so memories appear with no model configured. Both classes are
pure and deterministic: the same messages and neighbours always give the same candidates and
decisions, which keeps a retried job from producing different memories. Everything is regex
work on precompiled patterns (no segmenter, no model), to sustain hundreds of messages a second.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from memhub.index.tokenize import CJK_RUN, STEMMER, WORD
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
from memhub.pipeline.offline_rules_zh import DATED_EVENT_ZH, FILLERS_ZH, QUESTION_ZH, RULES_ZH, third_person
from memhub.pipeline.quality import looks_like_prompt_injection, sanitize, should_extract
from memhub.pipeline.types import Candidate, Decision, Neighbour, PromptMode, SourceMessage

MAX_CANDIDATES = 20  # the original's `maxMemoriesPerSession` default
MAX_SCENE_NAME = 50

_CHAT_FAMILIES = frozenset({PREFERENCE, IDENTITY, EVENT, INSTRUCTION})
_CODE_FAMILIES = frozenset({CODE_METHOD, CODE_FACT, CODE_TASK, CODE_ARTIFACT, INSTRUCTION, EVENT})
# Table order is priority order: specific rules first, the catch-all dated event last.
_TABLE_EN = (*RULES_EN, *CODE_RULES_EN, DATED_EVENT_EN)
_TABLE_ZH = (*RULES_ZH, *CODE_RULES_ZH, DATED_EVENT_ZH)

# ---------------------------------------------------------------- sentences

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "＇": "'"})
_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_LOWER_I = re.compile(r"(?<![\w'])i(?=\s|'|$)")
_TRAILING = re.compile(r"[\s.!。！;；~…]+$")
_FIRST_WORD_CHAR = re.compile(r"\w")
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
_REMEMBER_ZH = re.compile(r"(?:请)?(?:你)?(?:要)?(?:记住|记得|别忘了|不要忘了|不要忘记|记一下)[，,:：]?(?P<r>.+)")


def _remember(rest: str, ctx: Context, families: frozenset[str]) -> RuleHit | None:
    """ "Remember that I'm vegan": the inner statement, with more weight because the user asked."""
    tables = _TABLE_ZH if ctx.zh else _TABLE_EN
    inner = run_rules(tables, rest, replace(ctx, sentence=rest), families)
    if inner is not None:
        boosted = inner.priority if inner.priority == -1 else max(inner.priority, 80)
        return replace(inner, priority=boosted, metadata={**inner.metadata, "explicit_remember": True})
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


def match_sentence(sentence: str, today: date, mode: PromptMode = "chat") -> RuleHit | None:
    """The memory one sentence yields (typed, time-resolved, above threshold), or None."""
    zh = is_chinese(sentence)
    if _QUESTION_END.search(sentence):
        return None
    text = _TRAILING.sub("", sentence).strip(" \t\"'“”「」")
    if zh:
        text = FILLERS_ZH.sub("", text)
        if QUESTION_ZH.search(text):
            return None
    else:
        text = FILLERS_EN.sub("", _LOWER_I.sub("I", text))
        if QUESTION_EN.match(text) and not _DO_NOT.match(text):
            return None
    if len(text) < 2:
        return None
    ctx = Context(today, text, zh)
    families = _CODE_FAMILIES if mode == "code" else _CHAT_FAMILIES
    remember = (_REMEMBER_ZH if zh else _REMEMBER_EN).match(text)
    if remember is not None:
        hit = _remember(clip(remember["r"]), ctx, families)
    else:
        hit = run_rules(_TABLE_ZH if zh else _TABLE_EN, text, ctx, families)
    if hit is None:
        return None
    hit = with_time(hit, ctx)
    return accept(hit, mode)


# ---------------------------------------------------------------- extractor


@dataclass(slots=True)
class _Found:
    hit: RuleHit
    zh: bool
    ids: list[str]
    time_ms: int
    suspect: bool


def _scene_name(found: _Found, previous_scene: str | None) -> str:
    label = scene_label(found.hit.family, found.zh)
    if previous_scene and previous_scene.startswith(label):
        return previous_scene  # the batch continues the scene it was already in
    topic = clip(found.hit.topic, 12) if found.zh else " ".join(clip(found.hit.topic, 40).split()[:4])
    name = f"{label}{'：' if found.zh else ': '}{topic}" if topic else label
    return name[:MAX_SCENE_NAME].rstrip()


class OfflineExtractor:
    """Rule-based L1 extraction from the user's own messages, English and Chinese, no LLM."""

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
        """Candidates from the batch's user messages; background and custom prompts only guide an LLM."""
        found: dict[str, _Found] = {}
        for message in batch:
            if message.role != "user" or not should_extract(message.content):
                continue  # what the assistant said is context, never a fact about the user
            text = sanitize(message.content)
            if not should_extract(text):
                continue
            today = message_date(message.time_ms)
            for sentence in split_sentences(text):
                hit = match_sentence(sentence, today, mode)
                if hit is None:
                    continue
                suspect = looks_like_prompt_injection(sentence) or looks_like_prompt_injection(hit.content)
                key = _normalise(hit.content)
                if (seen := found.get(key)) is not None:
                    # The same statement twice in one batch is one memory with both sources.
                    if message.id not in seen.ids:
                        seen.ids.append(message.id)
                    seen.time_ms = max(seen.time_ms, message.time_ms)
                    seen.suspect = seen.suspect or suspect
                    continue
                found[key] = _Found(hit, is_chinese(sentence), [message.id], message.time_ms, suspect)
        return self._candidates(list(found.values())[: self.max_candidates], previous_scene)

    @staticmethod
    def _candidates(found: list[_Found], previous_scene: str | None) -> list[Candidate]:
        scenes: dict[str, str] = {}
        for item in found:  # one scene per rule family, named after its first memory's topic
            scenes.setdefault(item.hit.family, _scene_name(item, previous_scene))
        out: list[Candidate] = []
        for item in found:
            meta: dict[str, Any] = {"extractor": "offline", "rule": item.hit.rule, **item.hit.metadata}
            meta["source_time_ms"] = item.time_ms
            if item.suspect:
                meta["injection_suspect"] = True
            out.append(
                Candidate(
                    content=item.hit.content,
                    type=item.hit.type,
                    priority=item.hit.priority,
                    source_message_ids=tuple(item.ids),
                    scene_name=scenes[item.hit.family],
                    metadata=meta,
                )
            )
        return out


# ---------------------------------------------------------------- deduplication

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


@dataclass(frozen=True, slots=True)
class _Shape:
    norm: str
    tokens: frozenset[str]
    slot: tuple[str, ...] | None
    value: str | None
    type: str


def _shape(content: str, kind: str) -> _Shape:
    parsed = memory_slot(content)
    return _Shape(_normalise(content), _tokens(content), *(parsed or (None, None)), kind)


def _same(a: _Shape, b: _Shape) -> bool:
    """Already known: identical text, the same slot value, or near-identical wording of one type."""
    if a.norm == b.norm:
        return True
    if a.slot is not None and a.slot == b.slot:
        return a.value == b.value
    return a.type == b.type and jaccard(a.tokens, b.tokens) >= SKIP_OVERLAP


def _supersedes(a: _Shape, b: _Shape) -> float:
    """How strongly `a` replaces `b` (0: it does not): a changed slot value, or a close rewording."""
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
