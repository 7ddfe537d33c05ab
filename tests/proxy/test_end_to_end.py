"""The proxy as `memhub serve` builds it (identity from the user key, the hub's injector) in front of a fake
upstream, driven by the real clients: where the blocks land, a prefix that stays byte-identical turn after turn,
forks and side queries."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from tests.proxy.conftest import ProxyRig

CLAUDE_SYSTEM = [
    {"type": "text", "text": "You are Claude Code."},
    {
        "type": "text",
        "text": "# Harness\nrules\n\n# Memory\nnotes here\n\n# Environment\ncwd: /x",
        "cache_control": {"type": "ephemeral"},
    },
]


@pytest.fixture
def real(make_rig: Callable[..., ProxyRig]) -> ProxyRig:
    return make_rig(real=True)


def claude(rig: ProxyRig, session: str = "cc-1") -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=rig.user_key,
        base_url=rig.base(protocol="anthropic"),
        default_headers={"x-claude-code-session-id": session},
        max_retries=0,
    )


def user(text: str, marker: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marker:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def test_claude_code_blocks_land_in_their_slots(real: ProxyRig) -> None:
    raw = claude(real).messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        system=CLAUDE_SYSTEM,
        messages=[user("hi", marker=True)],  # type: ignore[arg-type]
    )
    assert raw.headers["x-memhub-memory"] == "injected"
    system = real.upstream.turns("/v1/messages")[0].json["system"]
    assert system[0] == CLAUDE_SYSTEM[0]
    assert system[1]["cache_control"] == {"type": "ephemeral"}
    text = system[1]["text"]
    # The memory tools go before `# Memory`, the guide inside it, the session context at the very end.
    assert text.index("# Harness") < text.index("<tdai_memory_tools>") < text.index("# Memory\nnotes here")
    assert text.index("# Memory") < text.index("<memory-tools-guide>") < text.index("# Environment")
    assert text.rstrip().endswith("</session_context>")
    assert real.user_key not in text  # the recipes carry a session token, never the user key


def test_the_system_prompt_is_byte_identical_turn_after_turn(real: ProxyRig) -> None:
    client = claude(real)
    first = [user("hello", marker=True)]
    client.messages.create(model="m", max_tokens=10, system=CLAUDE_SYSTEM, messages=first)  # type: ignore[arg-type]
    second = [user("hello"), {"role": "assistant", "content": "hi!"}, user("and now?", marker=True)]
    client.messages.create(model="m", max_tokens=10, system=CLAUDE_SYSTEM, messages=second)  # type: ignore[arg-type]
    one, two = real.upstream.turns("/v1/messages")
    dump = json.dumps  # the system as the upstream received it, compared as bytes of its serialized form
    assert dump(one.json["system"]) == dump(two.json["system"])
    start = one.body.index(b'"system":')
    assert one.body[start:] in two.body  # the same bytes on the wire, not only an equal value
    assert two.json["messages"] == second  # the conversation itself is untouched


def test_an_openai_client_without_a_session_header_keeps_one_session(real: ProxyRig) -> None:
    client = openai.OpenAI(api_key=real.user_key, base_url=real.base("codebuddy"), max_retries=0)
    turn = [{"role": "system", "content": "<rules>be brief</rules>"}, {"role": "user", "content": "plan the release"}]
    client.chat.completions.create(model="m", messages=turn)  # type: ignore[arg-type]
    later = [*turn, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    client.chat.completions.create(model="m", messages=later)  # type: ignore[arg-type]
    one, two = real.upstream.turns("/v1/chat/completions")
    assert "<tdai_memory_tools>" in one.json["messages"][0]["content"]
    assert one.json["messages"][0] == two.json["messages"][0]


def test_a_fork_reads_the_sessions_blocks_and_a_side_query_gets_none(real: ProxyRig) -> None:
    client = claude(real)
    # Claude Code's fork moves the cache marker to the message before the last one.
    answer = {"role": "assistant", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    fork_body = [user("hello"), answer, user("summarize")]
    client.messages.create(model="m", max_tokens=10, system=CLAUDE_SYSTEM, messages=[user("hello", marker=True)])  # type: ignore[arg-type]
    fork = client.messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        system=CLAUDE_SYSTEM,
        messages=fork_body,  # type: ignore[arg-type]
    )
    assert fork.headers["x-memhub-memory"] == "injected; kind=fork"
    side = client.messages.with_raw_response.create(
        model="m", max_tokens=10, thinking={"type": "disabled"}, messages=[user("a title please")]
    )
    assert side.headers["x-memhub-memory"] == "passthrough; reason=sidequery"
    sent_main, sent_fork, sent_side = real.upstream.turns("/v1/messages")
    assert sent_fork.json["system"] == sent_main.json["system"]
    assert "system" not in sent_side.json
