"""What every protocol adapter offers the turn handler: read a request body (stream flag, user text, system
prompt), inject blocks into it, read the model's answer (streamed or whole) and speak the protocol's own
replies (a synthetic assistant message, an error)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from memhub.proxy.model import Block, ChatTurn, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.ports import Injector
from memhub.proxy.protocols.sse import SseDecoder, SseEvent

Body = dict[str, Any]
CHAT_ROLES = ("user", "assistant")  # the roles whose messages are the conversation recall is given

# Claude Code puts its session in `metadata.user_id` (`user_<hash>_account_<uuid>_session_<uuid>`).
_CC_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,64})$")


class Family(StrEnum):
    """Which provider API a protocol is served by (one base URL and one key each)."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


class StreamTap(ABC):
    """Parses a copy of the SSE bytes the client receives; never changes them."""

    def __init__(self) -> None:
        self.decoder = SseDecoder()
        self.output = TurnOutput()
        self.calls_by_index: dict[int, ToolCall] = {}  # tool calls streamed in pieces, by their index

    def feed(self, chunk: bytes) -> None:
        """Read the events `chunk` completes."""
        for event in self.decoder.feed(chunk):
            self.on_event(event)

    def finish(self) -> TurnOutput:
        """What the stream said, once it has ended."""
        for event in self.decoder.close():
            self.on_event(event)
        self.settle()
        return self.output

    @abstractmethod
    def on_event(self, event: SseEvent) -> None:
        """Fold one event into `output`."""

    def settle(self) -> None:
        """Assemble the tool calls streamed by index into `output` (a protocol that streams whole calls appends
        them to `output` directly and keeps none by index)."""
        if self.calls_by_index:
            self.output.tool_calls = [self.calls_by_index[i] for i in sorted(self.calls_by_index)]


class ProtocolAdapter(ABC):
    """One wire protocol. Bodies given to it are never mutated: `inject` returns a new one."""

    protocol: WireProtocol
    family: Family
    upstream_path: str  # appended to the family's base URL
    conversation_field: str = "messages"  # the list holding the conversation
    fixed_fields: tuple[str, ...] = ()  # the other fields the model reads (system prompt, tool schemas)

    @staticmethod
    def is_stream(body: Body) -> bool:
        """Whether the client asked for server-sent events."""
        return body.get("stream") is True

    @abstractmethod
    def last_user_text(self, body: Body) -> str | None:
        """What the user typed this turn: the last message's text when it is the user's, else None (a tool
        result continuing the turn, or no user message)."""

    def conversation(self, body: Body) -> list[Any] | None:
        """The conversation's messages (items), or None when the request carries no list of them."""
        items = body.get(self.conversation_field)
        return items if isinstance(items, list) else None

    def with_conversation(self, body: Body, messages: list[Any]) -> Body:
        """A copy of `body` carrying `messages` as its conversation."""
        return {**body, self.conversation_field: messages}

    def fixed_parts(self, body: Body) -> tuple[Any, ...]:
        """What the model reads besides the conversation, as sent."""
        return tuple(body[name] for name in self.fixed_fields if body.get(name) not in (None, "", [], {}))

    @abstractmethod
    def first_user_text(self, body: Body) -> str:
        """The conversation's opening user text ("" when none): stable across the turns of one conversation."""

    def fallback_session(self, body: Body) -> str:
        """A stable session id when the client sent no session header: Claude Code's metadata session, else a
        digest of the model and the conversation's opening user message."""
        metadata = body.get("metadata")
        user = metadata.get("user_id") if isinstance(metadata, dict) else None
        if isinstance(user, str) and (found := _CC_SESSION.search(user)):
            return found.group(1)
        seed = json.dumps([self.protocol.value, body.get("model"), self.first_user_text(body)], ensure_ascii=False)
        return "derived-" + hashlib.sha256(seed.encode()).hexdigest()[:24]

    def inject(
        self, body: Body, blocks: Sequence[Block], injector: Injector, agent_source: str, recall: str = ""
    ) -> Body:
        """A copy of `body` with the blocks in the system prompt and the turn's `recall` block (if any) in its last
        message, the user's."""
        # A shallow copy: the adapters replace what they change and never mutate what `body` holds, so a long
        # conversation is not copied object by object every turn.
        out = dict(body)
        if blocks:
            self.inject_system(out, blocks, injector, agent_source)
        if recall:
            self.add_recall(out, recall)
        return out

    @abstractmethod
    def inject_system(self, body: Body, blocks: Sequence[Block], injector: Injector, agent_source: str) -> None:
        """Splice the `system.*` blocks into `body`'s system prompt: `body` is a shallow copy of the request, so
        set its keys, and replace (never mutate) the lists and dicts they hold."""

    @abstractmethod
    def add_recall(self, body: Body, text: str) -> None:
        """Put the recall block `text` into the last message when it is the user's (`with_recall`), on a shallow
        copy as `inject_system`. The service asks only when `last_user_text` found the user's text there."""

    @abstractmethod
    def recent_turns(self, body: Body, limit: int) -> list[ChatTurn]:
        """The conversation's last `limit` user and assistant messages that hold text, oldest first."""

    @abstractmethod
    def tap(self) -> StreamTap:
        """A fresh parser for one streamed response."""

    @abstractmethod
    def parse(self, raw: bytes) -> TurnOutput:
        """The answer in a whole (non-streamed) response body; raises ValueError when it is not one."""

    @abstractmethod
    def reply(self, body: Body, text: str) -> Body:
        """A complete assistant response saying `text`, as the upstream would have answered `body`."""

    @abstractmethod
    def reply_stream(self, body: Body, text: str) -> list[bytes]:
        """The same reply as the SSE events a streamed response consists of."""

    @abstractmethod
    def error(self, kind: str, message: str) -> Body:
        """The protocol's error body."""


