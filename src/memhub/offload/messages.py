"""Tool calls, tool results and the units they bind messages into, across the message formats agents send.

Four shapes reach compaction, often mixed in one request:

- OpenAI Chat: `assistant.tool_calls[].id` answered by `{"role": "tool", "tool_call_id", "content"}`;
- Anthropic Messages: assistant `{"type": "tool_use", "id"}` blocks answered by `{"type": "tool_result",
  "tool_use_id", "content"}` blocks in the next user message, which may carry several results and text too;
- OpenClaw: assistant `{"type": "toolCall", "id"}` blocks answered by `{"role": "toolResult", "toolCallId"}`,
  either bare or inside a transcript entry `{"type": "message", "message": {...}}`;
- OpenAI Responses input items: `{"type": "function_call", "call_id"}` answered by `{"type":
  "function_call_output", "call_id", "output"}` (custom tool calls alike), items that may have no role.

A provider rejects a call without its result and a result without its call, so compaction works on units: a
message that makes tool calls together with every message that carries their results (and whatever lies
between them), which are kept, changed or dropped only whole. Functions here never modify a message: a change
returns a new one that shares every untouched part with the old.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Message = Mapping[str, Any]

_CALL_BLOCK_TYPES = frozenset({"tool_use", "toolCall"})
_CALL_ITEM_TYPES = frozenset({"function_call", "custom_tool_call"})
_RESULT_ITEM_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
_RESULT_ROLES = frozenset({"tool", "toolResult"})
_TEXT_BLOCK_TYPES = frozenset({"text", "input_text", "output_text"})
_INSTRUCTION_ROLES = frozenset({"system", "developer"})
# Claude Code appends these to user messages; they are the harness talking, not the user.
_HARNESS_TEXT_PREFIX = "<system-reminder>"


@dataclass(frozen=True, slots=True)
class Unit:
    """Messages `start` to `stop` (exclusive) that stand or fall together, with the tool ids they hold."""

    start: int
    stop: int
    call_ids: tuple[str, ...]
    result_ids: tuple[str, ...]

    @property
    def has_tools(self) -> bool:
        """Whether the unit holds any tool call or tool result."""
        return bool(self.call_ids or self.result_ids)


def body(message: Message) -> Message:
    """The message itself: a transcript entry's inner message, or the message as given."""
    inner = message.get("message")
    if message.get("type") == "message" and isinstance(inner, Mapping):
        return inner
    return message


def role(message: Message) -> str | None:
    """The message's role (None for Responses items such as function calls, which carry none)."""
    value = body(message).get("role")
    return value if isinstance(value, str) else None


def is_instruction(message: Message) -> bool:
    """A system or developer message: the operator's instructions, which compaction never touches."""
    return role(message) in _INSTRUCTION_ROLES


def has_user_text(message: Message) -> bool:
    """A user message with text the user wrote (not only tool results, not only harness reminders)."""
    if role(message) != "user":
        return False
    content = body(message).get("content")
    if isinstance(content, str):
        return _is_user_text(content)
    if isinstance(content, list):
        return any(
            isinstance(block, Mapping) and block.get("type") in _TEXT_BLOCK_TYPES and _is_user_text(block.get("text"))
            for block in content
        )
    return False


def _is_user_text(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip()) and not text.lstrip().startswith(_HARNESS_TEXT_PREFIX)


def call_ids(message: Message) -> list[str]:
    """The ids of the tool calls a message makes, in order."""
    if message.get("type") in _CALL_ITEM_TYPES:
        return _ids([message.get("call_id")])
    inner = body(message)
    ids = [call.get("id") for call in _mappings(inner.get("tool_calls"))]
    ids += [block.get("id") for block in _mappings(inner.get("content")) if block.get("type") in _CALL_BLOCK_TYPES]
    return _ids(ids)


def result_ids(message: Message) -> list[str]:
    """The ids of the tool calls whose results a message carries, in order."""
    if message.get("type") in _RESULT_ITEM_TYPES:
        return _ids([message.get("call_id")])
    inner = body(message)
    if inner.get("role") in _RESULT_ROLES:
        return _ids([inner.get("tool_call_id") or inner.get("toolCallId")])
    return _ids(
        [block.get("tool_use_id") for block in _mappings(inner.get("content")) if block.get("type") == "tool_result"]
    )


