"""Per-turn recall through the proxy as `memhub serve` builds it, driven by the real `anthropic` and `openai` clients
against a fake upstream: the recall lands in the user's message after the request's last cache breakpoint, so
what the provider cached stays byte-identical from one request to the next; only a turn of the user's text gets
it; it never reaches memory; it can be switched off; a failing or slow recall lets the turn go on without it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import httpx
import openai
import pytest

from memhub.proxy.injection import RECALL_TAG, RecallConfig, Recaller
from memhub.proxy.model import ChatTurn, ProxyIdentity
from tests.conftest import GATEWAY_KEY
from tests.proxy.conftest import SPACE, ProxyRig
from tests.proxy.fake_upstream import Received, Reply
from tests.proxy.test_end_to_end import WAIT, capture_of, l0

MARK = {"type": "ephemeral"}
SYSTEM = [
    {"type": "text", "text": "You are Claude Code."},
    {"type": "text", "text": "# Memory\nnotes here\n\n# Environment\ncwd: /x", "cache_control": MARK},
]
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {}}}]
FACT = "The billing service is deployed every Friday afternoon."
TURN = "Bob: Rosa owns the billing service since March."
QUESTION = "when do we deploy the billing service?"
OPENING = f"<{RECALL_TAG}>\n"


@pytest.fixture
def real(make_rig: Callable[..., ProxyRig]) -> ProxyRig:
    return seeded(make_rig(real=True))


def seeded(rig: ProxyRig) -> ProxyRig:
    """The rig's user with one memory and one earlier conversation, written through the gateway's data plane."""
    caller = rig.hub.meta.users.authenticate(SPACE, rig.user_key)
    assert caller is not None
    scope = {"team_id": rig.team_id, "agent_id": rig.agent_id, "user_id": caller.user_id}
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SPACE}
    earlier = [{"role": "user", "content": TURN, "timestamp": "2024-03-04T10:00:00Z"}]
    with httpx.Client(base_url=rig.url, headers=headers) as http:
        for path, body in (
            ("/v3/atomic/add", {"content": FACT, "type": "episodic"}),
            ("/v3/conversation/add", {"session_id": "earlier", "messages": earlier}),
        ):
            response = http.post(path, json={**scope, **body})
            assert response.status_code == 200 and response.json()["code"] == 0, response.text
    return rig


def claude(rig: ProxyRig, session: str, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=rig.user_key,
        base_url=rig.base(protocol="anthropic"),
        default_headers={"x-claude-code-session-id": session, **headers},
        max_retries=0,
    )


def said(text: str, marked: bool = True) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        part["cache_control"] = MARK
    return {"role": "user", "content": [part]}


def compact(value: Any) -> bytes:
    """A value as the proxy serialises what it sends (memhub.proxy.protocols.dumps)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def prompt(sent: Received) -> bytes:
    """The request in the order the provider reads its prompt (tools, system, messages), as the bytes sent."""
    body = sent.json
    assert compact(body) == sent.body  # so every slice below is bytes the upstream received
    return compact(body.get("tools")) + compact(body.get("system")) + compact(body["messages"])


def cached_prefix(sent: Received) -> bytes:
    """What the provider caches for this request: its prompt up to the end of the last part with `cache_control`."""
    messages = sent.json["messages"]
    i, j = max(
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        for j, part in enumerate(m["content"])
        if "cache_control" in part
    )
    whole, marked = prompt(sent), compact(messages[i]["content"][j])
    return whole[: whole.rindex(marked) + len(marked)]


def recall_in(value: Any) -> bool:
    return RECALL_TAG.encode() in compact(value)


