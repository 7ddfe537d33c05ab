"""The proxy as `memhub serve` builds it (identity from the user key, the hub's injector) in front of a fake
upstream, driven by the real clients: where the blocks land, a prefix that stays byte-identical turn after turn,
forks and side queries, capture to L0, `mem:` commands and a store failing mid-turn."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from memhub.proxy.capture import BackgroundCapture
from memhub.store.sqlite.store import DB_FILENAME
from tests.conftest import GATEWAY_KEY
from tests.proxy.conftest import SPACE, ProxyRig
from tests.proxy.fake_upstream import Reply

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
    assert raw.headers["x-memhub-memory"] == "injected; recall=none"  # per-turn recall found nothing yet
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
    # Per-turn recall off: whether turn 1 is captured before turn 2 recalls is a race, and recall's own placement
    # (never in the system prompt) is tested in test_turn_recall.py.
    client = claude(real).with_options(default_headers={"x-claude-code-session-id": "cc-1", "x-memhub-recall": "off"})
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


WAIT = 600.0  # a bound for a busy machine, never a measure of speed


def capture_of(rig: ProxyRig) -> BackgroundCapture:
    assert rig.hub.proxy is not None and isinstance(rig.hub.proxy.capture, BackgroundCapture)
    return rig.hub.proxy.capture


def l0(rig: ProxyRig, session: str) -> list[dict[str, Any]]:
    """The session's L0 messages, read through the gateway's own data plane."""
    scope = {"team_id": rig.team_id, "agent_id": rig.agent_id, "session_id": session, "limit": 100}
    admin = rig.hub.meta.users.authenticate(SPACE, rig.user_key)
    assert admin is not None
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SPACE}
    response = httpx.post(f"{rig.url}/v3/conversation/query", json={**scope, "user_id": admin.user_id}, headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["data"]["messages"])


def test_a_main_turn_lands_in_l0_after_the_response_and_a_side_query_does_not(real: ProxyRig) -> None:
    real.upstream.script(Reply(text="A title"), Reply(text="Use uv.", tool_calls=[("c1", "Bash", {"cmd": "uv"})]))
    client = claude(real, session="cap-1")
    client.messages.create(
        model="m", max_tokens=10, thinking={"type": "disabled"}, messages=[user("Title for: packaging")]
    )
    with client.messages.stream(
        model="m",
        max_tokens=10,
        system=CLAUDE_SYSTEM,
        messages=[user("How do we package?", marker=True)],  # type: ignore[arg-type]
    ) as stream:
        assert stream.get_final_text() == "Use uv."
    assert capture_of(real).drain(WAIT)
    messages = l0(real, "cap-1")
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "How do we package?"  # the injected blocks are not part of it
    assert "Use uv." in messages[1]["content"] and "Bash" in json.dumps(messages[1])


def test_the_same_words_in_a_later_turn_are_captured_again(real: ProxyRig) -> None:
    real.upstream.script(Reply(text="Done."), Reply(text="Done."), Reply(text="Done."))
    client = claude(real, session="cap-2")
    first = [user("yes", marker=True)]
    later = [user("yes"), {"role": "assistant", "content": "Done."}, user("yes", marker=True)]
    for messages in (first, first, later):  # the first request is sent twice, as a client's retry would
        client.messages.create(model="m", max_tokens=10, system=CLAUDE_SYSTEM, messages=messages)  # type: ignore[arg-type]
    assert capture_of(real).drain(WAIT)
    assert [m["content"] for m in l0(real, "cap-2")] == ["yes", "Done.", "yes", "Done."]


def test_mem_commands_are_answered_by_memhub_streamed_or_not(real: ProxyRig) -> None:
    client = claude(real, session="cmd-1")
    help_reply = client.messages.create(model="m", max_tokens=10, messages=[user("mem:help")])
    assert "mem:sync" in help_reply.content[0].text  # type: ignore[union-attr]
    with client.messages.stream(model="m", max_tokens=10, messages=[user("mem:sync")]) as stream:
        assert "refreshed" in stream.get_final_text()
    codex = openai.OpenAI(api_key=real.user_key, base_url=real.base("codex"), max_retries=0)
    with codex.responses.stream(model="m", input="mem:help") as events:
        assert "mem:create-skill" in events.get_final_response().output_text
    assert not real.upstream.requests
    assert capture_of(real).drain(WAIT)
    assert l0(real, "cmd-1") == []


def test_a_store_failing_mid_turn_does_not_fail_the_turn(make_rig: Callable[..., ProxyRig]) -> None:
    rig = make_rig(real=True, db_busy_timeout_ms=50)
    client = claude(rig, session="locked-1")
    # Another writer holds the database: every memhub write gives up after 50 ms while the turn goes on.
    lock = sqlite3.connect(rig.hub.settings.data_dir / DB_FILENAME, isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN IMMEDIATE")
    try:
        reply = client.messages.create(model="m", max_tokens=10, messages=[user("remember: tabs", marker=True)])
        assert reply.content[0].text == "ok from upstream"  # type: ignore[union-attr]
        with client.messages.stream(model="m", max_tokens=10, messages=[user("and spaces?", marker=True)]) as s:
            assert s.get_final_text() == "ok from upstream"
        assert l0(rig, "locked-1") == []  # nothing could be written while the other writer held the database
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert capture_of(rig).drain(WAIT)  # the capture retried once the writer let go
    assert [m["content"] for m in l0(rig, "locked-1")] == [
        "remember: tabs", "ok from upstream", "and spaces?", "ok from upstream"
    ]  # fmt: skip
