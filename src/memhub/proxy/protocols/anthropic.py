"""Anthropic Messages (`POST /v1/messages`): the system prompt is a string or a list of text blocks, each
possibly carrying `cache_control`; the blocks keep their structure and markers when text is spliced in."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memhub.proxy.model import Block, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.ports import Injector
from memhub.proxy.protocols.base import (
    Body,
    Family,
    MessagesAdapter,
    StreamTap,
    arguments_text,
    new_id,
)
from memhub.proxy.protocols.sse import SseEvent, encode


class MessagesTap(StreamTap):
    """Reads `message_start` … `message_stop`: text deltas, tool_use blocks and their input JSON deltas."""

    def __init__(self) -> None:
        super().__init__()

    def on_event(self, event: SseEvent) -> None:
        data = json.loads(event.data)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.event
        if kind == "message_start":
            self.output.usage = dict((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.output.text += block["text"]
            elif block.get("type") == "tool_use":
                initial = block.get("input")
                self.calls_by_index[data.get("index", len(self.calls_by_index))] = ToolCall(
                    id=str(block.get("id") or ""),
                    name=str(block.get("name") or ""),
                    arguments=arguments_text(initial) if initial else "",
                )
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                self.output.text += delta["text"]
            elif delta.get("type") == "input_json_delta" and (call := self.calls_by_index.get(data.get("index", -1))):
                call.arguments += str(delta.get("partial_json") or "")
        elif kind == "message_delta":
            stop = (data.get("delta") or {}).get("stop_reason")
            self.output.finish_reason = stop or self.output.finish_reason
            self.output.usage.update(data.get("usage") or {})
        elif kind == "message_stop":
            self.output.complete = True


class AnthropicMessages(MessagesAdapter):
    protocol = WireProtocol.ANTHROPIC
    family = Family.ANTHROPIC
    upstream_path = "/v1/messages"
    fixed_fields = ("system", "tools")

    def inject_system(self, body: Body, blocks: Sequence[Block], injector: Injector, agent_source: str) -> None:
        system = body.get("system")
        if isinstance(system, str):
            body["system"] = injector.splice([system], blocks, agent_source)[0]
            return
        if not isinstance(system, list):
            text = injector.splice([], blocks, agent_source)[0]
            if text:
                body["system"] = text
            return
        texts = [i for i, part in enumerate(system) if isinstance(part, dict) and part.get("type") == "text"]
        if not texts:
            text = injector.splice([], blocks, agent_source)[0]
            if text:
                body["system"] = [*system, {"type": "text", "text": text}]
            return
        spliced = injector.splice([str(system[i].get("text", "")) for i in texts], blocks, agent_source)
        system = list(system)
        for i, text in zip(texts, spliced, strict=True):
            system[i] = {**system[i], "text": text}  # cache_control and any other key stay
        body["system"] = system

    def tap(self) -> StreamTap:
        return MessagesTap()

    def parse(self, raw: bytes) -> TurnOutput:
        response = json.loads(raw)
        output = TurnOutput(usage=response.get("usage") or {}, finish_reason=response.get("stop_reason"), complete=True)
        for block in response.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                output.text += block["text"]
            elif block.get("type") == "tool_use":
                output.tool_calls.append(
                    ToolCall(
                        id=str(block.get("id") or ""),
                        name=str(block.get("name") or ""),
                        arguments=arguments_text(block.get("input") or {}),
                    )
                )
        return output

    def reply(self, body: Body, text: str) -> Body:
        return {
            "id": new_id("msg_memhub_"),
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or "memhub"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }

    def reply_stream(self, body: Body, text: str) -> list[bytes]:
        message = {**self.reply(body, text), "content": [], "stop_reason": None}
        return [
            encode({"type": "message_start", "message": message}, "message_start"),
            encode(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            ),
            encode(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                "content_block_delta",
            ),
            encode({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            encode(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 0},
                },
                "message_delta",
            ),
            encode({"type": "message_stop"}, "message_stop"),
        ]

    def error(self, kind: str, message: str) -> Body:
        return {"type": "error", "error": {"type": kind, "message": message}}