def test_claude_code_keeps_its_cached_prefix_and_only_turns_of_the_users_text_get_recall(real: ProxyRig) -> None:
    client = claude(real, "cc-recall")
    real.upstream.script(Reply(text="", tool_calls=[("tu1", "Bash", {"cmd": "cat deploy.md"})]), Reply(text="Fri."))
    turn_1 = [said(QUESTION)]
    result = {"type": "tool_result", "tool_use_id": "tu1", "content": "Fri", "cache_control": MARK}
    continuation = [
        said(QUESTION),  # the client keeps its earlier breakpoints: each is a prefix the provider cached
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"cmd": "x"}}]},
        {"role": "user", "content": [result]},
    ]
    turn_2 = [*continuation, {"role": "assistant", "content": "Fridays."}, said("and who owns billing?")]
    headers = []
    for messages in (turn_1, continuation, turn_2):
        raw = client.messages.with_raw_response.create(
            model="m",
            max_tokens=10,
            system=SYSTEM,
            tools=TOOLS,
            messages=messages,  # type: ignore[arg-type]
        )
        headers.append(raw.headers["x-memhub-memory"])
    first, tool_loop, second = real.upstream.turns("/v1/messages")

    # Every request starts with the bytes the one before it cached: tools, system and history byte-identical.
    assert prompt(tool_loop).startswith(cached_prefix(first))
    assert prompt(second).startswith(cached_prefix(tool_loop))
    assert first.json["system"] == tool_loop.json["system"] == second.json["system"] != SYSTEM  # injected, stable
    # The recall is a part of its own right after the last breakpoint, in the turns of the user's text only.
    *kept, recalled = first.json["messages"][-1]["content"]
    assert kept == turn_1[-1]["content"] and recalled["text"].startswith(OPENING) and FACT in recalled["text"]
    assert not recall_in(tool_loop.json["messages"])
    assert second.json["messages"][:-1] == turn_2[:-1]  # the history as the client sent it, no recall in it
    *kept, recalled = second.json["messages"][-1]["content"]
    assert kept == turn_2[-1]["content"] and TURN in recalled["text"]
    items = [f"injected; recall={recalled['text'].count(chr(10) + '- [')}"]
    assert headers[1:] == ["injected", *items]
    assert headers[0].startswith("injected; recall=") and headers[0] != "injected; recall=none"


def test_openai_chat_gets_recall_in_the_last_user_message_only(real: ProxyRig) -> None:
    client = openai.OpenAI(
        api_key=real.user_key, base_url=real.base("codebuddy"), default_headers={"x-session-id": "oai"}, max_retries=0
    )
    turn_1 = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": QUESTION}]
    turn_2 = [*turn_1, {"role": "assistant", "content": "Fridays."}, {"role": "user", "content": "who owns billing?"}]
    for messages in (turn_1, turn_2):
        client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    first, second = (sent.json["messages"] for sent in real.upstream.turns("/v1/chat/completions"))
    assert compact(first[0]) == compact(second[0]) and "<tdai_memory_tools>" in first[0]["content"]
    assert second[1:-1] == turn_2[1:-1] and not recall_in(second[:-1])  # the history byte for byte as sent
    for sent, asked in ((first, QUESTION), (second, "who owns billing?")):
        assert sent[-1]["content"].startswith(OPENING) and sent[-1]["content"].endswith(f"\n\n{asked}")
    assert FACT in first[-1]["content"] and TURN in second[-1]["content"]


def test_the_responses_route_gets_recall_in_the_users_last_input_item(real: ProxyRig) -> None:
    client = openai.OpenAI(
        api_key=real.user_key, base_url=real.base("codex"), default_headers={"x-session-id": "codex"}, max_retries=0
    )
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be careful"}]}
    asked = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fridays."}]}
    follow_up = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "who owns billing?"}]}
    for items in ([developer, asked], [developer, asked, answer, follow_up]):
        client.responses.create(model="m", input=items)  # type: ignore[arg-type]
    first, second = (sent.json["input"] for sent in real.upstream.turns("/v1/responses"))
    assert compact(first[0]) == compact(second[0])  # the developer item with `<tdai_injections>`, unchanged
    assert second[1:3] == [asked, answer] and not recall_in(second[:-1])
    recalled, typed = second[-1]["content"]
    assert recalled["type"] == "input_text" and recalled["text"].startswith(OPENING) and TURN in recalled["text"]
    assert typed == follow_up["content"][0]
    assert first[-1]["content"][0]["text"].startswith(OPENING)


