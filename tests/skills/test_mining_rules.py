"""The mining rules as pure functions: tool payload compression, the oversize cut, the archive thresholds."""

from __future__ import annotations

import json

import pytest

from memhub.knowledge.skill.mining.buffer import (
    BufferLimits,
    append_rule,
    count_tool_calls,
    direct_archive,
    force_rule,
)
from memhub.knowledge.skill.mining.compress import (
    TRUNCATION_MARKER,
    CompressLimits,
    OversizeLimits,
    apply_oversize,
    compress_message,
    message_bytes,
    prepare_archive,
    total_bytes,
)
from memhub.model.skills import BufferState

EMPTY = BufferState(messages=0, tool_calls=0, bytes=0)


def call(i: int, content: str = '{"command": "ls"}') -> dict[str, str]:
    return {"role": "tool_call", "content": content, "tool_name": "bash", "tool_call_id": f"c{i}"}


def result(i: int, content: str = "ok") -> dict[str, str]:
    return {"role": "tool_result", "content": content, "tool_call_id": f"c{i}"}


# -- compression -------------------------------------------------------------------------------------------


def test_message_bytes_is_the_compact_json_without_absent_fields() -> None:
    message = {"role": "user", "content": "héllo", "tool_name": None}
    assert message_bytes(message) == len('{"role":"user","content":"héllo"}'.encode())


def test_tool_payload_at_the_threshold_is_kept_whole() -> None:
    message = result(1, "x" * 2048)
    assert compress_message(message) == message


def test_tool_payload_over_2kb_keeps_1kb_head_and_tail_and_says_so() -> None:
    content = "H" * 1024 + "M" * 5000 + "T" * 1024
    out = compress_message(result(1, content))
    assert out["content"] == "H" * 1024 + TRUNCATION_MARKER + "T" * 1024
    assert out["metadata"] == {"truncated": True, "original_bytes": 7048}
    assert out["tool_call_id"] == "c1"


def test_compression_never_splits_a_utf8_character() -> None:
    # 3-byte characters: 1024 is not a multiple of 3, so a naive byte cut would split one at each end.
    content = "漢" * 2000
    out = compress_message(call(1, content))
    head, tail = out["content"].split(TRUNCATION_MARKER)
    assert head == "漢" * 341 and tail == "漢" * 341
    assert "\ufffd" not in out["content"]
    assert out["metadata"]["original_bytes"] == 6000


def test_user_assistant_and_system_turns_are_never_cut() -> None:
    for role in ("user", "assistant", "system"):
        message = {"role": role, "content": "x" * 10_000}
        assert compress_message(message) == message


def test_existing_metadata_is_kept_beside_the_marker() -> None:
    out = compress_message({**result(1, "y" * 3000), "metadata": {"exit": 0}})
    assert out["metadata"] == {"exit": 0, "truncated": True, "original_bytes": 3000}


def test_oversize_keeps_head_and_tail_messages_around_a_placeholder() -> None:
    messages = [{"role": "user", "content": f"{i:03d}" + "x" * 990} for i in range(100)]
    out = apply_oversize(messages)
    assert out.oversized
    roles = [m["role"] for m in out.messages]
    placeholder = out.messages[roles.index("system")]
    head = out.messages[: roles.index("system")]
    tail = out.messages[roles.index("system") + 1 :]
    assert head[0]["content"].startswith("000") and tail[-1]["content"].startswith("099")
    assert total_bytes(head) <= 20_480 and total_bytes(tail) <= 20_480
    omitted = 100 - len(head) - len(tail)
    assert placeholder["metadata"]["omitted_message_count"] == omitted
    assert placeholder["metadata"]["omitted_bytes"] == total_bytes(messages[len(head) : 100 - len(tail)])
    assert f"{omitted} messages" in placeholder["content"]


def test_oversize_passes_an_archive_under_the_limit_through() -> None:
    messages = [{"role": "user", "content": "x" * 1000}] * 10
    out = apply_oversize(messages)
    assert not out.oversized and out.messages == messages


def test_oversize_keeps_one_message_at_each_end_however_large() -> None:
    messages = [{"role": "assistant", "content": "a" * 50_000}, {"role": "user", "content": "b"}]
    messages.append({"role": "assistant", "content": "c" * 50_000})
    out = apply_oversize(messages, OversizeLimits())
    assert [m["role"] for m in out.messages] == ["assistant", "system", "assistant"]
    assert out.messages[0] == messages[0] and out.messages[2] == messages[2]
    assert out.messages[1]["metadata"]["omitted_message_count"] == 1


