"""【Relevant memory】 (a workspace agent's system part, before the recent excerpt): what the scope's memories and
earlier conversations hold about the turn's question.

It is `/v3/recall`'s ranking (memhub.memory.recall): the user's L1 memories and L0 turns with the agent, across
sessions, ranked together for the question and packed within the section's cap. The session's window (the
excerpt's messages) goes to recall as what the agent already has, so its turns are not repeated here and a
follow-up question ("and what about her sister?") is read with the turn before it. The persona and the scene
index are not part of it: the composer's turn is about the question. One line per item, escaped
(memhub.memory.recall_text); the layout fences the section (`<relevant-memories>`).
"""

from __future__ import annotations

from memhub.context.excerpt import Window
from memhub.context.model import Rendered, SourceRef
from memhub.memory.recall import RecallRequest, RecallService, RecentMessage
from memhub.memory.recall_text import item_line
from memhub.scope import Isolation

# Recall's window: the session's last turns (recall takes at most 20).
WINDOW_MESSAGES = 20


def relevant_memory(recall: RecallService, isolation: Isolation, query: str, window: Window, cap: int) -> Rendered:
    """The section's lines, best first, within `cap` characters; nothing when recall finds nothing."""
    if cap <= 0:
        return Rendered()
    recent = [RecentMessage(m.role, m.content) for m in window.messages[-WINDOW_MESSAGES:]]
    found = recall.recall(
        isolation,
        RecallRequest(query, recent, max_tokens=None, max_chars=cap, include_persona=False, include_scenes=False),
    )
    lines: list[str] = []
    sources: list[SourceRef] = []
    used = 0
    for item in found.memories:
        line = item_line(item)
        need = len(line) + (1 if lines else 0)
        if used + need > cap:
            continue  # recall estimates a line's length; the cap is kept exactly
        lines.append(line)
        sources.append(SourceRef("memory", item.id, None, None, None, len(line), item.truncated))
        used += need
    return Rendered("\n".join(lines), tuple(sources))
