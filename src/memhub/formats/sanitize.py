"""Text hygiene for capture: the 17 ordered sanitize rules, code-block stripping and the L0 capture filter.

The original's sanitize rules. The client (`sanitize_text`) applies all 17 rules; the gateway
(`sanitize_server_text`, used by `memhub.pipeline.quality`) applies the same table without rule 5, so the rules
exist once in the codebase.

The patterns reproduce the original TypeScript regexes' behaviour, JavaScript quirks included, because
wire-compatible clients and this gateway must clean text identically: `\\s` and `trim()` use JavaScript's
whitespace set, `^`/`$` in multiline rules also break on `\\r`, U+2028 and U+2029, `\\w` is ASCII-only and
case-insensitivity never folds non-ASCII letters onto ASCII ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# JavaScript's WhiteSpace + LineTerminator set (what `\s` and `String.prototype.trim` use). Python's
# differs: it adds \x1c-\x1f and \x85 and lacks U+FEFF.
_JS_SPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_S = "[" + "".join(f"\\u{ord(c):04x}" for c in _JS_SPACE_CHARS) + "]"
# Multiline `^` and `$` as JavaScript's `m` flag defines them.
_LINE_START = r"(?<![^\n\r\u2028\u2029])"
_LINE_END = r"(?![^\n\r\u2028\u2029])"


def _js_trim(text: str) -> str:
    return text.strip(_JS_SPACE_CHARS)


@dataclass(frozen=True, slots=True)
class SanitizeRule:
    """One numbered sanitize rule: substitutions applied in order, then an optional trim."""

    number: int
    name: str
    steps: tuple[tuple[re.Pattern[str], str], ...]
    client_only: bool = False
    trim: bool = False

    def apply(self, text: str) -> str:
        """Apply this rule alone to `text`."""
        for pattern, replacement in self.steps:
            text = pattern.sub(replacement, text)
        return _js_trim(text) if self.trim else text


def _rule(number: int, name: str, pattern: str, *, flags: int = 0, client_only: bool = False) -> SanitizeRule:
    return SanitizeRule(number, name, ((re.compile(pattern, flags), ""),), client_only=client_only)


def _block(number: int, tag: str, *, client_only: bool = False) -> SanitizeRule:
    # The original removes only the block, not the whitespace after it; rule 17 tidies up later.
    return _rule(number, tag, rf"<{tag}>[\s\S]*?</{tag}>", client_only=client_only)


_INBOUND_LABELS = (
    "Conversation info|Sender|Thread starter|Replied message|Forwarded message context|Chat history since last reply"
)

# Matches `data:image/<type>;base64,<payload>` case-insensitively; re.ASCII keeps the folding ASCII-only, as in JS.
DATA_IMAGE_URI = re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+", re.IGNORECASE | re.ASCII)

SANITIZE_RULES: tuple[SanitizeRule, ...] = (
    # 1–5: recall we injected ourselves; capturing it would feed memories back into memory.
    _block(1, "relevant-memories"),
    _block(2, "user-persona"),
    _block(3, "relevant-scenes"),
    _block(4, "scene-navigation"),
    # The gateway never sees the tools guide (it lives in the system prompt), so only clients strip it.
    _block(5, "memory-tools-guide", client_only=True),
    # 6–7: task context injected by offload.
    _block(6, "current_task_context"),
    _rule(7, "history_task_context", r"<history_task_context[\s\S]*?</history_task_context>"),
    # 8: chat-platform metadata the framework prepends to inbound messages (label, then a json fence).
    _rule(
        8,
        "inbound-metadata",
        rf"(?:{_INBOUND_LABELS}){_S}*\(untrusted[\s\S]*?\):{_S}*```json{_S}*[\s\S]*?```",
    ),
    # 9: older frameworks sent session metadata as a bare json fence. The original's pattern could run across
    # fences and delete the user's text between an ordinary json block and a later session block; this one
    # stays inside one fence (a known defect of the original, fixed here).
    _rule(9, "legacy-session-json", rf"```json{_S}*\{{(?:(?!```)[\s\S])*?\"session(?:(?!```)[\s\S])*?\}}{_S}*```"),
    _rule(10, "reply-directive", rf"\[\[reply_to[^\]]*\]\]{_S}*"),
    _rule(11, "skill-wrapper", r"¥¥\[[\s\S]*?\]¥¥"),
    # 12: one bracketed timestamp per line, e.g. "[Tue 2026-03-24 20:21 GMT+8] "; `\s*` may eat blank lines.
    _rule(12, "line-timestamp", rf"{_LINE_START}\[[A-Za-z0-9_\-:+ ]+\]{_S}*"),
    _rule(13, "media-attached", rf"\[media attached:[^\]]*\]{_S}*"),
    _rule(14, "image-reply-instructions", rf"To send an image back,[\s\S]*?Keep caption in the text body\.{_S}*"),
    # 15: empties the line but keeps its line break, as the original does.
    _rule(15, "system-exec-notice", rf"{_LINE_START}System:{_S}*\[[\s\S]*?{_LINE_END}"),
    SanitizeRule(16, "base64-image", ((DATA_IMAGE_URI, ""),)),
    SanitizeRule(
        17,
        "nul-blank-lines-trim",
        ((re.compile("\x00"), ""), (re.compile(r"\n{3,}"), "\n\n")),
        trim=True,
    ),
)

_SERVER_RULES = tuple(rule for rule in SANITIZE_RULES if not rule.client_only)


def sanitize_text(text: str, *, server: bool = False) -> str:
    """The original's sanitize: all 17 rules in order (the client's), or without rule 5 when `server` is true."""
    for rule in _SERVER_RULES if server else SANITIZE_RULES:
        text = rule.apply(text)
    return text


def sanitize_server_text(text: str) -> str:
    """The gateway's sanitize: every rule except the client-only rule 5."""
    return sanitize_text(text, server=True)


_CODE_BLOCK = re.compile(r"```[^\n]*\n[\s\S]*?```")
_BLANK_RUN = re.compile(r"\n{3,}")


def strip_code_blocks(text: str) -> str:
    """Remove every fenced code block (assistant messages only), then collapse blank lines and trim."""
    return _js_trim(_BLANK_RUN.sub("\n\n", _CODE_BLOCK.sub("", text)))


_NEW_SESSION_ACK = re.compile(rf"✅{_S}*New session started")
_NOISE_PREFIXES = ("A new session was started via", "Pre-compaction memory flush")


def is_framework_noise(text: str) -> bool:
    """True for the framework's own turns: bootstrap, session reset and its ack, memory flush, NO_REPLY."""
    t = _js_trim(text)
    return t in ("(session bootstrap)", "NO_REPLY") or t.startswith(_NOISE_PREFIXES) or bool(_NEW_SESSION_ACK.match(t))


def should_capture_l0(text: str) -> bool:
    """The original's `shouldCaptureL0`: False for empty/whitespace text, framework noise and slash commands."""
    trimmed = _js_trim(text)
    # The original tests the untrimmed text for "/"; an indented slash command is still a command.
    return bool(trimmed) and not is_framework_noise(trimmed) and not trimmed.startswith("/")
