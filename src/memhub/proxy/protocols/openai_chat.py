"""OpenAI Chat Completions (`POST /v1/chat/completions`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from memhub.proxy.model import Block, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.ports import Injector
from memhub.proxy.protocols.base import (
    Body,
    Family,
    MessagesAdapter,
    StreamTap,
    arguments_text,
    messages_of,
    new_id,
)
from memhub.proxy.protocols.sse import SseEvent, encode

SYSTEM_ROLES = ("system", "developer")


class ChatTap(StreamTap):
    """Reads `chat.completion.chunk` events: content deltas, tool-call deltas by index, usage, `[DONE]`."""

    def __init__(self) -> None:
        super().__init__()

    def on_event(self, event: SseEvent) -> None:
        if event.data.strip() == "[DONE]":
            self.output.complete = True
            return
        chunk = json.loads(event.data)
        if not isinstance(chunk, dict):
            return
        if isinstance(chunk.get("usage"), dict):
            self.output.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.output.text += delta["content"]
            for call in delta.get("tool_calls") or []:
                self._call_delta(call)
            if choice.get("finish_reason"):
                self.output.finish_reason = choice["finish_reason"]

    def _call_delta(self, delta: dict[str, Any]) -> None:
        index = delta.get("index", len(self.calls_by_index))
        call = self.calls_by_index.setdefault(index, ToolCall(id="", name="", arguments=""))
        function = delta.get("function") or {}
        call.id = delta.get("id") or call.id
        call.name = function.get("name") or call.name
        if isinstance(function.get("arguments"), str):
            call.arguments += function["arguments"]


class OpenAIChat(MessagesAdapter):
    protocol = WireProtocol.OPENAI_CHAT
    family = Family.OPENAI
    upstream_path = "/chat/completions"
    fixed_fields = ("tools", "functions")

    def inject_system(self, body: Body, blocks: Sequence[Block], injector: Injector, agent_source: str) -> None:
        messages = messages_of(body)
        at = next(
            (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") in SYSTEM_ROLES),
            None,
        )
        if at is None:
            text = injector.splice([], blocks, agent_source)[0]
            if text:
                # Without a system message the blocks still need a home: a new one, first.
                body["messages"] = [{"role": "system", "content": text}, *messages]
            return
        system = messages[at]
        content = system.get("content")
        if isinstance(content, str):
            new_content: Any = injector.splice([content], blocks, agent_source)[0]
        elif not isinstance(content, list):
            return
        elif not (texts := [i for i, p in enumerate(content) if isinstance(p, dict) and p.get("type") == "text"]):
            new_content = [*content, {"type": "text", "text": injector.splice([], blocks, agent_source)[0]}]
        else:
            spliced = injector.splice([str(content[i].get("text", "")) for i in texts], blocks, agent_source)
            new_content = list(content)
            for i, text in zip(texts, spliced, strict=True):
                new_content[i] = {**content[i], "text": text}
        body["messages"] = [*messages[:at], {**system, "content": new_content}, *messages[at + 1 :]]

    def tap(self) -> StreamTap:
        return ChatTap()

    def parse(self, raw: bytes) -> TurnOutput:
        response = json.loads(raw)
        choice = (response.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        calls = [
            ToolCall(
                id=str(call.get("id") or ""),
                name=str((call.get("function") or {}).get("name") or ""),
                arguments=arguments_text((call.get("function") or {}).get("arguments") or ""),
            )
            for call in message.get("tool_calls") or []
            if isinstance(call, dict)
        ]
        return TurnOutput(
            text=message.get("content") if isinstance(message.get("content"), str) else "",
            tool_calls=calls,
            usage=response.get("usage") or {},
            finish_reason=choice.get("finish_reason"),
            complete=True,
        )

    def reply(self, body: Body, text: str) -> Body:
        return {
            "id": new_id("chatcmpl-memhub-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or "memhub"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def reply_stream(self, body: Body, text: str) -> list[bytes]:
        head = {
            "id": new_id("chatcmpl-memhub-"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": str(body.get("model") or "memhub"),
        }

        def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
            return encode({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        return [
            chunk({"role": "assistant", "content": ""}, None),
            chunk({"content": text}, None),
            chunk({}, "stop"),
            encode("[DONE]"),
        ]

    def error(self, kind: str, message: str) -> Body:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
