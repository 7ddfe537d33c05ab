"""Who said a message, for the offline extractor: a named person, the unnamed user, or an AI.

Which messages are extracted:
- an unnamed user message (plain user/assistant chat) is the user's own words; its memories keep the
  "User …" / "用户…" forms;
- a message that names a human speaker (metadata `speaker`/`author`/`name`, or a leading "Name:"
  label, read by `memhub.retrieval.speakers.speaker_of`) is that person's words, whatever its role:
  a transcript of two people stores one of them as role "assistant";
- everything else is context, never a fact about anyone: an unnamed assistant reply, and any
  message labelled as an AI or a system ("Assistant:", "Bot:", metadata speaker "GPT-4" …).

A label that is a common heading ("Note:", "TODO:", "Update:") is not a speaker: the message is
read as if it had no label, and the label stays part of the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhub.retrieval.speakers import speaker_of

# Labels that name a machine, not a person: such a speaker's words are never facts about a human.
_AI_LABEL = re.compile(
    r"^(?:assistant|ai|bot|chatbot|system|model|agent|tool|function|developer|gpt[\w.-]*|chatgpt|claude[\w.-]*|"
    r"gemini[\w.-]*|llama[\w.-]*|copilot|ai assistant|the assistant|your assistant|助手|机器人|系统)$",
    re.I,
)
# Labels that stand for the anonymous user: the memory keeps "User".
_USER_LABEL = re.compile(r"^(?:user|human|me|customer|client|用户|我)$", re.I)
# Words that start a line with a colon without naming anyone ("Note: I moved", "TODO: add tests").
_HEADING = frozenset(
    re.findall(
        r"\S+",
        """note notes nb ps pps update edit todo fixme fyi remember reminder important warning caution tip hint
    example question answer q a re subject title summary tldr tl;dr context background problem issue
    solution step goal task reason result error output input also btw bonus correction source
    quote link status plan idea thought thoughts conclusion disclaimer spoiler heads up""",
    )
)


@dataclass(frozen=True, slots=True)
class Speaker:
    """The author of one message as the extractor reads it."""

    name: str | None  # a human's name, or None for the anonymous user
    text: str  # the content without the speaker's "Name:" label
    extract: bool  # whether the message may yield memories at all


def _strip_label(content: str, label: str) -> str:
    return re.sub(rf"^\s*{re.escape(label)}\s*[:：]\s*", "", content, count=1)


# "小林：…": a Chinese name of up to four characters before a colon (speaker_of reads Latin labels).
_LABEL_ZH = re.compile(r"^\s*([\u4e00-\u9fff]{1,4})\s*[：:]\s*")
_HEADING_ZH = frozenset(
    re.findall(r"\S+", "注意 提醒 备注 更新 问题 回答 总结 任务 待办 重要 补充 说明 例如 原因 结果 目标 背景")
)


def _label(content: str) -> str | None:
    label = speaker_of(content)
    if label is None and (m := _LABEL_ZH.match(content)):
        label = m.group(1)
    if label is not None and (label.casefold() in _HEADING or label in _HEADING_ZH):
        return None
    return label


def read_speaker(role: str, content: str, metadata: Mapping[str, Any] | None = None) -> Speaker:
    """The message's speaker, its text without the label, and whether it is a human's own words."""
    label = _label(content)
    named = speaker_of("", metadata)
    text = content
    if label is not None and (named is None or label.casefold() == named.casefold()):
        text = _strip_label(content, label)
    who = named or label
    if who is None:
        return Speaker(None, text, role == "user")  # plain chat: only the user's own turns
    if _AI_LABEL.match(who):
        return Speaker(None, text, False)
    if _USER_LABEL.match(who):
        return Speaker(None, text, role == "user")
    return Speaker(who, text, True)


_LEAD_USER_EN = re.compile(r"^User\b")
_USER_ZH = "用户"


def name_subject(content: str, name: str | None, zh: bool) -> str:
    """A memory written in the anonymous-user form, told about the named speaker instead.

    "User's sister got married." → "Ann's sister got married."; "用户住在深圳。" → "小王住在深圳。".
    """
    if name is None:
        return content
    if zh:
        return content.replace(_USER_ZH, name)
    return _LEAD_USER_EN.sub(name, content, count=1)
