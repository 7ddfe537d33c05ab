"""Text hygiene before extraction: what is worth extracting, what to strip, what looks like an attack.

These follow spec §7.4 (server-side `sanitize`, `shouldCaptureL0`) and §3.3 (`shouldExtractL1`).
`looks_like_prompt_injection` only ever flags a memory in its metadata: conversation text is data,
and nothing in it changes what the pipeline does.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------- quality gate

_NOISE_EXACT = frozenset({"NO_REPLY"})
_NOISE_PREFIXES = ("A new session was started via", "✅ New session started", "Pre-compaction memory flush")
# 1–5 characters of nothing but punctuation/symbols ("...", "👍", "?!") carry no memory.
_SYMBOLS_ONLY = re.compile(r"^(?:[^\w\s]|_){1,5}$")
_QUESTION_MARKS_ONLY = re.compile(r"^[?？\s]+$")


def should_capture(text: str) -> bool:
    """Spec `shouldCaptureL0`: False for empty text, framework noise and slash commands."""
    stripped = text.strip()
    if not stripped or stripped in _NOISE_EXACT or "(session bootstrap)" in stripped:
        return False
    return not stripped.startswith(_NOISE_PREFIXES) and not stripped.startswith("/")


def should_extract(text: str) -> bool:
    """Spec `shouldExtractL1`: `should_capture`, and not 1–5 bare symbols or only question marks."""
    if not should_capture(text):
        return False
    stripped = text.strip()
    return not (_SYMBOLS_ONLY.match(stripped) or _QUESTION_MARKS_ONLY.match(stripped))


# ---------------------------------------------------------------- sanitize (server rules, in order)


def _block(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<{tag}>[\s\S]*?</{tag}>\s*")


_INBOUND_LABELS = (
    r"Conversation info|Sender|Thread starter|Replied message|Forwarded message context|Chat history since last reply"
)
# Rule 5 (`<memory-tools-guide>`) is client-only and so absent here, as in the server's sanitize.
_SANITIZE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_block("relevant-memories"), ""),  # 1: recall we injected ourselves must not be re-learned
    (_block("user-persona"), ""),  # 2
    (_block("relevant-scenes"), ""),  # 3
    (_block("scene-navigation"), ""),  # 4
    (_block("current_task_context"), ""),  # 6
    (re.compile(r"<history_task_context\b[^>]*>[\s\S]*?</history_task_context>\s*"), ""),  # 7
    # 8: chat-platform metadata the gateway prepends to inbound messages
    (re.compile(rf"(?:{_INBOUND_LABELS})\s*\(untrusted[^)\n]*\):\s*```json\s*[\s\S]*?```\s*"), ""),
    # 9: older clients sent session metadata as a bare json fence
    (re.compile(r"```json\s*\{(?:(?!```)[\s\S])*?\"session(?:(?!```)[\s\S])*?```\s*"), ""),
    (re.compile(r"\[\[reply_to[^\]]*\]\]\s*"), ""),  # 10
    (re.compile(r"¥¥\[[\s\S]*?\]¥¥"), ""),  # 11: skill wrappers
    (re.compile(r"^\[[A-Za-z0-9_\-:+ ]+\]\s*", re.MULTILINE), ""),  # 12: line-leading timestamps
    (re.compile(r"\[media attached[^\]]*\]\s*"), ""),  # 13
    (re.compile(r"To send an image back,[\s\S]*?Keep caption in the text body\.?\s*"), ""),  # 14
    (re.compile(r"^System:\s*\[.*(?:\n|$)", re.MULTILINE), ""),  # 15: exec notices
    (re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+"), ""),  # 16
    (re.compile("\x00"), ""),  # 17
    (re.compile(r"\n{3,}"), "\n\n"),
)


def sanitize(text: str) -> str:
    """Spec §7.4 server sanitize: strip injected context, platform metadata and noise, in order."""
    for pattern, repl in _SANITIZE_RULES:
        text = pattern.sub(repl, text)
    return text.strip()


# ---------------------------------------------------------------- prompt-injection heuristics

_INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|any|your|system)\b"
        r".{0,20}\b(?:instructions?|prompts?|rules|directions|guidelines|messages)\b",
        r"\byou are now\b",
        r"\bsystem\s*prompt\b",
        r"\bdeveloper\s+mode\b",
        r"\bjailbreak|\bDAN\s+mode\b|\bdo anything now\b",
        r"\b(?:reveal|show|print|repeat|output|leak|tell me)\b.{0,20}\b(?:your|the)\s+"
        r"(?:system\s+|hidden\s+|initial\s+)?(?:prompt|instructions)\b",
        r"\bpretend\s+(?:to be|you are|that you)\b|\bact as if you\b",
        r"\bnew instructions\s*:|\bfollow (?:these|my) new instructions\b",
        r"<\s*/?\s*(?:system|assistant|developer)\s*>",
        r"\bdo not follow (?:the |your )?(?:system|developer|previous)\b",
        r"忽略(?:之前|以上|上面|前面|先前|所有|一切)(?:的)?(?:所有)?(?:指令|指示|规则|提示|设定|要求)",
        r"(?:忘记|忘掉|无视|不要理会|不要遵守)(?:之前|以上|上面|所有|你的)(?:的)?(?:所有)?(?:指令|规则|设定|提示词?|限制)",
        r"你现在是|从现在起你是|现在你是一个",
        r"扮演|假装你是|假装自己是",
        r"(?:输出|显示|告诉我|透露|泄露|打印|重复)(?:一下)?你的(?:系统)?(?:提示词|指令|设定|prompt)",
        r"系统提示词?",
        r"开发者模式|越狱|DAN模式",
    )
)


def looks_like_prompt_injection(text: str) -> bool:
    """True when text resembles an attempt to re-instruct the assistant (EN/ZH); only ever a flag."""
    normalized = re.sub(r"\s+", " ", text)
    return any(p.search(normalized) for p in _INJECTION_PATTERNS)
