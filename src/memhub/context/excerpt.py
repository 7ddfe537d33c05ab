"""【Recent conversation memory excerpt】 (the last block of a workspace agent's system part): the tail of the
L0 conversation, capped.

The tail is the session's when the turn names one, else the whole scope's (team, user, agent, task), newest
last. Each message becomes one `role: text` line with its whitespace collapsed and our prompt tags escaped; lines
are kept from the newest back until the cap (≈2,000 characters), and when anything older is left out the excerpt
opens with a marker line. The layout fences the excerpt (`<conversation-excerpt>`): it is data, never instructions.
"""

from __future__ import annotations

from memhub.context.model import Language, Rendered, SourceRef
from memhub.formats.fence import escape_tags
from memhub.memory.conversation import ConversationService
from memhub.model import MessageFilter
from memhub.scope import Isolation

# More than ever fits in the cap (a line is at least a few characters), without reading a long session whole.
TAIL_MESSAGES = 60
OMITTED: dict[str, str] = {"en": "…(earlier conversation omitted)", "zh": "…（更早的对话已省略）"}


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


def recent_excerpt(conversation: ConversationService, isolation: Isolation, cap: int, language: Language) -> Rendered:
    """The excerpt of the turn's conversation, or nothing when there is none or the cap is 0."""
    if cap <= 0:
        return Rendered()
    flt = MessageFilter(session_id=isolation.session_id)
    total = conversation.count(isolation, flt)
    if total == 0:
        return Rendered()
    messages, _ = conversation.query(isolation, flt, TAIL_MESSAGES, max(0, total - TAIL_MESSAGES))
    lines = [_line(m.role, m.content) for m in messages]
    text, truncated = tail_lines(lines, cap, OMITTED[language], older=total > len(messages))
    if not text:
        return Rendered()
    ref = SourceRef("conversation", isolation.session_id, None, None, None, len(text), truncated)
    return Rendered(text, (ref,))
