"""Sentence-level rules of the offline extractor: one user sentence in, at most one memory out.

Each rule is a precompiled regex anchored at the start of a cleaned sentence plus a builder that
rewrites the match as a self-contained third-person statement in the sentence's language
("I like green tea" → "User likes green tea.", "我喜欢绿茶" → "用户喜欢绿茶。"). Rules are tried in a
fixed order, so the same sentence always gives the same memory. The English and Chinese tables
live in `offline_rules_en` and `offline_rules_zh`; this module holds what they share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from memhub.pipeline.offline_dates import TimeRef, find_time_en, find_time_zh

# Families group rules for scene names and decide the memory type in each prompt mode.
PREFERENCE, IDENTITY, EVENT, INSTRUCTION = "preference", "identity", "event", "instruction"
CODE_METHOD, CODE_FACT, CODE_TASK, CODE_ARTIFACT = "code_method", "code_fact", "code_task", "code_artifact"

CHAT_TYPES = {PREFERENCE: "persona", IDENTITY: "persona", EVENT: "episodic", INSTRUCTION: "instruction"}
# In code mode small talk yields nothing; instructions become team methods and dated plans tasks.
CODE_TYPES = {
    CODE_METHOD: "work_method",
    CODE_FACT: "work_fact",
    CODE_TASK: "work_task",
    CODE_ARTIFACT: "work_artifact",
    INSTRUCTION: "work_method",
    EVENT: "work_task",
}
# As in the original's extractor: memories under these priorities are dropped (−1, an absolute instruction, is kept).
THRESHOLDS = {"persona": 50, "episodic": 60, "instruction": 70}
DEFAULT_THRESHOLD = 60

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK}]")


@dataclass(frozen=True, slots=True)
class Built:
    """What a rule's builder returns: the memory text, a topic for the scene name, extra metadata."""

    content: str
    topic: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    priority: int | None = None  # overrides the rule's priority (e.g. −1 for "always")
    family: str | None = None  # overrides the rule's family (a catch-all rule tells events from traits)


@dataclass(frozen=True, slots=True)
class Context:
    """What a builder may need besides the match: the message date and the whole sentence."""

    today: date
    sentence: str
    zh: bool
    between_people: bool = False  # a transcript of named people: "we" is the speaker's own circle


Builder = Callable[[re.Match[str], Context], Built | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One extraction rule: name, family, default priority, anchored regex and builder."""

    name: str
    family: str
    priority: int
    pattern: re.Pattern[str]
    build: Builder


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A rule that matched a sentence, with the memory it produced."""

    rule: str
    family: str
    type: str
    priority: int
    content: str
    topic: str
    metadata: Mapping[str, Any]


def rule(name: str, family: str, priority: int, pattern: str, flags: int = re.IGNORECASE) -> Callable[[Builder], Rule]:
    """Decorator turning a builder function into a Rule with its precompiled pattern."""

    def wrap(build: Builder) -> Rule:
        return Rule(name, family, priority, re.compile(pattern, flags), build)

    return wrap


def clip(text: str, limit: int = 200) -> str:
    """Trim whitespace and trailing punctuation, and cap the length (memories stay atomic)."""
    text = text.strip().rstrip(" ,，、;；:：.。!！…~")
    return text if len(text) <= limit else text[:limit].rstrip()


def run_rules(rules: tuple[Rule, ...], sentence: str, ctx: Context, families: frozenset[str]) -> RuleHit | None:
    """The first rule (in table order) of the allowed families that matches and builds a memory."""
    for r in rules:
        if r.family not in families:
            continue
        match = r.pattern.match(sentence)
        if match is None:
            continue
        built = r.build(match, ctx)
        if built is None or not built.content:
            continue
        return RuleHit(
            r.name,
            built.family or r.family,
            "",
            r.priority if built.priority is None else built.priority,
            built.content,
            built.topic,
            built.metadata,
        )
    return None


def with_time(hit: RuleHit, ctx: Context) -> RuleHit:
    """Attach the sentence's resolved time (metadata, and the date in the text when it was relative)."""
    if hit.family not in (EVENT, CODE_TASK, CODE_FACT) and hit.rule not in _TIMED_RULES:
        return hit  # "from now on" or "今年30岁" is not an activity time
    ref: TimeRef | None = (find_time_zh if ctx.zh else find_time_en)(ctx.sentence, ctx.today)
    if ref is None:
        return hit
    meta = dict(hit.metadata)
    meta["activity_start_time"] = ref.start.isoformat()
    meta["activity_end_time"] = ref.end.isoformat()
    if hit.family == CODE_TASK and "deadline" not in meta:
        meta["deadline"] = ref.end.isoformat()
    content = hit.content
    if ref.relative:
        stop = content[-1] if content[-1] in ".。" else ""
        body = content[: len(content) - len(stop)]
        content = f"{body}（{ref.label(True)}）{stop}" if ctx.zh else f"{body} ({ref.label(False)}){stop}"
    return replace(hit, content=content, metadata=meta)


_TIMED_RULES = frozenset({"residence"})


def accept(hit: RuleHit, mode: str) -> RuleHit | None:
    """Give the hit its memory type for the prompt mode and apply the original's priority thresholds."""
    types = CODE_TYPES if mode == "code" else CHAT_TYPES
    kind = types.get(hit.family)
    if kind is None:
        return None
    if hit.priority != -1 and hit.priority < THRESHOLDS.get(kind, DEFAULT_THRESHOLD):
        return None
    return replace(hit, type=kind)


def scene_label(family: str, zh: bool) -> str:
    """The fixed part of a scene name for a rule family."""
    return (_LABELS_ZH if zh else _LABELS_EN)[family]


_LABELS_EN = {
    PREFERENCE: "Preferences",
    IDENTITY: "About the user",
    EVENT: "Plans and events",
    INSTRUCTION: "Instructions for the assistant",
    CODE_METHOD: "Team conventions",
    CODE_FACT: "Project decisions",
    CODE_TASK: "Tasks and deadlines",
    CODE_ARTIFACT: "Project resources",
}
_LABELS_ZH = {
    PREFERENCE: "偏好",
    IDENTITY: "个人信息",
    EVENT: "计划与经历",
    INSTRUCTION: "对助手的要求",
    CODE_METHOD: "团队规范",
    CODE_FACT: "项目决定",
    CODE_TASK: "任务与截止",
    CODE_ARTIFACT: "项目资源",
}