def test_prepare_compresses_only_on_the_compress_path() -> None:
    big = result(1, "z" * 5000)
    plain = prepare_archive([], [big], compress=False)
    assert plain.messages == [big] and not plain.compressed
    squeezed = prepare_archive([{"role": "user", "content": "go"}], [big], compress=True)
    assert squeezed.compressed and squeezed.messages[0] == {"role": "user", "content": "go"}
    assert squeezed.messages[1]["metadata"]["truncated"] is True


# -- the buffer rule ----------------------------------------------------------------------------------------


def run(decide, existing=(), state=EMPTY):  # type: ignore[no-untyped-def]
    return decide(list(existing), state)


def test_nine_tool_calls_stay_in_the_buffer_the_tenth_cuts_an_archive() -> None:
    turn = [call(i) for i in range(9)] + [result(i) for i in range(9)]
    kept = run(append_rule(turn, None))
    assert kept.archive is None and kept.tool_calls == 9 and len(kept.messages) == 18
    assert kept.bytes == total_bytes(turn)
    state = BufferState(messages=18, tool_calls=9, bytes=kept.bytes)
    cut = run(append_rule([call(9)], "task-7"), kept.messages, state)
    assert cut.archive is not None and cut.archive.reason == "tool_calls"
    assert cut.archive.task_ref == "task-7" and len(cut.archive.messages) == 19
    assert (cut.messages, cut.tool_calls, cut.bytes) == ([], 0, 0)


def test_tool_results_do_not_count_as_calls() -> None:
    assert count_tool_calls([call(1), result(1), result(2)]) == 1
    kept = run(append_rule([result(i) for i in range(20)], None))
    assert kept.archive is None and kept.tool_calls == 0


def test_40kb_of_turns_cut_an_archive_by_bytes() -> None:
    first = [{"role": "assistant", "content": "x" * 30_000}]
    kept = run(append_rule(first, None))
    assert kept.archive is None
    second = [{"role": "assistant", "content": "y" * 11_000}]
    cut = run(append_rule(second, None), kept.messages, BufferState(1, 0, kept.bytes))
    assert cut.archive is not None and cut.archive.reason == "bytes"
    assert [m["content"][0] for m in cut.archive.messages] == ["x", "y"]


def test_one_request_of_40kb_is_compressed_and_archived_at_once() -> None:
    turn = [{"role": "user", "content": "fix it"}, call(1, "a" * 41_000), result(1, "b" * 3000)]
    cut = run(append_rule(turn, None))
    assert cut.archive is not None and cut.archive.reason == "compressed"
    assert [m.get("metadata", {}).get("truncated") for m in cut.archive.messages] == [None, True, True]


def test_a_compressed_archive_still_over_80kb_is_cut_to_head_and_tail() -> None:
    buffered = [{"role": "assistant", "content": f"{i:02d}" + "p" * 1500} for i in range(25)]  # ~38 KB kept
    state = BufferState(25, 0, total_bytes(buffered))
    turn = [{"role": "assistant", "content": "q" * 45_000}]
    cut = run(append_rule(turn, None), buffered, state)
    assert cut.archive is not None and cut.archive.reason == "oversize"
    assert any(m["role"] == "system" and "left out" in m["content"] for m in cut.archive.messages)


def test_limits_are_configurable() -> None:
    limits = BufferLimits(tool_calls=2)
    assert run(append_rule([call(1), call(2)], None, limits)).archive is not None


def test_force_cuts_whatever_is_buffered_and_leaves_an_empty_buffer_alone() -> None:
    assert run(force_rule(None, "manual")).archive is None
    buffered = [{"role": "user", "content": "hi"}]
    cut = run(force_rule("t", "manual"), buffered, BufferState(1, 0, 10))
    assert cut.archive is not None and cut.archive.reason == "forced"
    assert cut.archive.note == "manual" and cut.archive.task_ref == "t" and list(cut.archive.messages) == buffered


@pytest.mark.parametrize(("size", "compressed"), [(1000, False), (90_000, True)])
def test_direct_archive_compresses_only_from_the_oversize_limit(size: int, compressed: bool) -> None:
    draft = direct_archive([call(1, "c" * size)], "t", "why", 8)
    assert draft.reason == "direct" and draft.max_iterations == 8 and draft.note == "why"
    assert (draft.messages[0].get("metadata", {}).get("truncated") is True) is compressed


def test_compress_limits_are_honoured() -> None:
    out = compress_message(result(1, "abcdefghij" * 3), CompressLimits(threshold_bytes=10, head_bytes=3, tail_bytes=2))
    assert out["content"] == "abc" + TRUNCATION_MARKER + "ij"
    assert json.loads(json.dumps(out)) == out
