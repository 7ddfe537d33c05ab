"""Per-turn recall: what memory holds about the user's message, as a `<relevant-memories>` block that goes into
that message alone (the protocol adapters place it after the request's last cache breakpoint).

The system prompt is the session's and stays byte-identical turn after turn; recall changes every turn, so it
never goes there. The client sends its next turn without this turn's block, so the prefix the provider cached
still matches.

Recall is `/v3/recall`'s ranking (memhub.memory.recall) of the user's own L1 memories and L0 turns with the
agent, within its own token budget, given the conversation's last messages so it skips what the model already
has in its window. It runs on threads of its own, within a deadline: a slow recall (an embedder stalling on the
query) or a failing one lets the turn go on without it, and the outcome says so (`timeout`, `error`). A call that
waited in the queue past its deadline is not run at all: nobody is waiting for its answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from memhub.formats.sanitize import sanitize_text
from memhub.memory.recall import DEFAULT_MAX_TOKENS, RecalledItem
from memhub.proxy.injection.blocks import render_recall
from memhub.proxy.injection.memory_blocks import Language
from memhub.proxy.model import ChatTurn, ProxyIdentity, RecallOutcome
from memhub.proxy.user_text import clean_user_text

log = logging.getLogger("memhub.proxy.injection")

DEFAULT_TIMEOUT_SECONDS = 1.5
# Each of the conversation's last messages goes to recall (as `/v3/recall`'s `messages`) cut to this length.
RECENT_MESSAGE_CHARS = 4000
WORKERS = 4  # recalls at once; more wait their turn (and give up at their deadline)


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Plain settings values (runtime passes them)."""

    max_tokens: int = DEFAULT_MAX_TOKENS  # MEMHUB_PROXY_TURN_RECALL_MAX_TOKENS
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS  # MEMHUB_PROXY_TURN_RECALL_TIMEOUT_MS
    language: Language = "en"  # MEMHUB_KNOWLEDGE_LANGUAGE


class RecallReader(Protocol):
    """The turn's items (memhub.proxy.injection.sources.RecallSource over a hub, or any stand-in); None when the
    user has memory switched off."""

    def __call__(
        self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int
    ) -> Sequence[RecalledItem] | None: ...


class RecallExpired(Exception):
    """A recall that waited in the queue past its deadline: the turn went on without it."""


class Recaller:
    """Implements memhub.proxy.ports.TurnRecaller over a `RecallReader`."""

    def __init__(self, reader: RecallReader, config: RecallConfig) -> None:
        self.reader = reader
        self.config = config
        self._threads = ThreadPoolExecutor(WORKERS, thread_name_prefix="memhub-proxy-recall")

    async def recall(self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn]) -> RecallOutcome:
        """The block for the user's words `query`; never raises, never waits past the deadline."""
        context = recent_context(recent)
        timeout = self.config.timeout_seconds
        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(
                loop.run_in_executor(self._threads, self._read, identity, query, context, deadline), timeout
            )
        except (TimeoutError, RecallExpired):  # a busy loop may see the expired call end before its own timer
            log.warning(
                "recall for session %s ran past its %.3f s; the turn goes without it", identity.session_id, timeout
            )
            return RecallOutcome("", "timeout")
        except Exception:
            log.warning("recall for session %s failed; the turn goes without it", identity.session_id, exc_info=True)
            return RecallOutcome("", "error")
        if found is None:
            return RecallOutcome("", "off")
        text = render_recall(found, self.config.language)
        return RecallOutcome(text, str(len(found)) if text else "none")

    def _read(
        self, identity: ProxyIdentity, query: str, context: Sequence[ChatTurn], deadline: float
    ) -> Sequence[RecalledItem] | None:
        if time.monotonic() >= deadline:
            raise RecallExpired
        return self.reader(identity, query, context, self.config.max_tokens)


def recent_context(messages: Sequence[ChatTurn]) -> list[ChatTurn]:
    """The messages read as capture reads them (a user message's typed words without the client's wrappers or an
    echoed recall block), each cut to `RECENT_MESSAGE_CHARS`; those left without text are dropped."""
    picked: list[ChatTurn] = []
    for message in messages:
        if message.role == "user":
            typed = clean_user_text(message.text)
            text = "" if typed.skip else typed.text
        else:
            text = sanitize_text(message.text)
        if text:
            picked.append(ChatTurn(message.role, text[:RECENT_MESSAGE_CHARS]))
    return picked
