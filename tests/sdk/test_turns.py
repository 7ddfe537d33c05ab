"""From a framework's message list to capture's wire batches, as the original plugin captures: text, slicing,
cursor, restore, limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhub.sdk.agent.turns import (
    TurnMessage,
    extract_text,
    fit_to_server_limits,
    iso_utc,
    parse_timestamp,
    recent_turns,
    select_turn,
    truncate_content,
)

NOW = datetime(2026, 3, 24, 12, 0, 0, tzinfo=UTC)
T0 = datetime(2026, 3, 24, 10, 0, 0, tzinfo=UTC)
PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
RECALL = "<relevant-memories>\n- [persona] Prefers green tea\n- [episodic] Lives in Shenzhen\n</relevant-memories>\n\n"


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def msg(role: str, content: Any, minutes: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": content}
    if minutes is not None:
        out["timestamp"] = ms(at(minutes))
    return out


def texts(turn_messages: list[TurnMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in turn_messages]


# ---------------------------------------------------------------- extract_text


def test_extract_text_plain_string() -> None:
    assert extract_text("Book a table for two") == "Book a table for two"


def test_extract_text_openai_parts_with_inline_image() -> None:
    content = [
        {"type": "text", "text": "What's in this photo?"},
        {"type": "image_url", "image_url": {"url": PNG, "detail": "auto"}},
        {"type": "text", "text": "Be brief."},
    ]
    assert extract_text(content) == "What's in this photo?\n[image]\nBe brief."


def test_extract_text_image_by_http_url() -> None:
    content = [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "text", "text": "cute?"},
    ]
    assert extract_text(content) == "[image]\ncute?"


def test_extract_text_anthropic_parts() -> None:
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",", 1)[1]}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/chart.png"}},
        {"type": "text", "text": "Compare these two charts"},
    ]
    assert extract_text(content) == "[image]\n[image]\nCompare these two charts"


def test_extract_text_ignores_tool_and_unknown_parts() -> None:
    content = [
        {"type": "thinking", "thinking": "the user wants the weather"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Beijing"}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
        {"type": "hologram", "text": "?"},
        {"type": "text", "text": None},
        42,
    ]
    assert extract_text(content) == "Let me check."


def test_extract_text_replaces_data_uris_inside_text() -> None:
    assert extract_text(f"see {PNG} and tell me") == "see [image] and tell me"
    assert extract_text([{"type": "text", "text": f"logo:{PNG}"}]) == "logo:[image]"


@pytest.mark.parametrize("content", [None, 3, {"type": "tool_use", "id": "x"}, b"bytes"])
def test_extract_text_of_nothing_textual_is_empty(content: object) -> None:
    assert extract_text(content) == ""


# ---------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    "value",
    [
        1774346400,  # epoch seconds
        1774346400.0,
        1774346400000,  # epoch milliseconds
        "1774346400000",
        "2026-03-24T10:00:00Z",
        "2026-03-24T10:00:00.000Z",
        "2026-03-24T18:00:00+08:00",
        "2026-03-24T10:00:00",  # no zone: read as UTC
        datetime(2026, 3, 24, 18, 0, tzinfo=timezone(timedelta(hours=8))),
        datetime(2026, 3, 24, 10, 0),  # naive: read as UTC
    ],
)
def test_parse_timestamp_formats(value: object) -> None:
    parsed = parse_timestamp(value)
    assert parsed == T0
    assert parsed is not None and parsed.tzinfo is UTC


@pytest.mark.parametrize("value", [None, True, "yesterday", "", float("nan"), float("inf"), [], 1e30])
def test_parse_timestamp_rejects_the_unreadable(value: object) -> None:
    assert parse_timestamp(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
        "0001-01-01T00:00:00+01:00",  # year 0 in UTC
        datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2))),
    ],
)
def test_parse_timestamp_treats_an_instant_outside_years_1_to_9999_utc_as_unreadable(value: object) -> None:
    assert parse_timestamp(value) is None


# ---------------------------------------------------------------- select_turn: slicing and cursor


def history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are helpful."},
        msg("user", "I moved to Shenzhen last month", 0),
        msg("assistant", "Congratulations on the move!", 1),
    ]


def test_position_slice_takes_only_messages_added_this_turn() -> None:
    messages = [
        *history(),
        msg("user", "Find me a tea house nearby", 10),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function"}],
            "timestamp": ms(at(11)),
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"results": 3}', "timestamp": ms(at(12))},
        msg("assistant", [{"type": "text", "text": "Try Nanshan Tea House."}], 13),
    ]
    turn = select_turn(messages, since_index=3, after_timestamp=None, original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "Find me a tea house nearby"), ("assistant", "Try Nanshan Tea House.")]
    assert [m.timestamp for m in turn.messages] == [at(10), at(13)]
    assert turn.max_timestamp == at(13)
    assert turn.skipped == 2  # the tool-call-only assistant message and the tool result


def test_position_slice_ignores_the_cursor() -> None:
    messages = [*history(), msg("user", "clock skew made me look old", -60)]
    turn = select_turn(messages, since_index=3, after_timestamp=at(5), original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "clock skew made me look old")]


def test_since_index_equal_to_length_means_nothing_new() -> None:
    turn = select_turn(history(), since_index=3, after_timestamp=None, original_user_text=None, now=NOW)
    assert turn.messages == [] and turn.max_timestamp is None and turn.skipped == 0


@pytest.mark.parametrize("since_index", [None, -1, 6, 99])
def test_invalid_since_index_falls_back_to_the_cursor(since_index: int | None) -> None:
    messages = [*history(), msg("user", "new question", 10), msg("assistant", "new answer", 11)]
    turn = select_turn(messages, since_index=since_index, after_timestamp=at(1), original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "new question"), ("assistant", "new answer")]
    assert turn.max_timestamp == at(11)
    # The system message has no timestamp, so it cannot be placed against the cursor: skipped, not captured.
    assert turn.skipped == 1


def test_cursor_is_strictly_greater_than() -> None:
    messages = [msg("user", "already captured", 1), msg("user", "new", 2)]
    turn = select_turn(messages, since_index=None, after_timestamp=at(1), original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "new")]


def test_cursor_with_every_timestamp_format() -> None:
    messages = [
        {"role": "user", "content": "old seconds", "timestamp": at(0).timestamp()},
        {"role": "user", "content": "new seconds", "timestamp": int(at(10).timestamp())},
        {"role": "user", "content": "old ms", "timestamp": ms(at(0))},
        {"role": "assistant", "content": "new ms", "timestamp": ms(at(11))},
        {"role": "user", "content": "old iso", "timestamp": "2026-03-24T10:00:00Z"},
        {"role": "assistant", "content": "new iso", "timestamp": "2026-03-24T18:12:00+08:00"},
        {"role": "user", "content": "old datetime", "timestamp": at(0)},
        {"role": "user", "content": "new datetime", "timestamp": at(13)},
        {"role": "user", "content": "no timestamp"},
    ]
    turn = select_turn(messages, since_index=None, after_timestamp=at(5), original_user_text=None, now=NOW)
    assert [m.content for m in turn.messages] == ["new seconds", "new ms", "new iso", "new datetime"]
    assert [m.timestamp for m in turn.messages] == [at(10), at(11), at(12), at(13)]
    assert turn.max_timestamp == at(13)
    assert turn.skipped == 1


def test_messages_without_timestamp_get_now_when_position_says_they_are_new() -> None:
    messages = [*history(), {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi!"}]
    turn = select_turn(messages, since_index=3, after_timestamp=at(100), original_user_text=None, now=NOW)
    assert [(m.content, m.timestamp) for m in turn.messages] == [("hello", NOW), ("hi!", NOW)]
    assert turn.max_timestamp == NOW


def test_without_slice_or_cursor_everything_is_the_turn() -> None:
    messages = [{"role": "user", "content": "first ever message"}, msg("assistant", "welcome", 1)]
    turn = select_turn(messages, since_index=None, after_timestamp=None, original_user_text=None, now=NOW)
    assert [(m.content, m.timestamp) for m in turn.messages] == [("first ever message", NOW), ("welcome", at(1))]


@pytest.mark.parametrize("role", ["system", "tool", "function", "developer", None])
def test_only_user_and_assistant_roles_are_kept(role: str | None) -> None:
    messages = [msg("user", "keep me", 1), {"role": role, "content": "not conversation", "timestamp": ms(at(2))}]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "keep me")]
    assert turn.skipped == 1


def test_objects_with_attributes_work_like_dicts() -> None:
    messages = [SimpleNamespace(role="user", content="from an SDK object", timestamp=at(1))]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None, now=NOW)
    assert texts(turn.messages) == [("user", "from an SDK object")]


# ---------------------------------------------------------------- select_turn: restoring the original prompt


def test_restores_the_prompt_behind_our_recall_prefix() -> None:
    # No timestamps needed: the polluted message is found by its content.
    messages = [*history(), msg("user", RECALL + "[Tue 2026-03-24 10:10 GMT+8] What should I drink?")]
    turn = select_turn(messages, since_index=3, after_timestamp=None, original_user_text="What should I drink?")
    assert texts(turn.messages) == [("user", "What should I drink?")]


def test_restores_when_the_injected_block_was_cut_off() -> None:
    # Sanitize alone cannot remove an unclosed block; the injection tag still identifies the polluted message.
    polluted = "<relevant-memories>\n- [persona] Prefers green tea\n(truncated by the framework"
    messages = [*history(), msg("user", polluted, 10), msg("assistant", "Green tea, as usual?", 11)]
    turn = select_turn(messages, since_index=3, after_timestamp=None, original_user_text="What should I drink?")
    assert texts(turn.messages) == [("user", "What should I drink?"), ("assistant", "Green tea, as usual?")]


def test_restore_under_a_stale_cursor_picks_this_turns_message() -> None:
    messages = [
        msg("user", RECALL + "an older prompt", 1),
        msg("assistant", "older answer", 2),
        msg("user", "<relevant-memories>\n- [persona] x\n", 10),
        msg("assistant", "new answer", 11),
    ]
    # The cursor is stale, so two turns are in view: the newest polluted message is this turn's.
    turn = select_turn(messages, since_index=None, after_timestamp=at(0), original_user_text="this turn's prompt")
    assert texts(turn.messages) == [
        ("user", "an older prompt"),
        ("assistant", "older answer"),
        ("user", "this turn's prompt"),
        ("assistant", "new answer"),
    ]


def test_restore_leaves_a_message_that_merely_ends_with_the_prompt() -> None:
    messages = [msg("user", "that is not ok", 1)]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text="ok")
    assert texts(turn.messages) == [("user", "that is not ok")]


def test_restore_touches_only_one_user_message_and_never_assistants() -> None:
    messages = [msg("user", RECALL + "same words", 1), msg("assistant", "same words", 2), msg("user", "same words", 3)]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text="Same words!")
    assert texts(turn.messages) == [("user", "Same words!"), ("assistant", "same words"), ("user", "same words")]


def test_without_original_text_sanitize_is_the_safety_net() -> None:
    messages = [msg("user", RECALL + "What should I drink?", 1)]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None)
    assert texts(turn.messages) == [("user", "What should I drink?")]


# ---------------------------------------------------------------- select_turn: cleaning and filtering


def test_sanitize_everywhere_and_strip_code_only_from_assistant() -> None:
    code = "```python\nprint('hi')\n```"
    messages = [
        msg("user", f"[[reply_to_current]] Why does this fail?\n{code}", 1),
        msg("assistant", f"Use a virtualenv:\n{code}\nThen run it again.", 2),
    ]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None)
    assert texts(turn.messages) == [
        ("user", f"Why does this fail?\n{code}"),
        ("assistant", "Use a virtualenv:\n\nThen run it again."),
    ]


def test_noise_is_dropped_and_does_not_move_the_cursor() -> None:
    messages = [
        msg("user", "/new", 1),
        msg("user", "(session bootstrap)", 2),
        msg("assistant", "Remember: the meeting is at 3pm", 3),
        msg("assistant", "NO_REPLY", 4),
        msg("assistant", [{"type": "text", "text": "```\nonly code\n```"}], 5),
    ]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None)
    assert texts(turn.messages) == [("assistant", "Remember: the meeting is at 3pm")]
    assert turn.max_timestamp == at(3)
    assert turn.skipped == 4


def test_image_placeholders_survive_sanitize() -> None:
    # The original's rule 12 would take a line-leading "[image]" for a timestamp and drop it.
    messages = [
        msg("user", [{"type": "image_url", "image_url": {"url": PNG}}], 1),
        msg("user", [{"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}, "and this?"], 2),
        msg("user", f"[Mon 2026-03-23 09:00 GMT+8] {PNG}", 3),
    ]
    turn = select_turn(messages, since_index=0, after_timestamp=None, original_user_text=None)
    assert texts(turn.messages) == [("user", "[image]"), ("user", "[image]\nand this?"), ("user", "[image]")]


# ---------------------------------------------------------------- fit_to_server_limits


def turn_message(content: str, minutes: int = 0, role: str = "user") -> TurnMessage:
    return TurnMessage(role, content, at(minutes))  # type: ignore[arg-type]


def test_wire_format() -> None:
    moment = datetime(2026, 3, 24, 18, 0, 1, 123456, tzinfo=timezone(timedelta(hours=8)))
    batches = fit_to_server_limits([TurnMessage("assistant", "hello", moment)])
    assert batches == [[{"role": "assistant", "content": "hello", "timestamp": "2026-03-24T10:00:01.123Z"}]]
    assert iso_utc(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"


def test_huge_message_is_truncated_to_exactly_the_limit() -> None:
    content = "x" * 20_000
    [[wire]] = fit_to_server_limits([turn_message(content)])
    assert len(wire["content"]) == 8192
    assert wire["content"] == "x" * 8168 + "…[truncated 11832 chars]"


def test_truncation_boundaries() -> None:
    assert truncate_content("y" * 8192, 8192) == "y" * 8192
    cut = truncate_content("y" * 8193, 8192)
    assert cut == "y" * 8171 + "…[truncated 22 chars]" and len(cut) == 8192
    # The marker's digit count changes N itself: 9 + len(marker) removed characters need two digits.
    cut = truncate_content("z" * 109, 100)
    assert cut == "z" * 79 + "…[truncated 30 chars]" and len(cut) == 100
    assert truncate_content("abcdefghij", 5) == "abcde"  # no room for a marker


def test_long_turns_are_split_into_batches_of_100_in_order() -> None:
    messages = [turn_message(f"message {i}", i) for i in range(250)]
    batches = fit_to_server_limits(messages)
    assert [len(b) for b in batches] == [100, 100, 50]
    assert [w["content"] for b in batches for w in b] == [f"message {i}" for i in range(250)]


def test_batches_stay_under_the_gateway_body_limit() -> None:
    messages = [turn_message("记忆" * 5000, i) for i in range(100)]  # 10 000 CJK characters each
    batches = fit_to_server_limits(messages)
    assert len(batches) > 1 and sum(len(b) for b in batches) == 100
    for batch in batches:
        body = json.dumps({"session_id": "s-1", "messages": batch}).encode()
        assert len(body) < 1024 * 1024


def test_empty_content_is_left_out() -> None:
    assert fit_to_server_limits([turn_message(""), turn_message("x")]) == [
        [{"role": "user", "content": "x", "timestamp": "2026-03-24T10:00:00.000Z"}]
    ]
    assert fit_to_server_limits([]) == []


@pytest.mark.parametrize("limits", [{"max_content_chars": 0}, {"max_batch": 0}, {"max_batch_bytes": 0}])
def test_limits_must_be_positive(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        fit_to_server_limits([turn_message("x")], **limits)


@given(
    contents=st.lists(st.text(min_size=1, max_size=400), max_size=40),
    max_content_chars=st.integers(1, 300),
    max_batch=st.integers(1, 7),
    max_batch_bytes=st.integers(1, 4000),
)
def test_fit_never_exceeds_a_limit_and_never_loses_a_message(
    contents: list[str], max_content_chars: int, max_batch: int, max_batch_bytes: int
) -> None:
    messages = [turn_message(c, i, "user" if i % 2 else "assistant") for i, c in enumerate(contents)]
    batches = fit_to_server_limits(
        messages, max_content_chars=max_content_chars, max_batch=max_batch, max_batch_bytes=max_batch_bytes
    )
    flat = [w for b in batches for w in b]
    assert len(flat) == len(messages)
    assert all(1 <= len(b) <= max_batch for b in batches)
    for batch in batches:
        if len(batch) > 1:
            assert sum(len(json.dumps(w)) + 1 for w in batch) <= max_batch_bytes
    for wire, original in zip(flat, messages, strict=True):
        assert wire["role"] == original.role
        assert wire["timestamp"] == iso_utc(original.timestamp)
        assert len(wire["content"]) <= max_content_chars
        if len(original.content) <= max_content_chars:
            assert wire["content"] == original.content
        elif "…[truncated " in wire["content"]:
            head, _, tail = wire["content"].rpartition("…[truncated ")
            assert original.content.startswith(head)
            assert int(tail.removesuffix(" chars]")) == len(original.content) - len(head)
            assert len(wire["content"]) == max_content_chars
        else:
            assert wire["content"] == original.content[:max_content_chars]


def test_recent_turns_are_the_last_user_and_assistant_texts_cleaned_for_recall() -> None:
    history = [
        {"role": "user", "content": "too old"},
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": RECALL + "what tea do I like?"},
        SimpleNamespace(role="assistant", content=[{"type": "text", "text": "Green tea."}, {"type": "tool_use"}]),
        {"role": "tool", "content": "tool output"},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "search"}]},  # no text: skipped
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG}}, "x" * 50]},
    ]
    assert recent_turns(history, 3, 20) == [
        {"role": "user", "content": "what tea do I like?"},  # last turn's recall block is not fed back
        {"role": "assistant", "content": "Green tea."},
        {"role": "user", "content": truncate_content("[image]\n" + "x" * 50, 20)},
    ]
    assert recent_turns(history, 100, 8192)[0] == {"role": "user", "content": "too old"}
    assert recent_turns([], 20, 8192) == []
