"""The protocol adapters, the SSE reader and the request classifier on their own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memhub.proxy.classify import classify
from memhub.proxy.model import ChatTurn, RequestKind, WireProtocol
from memhub.proxy.protocols import adapter_for
from memhub.proxy.protocols.sse import SseDecoder, SseEvent
from tests.proxy.conftest import BLOCK, FixedInjector
from tests.proxy.fake_upstream import Reply, chat, messages, responses

STREAM = b'event: a\r\ndata: {"x": 1}\r\n\r\n: comment\ndata: line one\ndata: line two\n\nevent: b\rdata: [DONE]\r\r'


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_sse_events_are_read_whatever_the_chunk_boundaries(size: int) -> None:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for start in range(0, len(STREAM), size):
        events += decoder.feed(STREAM[start : start + size])
    events += decoder.close()
    assert events == [SseEvent("a", '{"x": 1}'), SseEvent("", "line one\nline two"), SseEvent("b", "[DONE]")]


def test_a_last_event_without_its_blank_line_is_read_at_the_end() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: tail") == []
    assert decoder.close() == [SseEvent("", "tail")]


@pytest.mark.parametrize(
    ("protocol", "speak"),
    [(WireProtocol.OPENAI_CHAT, chat), (WireProtocol.ANTHROPIC, messages), (WireProtocol.RESPONSES, responses)],
)
def test_the_tap_and_the_parser_read_the_same_answer(protocol: WireProtocol, speak: Any) -> None:
    adapter = adapter_for(protocol)
    whole, events = speak({"model": "m"}, Reply(text="héllo wörld", tool_calls=[("c1", "f", {"a": [1, 2]})]))
    tap = adapter.tap()
    joined = b"".join(events)
    for i in range(0, len(joined), 5):  # cut mid-character and mid-event
        tap.feed(joined[i : i + 5])
    streamed, parsed = tap.finish(), adapter.parse(json.dumps(whole).encode())
    for output in (streamed, parsed):
        assert output.text == "héllo wörld" and output.complete
        assert [(c.id, c.name, json.loads(c.arguments)) for c in output.tool_calls] == [("c1", "f", {"a": [1, 2]})]
        assert output.usage


def test_a_stream_cut_short_is_not_complete() -> None:
    adapter = adapter_for(WireProtocol.ANTHROPIC)
    _, events = messages({"model": "m"}, Reply(text="abc"))
    tap = adapter.tap()
    for event in events[:-2]:
        tap.feed(event)
    assert not tap.finish().complete


def test_anthropic_without_a_system_prompt_gets_one_and_blocks_keep_their_markers() -> None:
    adapter, injector = adapter_for(WireProtocol.ANTHROPIC), FixedInjector()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert adapter.inject(body, [BLOCK], injector, "claude-code")["system"] == BLOCK.text
    assert "system" not in body  # the caller's body is never changed
    marked = {**body, "system": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}
    system = adapter.inject(marked, [BLOCK], injector, "claude-code")["system"]
    assert system == [{"type": "text", "text": f"a\n\n{BLOCK.text}", "cache_control": {"type": "ephemeral"}}]


def test_openai_developer_messages_and_part_lists_take_the_blocks() -> None:
    adapter, injector = adapter_for(WireProtocol.OPENAI_CHAT), FixedInjector()
    body = {
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
        ]
    }
    out = adapter.inject(body, [BLOCK], injector, "codebuddy")
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "x"},
        {"type": "text", "text": f"y\n\n{BLOCK.text}"},
    ]
    assert adapter.last_user_text(out) == "q"


def test_responses_with_a_string_input_gets_a_developer_item() -> None:
    adapter, injector = adapter_for(WireProtocol.RESPONSES), FixedInjector()
    out = adapter.inject({"input": "fix it"}, [BLOCK], injector, "codex")
    developer, _ = out["input"]
    assert developer["role"] == "developer"
    assert developer["content"] == [
        {"type": "input_text", "text": f"<tdai_injections>\n{BLOCK.text}\n</tdai_injections>"}
    ]
    assert adapter.last_user_text(out) == "fix it"


def test_a_tool_result_is_not_a_user_text() -> None:
    adapter = adapter_for(WireProtocol.ANTHROPIC)
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "42"}]}
    assert adapter.last_user_text({"messages": [result]}) is None
    assert (
        adapter_for(WireProtocol.OPENAI_CHAT).last_user_text({"messages": [{"role": "tool", "content": "4"}]}) is None
    )


def test_the_fallback_session_is_stable_across_turns_and_reads_claude_codes_metadata() -> None:
    adapter = adapter_for(WireProtocol.OPENAI_CHAT)
    first = {"model": "m", "messages": [{"role": "user", "content": "plan"}]}
    later = {"model": "m", "messages": [*first["messages"], {"role": "assistant", "content": "ok"}]}
    assert adapter.fallback_session(first) == adapter.fallback_session(later)
    assert adapter.fallback_session(first) != adapter.fallback_session({**first, "model": "other"})
    meta = {"metadata": {"user_id": "user_ab12_account_x_session_0f9e8d7c-1111-2222-3333-444455556666"}}
    assert adapter_for(WireProtocol.ANTHROPIC).fallback_session(meta) == "0f9e8d7c-1111-2222-3333-444455556666"


def _marked(role: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}]}


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"messages": [_marked("user")]}, RequestKind.MAIN),
        ({"messages": [{"role": "user", "content": "a"}, _marked("assistant"), {"role": "user", "content": "b"}]},
         RequestKind.FORK),
        ({"messages": [{"role": "user", "content": "a"}], "thinking": {"type": "disabled"}}, RequestKind.SIDE_QUERY),
        ({"messages": [{"role": "user", "content": "a"}], "thinking": {"type": "disabled"}, "tools": [{"name": "t"}]},
         RequestKind.MAIN),
        ({"messages": [{"role": "user", "content": "a"}]}, RequestKind.MAIN),
        ({"messages": "not a list"}, RequestKind.MAIN),
    ],
)  # fmt: skip
def test_claude_code_requests_are_classified_by_their_cache_marker(body: dict[str, Any], kind: RequestKind) -> None:
    assert classify(WireProtocol.ANTHROPIC, "claude-code", body, {}) is kind


def test_deepseek_harness_compaction_and_titles() -> None:
    title = {
        "messages": [{"role": "system", "content": "Create a concise title for an AI coding-assistant session: x"}],
        "thinking": {"type": "disabled"},
        "max_tokens": 64,
    }
    assert classify(WireProtocol.OPENAI_CHAT, "dsh", title, {}) is RequestKind.SIDE_QUERY
    assert classify(WireProtocol.OPENAI_CHAT, "dsh", {}, {"x-deepseek-harness-compact": "1"}) is RequestKind.AUXILIARY
    assert classify(WireProtocol.OPENAI_CHAT, "dsh", {**title, "max_tokens": 4096}, {}) is RequestKind.MAIN


RECALLED = "<relevant-memories>\n- [memory] likes tea\n</relevant-memories>"
BODIES: list[tuple[WireProtocol, dict[str, Any]]] = [
    (WireProtocol.OPENAI_CHAT, {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]}),
    (
        WireProtocol.OPENAI_CHAT,
        {
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ]
        },
    ),
    (WireProtocol.OPENAI_CHAT, {"messages": [{"role": "user", "content": "hi"}]}),
    (
        WireProtocol.ANTHROPIC,
        {
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        },
    ),
    (WireProtocol.ANTHROPIC, {"system": "sys", "messages": [{"role": "user", "content": "hi"}]}),
    (
        WireProtocol.RESPONSES,
        {
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ]
        },
    ),
    (WireProtocol.RESPONSES, {"input": "hi"}),
]


@pytest.mark.parametrize(("protocol", "body"), BODIES)
def test_injecting_never_changes_the_callers_body(protocol: WireProtocol, body: dict[str, Any]) -> None:
    # The injected copy shares what it did not change with the request; the request itself stays as it came.
    before = json.dumps(body)
    out = adapter_for(protocol).inject(body, [BLOCK], FixedInjector(), "claude-code", RECALLED)
    assert json.dumps(body) == before
    sent = json.dumps(out)
    assert "<tdai_memory_tools>" in sent and "likes tea" in sent and sent != before


MARK = {"type": "ephemeral"}
RECALL_PART = {"type": "text", "text": RECALLED}


@pytest.mark.parametrize(
    ("content", "placed"),
    [
        # Claude Code marks the last part of the last message: the recall goes after that breakpoint.
        (
            [{"type": "text", "text": "<system-reminder>r</system-reminder>"},
             {"type": "text", "text": "hi", "cache_control": MARK}],
            [{"type": "text", "text": "<system-reminder>r</system-reminder>"},
             {"type": "text", "text": "hi", "cache_control": MARK}, RECALL_PART],
        ),
        # A marker before the user's text: still right after the (last) marked part.
        (
            [{"type": "text", "text": "a", "cache_control": MARK}, {"type": "text", "text": "hi"}],
            [{"type": "text", "text": "a", "cache_control": MARK}, RECALL_PART, {"type": "text", "text": "hi"}],
        ),
        # No marker: just before the user's text, after what comes before it (tool results first, as required).
        (
            [{"type": "tool_result", "tool_use_id": "t", "content": "4"}, {"type": "text", "text": "hi"},
             {"type": "image", "source": {}}],
            [{"type": "tool_result", "tool_use_id": "t", "content": "4"}, RECALL_PART, {"type": "text", "text": "hi"},
             {"type": "image", "source": {}}],
        ),
        ("hi", f"{RECALLED}\n\nhi"),
    ],
)  # fmt: skip
def test_anthropic_recall_goes_after_the_last_breakpoint_else_before_the_users_text(content: Any, placed: Any) -> None:
    history = [{"role": "user", "content": "before"}, {"role": "assistant", "content": "ok"}]
    body = {"messages": [*history, {"role": "user", "content": content}]}
    out = adapter_for(WireProtocol.ANTHROPIC).inject(body, [], FixedInjector(), "claude-code", RECALLED)
    assert out["messages"][:2] == history  # the history is the client's, object for object
    assert out["messages"][2] == {"role": "user", "content": placed}
    assert "system" not in out  # no blocks: the system prompt is not touched


def test_openai_chat_and_responses_put_recall_into_the_last_user_message_only() -> None:
    chat_adapter = adapter_for(WireProtocol.OPENAI_CHAT)
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]
    out = chat_adapter.inject(
        {"messages": [*history, {"role": "user", "content": "q"}]}, [], FixedInjector(), "x", RECALLED
    )
    assert out["messages"] == [*history, {"role": "user", "content": f"{RECALLED}\n\nq"}]
    parts = [{"type": "text", "text": "q"}, {"type": "image_url", "image_url": {"url": "u"}}]
    out = chat_adapter.inject({"messages": [{"role": "user", "content": parts}]}, [], FixedInjector(), "x", RECALLED)
    assert out["messages"][0]["content"] == [RECALL_PART, *parts]

    responses_adapter = adapter_for(WireProtocol.RESPONSES)
    earlier = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]}
    last = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
    out = responses_adapter.inject({"input": [earlier, last]}, [BLOCK], FixedInjector(), "codex", RECALLED)
    developer, first, recalled = out["input"]
    assert developer["role"] == "developer" and first == earlier
    assert recalled["content"] == [{"type": "input_text", "text": RECALLED}, {"type": "input_text", "text": "q"}]
    assert responses_adapter.inject({"input": "q"}, [], FixedInjector(), "codex", RECALLED) == {
        "input": f"{RECALLED}\n\nq"
    }


def test_recent_turns_are_the_last_user_and_assistant_texts_oldest_first() -> None:
    conversation = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "two"}, {"type": "tool_use", "id": "t"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
        {"role": "user", "content": [{"type": "text", "text": "three"}, {"type": "text", "text": "four"}]},
    ]
    turns = adapter_for(WireProtocol.ANTHROPIC).recent_turns({"messages": conversation}, 2)
    assert turns == [ChatTurn("assistant", "two"), ChatTurn("user", "three\nfour")]
    items = [
        {"type": "message", "role": "developer", "content": "d"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "function_call_output", "call_id": "c", "output": "o"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
    ]
    responses_adapter = adapter_for(WireProtocol.RESPONSES)
    assert responses_adapter.recent_turns({"input": items}, 8) == [ChatTurn("user", "q"), ChatTurn("assistant", "a")]
    assert responses_adapter.recent_turns({"input": "just this"}, 8) == [ChatTurn("user", "just this")]
