"""What a request is to the conversation, the way the original tells Claude Code's and DeepSeek-harness's
requests apart (only a `main` turn is injected and captured)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memhub.proxy.model import RequestKind, WireProtocol

# DeepSeek-harness asks for a session title with this system prompt, no tools, thinking off and a tiny budget.
DSH_TITLE_PREFIX = "Create a concise title for an AI coding-assistant session"
DSH_TITLE_MAX_TOKENS = 128


def classify(
    protocol: WireProtocol, agent_source: str, body: Mapping[str, Any], headers: Mapping[str, str]
) -> RequestKind:
    """The request's kind; an unknown or malformed body is `main`, so a doubt never loses a turn's memory."""
    if agent_source == "dsh":
        return _dsh(body, headers)
    if protocol is WireProtocol.ANTHROPIC:
        return _anthropic(body)
    return RequestKind.MAIN


def _anthropic(body: Mapping[str, Any]) -> RequestKind:
    """Claude Code's rule: the last `cache_control` marker on the last message is a main turn, on the one before
    it a fork (a summary or compaction reusing the cache); no marker with no tools and thinking disabled is a
    side query (a title, a key check). Anything else is main (a provider with caching off sends no marker)."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    marker = _last_marker(messages)
    if marker >= 0:
        return RequestKind.FORK if marker == len(messages) - 2 else RequestKind.MAIN
    tools = body.get("tools")
    thinking = body.get("thinking")
    no_tools = not isinstance(tools, list) or not tools
    thinking_off = isinstance(thinking, dict) and thinking.get("type") == "disabled"
    return RequestKind.SIDE_QUERY if no_tools and thinking_off else RequestKind.MAIN


def _last_marker(messages: list[Any]) -> int:
    """The index of the last message with a `cache_control` on one of its content blocks (-1 when none)."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content") if isinstance(messages[index], dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content):
            return index
    return -1


def _dsh(body: Mapping[str, Any], headers: Mapping[str, str]) -> RequestKind:
    """DeepSeek-harness marks compaction with a header; its title request has a recognisable shape."""
    if headers.get("x-deepseek-harness-compact") == "1":
        return RequestKind.AUXILIARY
    tools, thinking, max_tokens = body.get("tools"), body.get("thinking"), body.get("max_tokens")
    messages = body.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    title = (
        not (isinstance(tools, list) and tools)
        and isinstance(thinking, dict)
        and thinking.get("type") == "disabled"
        and isinstance(max_tokens, int)
        and max_tokens <= DSH_TITLE_MAX_TOKENS
        and isinstance(first, dict)
        and first.get("role") == "system"
        and isinstance(first.get("content"), str)
        and first["content"].startswith(DSH_TITLE_PREFIX)
    )
    return RequestKind.SIDE_QUERY if title else RequestKind.MAIN
