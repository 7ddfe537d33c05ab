"""The kit's two skill paths, both opt-in: the `<available_skills>` listing in recall, and each turn to skill mining.

Listing (`AgentConfig.skills_listing`): recall asks `POST /v3/skill/listing` beside its memory paths, with the
user's message as the query, and puts the block in the system prompt. Capture (`AgentConfig.skills_capture`):
each captured turn goes to `POST /v3/skill/conversation/add` in the five roles mining reads (user, assistant,
tool_call, tool_result, system), read from OpenAI chat, Anthropic messages or OpenAI Responses items, through
its own bounded queue, so a gateway error never reaches the turn.

A gateway without the skill routes (the original's older versions, a memhub built without skills) answers 404;
each path remembers that and stops asking, then asks again after `recall_reprobe_after` turns, as recall does
for `/v3/recall`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from memhub.formats.sanitize import sanitize_text
from memhub.sdk._errors import TDAMError
from memhub.sdk._http import AsyncHttp
from memhub.sdk._messages import extract_text, message_field
from memhub.sdk.agent.breaker import CircuitBreaker
from memhub.sdk.agent.capture import CaptureJob, CaptureQueue, idempotency_key
from memhub.sdk.agent.config import SERVER_MAX_BATCH, SERVER_MAX_BATCH_BYTES, AgentConfig
from memhub.sdk.agent.recall import ROUTE_MISSING, RecallRoute
from memhub.sdk.agent.turns import truncate_content
from memhub.sdk.skills import AsyncSkillClient, SkillDefaults

SKILLS = "skills"
# The gateway keeps a tool message over 2 KB as its first and last kilobyte; cutting to a longer head and tail
# here loses nothing it would keep, and keeps a turn with a huge tool output under the body limit.
TOOL_KEEP_CHARS = 4000
# User and assistant text is kept whole by the gateway; this only bounds one message's share of a request.
TEXT_MAX_CHARS = 32_000
MINED_ROLES = frozenset({"user", "assistant", "tool_call", "tool_result", "system"})


# ---------------------------------------------------------------------------- the turn, as mining reads it


def turn_window(messages: Sequence[object], start: int | None) -> Sequence[object]:
    """The messages of this turn: from `start` when it falls inside the history, else from the last user text.

    No start at all (no recall this turn, no capture before) is the whole history, as L0 capture reads it. A
    start past the end means the framework trimmed its history; the turn then begins at the last user message
    with text (a user message holding only tool results is part of a turn, not its start).
    """
    if start is None:
        return messages
    if 0 <= start <= len(messages):
        return messages[start:]
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message_field(message, "role") == "user" and extract_text(message_field(message, "content")).strip():
            return messages[index:]
    return messages


def skill_messages(messages: Sequence[object]) -> list[dict[str, str]]:
    """A framework's messages as `/v3/skill/conversation/add` messages, in order; system prompts left out.

    OpenAI chat (`tool_calls` on the assistant, `role: "tool"` results), Anthropic (`tool_use` / `tool_result`
    content blocks), OpenAI Responses items (`function_call` / `function_call_output`) and messages already in
    the five roles are all read. User text is sanitized, so last turn's injected memories are not mined. A tool
    message without an id gets one from its place in the turn, so calls and results still pair.
    """
    out: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        kind, role = message_field(message, "type"), message_field(message, "role")
        if kind == "function_call":
            out.append(
                _tool(
                    "tool_call",
                    message_field(message, "arguments"),
                    message_field(message, "call_id"),
                    message_field(message, "name"),
                    index,
                )
            )
        elif kind == "function_call_output":
            out.append(
                _tool("tool_result", message_field(message, "output"), message_field(message, "call_id"), None, index)
            )
        elif role == "user":
            out += _user(message_field(message, "content"), index)
        elif role == "assistant":
            out += _assistant(message, index)
        elif role == "tool":
            out.append(
                _tool(
                    "tool_result",
                    message_field(message, "content"),
                    message_field(message, "tool_call_id"),
                    message_field(message, "name"),
                    index,
                )
            )
        elif role in ("tool_call", "tool_result"):
            out.append(
                _tool(
                    role,
                    message_field(message, "content"),
                    message_field(message, "tool_call_id"),
                    message_field(message, "tool_name"),
                    index,
                )
            )
    return [m for m in out if m["content"]]


def _user(content: object, index: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    text = sanitize_text(extract_text(content)).strip()
    if text:
        out.append({"role": "user", "content": truncate_content(text, TEXT_MAX_CHARS)})
    for n, block in enumerate(_blocks(content, "tool_result")):
        out.append(_tool("tool_result", block.get("content"), block.get("tool_use_id"), None, index, n))
    return out


def _assistant(message: object, index: int) -> list[dict[str, str]]:
    content = message_field(message, "content")
    out: list[dict[str, str]] = []
    text = extract_text(content).strip()
    if text:
        out.append({"role": "assistant", "content": truncate_content(text, TEXT_MAX_CHARS)})
    for n, block in enumerate(_blocks(content, "tool_use")):
        out.append(_tool("tool_call", block.get("input"), block.get("id"), block.get("name"), index, n))
    calls = message_field(message, "tool_calls")
    for n, call in enumerate(calls if isinstance(calls, Sequence) and not isinstance(calls, str) else ()):
        function = message_field(call, "function")
        out.append(
            _tool(
                "tool_call",
                message_field(function, "arguments"),
                message_field(call, "id"),
                message_field(function, "name"),
                index,
                n,
            )
        )
    return out


def _blocks(content: object, kind: str) -> list[Mapping[str, Any]]:
    if not isinstance(content, Sequence) or isinstance(content, str):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == kind]


def _tool(role: str, content: object, call_id: object, name: object, index: int, n: int = 0) -> dict[str, str]:
    """A tool_call (its arguments as JSON text) or tool_result (its output as text), cut to head and tail."""
    if isinstance(content, str):
        text = content
    elif role == "tool_call":
        text = json.dumps(content if content is not None else {}, ensure_ascii=False, default=str)
    else:
        text = extract_text(content)
    if len(text) > 2 * TOOL_KEEP_CHARS:
        cut = len(text) - 2 * TOOL_KEEP_CHARS
        text = f"{text[:TOOL_KEEP_CHARS]}\n…[{cut} chars cut]…\n{text[-TOOL_KEEP_CHARS:]}"
    wire = {"role": role, "content": text or ("{}" if role == "tool_call" else "")}
    wire["tool_call_id"] = call_id if isinstance(call_id, str) and call_id else f"call-{index}-{n}"
    if isinstance(name, str) and name:
        wire["tool_name"] = name[:128]
    return wire


def skill_batches(messages: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """Messages in order, in requests of at most 100 messages and under the gateway's body limit."""
    batches: list[list[dict[str, str]]] = []
    batch: list[dict[str, str]] = []
    size = 0
    for message in messages:
        wire_size = len(json.dumps(message, ensure_ascii=True)) + 1  # the largest any client sends, plus a comma
        if batch and (len(batch) >= SERVER_MAX_BATCH or size + wire_size > SERVER_MAX_BATCH_BYTES):
            batches.append(batch)
            batch, size = [], 0
        batch.append(message)
        size += wire_size
    return [*batches, batch] if batch else batches


