"""The proxy's offload parts on their own: the tool pairs read from each message format, the compacted prefix and
its cache breakpoints, the models' windows, an agent's switch, and a restart that forgets the remembered prefix
and compacts the session the same way again from what the store kept."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from memhub.offload.pairs import tool_pairs
from memhub.offload.tokens import message_tokens
from memhub.proxy.injection.injector import OFFLOAD_TOOLS
from memhub.proxy.model import Block, OffloadTurn, ProxyIdentity
from memhub.proxy.offload import ProxyOffloadConfig, ProxyOffloader
from memhub.proxy.offload.prefix import (
    BREAKPOINT,
    CompactedPrefix,
    breakpoint_count,
    breakpoint_in,
    history_digest,
    with_prefix_breakpoint,
    without_breakpoints,
)
from memhub.proxy.offload.switch import metadata_switch
from memhub.proxy.offload.windows import DEFAULT_CONTEXT_WINDOW, LONG_CONTEXT_WINDOW, context_window
from tests.offload.conversations import FORMATS, claude_code_session, render, result_texts
from tests.proxy.conftest import SPACE, ProxyRig
from tests.proxy.test_offload import STAGES_NOW, STAND_IN, request_ends, window_of

MARK = {"type": "ephemeral"}


def read_tool(identity: ProxyIdentity) -> Block | None:
    return OFFLOAD_TOOLS.block("<memhub_offload_tools>read it back</memhub_offload_tools>")


# -- tool pairs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", FORMATS)
def test_every_answered_call_is_a_pair_in_every_format(style: str) -> None:
    session = claude_code_session(prompts=1, rounds=4, seed=3)
    messages = render(session, style)
    found = {p.tool_call_id: p for p in tool_pairs(messages)}
    assert list(found) == [c.call_id for c in session.calls]
    for call in session.calls:
        pair = found[call.call_id]
        assert (pair.tool_name, pair.params, pair.result, pair.is_error) == (call.tool, call.params, call.output, False)


def test_a_call_waiting_for_its_result_and_a_result_without_its_call_are_not_pairs() -> None:
    messages = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "orphan", "content": "x"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no", "is_error": True}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]},
    ]
    [pair] = tool_pairs(messages)
    assert (pair.tool_call_id, pair.result, pair.is_error) == ("t1", "no", True)


def test_arguments_that_are_not_json_are_kept_as_sent() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "sh", "arguments": "ls -la {"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "total 0"},
    ]
    assert tool_pairs(messages)[0].params == "ls -la {"


# -- the prefix and its breakpoints ------------------------------------------------------------------------


def history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "fix it", BREAKPOINT: MARK}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]},
        {"role": "user", "content": "go on"},
    ]


def test_breakpoints_do_not_change_what_a_history_is() -> None:
    sent = history()
    plain = [without_breakpoints(m) for m in sent]
    assert history_digest(sent) == history_digest(plain)
    assert breakpoint_count(plain) == 0 and breakpoint_count(sent) == 1
    assert sent[0]["content"][0][BREAKPOINT] == MARK  # the input is left as it was


def test_the_prefix_ends_with_one_breakpoint_on_a_block_that_takes_one() -> None:
    marked = with_prefix_breakpoint(history(), MARK)
    assert breakpoint_count(marked) == 1
    assert marked[-1]["content"] == [{"type": "text", "text": "go on", BREAKPOINT: MARK}]
    thinking_last = with_prefix_breakpoint(history()[:2], MARK)
    assert BREAKPOINT in thinking_last[0]["content"][0]  # never on a thinking block: the block before it
    assert BREAKPOINT not in thinking_last[1]["content"][0]


def test_a_resent_prefix_never_carries_more_breakpoints_than_the_client_sent() -> None:
    compacted = tuple(without_breakpoints(m) for m in history())
    prefix = CompactedPrefix(3, history_digest(history()), compacted, MARK, 10, "mild")
    newer = [*history(), {"role": "assistant", "content": "ok"}, {"role": "user", "content": [
        {"type": "text", "text": "next", BREAKPOINT: MARK}]}]  # fmt: skip
    newer[0] = without_breakpoints(newer[0])  # the client moved its breakpoint to the newest message
    assert prefix.matches(newer)
    spare = prefix.resend(newer, breakpoints_sent=2)
    assert breakpoint_count(spare) == 2 and BREAKPOINT in spare[2]["content"][0]
    full = prefix.resend(newer, breakpoints_sent=4)
    assert breakpoint_count(full) == 1  # the client's own four: the prefix goes unmarked
    assert not prefix.matches([{"role": "user", "content": "another conversation"}, *newer[1:]])
    assert breakpoint_in(newer) == MARK


# -- windows and switches ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "headers", "window"),
    [
        ("claude-sonnet-4-5-20250929", {}, 200_000),
        ("us.anthropic.claude-sonnet-4-5-v1:0", {}, 200_000),
        ("anthropic/claude-3.5-sonnet", {}, 200_000),
        ("claude-sonnet-4-5", {"anthropic-beta": "context-1m-2025-08-07,other"}, LONG_CONTEXT_WINDOW),
        ("gpt-4o-mini", {}, 128_000),
        ("gpt-4", {}, 8_192),
        ("gpt-5-codex", {}, 400_000),
        ("some-local-model", {}, DEFAULT_CONTEXT_WINDOW),
        (None, {}, DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_a_models_window(model: Any, headers: dict[str, str], window: int) -> None:
    assert context_window(model, headers) == window
    assert context_window(model, headers, override=5000) == 5000


@pytest.mark.parametrize(
    ("metadata", "switch"),
    [
        ('{"memhub": {"offload": "on"}}', True),
        ('{"memhub": {"offload": "off"}, "other": 1}', False),
        ('{"memhub": {}}', None),
        ("{}", None),
        ("[1]", None),
        ("not json", None),
        (None, None),
    ],
)
def test_an_agents_metadata_switch(metadata: Any, switch: bool | None) -> None:
    assert metadata_switch(metadata) is switch


# -- a restart ------------------------------------------------------------------------------------------------


def test_after_a_restart_the_first_compaction_sends_what_the_old_process_sent(
    make_rig: Callable[..., ProxyRig],
) -> None:
    messages = render(claude_code_session(prompts=2, rounds=6, seed=11), "anthropic", system=None)
    window = window_of(messages)
    rig = make_rig(real=True, **STAGES_NOW)
    caller = rig.hub.meta.users.authenticate(SPACE, rig.user_key)
    assert caller is not None
    identity = ProxyIdentity(SPACE, caller.user_id or "", caller.key_id, "restart", team_id=rig.team_id,
                             agent_id=rig.agent_id)  # fmt: skip
    first, second, third = request_ends(messages, window)[:3]

    def process() -> ProxyOffloader:
        return ProxyOffloader(
            rig.hub.offload, ProxyOffloadConfig(enabled=True), agent_switch=lambda _: None, tools_block=read_tool
        )

    def turn(end: int) -> OffloadTurn:
        size = sum(len(str(m)) for m in messages[:end])
        return OffloadTurn(messages[:end], (), window, size, 0)

    old = process()
    asyncio.run(old.offload(identity, turn(first), None))
    assert rig.hub.worker is not None
    rig.hub.worker.drain()
    sent = asyncio.run(old.offload(identity, turn(second), None))
    assert sent.messages is not None and sent.status.startswith("mild,")
    kept = asyncio.run(old.offload(identity, turn(third), None))
    assert kept.status.startswith("prefix,")
    old.close()

    new = process()  # nothing remembered: the store's decisions are re-applied
    again = asyncio.run(new.offload(identity, turn(third), None))
    assert again.messages is not None and not again.status.startswith("prefix")
    before, after = result_texts(sent.messages), result_texts(again.messages)
    replaced = {call_id: text for call_id, text in before.items() if text.startswith(STAND_IN)}
    assert replaced and all(after[call_id] == text for call_id, text in replaced.items())
    assert sum(message_tokens(m) for m in again.messages) < sum(message_tokens(m) for m in messages[:third])
    new.close()


def test_without_its_read_tool_nothing_is_taken_out_of_a_request(make_rig: Callable[..., ProxyRig]) -> None:
    messages = render(claude_code_session(prompts=2, rounds=6, seed=11), "anthropic", system=None)
    window = window_of(messages)
    rig = make_rig(real=True, **STAGES_NOW)
    caller = rig.hub.meta.users.authenticate(SPACE, rig.user_key)
    assert caller is not None
    identity = ProxyIdentity(SPACE, caller.user_id or "", None, "no-token", team_id=rig.team_id, agent_id=rig.agent_id)

    def unrenderable(identity: ProxyIdentity) -> Any:
        raise ValueError("identity.key_id: a token must name the user key it stands for")

    offloader = ProxyOffloader(
        rig.hub.offload, ProxyOffloadConfig(enabled=True), agent_switch=lambda _: None, tools_block=unrenderable
    )
    end = request_ends(messages, window)[1]
    turn = OffloadTurn(messages[:end], (), window, sum(len(str(m)) for m in messages[:end]), 0)
    asyncio.run(offloader.offload(identity, turn, None))
    assert rig.hub.worker is not None
    rig.hub.worker.drain()
    outcome = asyncio.run(offloader.offload(identity, turn, None))
    assert (outcome.on, outcome.messages, outcome.status, outcome.block) == (True, None, "error", None)
    offloader.close()
