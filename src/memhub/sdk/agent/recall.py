"""What recall hands the agent, and the pieces of how the kit fetches it: the paths, the deadline, the route.

Recall fetches memories, persona and scenes in one call (`POST /v3/recall`) where the gateway has it, and in
three calls (`atomic/search`, `core/read`, `scenario/ls`) against one that answers that it has no such route
(the original, an older memhub); the composer (`context/compose`) runs beside either. Everything that arrives
is put in the three calls' shapes, so the prompt is built the same way whichever way it came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhub.sdk.agent.prompt import trusted_memories

MEMORIES, PERSONA, SCENES, CONTEXT = "memories", "persona", "scenes", "context"
# What a gateway without `POST /v3/recall` answers for it: the original and older memhub say 404 for any
# unknown path (405 or 501 from a proxy or framework in front of one that routes by prefix).
ROUTE_MISSING = frozenset({404, 405, 501})


@dataclass(frozen=True, slots=True)
class Recall:
    """What recall found: the two prompt blocks, the parts they came from, and what was missing."""

    prepend: str = ""
    append_system: str = ""
    # L1 memories and, from a gateway with /v3/recall, L0 conversation turns; each item names its `layer`.
    memories: tuple[dict[str, Any], ...] = ()
    persona: str | None = None
    scenes: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()  # recall paths that failed or missed the deadline
    elapsed_ms: float = 0.0
    tokens: int = 0  # estimated tokens of prepend + append_system + knowledge + skills
    # With AgentConfig.compose_context: the composer's system part (knowledge, skills, conversation excerpt,
    # the priority sentence) and its whole answer (sources with ids, caps).
    knowledge: str = ""
    context: dict[str, Any] | None = None
    # With AgentConfig.skills_listing: the gateway's `<available_skills>` block, ranked for this turn's message.
    skills: str = ""

    def system_prompt(self, base: str) -> str:
        """`base`, this turn's runtime knowledge and skills, then the stable memory block (the system prompt's tail)."""
        return "\n\n".join(part for part in (base, self.knowledge, self.skills, self.append_system) if part)

    def user_message(self, text: str) -> str:
        """The user's text with this turn's memories in front of it."""
        return f"{self.prepend}\n\n{text}" if self.prepend else text


@dataclass(slots=True)
class RecallRoute:
    """Whether recall asks the gateway's one call: yes, until it answers that it has no such route.

    Then the next `reprobe_after` recalls make the three calls without asking, and the one after asks again,
    so a gateway upgraded while the agent runs is picked up. Counted in recalls, not seconds: the kit has no
    clock of its own, and an idle agent loses nothing by asking again on its next turn.
    """

    reprobe_after: int
    missing: bool = False
    skipped: int = 0

    def ask(self) -> bool:
        """Whether this recall should try `/v3/recall`."""
        if not self.missing or self.skipped >= self.reprobe_after:
            return True
        self.skipped += 1
        return False

    def answered(self, *, present: bool) -> None:
        """What the gateway's answer said about the route."""
        self.missing, self.skipped = not present, 0


@dataclass(slots=True)
class StableParts:
    """The last persona and scene list that arrived, reused when a later recall misses them."""

    persona: str | None = None
    scenes: tuple[str, ...] = ()


def as_three_calls(answer: Mapping[str, Any], *, persona: bool, scenes: bool) -> dict[str, Any]:
    """A `/v3/recall` answer in the shapes of the three calls' answers (`items`, `content`, `entries`)."""
    parts: dict[str, Any] = {MEMORIES: {"items": answer.get("memories") or []}}
    if persona:
        parts[PERSONA] = {"content": answer.get("persona")}
    if scenes:
        parts[SCENES] = {"entries": answer.get("scenes") or []}
    return parts


def searched_memories(answer: Any, max_memories: int) -> dict[str, Any]:
    """An `atomic/search` answer as the one call's memories: the first `max_memories` trusted ones, marked L1.

    On the three-call path `max_memories` is the search's own cap (the search asks for a few more, so memories
    flagged `injection_suspect` do not shorten the list). The one call's answer is already packed by the gateway
    within the prompt budget, turns and memories together, so no count applies to it.
    """
    items = (answer.get("items") if isinstance(answer, Mapping) else None) or []
    return {"items": [{"layer": "l1", **m} for m in trusted_memories(items)[:max_memories]]}


async def gather(
    tasks: Mapping[str, asyncio.Task[Any]], deadline: float, log: logging.Logger
) -> tuple[dict[str, Any], list[str]]:
    """The answers of the tasks done by `deadline` (loop time); the names of those that failed or were late.

    Late ones are cancelled: the agent has moved on, and their answers would only be thrown away.
    """
    if tasks:
        await asyncio.wait(tasks.values(), timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    results: dict[str, Any] = {}
    degraded: list[str] = []
    for name, task in tasks.items():
        if not task.done():
            task.cancel()
            degraded.append(name)
        elif task.cancelled() or task.exception() is not None:
            degraded.append(name)
            log.info(
                "memhub recall: %s unavailable (%s)", name, task.exception() if not task.cancelled() else "cancelled"
            )
        else:
            results[name] = task.result()
    return results, degraded
