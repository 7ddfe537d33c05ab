"""OpenAI Responses (`POST /v1/responses`, Codex). The prompt has no slots to splice into: every block goes, as
the original puts it, into one `<tdai_injections>` text part at the end of the first (developer) input item."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from memhub.proxy.model import Block, ChatTurn, ToolCall, TurnOutput, WireProtocol
from memhub.proxy.ports import Injector
from memhub.proxy.protocols.base import (
    CHAT_ROLES,
    Body,
    Family,
    ProtocolAdapter,
    StreamTap,
    arguments_text,
    joined_text,
    new_id,
    text_of,
    with_recall,
)
from memhub.proxy.protocols.sse import SseEvent, encode

TEXT_PARTS = ("input_text", "text", "output_text")
SYSTEM_ROLES = ("developer", "system")


def _items(body: Body) -> list[Any]:
    items = body.get("input")
    return items if isinstance(items, list) else []


def _is_message(item: Any, roles: tuple[str, ...]) -> bool:
    return isinstance(item, dict) and item.get("role") in roles and item.get("type", "message") == "message"


def read_output(response: dict[str, Any], output: TurnOutput) -> None:
    """Fold a finished `response` object (its output items and usage) into `output`."""
    text, calls = "", []
    for item in response.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text += str(part.get("text") or "")
        elif item.get("type") == "function_call":
            calls.append(
                ToolCall(
                    id=str(item.get("call_id") or item.get("id") or ""),
                    name=str(item.get("name") or ""),
                    arguments=arguments_text(item.get("arguments") or ""),
                )
            )
    output.text, output.tool_calls = text, calls
    output.usage = response.get("usage") or {}
    output.finish_reason = response.get("status")


class ResponsesTap(StreamTap):
    """Reads text deltas and finished function calls as they come, then the whole `response.completed`."""

    def on_event(self, event: SseEvent) -> None:
        data = json.loads(event.data)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.event
        if kind == "response.output_text.delta":
            self.output.text += str(data.get("delta") or "")
        elif kind == "response.output_item.done":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                self.output.tool_calls.append(
                    ToolCall(
                        id=str(item.get("call_id") or item.get("id") or ""),
                        name=str(item.get("name") or ""),
                        arguments=arguments_text(item.get("arguments") or ""),
                    )
                )
        elif kind == "response.completed":
            read_output(data.get("response") or {}, self.output)
            self.output.complete = True
        elif kind in ("response.failed", "response.incomplete"):
            self.output.finish_reason = (data.get("response") or {}).get("status") or kind


class Responses(ProtocolAdapter):
    protocol = WireProtocol.RESPONSES
    family = Family.OPENAI
    upstream_path = "/responses"
    conversation_field = "input"
    fixed_fields = ("instructions", "tools")

    def last_user_text(self, body: Body) -> str | None:
        if isinstance(body.get("input"), str):
            return body["input"]
        items = _items(body)
        last = items[-1] if items else None
        return text_of(last.get("content"), TEXT_PARTS) if _is_message(last, ("user",)) else None

    def first_user_text(self, body: Body) -> str:
        if isinstance(body.get("input"), str):
            return body["input"]
        for item in _items(body):
            if _is_message(item, ("user",)):
                return text_of(item.get("content"), TEXT_PARTS) or ""
        return ""

    def inject_system(self, body: Body, blocks: Sequence[Block], injector: Injector, agent_source: str) -> None:
        flat = injector.flat(blocks)
        if not flat:
            return
        part = {"type": "input_text", "text": f"<tdai_injections>\n{flat}\n</tdai_injections>"}
        if isinstance(body.get("input"), str):
            body["input"] = [{"role": "user", "content": [{"type": "input_text", "text": body["input"]}]}]
        items = _items(body)
        first = items[0] if items else None
        if _is_message(first, SYSTEM_ROLES):
            assert isinstance(first, dict)
            content = first.get("content")
            if isinstance(content, str):
                parts = [{"type": "input_text", "text": content}, part]
            elif isinstance(content, list):
                parts = [*content, part]
            else:
                parts = [part]
            body["input"] = [{**first, "content": parts}, *items[1:]]
            return
        body["input"] = [{"type": "message", "role": "developer", "content": [part]}, *items]

    def add_recall(self, body: Body, text: str) -> None:
        if isinstance(body.get("input"), str):
            body["input"] = with_recall(body["input"], text, "input_text", TEXT_PARTS)
            return
        items = _items(body)
        last = items[-1] if items else None
        if _is_message(last, ("user",)):
            assert isinstance(last, dict)
            content = with_recall(last.get("content"), text, "input_text", TEXT_PARTS)
            body["input"] = [*items[:-1], {**last, "content": content}]

    def recent_turns(self, body: Body, limit: int) -> list[ChatTurn]:
        if isinstance(body.get("input"), str):
            return [ChatTurn("user", body["input"])] if body["input"] else []
        turns: list[ChatTurn] = []
        for item in reversed(_items(body)):
            if len(turns) >= limit:
                break
            if _is_message(item, CHAT_ROLES) and (text := joined_text(item.get("content"), TEXT_PARTS)):
                turns.append(ChatTurn(item["role"], text))
        turns.reverse()
        return turns

    def tap(self) -> StreamTap:
        return ResponsesTap()

    def parse(self, raw: bytes) -> TurnOutput:
        output = TurnOutput(complete=True)
        read_output(json.loads(raw), output)
        return output

    def reply(self, body: Body, text: str) -> Body:
        return {
            "id": new_id("resp_memhub_"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": str(body.get("model") or "memhub"),
            "output": [self._message(text)],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "total_tokens": 0,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    @staticmethod
    def _message(text: str) -> dict[str, Any]:
        return {
            "id": new_id("msg_memhub_"),
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    def reply_stream(self, body: Body, text: str) -> list[bytes]:
        done = self.reply(body, text)
        item = done["output"][0]
        started = {**done, "status": "in_progress", "output": []}
        part = item["content"][0]
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": started},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
            {
                "type": "response.content_part.added",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": {**part, "text": ""},
            },
            {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
            {
                "type": "response.output_text.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "text": text,
            },
            {
                "type": "response.content_part.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]
        return [encode({**event, "sequence_number": n}, event["type"]) for n, event in enumerate(events)]

    def error(self, kind: str, message: str) -> Body:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