def result_text(message: Message, call_id: str) -> str | None:
    """The text of the result of `call_id` in this message (None when the message does not carry it)."""
    found = _result_content(message, call_id)
    return None if found is None else content_text(found[0])


def with_result_text(message: Message, call_id: str, text: str) -> dict[str, Any]:
    """A copy of the message whose result for `call_id` reads `text`, in the message's own format.

    A tool message keeps its `tool_call_id`, a tool_result block its `tool_use_id` and flags (`is_error`,
    `cache_control`), a Responses output its `call_id`; content that was a list of parts stays a list.
    """
    if message.get("type") in _RESULT_ITEM_TYPES:
        if message.get("call_id") != call_id:
            raise KeyError(call_id)
        return {**message, "output": _like(message.get("output"), text, "input_text")}
    inner = body(message)
    if inner.get("role") in _RESULT_ROLES:
        if call_id not in result_ids(message):
            raise KeyError(call_id)
        return _rewrap(message, {**inner, "content": _like(inner.get("content"), text, "text")})
    content = inner.get("content")
    for position, block in enumerate(content if isinstance(content, list) else ()):
        if isinstance(block, Mapping) and block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
            blocks = list(content)
            blocks[position] = {**block, "content": _like(block.get("content"), text, "text")}
            return _rewrap(message, {**inner, "content": blocks})
    raise KeyError(call_id)


def content_text(content: Any) -> str:
    """The text of message content: a string, or the text parts of a list of blocks, one per line."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "\n".join(text for text in (content_text(part) for part in content) if text)
    return ""


def user_message_like(reference: Message | None, text: str) -> dict[str, Any]:
    """A user message holding `text`, shaped like `reference` (a transcript entry, a Responses item, plain)."""
    message: dict[str, Any] = {"role": "user", "content": text}
    if reference is None or reference.get("type") != "message":
        return message
    if isinstance(reference.get("message"), Mapping):
        return {"type": "message", "message": message}
    return {"type": "message", **message}


def units(messages: Sequence[Message]) -> list[Unit]:
    """The messages grouped into units, in order; every message is in exactly one.

    A unit runs from a message making tool calls to the last message carrying one of their results. A
    Responses reasoning item joins the unit after it: the provider wants it sent with the call it reasoned to.
    """
    calls = [call_ids(message) for message in messages]
    results = [result_ids(message) for message in messages]
    issued_at = {call_id: index for index, ids in enumerate(calls) for call_id in ids}
    reach = list(range(len(messages)))
    for index, ids in enumerate(results):
        for call_id in ids:
            issuer = issued_at.get(call_id)
            if issuer is not None and issuer < index:
                reach[issuer] = max(reach[issuer], index)
    for index, message in enumerate(messages[:-1]):
        if message.get("type") == "reasoning":
            reach[index] = max(reach[index], index + 1)
    grouped: list[Unit] = []
    start = 0
    while start < len(messages):
        stop, furthest = start, reach[start]
        while stop <= furthest:
            furthest = max(furthest, reach[stop])
            stop += 1
        grouped.append(
            Unit(
                start=start,
                stop=stop,
                call_ids=tuple(call_id for index in range(start, stop) for call_id in calls[index]),
                result_ids=tuple(call_id for index in range(start, stop) for call_id in results[index]),
            )
        )
        start = stop
    return grouped


def _result_content(message: Message, call_id: str) -> tuple[Any] | None:
    """The raw content of the result of `call_id`, boxed so that an absent result differs from empty content."""
    if message.get("type") in _RESULT_ITEM_TYPES:
        return (message.get("output"),) if message.get("call_id") == call_id else None
    inner = body(message)
    if inner.get("role") in _RESULT_ROLES:
        return (inner.get("content"),) if call_id in result_ids(message) else None
    for block in _mappings(inner.get("content")):
        if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
            return (block.get("content"),)
    return None


def _like(old: Any, text: str, part_type: str) -> Any:
    """`text` in the shape of the content it replaces: a list of parts stays a list (of one text part)."""
    return [{"type": part_type, "text": text}] if isinstance(old, list) else text


def _rewrap(message: Message, inner: dict[str, Any]) -> dict[str, Any]:
    """Put a changed inner message back into its transcript entry, if it came in one."""
    return {**message, "message": inner} if body(message) is not message else inner


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _ids(values: list[Any]) -> list[str]:
    return [value for value in values if isinstance(value, str) and value]