def listing_block(answer: object) -> str:
    """The `<available_skills>` block of a listing answer; empty when it lists no skill."""
    if not isinstance(answer, Mapping):
        return ""
    listing, hits = answer.get("listing"), answer.get("hits")
    if not isinstance(listing, str) or "<available_skills>" not in listing:
        return ""
    if isinstance(hits, list) and not hits:
        return ""  # "(none)": nothing for the model to pick from
    return listing.strip()


# ---------------------------------------------------------------------------- the two paths


class SkillPaths:
    """The kit's skill client, with what each path remembers of the gateway, and the mining queue."""

    def __init__(
        self, client: AsyncSkillClient, config: AgentConfig, breaker: CircuitBreaker, logger: logging.Logger
    ) -> None:
        self.client = client
        self._config = config
        self._log = logger
        self.listing_route = RecallRoute(config.recall_reprobe_after)
        self.capture_route = RecallRoute(config.recall_reprobe_after)
        self.queue = CaptureQueue(self._send, breaker, config, logger)
        # The last block that arrived, reused when a later listing fails or is late (as recall's persona is).
        self.last_listing = ""

    # -- listing
    def listing_call(self, query: str) -> Coroutine[Any, Any, Any] | None:
        """This turn's listing request, or None when the gateway is known to have no listing route."""
        if not self._config.skills_listing or not self.listing_route.ask():
            return None
        return self.client.listing(query=query or None, char_budget=self._config.skills_char_budget)

    def listing_outcome(self, task: asyncio.Task[Any], results: dict[str, Any], degraded: list[str]) -> str:
        """The block the listing gave; the last one when it failed or was late; a 404 is remembered, no block.

        A gateway without the route is not degraded: it has no skills to list.
        """
        if SKILLS in results:
            self.listing_route.answered(present=True)
            self.last_listing = listing_block(results[SKILLS])
        elif task.done() and not task.cancelled() and _route_missing(task.exception()):
            self.listing_route.answered(present=False)
            self.last_listing = ""
            self._log.info("memhub recall: the gateway has no /v3/skill/listing; not asking for a while")
            if SKILLS in degraded:
                degraded.remove(SKILLS)
        return self.last_listing

    # -- capture
    def capture_jobs(self, session_id: str, messages: Sequence[object]) -> list[CaptureJob]:
        """This turn's batches for mining; none while the gateway is known to have no such route."""
        if not self._config.skills_capture or not self.capture_route.ask():
            return []
        batches = skill_batches(skill_messages(messages))
        return [CaptureJob(session_id, batch, idempotency_key(session_id, batch)) for batch in batches]

    async def _send(self, job: CaptureJob) -> Any:
        ids = self.client.defaults
        call = self.client.conversation_add(
            session_id=job.session_id,
            user_id=ids.user_id or "",
            team_id=ids.team_id or "",
            agent_id=ids.agent_id or "",
            task_id=ids.task_id,
            messages=job.messages,
            idempotency_key=job.key,  # a retry after a timeout whose request landed is buffered once
        )
        try:
            answer = await asyncio.wait_for(call, self._config.tool_timeout * 2)
        except TDAMError as exc:
            if _route_missing(exc):
                self.capture_route.answered(present=False)
            raise
        self.capture_route.answered(present=True)
        return answer


def skill_paths(
    memory: object,
    skills: AsyncSkillClient | None,
    config: AgentConfig,
    breaker: CircuitBreaker,
    logger: logging.Logger,
) -> SkillPaths | None:
    """The skill paths when configured: on `skills`, else on the memory client's connection and ids."""
    if not (config.skills_listing or config.skills_capture):
        return None
    if skills is None:
        http = getattr(memory, "_http", None)
        if not isinstance(http, AsyncHttp):
            logger.warning("memhub: skills configured, but no skill client and no connection to share")
            return None
        ids = SkillDefaults(*(getattr(memory, name, None) for name in ("team_id", "agent_id", "user_id", "task_id")))
        skills = AsyncSkillClient.sharing(http, ids)
    return SkillPaths(skills, config, breaker, logger)


def _route_missing(exc: BaseException | None) -> bool:
    return isinstance(exc, TDAMError) and exc.code in ROUTE_MISSING
