"""The tool pairs a conversation holds: each tool call with its result, read from the messages an agent sends.

A client that sends its whole history every turn (every agent behind the proxy) carries its tool calls and
their results in the formats of `memhub.offload.messages`. A call counts as a pair once its result is there;
a call still waiting for its result, and a result whose call is not in the messages, are not pairs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.offload import messages as fmt


@dataclass(frozen=True, slots=True)
class FoundPair:
    """A tool call and its result as they stand in the messages."""

    tool_call_id: str
    tool_name: str
    params: Any  # the call's arguments: parsed JSON when they were sent as a JSON string
    result: str
    is_error: bool


def tool_pairs(messages: Sequence[Mapping[str, Any]]) -> list[FoundPair]:
    """Every answered tool call in `messages`, in the order the calls were made (each id once, its first call)."""
    calls: dict[str, tuple[str, Any]] = {}
    results: dict[str, tuple[str, bool]] = {}
    for message in messages:
        for call_id, name, params in _calls(message):
            calls.setdefault(call_id, (name, params))
        for call_id in fmt.result_ids(message):
            text = fmt.result_text(message, call_id)
            if text is not None and call_id not in results:
                results[call_id] = (text, _is_error(message, call_id))
    return [
        FoundPair(call_id, name, params, *results[call_id])
        for call_id, (name, params) in calls.items()
        if call_id in results
    ]


def _calls(message: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, tool name, arguments) of each call the message makes."""
    found: list[tuple[str, str, Any]] = []
    if message.get("type") in ("function_call", "custom_tool_call"):
        arguments = message.get("arguments", message.get("input"))
        found.append((message.get("call_id"), message.get("name"), _parsed(arguments)))
    inner = fmt.body(message)
    for call in _mappings(inner.get("tool_calls")):
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        found.append((call.get("id"), function.get("name"), _parsed(function.get("arguments"))))
    for block in _mappings(inner.get("content")):
        if block.get("type") == "tool_use":
            found.append((block.get("id"), block.get("name"), block.get("input")))
        elif block.get("type") == "toolCall":
            found.append((block.get("id"), block.get("name"), _parsed(block.get("arguments"))))
    return [
        (call_id, name if isinstance(name, str) and name else "tool", params)
        for call_id, name, params in found
        if isinstance(call_id, str) and call_id
    ]


def _is_error(message: Mapping[str, Any], call_id: str) -> bool:
    """Whether the client marked the result as a failure (Anthropic's `is_error`, OpenClaw's `isError`)."""
    inner = fmt.body(message)
    if inner.get("role") == "toolResult":
        return inner.get("isError") is True
    return any(
        block.get("type") == "tool_result" and block.get("tool_use_id") == call_id and block.get("is_error") is True
        for block in _mappings(inner.get("content"))
    )


def _parsed(arguments: Any) -> Any:
    """Arguments sent as a JSON string, parsed (kept as the string when it is not JSON)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
