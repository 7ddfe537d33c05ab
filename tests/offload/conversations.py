"""Agent sessions for the compaction tests, rendered in each message format, and a format-independent checker.

A session is a script of turns (a user prompt, tool rounds of one to three parallel calls with long outputs
like Claude Code's Bash/Read/Grep, an assistant answer); `render` writes it as the messages one format sends.
The checker re-implements each provider's pairing rule on its own, so it does not trust the code under test.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.model.offload import OffloadEntry

FORMATS = ("anthropic", "openai", "openclaw", "openclaw_wrapped", "responses")


@dataclass(frozen=True)
class Call:
    call_id: str
    tool: str
    params: dict[str, Any]
    output: str


@dataclass
class Session:
    """Turns as ("user", text) | ("assistant", text) | ("tools", [Call, ...])."""

    turns: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def calls(self) -> list[Call]:
        return [call for kind, value in self.turns if kind == "tools" for call in value]


def _file_listing(rng: random.Random, lines: int) -> str:
    names = ("store", "routes", "compact", "service", "worker", "index", "summary", "graph")
    out = []
    for number in range(1, lines + 1):
        name = rng.choice(names)
        out.append(f"{number:>5}\t    def {name}_{rng.randint(0, 999)}(self, item: dict) -> int:  # {name} step")
    return "\n".join(out)


def _grep_output(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"src/memhub/{rng.choice(('store', 'api', 'offload'))}/mod_{rng.randint(0, 40)}.py:{rng.randint(1, 900)}:"
        f"    result = lookup(key_{rng.randint(0, 99)}, scope=scope)"
        for _ in range(lines)
    )


def _test_log(rng: random.Random, lines: int) -> str:
    body = [f"tests/test_mod_{i % 17}.py::test_case_{i} PASSED [{i * 100 // lines:>3}%]" for i in range(lines)]
    return "============ test session starts ============\n" + "\n".join(body) + f"\n{lines} passed in 3.1s"


def claude_code_session(*, prompts: int = 3, rounds: int = 6, seed: int = 7, prefix: str = "toolu_") -> Session:
    """A Claude Code-like run: each prompt answered by tool rounds (long outputs), then a short answer."""
    rng = random.Random(seed)
    session = Session()
    serial = 0
    for prompt in range(prompts):
        session.turns.append(("user", f"Task {prompt}: find where the store drops rows and fix it; run the tests."))
        for _ in range(rounds):
            calls = []
            for _ in range(rng.choice((1, 1, 2, 3))):
                serial += 1
                call_id = f"{prefix}{seed:02d}{serial:04d}"
                tool = rng.choice(("Bash", "Read", "Grep"))
                if tool == "Read":
                    params: dict[str, Any] = {"file_path": f"/repo/src/memhub/store/mod_{serial}.py"}
                    output = _file_listing(rng, rng.randint(40, 160))
                elif tool == "Grep":
                    params = {"pattern": f"lookup\\(key_{serial}", "path": "/repo/src"}
                    output = _grep_output(rng, rng.randint(30, 120))
                else:
                    params = {"command": "pytest -q tests/store", "description": "Run the store tests"}
                    output = _test_log(rng, rng.randint(40, 150))
                calls.append(Call(call_id, tool, params, output))
            session.turns.append(("tools", calls))
        session.turns.append(("assistant", f"Fixed step {prompt}: the scope filter now runs inside the index."))
    return session


def entries_for(session: Session, *, score: int | None = None, skip: Sequence[str] = ()) -> dict[str, OffloadEntry]:
    """An offload entry per call (scores cycle 0–10 unless fixed), except the calls in `skip`."""
    entries = {}
    for number, call in enumerate(session.calls):
        if call.call_id in skip:
            continue
        entries[call.call_id] = OffloadEntry(
            tool_call_id=call.call_id,
            tool_call=f"{call.tool}({json.dumps(call.params)})",
            summary=f"{call.tool} output: {len(call.output.splitlines())} lines, nothing unexpected",
            score=score if score is not None else (number * 7) % 11,
            timestamp="2026-01-01T00:00:00Z",
            result_ref=f"offload/sess-1/results/{call.call_id}.json",
        )
    return entries


def render(session: Session, style: str, *, system: str | None = "You are a coding agent.") -> list[dict[str, Any]]:
    """The session as `style` sends it (Anthropic sends its system prompt outside the messages)."""
    out: list[dict[str, Any]] = []
    if system is not None and style != "anthropic":
        out.append({"role": "developer" if style == "responses" else "system", "content": system})
    for kind, value in session.turns:
        out.extend(_render_turn(kind, value, style))
    if style == "openclaw_wrapped":
        return [
            message if message.get("role") == "system" else {"type": "message", "message": message} for message in out
        ]
    return out


def _render_turn(kind: str, value: Any, style: str) -> list[dict[str, Any]]:
    if kind == "user":
        if style == "anthropic":
            return [{"role": "user", "content": [{"type": "text", "text": value}]}]
        if style.startswith("openclaw"):
            return [{"role": "user", "content": [{"type": "text", "text": value}], "timestamp": 1}]
        return [{"role": "user", "content": value}]
    if kind == "assistant":
        if style == "responses":
            return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": value}]}]
        if style == "openai":
            return [{"role": "assistant", "content": value}]
        return [{"role": "assistant", "content": [{"type": "text", "text": value}]}]
    calls: list[Call] = value
    if style == "anthropic":
        return [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me look."}]
                + [{"type": "tool_use", "id": c.call_id, "name": c.tool, "input": c.params} for c in calls],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c.call_id, "content": c.output} for c in calls],
            },
        ]
    if style == "openai":
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.tool, "arguments": json.dumps(c.params)},
                    }
                    for c in calls
                ],
            },
            *({"role": "tool", "tool_call_id": c.call_id, "content": c.output} for c in calls),
        ]
    if style.startswith("openclaw"):
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": c.call_id, "name": c.tool, "arguments": c.params} for c in calls
                ],
                "stopReason": "toolUse",
                "usage": {"input": 1000, "output": 20},
            },
            *(
                {
                    "role": "toolResult",
                    "toolCallId": c.call_id,
                    "toolName": c.tool,
                    "content": [{"type": "text", "text": c.output}],
                    "isError": False,
                }
                for c in calls
            ),
        ]
    return [
        {"type": "reasoning", "id": f"rs_{calls[0].call_id}", "summary": []},
        *(
            {"type": "function_call", "call_id": c.call_id, "name": c.tool, "arguments": json.dumps(c.params)}
            for c in calls
        ),
        *({"type": "function_call_output", "call_id": c.call_id, "output": c.output} for c in calls),
    ]


# ── the checker ─────────────────────────────────────────────────────────────────────────────────────────────


def _inner(message: Mapping[str, Any]) -> Mapping[str, Any]:
    return message["message"] if message.get("type") == "message" and "message" in message else message


def _blocks(message: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    content = _inner(message).get("content")
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == kind] if isinstance(content, list) else []


def pairing_errors(messages: Sequence[Mapping[str, Any]], style: str) -> list[str]:
    """What a provider of `style` would reject about the tool calls and results in `messages`."""
    errors: list[str] = []
    if style == "responses":
        seen_calls: set[str] = set()
        answered: set[str] = set()
        for item in messages:
            if item.get("type") == "function_call":
                seen_calls.add(item["call_id"])
            elif item.get("type") == "function_call_output":
                if item["call_id"] not in seen_calls:
                    errors.append(f"output without call: {item['call_id']}")
                answered.add(item["call_id"])
        errors += [f"call without output: {c}" for c in sorted(seen_calls - answered)]
        for index, item in enumerate(messages):
            if item.get("type") == "reasoning" and (
                index + 1 >= len(messages) or messages[index + 1].get("type") != "function_call"
            ):
                errors.append(f"reasoning item without its call at {index}")
        return errors
    index = 0
    while index < len(messages):
        message = _inner(messages[index])
        if style == "anthropic":
            uses = [b["id"] for b in _blocks(messages[index], "tool_use")]
            results = [b["tool_use_id"] for b in _blocks(messages[index], "tool_result")]
            if results:
                previous = _inner(messages[index - 1]) if index else {}
                offered = [b["id"] for b in _blocks(messages[index - 1], "tool_use")] if index else []
                if previous.get("role") != "assistant" or not set(results) <= set(offered):
                    errors.append(f"tool_result without its tool_use at {index}")
            if uses:
                following = (
                    [b["tool_use_id"] for b in _blocks(messages[index + 1], "tool_result")]
                    if index + 1 < len(messages)
                    else []
                )
                if set(uses) - set(following):
                    errors.append(f"tool_use without its tool_result at {index}")
            index += 1
            continue
        call_ids = [c["id"] for c in message.get("tool_calls") or []] + [
            b["id"] for b in _blocks(messages[index], "toolCall")
        ]
        result_key = "tool_call_id" if style == "openai" else "toolCallId"
        result_role = "tool" if style == "openai" else "toolResult"
        if message.get("role") == result_role:
            errors.append(f"tool result without its call at {index}")
            index += 1
            continue
        index += 1
        answered = []
        while index < len(messages) and _inner(messages[index]).get("role") == result_role:
            answered.append(_inner(messages[index])[result_key])
            index += 1
        if sorted(answered) != sorted(call_ids):
            errors.append(f"calls {call_ids} answered by {answered}")
    return errors


def result_texts(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every tool result's text by call id, read without the code under test."""
    texts: dict[str, str] = {}
    for message in messages:
        inner = _inner(message)
        if message.get("type") == "function_call_output":
            texts[message["call_id"]] = message["output"]
        elif inner.get("role") == "tool":
            texts[inner["tool_call_id"]] = inner["content"]
        elif inner.get("role") == "toolResult":
            texts[inner["toolCallId"]] = "".join(part["text"] for part in inner["content"])
        for block in _blocks(message, "tool_result"):
            texts[block["tool_use_id"]] = block["content"]
    return texts
