"""Context offload through the proxy as `memhub serve` builds it, against a fake upstream: a coding agent's run
sent request by request, as Claude Code sends it (its whole history each time, its newest message marked for the
prompt cache), through the real `anthropic` client, and the same run in OpenAI's chat and Responses formats.

What the provider receives: the caller's messages until the context passes half the window; then older tool
results replaced by their summaries with a reference, every call still with its result and the last message as
sent; the next request the same compacted prefix byte for byte; the read tool in the system prompt, whose
recipe reads a replaced result back in full. Off by default, on by setting, by the agent's metadata or by
request header; a failing or slow offload forwards the caller's messages.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import httpx
import pytest

from memhub.offload.tokens import message_tokens
from memhub.proxy.offload.prefix import BREAKPOINT, breakpoint_count
from tests.conftest import GATEWAY_KEY
from tests.offload.conversations import claude_code_session, pairing_errors, render, result_texts
from tests.proxy.conftest import SPACE, ProxyRig
from tests.proxy.fake_upstream import Received

MARK = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are Claude Code.", "cache_control": MARK}]
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {}}}]
MODEL = "claude-sonnet-4-5"
RUN = claude_code_session(prompts=2, rounds=6, seed=11)
FILLS = 0.75  # the whole run fills this share of the window the rig is given: past mild, under aggressive
STAGES_NOW = {
    "offload_summary_max_age_seconds": 0,
    "offload_graph_delay_seconds": 0,
    "offload_graph_max_age_seconds": 0,
    "pipeline_enabled": True,
}
STAND_IN = "[offloaded tool result]"
MESSAGES = "/v1/messages"
REF = re.compile(r"full result: (offload/\S+?\.md)")
TOKEN = re.compile(r"x-memhub-session: ([A-Za-z0-9_.\-]+)")


def run_messages(style: str = "anthropic") -> list[dict[str, Any]]:
    return render(RUN, style, system=None if style == "anthropic" else "You are a coding agent.")


def window_of(messages: Sequence[dict[str, Any]]) -> int:
    return int(sum(message_tokens(m) for m in messages) / FILLS)


def request_ends(messages: Sequence[dict[str, Any]], window: int) -> list[int]:
    """Where a request of the run ends (after each message the agent sends: the user's or tool results), from the
    first one past the mild threshold."""
    ends, tokens = [], 0
    for index, message in enumerate(messages):
        tokens += message_tokens(message)
        sends = message.get("role") in ("user", "tool") or message.get("type") == "function_call_output"
        follows = messages[index + 1] if index + 1 < len(messages) else None
        last_of_round = follows is None or not (
            follows.get("role") == "tool" or follows.get("type") == "function_call_output"
        )
        if sends and last_of_round and tokens > 0.55 * window:
            ends.append(index + 1)
    return ends


def marked(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as Claude Code sends it: only its newest message carries a breakpoint."""
    out = [dict(m) for m in messages]
    last = out[-1]
    content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    out[-1] = {**last, "content": [*content[:-1], {**content[-1], BREAKPOINT: MARK}]}
    return out


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def claude(rig: ProxyRig, session: str, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=rig.user_key,
        base_url=rig.base(protocol="anthropic"),
        default_headers={"x-claude-code-session-id": session, **headers},
        max_retries=0,
    )


def send(client: anthropic.Anthropic, messages: list[dict[str, Any]]) -> str:
    """One request of the run; the memory header's answer."""
    raw = client.messages.with_raw_response.create(
        model=MODEL, max_tokens=10, system=SYSTEM, tools=TOOLS, messages=marked(messages)
    )  # type: ignore[arg-type]
    return raw.headers["x-memhub-memory"]


def offload_status(header: str) -> str:
    found = re.search(r"offload=([^;]+)", header)
    return found.group(1) if found else ""


def last(rig: ProxyRig, path: str = "/v1/messages") -> Received:
    """The last request the provider received at `path`."""
    return rig.upstream.turns(path)[-1]


def system_text(sent: Received) -> str:
    system = sent.json["system"]
    return system if isinstance(system, str) else "\n".join(part["text"] for part in system)


@pytest.fixture
def offloading(make_rig: Callable[..., ProxyRig]) -> ProxyRig:
    return make_rig(real=True, proxy_offload=True, proxy_offload_context_window=window_of(run_messages()), **STAGES_NOW)


def drain(rig: ProxyRig) -> None:
    """Run the offload stages now (summaries, task and graph) in this thread."""
    assert rig.hub.worker is not None
    rig.hub.worker.drain()


def test_past_half_the_window_older_results_go_as_summaries_and_the_prefix_is_resent_byte_for_byte(
    offloading: ProxyRig,
) -> None:
    messages = run_messages()
    first, second, third = request_ends(messages, window_of(messages))[:3]
    client = claude(offloading, "cc-offload")

    said = send(client, messages[:first])  # the run's pairs are ingested; none is summarised yet
    assert offload_status(said).startswith("mild,") and ",pending=" in offload_status(said)
    assert last(offloading).json["messages"] == marked(messages[:first])
    drain(offloading)

    said = send(client, messages[:second])
    status = offload_status(said)
    assert status.startswith("mild,") and "pending" not in status, status
    before, after = (int(n) for n in re.search(r"tokens=(\d+)/(\d+)", status).groups())  # type: ignore[union-attr]
    assert after < before
    sent = last(offloading)
    upstream = sent.json["messages"]
    assert pairing_errors(upstream, "anthropic") == []
    assert STAND_IN in compact(upstream).decode()
    assert upstream[-1] == marked(messages[:second])[-1]  # the newest message as the client sent it
    assert upstream[0] == messages[0]  # the conversation's opening
    assert breakpoint_count(sent.json) <= breakpoint_count({"s": SYSTEM, "m": marked(messages[:second])})
    assert "<memhub_offload_tools>" in system_text(sent)

    said = send(client, messages[:third])
    assert offload_status(said).startswith("prefix,"), said
    resent = last(offloading).json["messages"]
    assert compact(resent[: len(upstream)]) == compact(upstream)  # what the provider cached, byte for byte
    assert resent[len(upstream) :] == marked(messages[:third])[second:]
    assert pairing_errors(resent, "anthropic") == []


def test_the_read_tool_in_the_system_prompt_returns_a_replaced_result_in_full(offloading: ProxyRig) -> None:
    messages = run_messages()
    first, second = request_ends(messages, window_of(messages))[:2]
    client = claude(offloading, "cc-read")
    send(client, messages[:first])
    drain(offloading)
    send(client, messages[:second])
    sent = last(offloading)
    token = TOKEN.search(system_text(sent))
    assert token is not None
    originals = result_texts(messages)
    compacted = result_texts(sent.json["messages"])
    replaced = [call_id for call_id, text in compacted.items() if text.startswith(STAND_IN)]
    assert replaced
    bridge = f"{offloading.url}/memory-bridge/v3/offload/read-ref"
    with httpx.Client(headers={"x-memhub-session": token.group(1)}) as http:
        for call_id in replaced:
            ref = REF.search(compacted[call_id])
            assert ref is not None
            response = http.post(bridge, json={"result_ref": ref.group(1), "max_tokens": 4096})
            assert response.status_code == 200, response.text
            data = response.json()["data"]
            assert originals[call_id].startswith(data["content"]) and data["content"]
            if not data["truncated"]:
                assert data["content"] == originals[call_id]
        missing = http.post(bridge, json={"result_ref": "offload/cc-read/refs/nope.md"})
        assert missing.status_code == 404
        other_session = http.post(bridge, json={"result_ref": REF.search(compacted[replaced[0]]).group(1),  # type: ignore[union-attr]
                                                "session_id": "another-session"})  # fmt: skip
        assert other_session.status_code == 404
    assert httpx.post(bridge, json={"result_ref": "x"}).status_code == 401  # no token, no read


def test_offload_is_off_by_default_and_stores_nothing(make_rig: Callable[..., ProxyRig]) -> None:
    messages = run_messages()
    window = window_of(messages)
    rig = make_rig(real=True, proxy_offload_context_window=window)
    end = request_ends(messages, window)[1]
    said = send(claude(rig, "cc-off"), messages[:end])
    assert "offload" not in said
    sent = last(rig)
    assert sent.json["messages"] == marked(messages[:end])
    assert "<memhub_offload_tools>" not in system_text(sent)
    assert rig.hub.store.offload.counts(SPACE).get("pairs", 0) == 0


def test_a_request_header_turns_offload_on_or_off_and_any_other_value_is_refused(
    make_rig: Callable[..., ProxyRig],
) -> None:
    messages = run_messages()
    window = window_of(messages)
    rig = make_rig(real=True, proxy_offload_context_window=window, **STAGES_NOW)
    first, second = request_ends(messages, window)[:2]
    on = claude(rig, "cc-header", **{"x-memhub-offload": "on"})
    send(on, messages[:first])
    drain(rig)
    assert offload_status(send(on, messages[:second])).startswith("mild,")
    assert STAND_IN in compact(last(rig).json["messages"]).decode()

    off = claude(make_rig(real=True, proxy_offload=True, proxy_offload_context_window=window), "cc-h2",
                 **{"x-memhub-offload": "OFF"})  # fmt: skip
    assert "offload" not in send(off, messages[:second])

    count = len(rig.upstream.turns(MESSAGES))
    with pytest.raises(anthropic.BadRequestError) as refused:
        send(claude(rig, "cc-header", **{"x-memhub-offload": "sometimes"}), messages[:second])
    assert "x-memhub-offload: must be on or off" in str(refused.value)
    assert len(rig.upstream.turns(MESSAGES)) == count  # nothing forwarded


def test_an_agents_metadata_turns_offload_on_for_its_sessions(make_rig: Callable[..., ProxyRig]) -> None:
    messages = run_messages()
    window = window_of(messages)
    rig = make_rig(real=True, proxy_offload_context_window=window, **STAGES_NOW)
    update = {"agent_id": rig.agent_id, "metadata_json": json.dumps({"memhub": {"offload": "on"}, "team": "x"})}
    headers = {"authorization": f"Bearer {rig.user_key}", "x-tdai-service-id": SPACE}
    response = httpx.post(f"{rig.url}/v3/meta/agent/update", json=update, headers=headers)
    assert response.status_code == 200 and response.json()["code"] == 0, response.text
    first, second = request_ends(messages, window)[:2]
    client = claude(rig, "cc-agent")
    send(client, messages[:first])
    drain(rig)
    assert offload_status(send(client, messages[:second])).startswith("mild,")
    assert "<memhub_offload_tools>" in system_text(last(rig))


def test_a_failing_offload_forwards_the_callers_messages(offloading: ProxyRig, monkeypatch: pytest.MonkeyPatch) -> None:
    messages = run_messages()
    end = request_ends(messages, window_of(messages))[1]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the offload store broke")

    monkeypatch.setattr(offloading.hub.offload, "compact", broken)
    said = send(claude(offloading, "cc-broken"), messages[:end])
    assert offload_status(said) == "error"
    sent = last(offloading)
    assert sent.json["messages"] == marked(messages[:end])
    assert "<memhub_offload_tools>" in system_text(sent)  # the session's prompt stays as it will be


def test_a_slow_offload_lets_the_request_go_on_uncompacted(
    make_rig: Callable[..., ProxyRig], monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = run_messages()
    window = window_of(messages)
    rig = make_rig(real=True, proxy_offload=True, proxy_offload_context_window=window, proxy_offload_timeout_ms=10)
    end = request_ends(messages, window)[1]
    release = threading.Event()
    original = rig.hub.offload.compact

    def stalled(*args: Any, **kwargs: Any) -> Any:
        release.wait()  # until the test has its answer: the deadline passes whatever the machine's speed
        return original(*args, **kwargs)

    monkeypatch.setattr(rig.hub.offload, "compact", stalled)
    try:
        said = send(claude(rig, "cc-slow"), messages[:end])
    finally:
        release.set()
    assert offload_status(said) == "timeout"
    assert last(rig).json["messages"] == marked(messages[:end])


@pytest.mark.parametrize("style", ["openai", "responses"])
def test_openai_chat_and_responses_requests_are_compacted_alike(make_rig: Callable[..., ProxyRig], style: str) -> None:
    messages = run_messages(style)
    window = window_of(messages)
    rig = make_rig(real=True, proxy_offload=True, proxy_offload_context_window=window, **STAGES_NOW)
    first, second = request_ends(messages, window)[:2]
    field, path = ("messages", "chat/completions") if style == "openai" else ("input", "responses")
    headers = {"authorization": f"Bearer {rig.user_key}", "x-session-id": f"s-{style}"}
    with httpx.Client(base_url=rig.base(agent="codex"), headers=headers, timeout=60) as http:
        for end in (first, second):
            response = http.post(f"/{path}", json={"model": "gpt-5", field: messages[:end]})
            assert response.status_code == 200, response.text
            if end == first:
                drain(rig)
    status = offload_status(response.headers["x-memhub-memory"])
    assert status.startswith("mild,"), status
    upstream = last(rig, f"/v1/{path}").json[field]
    assert pairing_errors(upstream, style) == []
    assert STAND_IN in compact(upstream).decode()
    # The system (developer) message is never compacted: the proxy's blocks join it, after the client's text.
    assert upstream[0]["role"] == messages[0]["role"]
    assert json.dumps(upstream[0]).count(messages[0]["content"]) == 1
    assert upstream[-1] == messages[second - 1]


def test_the_gateway_keys_bridge_and_data_plane_agree_on_the_sessions_state(offloading: ProxyRig) -> None:
    """What the proxy ingested is the user's offload state: `/v2/offload/query-mmd` shows its task graph."""
    messages = run_messages()
    first = request_ends(messages, window_of(messages))[0]
    send(claude(offloading, "cc-shared"), messages[:first])
    drain(offloading)
    caller = offloading.hub.meta.users.authenticate(SPACE, offloading.user_key)
    assert caller is not None
    body = {"session_id": "cc-shared", "team_id": offloading.team_id, "agent_id": offloading.agent_id,
            "user_id": caller.user_id}  # fmt: skip
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SPACE}
    data = httpx.post(f"{offloading.url}/v2/offload/query-mmd", json=body, headers=headers).json()["data"]
    assert data["currentMmd"] and data["mmds"] and "flowchart TD" in data["mmds"][0]["content"]
