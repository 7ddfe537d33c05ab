"""Message formats: tool calls, results and units in OpenAI Chat, Anthropic, OpenClaw and OpenAI Responses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from memhub.offload import messages as fmt
from memhub.offload.messages import Unit

from .conversations import FORMATS, claude_code_session, pairing_errors, render, result_texts

OPENAI = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the repo."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "call_b", "type": "function", "function": {"name": "cat", "arguments": '{"path": "README"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "README\nsrc"},
    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "# memhub"}]},
    {"role": "assistant", "content": "Two entries."},
]

ANTHROPIC = [
    {"role": "user", "content": "Find the bug."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {"pattern": "drop"}},
            {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/r/a.py"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py:3: drop()", "is_error": False},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "1\tdef drop():"}],
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": "Also check b.py."},
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
]

OPENCLAW = [
    {"role": "user", "content": [{"type": "text", "text": "Run it."}], "timestamp": 1},
    {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "call_x", "name": "exec", "arguments": {"cmd": "ls"}}],
    },
    {"role": "toolResult", "toolCallId": "call_x", "toolName": "exec", "content": [{"type": "text", "text": "ok"}]},
]
OPENCLAW_WRAPPED = [{"type": "message", "id": f"e{n}", "message": message} for n, message in enumerate(OPENCLAW)]

RESPONSES = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "What is in src?"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "call_id": "fc_1", "name": "shell", "arguments": '{"cmd": "ls src"}'},
    {"type": "function_call", "call_id": "fc_2", "name": "shell", "arguments": '{"cmd": "ls tests"}'},
    {"type": "function_call_output", "call_id": "fc_1", "output": "memhub"},
    {"type": "custom_tool_call", "call_id": "ct_1", "name": "apply_patch", "input": "*** Begin Patch"},
    {"type": "function_call_output", "call_id": "fc_2", "output": [{"type": "input_text", "text": "offload"}]},
    {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "applied"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "memhub and offload."}]},
]


def test_openai_calls_results_and_units() -> None:
    assert fmt.call_ids(OPENAI[2]) == ["call_a", "call_b"]
    assert fmt.result_ids(OPENAI[3]) == ["call_a"]
    assert fmt.result_text(OPENAI[4], "call_b") == "# memhub"
    assert fmt.units(OPENAI) == [
        Unit(0, 1, (), ()),
        Unit(1, 2, (), ()),
        Unit(2, 5, ("call_a", "call_b"), ("call_a", "call_b")),
        Unit(5, 6, (), ()),
    ]


def test_anthropic_one_user_message_carries_several_results_and_text() -> None:
    assert fmt.call_ids(ANTHROPIC[1]) == ["toolu_1", "toolu_2"]
    assert fmt.result_ids(ANTHROPIC[2]) == ["toolu_1", "toolu_2"]
    assert fmt.result_text(ANTHROPIC[2], "toolu_1") == "a.py:3: drop()"
    assert fmt.result_text(ANTHROPIC[2], "toolu_2") == "1\tdef drop():"
    assert fmt.result_text(ANTHROPIC[2], "toolu_9") is None
    assert fmt.has_user_text(ANTHROPIC[2])
    assert [(unit.start, unit.stop) for unit in fmt.units(ANTHROPIC)] == [(0, 1), (1, 3), (3, 4)]


def test_openclaw_bare_and_wrapped() -> None:
    for conversation in (OPENCLAW, OPENCLAW_WRAPPED):
        assert fmt.call_ids(conversation[1]) == ["call_x"]
        assert fmt.result_ids(conversation[2]) == ["call_x"]
        assert fmt.result_text(conversation[2], "call_x") == "ok"
        assert fmt.role(conversation[0]) == "user"
        assert [(unit.start, unit.stop) for unit in fmt.units(conversation)] == [(0, 1), (1, 3)]


def test_responses_items_without_role_pair_by_call_id_and_reasoning_joins_its_call() -> None:
    assert fmt.role(RESPONSES[3]) is None
    assert fmt.call_ids(RESPONSES[3]) == ["fc_1"]
    assert fmt.result_ids(RESPONSES[8]) == ["ct_1"]
    assert fmt.result_text(RESPONSES[7], "fc_2") == "offload"
    assert fmt.is_instruction(RESPONSES[0])
    grouped = fmt.units(RESPONSES)
    assert [(unit.start, unit.stop) for unit in grouped] == [(0, 1), (1, 2), (2, 9), (9, 10)]
    assert grouped[2].call_ids == ("fc_1", "fc_2", "ct_1")


@pytest.mark.parametrize(
    ("conversation", "index", "call_id"),
    [
        (OPENAI, 3, "call_a"),
        (OPENAI, 4, "call_b"),
        (ANTHROPIC, 2, "toolu_2"),
        (OPENCLAW, 2, "call_x"),
        (OPENCLAW_WRAPPED, 2, "call_x"),
        (RESPONSES, 5, "fc_1"),
        (RESPONSES, 7, "fc_2"),
        (RESPONSES, 8, "ct_1"),
    ],
)
def test_a_result_is_replaced_in_its_own_format_without_touching_the_input(
    conversation: list[dict[str, Any]], index: int, call_id: str
) -> None:
    before = copy.deepcopy(conversation)
    changed = fmt.with_result_text(conversation[index], call_id, "[summary]")
    assert conversation == before
    assert fmt.result_text(changed, call_id) == "[summary]"
    assert fmt.result_ids(changed) == fmt.result_ids(conversation[index])
    replaced = [*conversation[:index], changed, *conversation[index + 1 :]]
    assert fmt.units(replaced) == fmt.units(conversation)


def test_a_replaced_block_keeps_its_flags_and_the_other_blocks() -> None:
    changed = fmt.with_result_text(ANTHROPIC[2], "toolu_2", "[summary]")
    assert changed["content"][0] == ANTHROPIC[2]["content"][0]
    assert changed["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": [{"type": "text", "text": "[summary]"}],
        "cache_control": {"type": "ephemeral"},
    }
    assert changed["content"][2] == {"type": "text", "text": "Also check b.py."}


def test_replacing_a_result_the_message_does_not_carry_is_an_error() -> None:
    with pytest.raises(KeyError):
        fmt.with_result_text(OPENAI[3], "call_b", "x")
    with pytest.raises(KeyError):
        fmt.with_result_text(ANTHROPIC[2], "toolu_9", "x")


def test_user_text_is_what_the_user_wrote() -> None:
    assert fmt.has_user_text({"role": "user", "content": "hi"})
    assert fmt.has_user_text({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    assert not fmt.has_user_text(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
    )
    assert not fmt.has_user_text({"role": "user", "content": "<system-reminder>Todo list is empty</system-reminder>"})
    assert not fmt.has_user_text({"role": "user", "content": "   "})
    assert not fmt.has_user_text({"role": "assistant", "content": "hi"})


def test_a_new_user_message_takes_the_shape_of_the_conversations() -> None:
    assert fmt.user_message_like({"role": "user", "content": "x"}, "t") == {"role": "user", "content": "t"}
    assert fmt.user_message_like(OPENCLAW_WRAPPED[0], "t") == {
        "type": "message",
        "message": {"role": "user", "content": "t"},
    }
    responses_user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
    assert fmt.user_message_like(responses_user, "t") == {"type": "message", "role": "user", "content": "t"}
    assert fmt.user_message_like(None, "t") == {"role": "user", "content": "t"}


@pytest.mark.parametrize("style", FORMATS)
def test_units_cover_every_message_once_and_hold_every_pair(style: str) -> None:
    conversation = render(claude_code_session(prompts=2, rounds=4), style)
    grouped = fmt.units(conversation)
    assert [index for unit in grouped for index in range(unit.start, unit.stop)] == list(range(len(conversation)))
    for unit in grouped:
        assert sorted(unit.call_ids) == sorted(unit.result_ids)
        assert not pairing_errors(conversation[unit.start : unit.stop], style)
    texts = result_texts(conversation)
    for message in conversation:
        for call_id in fmt.result_ids(message):
            assert fmt.result_text(message, call_id) == texts[call_id]