def test_recall_never_reaches_memory_even_when_the_client_echoes_it_back(real: ProxyRig) -> None:
    client = claude(real, "cap-recall")
    client.messages.create(model="m", max_tokens=10, messages=[said(QUESTION)])  # type: ignore[list-item]
    [sent] = real.upstream.turns("/v1/messages")
    as_upstream_got_it = sent.json["messages"][0]
    echoed = f"{sent.json['messages'][0]['content'][-1]['text']}\n\nthanks, and who owns it?"
    history = [as_upstream_got_it, {"role": "assistant", "content": "ok from upstream"}, said(echoed)]
    client.messages.create(model="m", max_tokens=10, messages=history)  # type: ignore[arg-type]
    assert capture_of(real).drain(WAIT)
    stored = [m["content"] for m in l0(real, "cap-recall")]
    assert stored == [QUESTION, "ok from upstream", "thanks, and who owns it?", "ok from upstream"]


def test_recall_is_switched_per_request_and_a_bad_switch_is_refused(make_rig: Callable[..., ProxyRig]) -> None:
    on = seeded(make_rig(real=True))
    off = claude(on, "switch", **{"x-memhub-recall": "off"}).messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        messages=[said(QUESTION)],  # type: ignore[list-item]
    )
    nothing = claude(on, "switch").messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        messages=[said("quantum chromodynamics")],  # type: ignore[list-item]
    )
    assert (off.headers["x-memhub-memory"], nothing.headers["x-memhub-memory"]) == (
        "injected; recall=off",
        "injected; recall=none",
    )
    assert not any(recall_in(sent.json["messages"]) for sent in on.upstream.turns("/v1/messages"))
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude(on, "switch", **{"x-memhub-recall": "maybe"}).messages.create(
            model="m",
            max_tokens=10,
            messages=[said(QUESTION)],  # type: ignore[list-item]
        )
    assert refused.value.body["error"]["message"] == "x-memhub-recall: must be on or off"
    assert refused.value.response.headers["x-memhub-memory"] == "passthrough; reason=bad-header"
    assert len(on.upstream.turns("/v1/messages")) == 2  # the refused turn went nowhere

    default_off = seeded(make_rig(real=True, proxy_turn_recall=False))
    by_default = claude(default_off, "d").messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        messages=[said(QUESTION)],  # type: ignore[list-item]
    )
    asked = claude(default_off, "d", **{"x-memhub-recall": "ON"}).messages.with_raw_response.create(
        model="m",
        max_tokens=10,
        messages=[said(QUESTION)],  # type: ignore[list-item]
    )
    assert by_default.headers["x-memhub-memory"] == "injected; recall=off"
    assert asked.headers["x-memhub-memory"].startswith("injected; recall=")
    plain, recalled = default_off.upstream.turns("/v1/messages")
    assert not recall_in(plain.json["messages"]) and FACT in recalled.json["messages"][-1]["content"][-1]["text"]


class Stalled:
    """A recall stand-in that waits for `release`, which the test sets only when it is done."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int) -> list[Any]:
        self.release.wait()
        return []


def broken(identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int) -> list[Any]:
    raise RuntimeError("the embedder fell over")


def test_a_failing_or_slow_recall_forwards_the_turn_without_it(real: ProxyRig) -> None:
    assert real.hub.proxy is not None
    stalled = Stalled()
    outcomes = []
    try:
        for recaller in (Recaller(broken, RecallConfig()), Recaller(stalled, RecallConfig(timeout_seconds=0.05))):
            real.hub.proxy.recaller = recaller
            raw = claude(real, "degraded").messages.with_raw_response.create(
                model="m",
                max_tokens=10,
                system=SYSTEM,
                messages=[said(QUESTION)],  # type: ignore[arg-type]
            )
            assert raw.parse().content[0].text == "ok from upstream"  # type: ignore[union-attr]
            outcomes.append(raw.headers["x-memhub-memory"])
    finally:
        stalled.release.set()
    assert outcomes == ["injected; recall=error", "injected; recall=timeout"]
    for sent in real.upstream.turns("/v1/messages"):
        assert sent.json["messages"] == [said(QUESTION)]  # the turn as the client sent it
        assert "<tdai_memory_tools>" in sent.json["system"][1]["text"]  # the session's blocks still went in
