"""【Recent conversation memory excerpt】 (the last block of a workspace agent's system part): the tail of the
turn's session, capped.

The excerpt is what the agent has in its window: the session's latest turns, newest last. A turn that names no
session has no window, so no excerpt; what the scope's other conversations hold reaches the prompt through
【Relevant memory】 (memhub.context.memory), ranked for the question. Each message becomes one `role: text`
line with its whitespace collapsed and our prompt tags escaped; lines are kept from the newest back until the cap
(≈2,000 characters), and when anything older is left out the excerpt opens with a marker line. The layout
fences the excerpt (`<conversation-excerpt>`): it is data, never instructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memhub.context.model import Language, Rendered, SourceRef
from memhub.formats.fence import escape_tags
from memhub.memory.conversation import ConversationService
from memhub.model import MessageFilter, MessageRecord
from memhub.scope import Isolation

# More than ever fits in the cap (a line is at least a few characters), without reading a long session whole.
TAIL_MESSAGES = 60
OMITTED: dict[str, str] = {"en": "…(earlier conversation omitted)", "zh": "…（更早的对话已省略）"}


@dataclass(frozen=True, slots=True)
class Window:
    """The session's latest messages, oldest first, and whether older ones were left out."""

    messages: Sequence[MessageRecord]
    older: bool


def _line(role: str, content: str) -> tuple[str, str]:
    # One line per message, so no text of it starts a line of the prompt; our tags in it are escaped, so it cannot
    # close the excerpt's fence. Both before the cap, which then holds for what goes out.
    return f"{role}: ", escape_tags(" ".join(content.split()))


def tail_lines(lines: list[tuple[str, str]], cap: int, marker: str, older: bool) -> tuple[str, bool]:
    """The newest lines within `cap` characters, opened by `marker` when anything was left out."""
    whole = "\n".join(prefix + text for prefix, text in lines)
    if not older and len(whole) <= cap:
        return whole, False
    budget = cap - len(marker) - 1
    kept: list[str] = []
    used = 0
    for prefix, text in reversed(lines):
        line = prefix + text
        need = len(line) + (1 if kept else 0)
        if used + need > budget:
            if not kept and budget > len(prefix) + 1:
                # Even the newest message is too long: keep its end, where the latest words are.
                room = budget - len(prefix) - 1
                kept.append(prefix + "…" + text[len(text) - room :])
            break
        kept.append(line)
        used += need
    if not kept:
        return "", True
    return "\n".join([marker, *reversed(kept)]), True


def session_window(conversation: ConversationService, isolation: Isolation) -> Window:
    """The turn's session as the agent has it in its window: its last `TAIL_MESSAGES` messages, oldest first, and
    whether older ones exist; empty when the turn names no session."""
    if isolation.session_id is None:
        return Window((), older=False)
    flt = MessageFilter(session_id=isolation.session_id)
    total = conversation.count(isolation, flt)
    if total == 0:
        return Window((), older=False)
    messages, _ = conversation.query(isolation, flt, TAIL_MESSAGES, max(0, total - TAIL_MESSAGES))
    return Window(tuple(messages), older=total > len(messages))


def recent_excerpt(window: Window, session_id: str | None, cap: int, language: Language) -> Rendered:
    """The excerpt of the session's window, or nothing when there is none or the cap is 0."""
    if cap <= 0 or not window.messages:
        return Rendered()
    lines = [_line(m.role, m.content) for m in window.messages]
    text, truncated = tail_lines(lines, cap, OMITTED[language], older=window.older)
    if not text:
        return Rendered()
    ref = SourceRef("conversation", session_id, None, None, None, len(text), truncated)
    return Rendered(text, (ref,))