def messages_of(body: Body) -> list[Any]:
    """The request's `messages` list ([] when absent or malformed)."""
    messages = body.get("messages")
    return messages if isinstance(messages, list) else []


class MessagesAdapter(ProtocolAdapter):
    """A protocol whose conversation is a `messages` list of `{role, content}` (OpenAI chat, Anthropic)."""

    def last_user_text(self, body: Body) -> str | None:
        messages = messages_of(body)
        last = messages[-1] if messages else None
        if not isinstance(last, dict) or last.get("role") != "user":
            return None
        return text_of(last.get("content"), ("text",))

    def first_user_text(self, body: Body) -> str:
        for message in messages_of(body):
            if isinstance(message, dict) and message.get("role") == "user":
                return text_of(message.get("content"), ("text",)) or ""
        return ""

    def add_recall(self, body: Body, text: str) -> None:
        messages = messages_of(body)
        last = messages[-1] if messages else None
        if isinstance(last, dict) and last.get("role") == "user":
            content = with_recall(last.get("content"), text, "text", ("text",))
            body["messages"] = [*messages[:-1], {**last, "content": content}]

    def recent_turns(self, body: Body, limit: int) -> list[ChatTurn]:
        turns: list[ChatTurn] = []
        for message in reversed(messages_of(body)):
            if len(turns) >= limit:
                break
            role = message.get("role") if isinstance(message, dict) else None
            if role in CHAT_ROLES and (text := joined_text(message.get("content"), ("text",))):
                turns.append(ChatTurn(role, text))
        turns.reverse()
        return turns


def dumps(body: Body) -> bytes:
    """A body as the bytes sent upstream: compact and deterministic, so an unchanged prefix stays byte-identical
    from one turn to the next."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def new_id(prefix: str) -> str:
    """A response id in the protocol's style."""
    return prefix + secrets.token_hex(12)


def text_of(content: Any, part_types: tuple[str, ...]) -> str | None:
    """The text of message content: a string as is, else the last text part of these types."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") in part_types and isinstance(part.get("text"), str):
                return part["text"]
    return None


def joined_text(content: Any, part_types: tuple[str, ...]) -> str:
    """All the text of message content: a string as is, else its text parts of these types, one per line."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and p.get("type") in part_types]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def with_recall(content: Any, text: str, part_type: str, text_types: tuple[str, ...]) -> Any:
    """The user message's content with the recall block in it, where the provider's prompt cache does not see it.

    After the last part carrying `cache_control` (the request's last cache breakpoint: Claude Code marks the last
    message's last part), so every byte up to the breakpoint is the client's; else as a part just before the
    user's text (the last text part). A string content gets the block in front, a blank line apart (a provider
    that takes only strings keeps working). The client's next turn comes without this block, so it starts with
    the prefix this turn cached.
    """
    if isinstance(content, str):
        return f"{text}\n\n{content}"
    if not isinstance(content, list):
        return content
    part = {"type": part_type, "text": text}
    at = next((i + 1 for i in range(len(content) - 1, -1, -1) if _marked(content[i])), None)
    if at is None:
        at = next((i for i in range(len(content) - 1, -1, -1) if _text_part(content[i], text_types)), len(content))
    return [*content[:at], part, *content[at:]]


def _marked(part: Any) -> bool:
    return isinstance(part, dict) and "cache_control" in part


def _text_part(part: Any, text_types: tuple[str, ...]) -> bool:
    return isinstance(part, dict) and part.get("type") in text_types and isinstance(part.get("text"), str)


def arguments_text(value: Any) -> str:
    """A tool call's arguments as JSON text (providers send either text or an object)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
