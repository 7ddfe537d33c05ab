"""`/v2/offload/*` through the real app: ingest, the stages on the pipeline's jobs, compact, query-mmd, read-ref.

Every bad input is refused with the envelope error naming the field and the rule, and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memhub.model.offload import OffloadSession, OffloadTriggers
from memhub.offload.service import OffloadService
from memhub.store.offload import GRAPH_JOB, SUMMARY_JOB, TASK_JOB
from memhub.timeutil import now_ms
from tests.conftest import ISO, SERVICE, Gateway, build_gateway

SESSION = "coding:session-001"
REF_PATTERN = "offload/" + SESSION + "/refs/"


def offload(gw: Gateway) -> OffloadService:
    service: OffloadService = gw.client.app.state.hub.offload  # type: ignore[attr-defined]
    return service


def run_stages_now(gw: Gateway) -> None:
    """Every stage due at once, so a drain runs them whatever the clock says."""
    offload(gw).triggers = OffloadTriggers(summary_max_age_ms=0, graph_delay_ms=0, graph_max_age_ms=0)


def session_of(iso: dict[str, str] = ISO, session_id: str = SESSION, service: str = SERVICE) -> OffloadSession:
    return OffloadSession(service, iso["team_id"], iso["agent_id"], iso["user_id"], session_id)


def grep_output(n: int) -> str:
    lines = [f"src/memhub/module_{i}.py:{10 + i}:def handler_{i}(request):" for i in range(n)]
    return "\n".join(lines)


def pair(i: int, result: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "tool_name": "Bash",
        "tool_call_id": f"toolu_{i:03d}",
        "params": {"command": f"rg -n 'def handler_{i}' src"},
        "result": grep_output(40) if result is None else result,
        "timestamp": f"2026-12-03T10:{i % 60:02d}:00Z",
        "duration_ms": 12.5,
        **extra,
    }


def transcript(
    pairs: list[dict[str, Any]], prompt: str = "Find where the handlers are defined"
) -> list[dict[str, Any]]:
    """An Anthropic Messages conversation: the prompt, then one tool_use / tool_result exchange per pair."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for p in pairs:
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": p["tool_call_id"], "name": p["tool_name"], "input": p["params"]}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": p["tool_call_id"], "content": p["result"]}],
            }
        )
    messages.append({"role": "user", "content": "Now summarise what you found."})
    return messages


def nothing_stored(gw: Gateway) -> None:
    store = gw.store.offload
    session = session_of()
    assert store.pending_pairs(session, 100) == []
    assert store.pending_prompts(session, 100) == []
    assert store.entries(session) == []
    assert gw.store.pipeline.jobs(SERVICE, ["pending", "running"], 100) == []


@pytest.fixture
def gw(tmp_path: Path) -> Any:
    gateway = build_gateway(tmp_path / "data")
    yield gateway
    gateway.close()


# -- ingest -----------------------------------------------------------------------------------------


def test_ingest_stores_pairs_and_queues_the_summary_stage_at_four_pairs(gw: Gateway) -> None:
    data = gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": [pair(1), pair(2), pair(3)]})
    assert data == {"accepted": True, "pairs": 3, "duplicates": 0, "prompt_queued": False}
    (job,) = gw.store.pipeline.jobs(SERVICE, ["pending"], 10)
    assert job.kind == SUMMARY_JOB
    first_ms = min(p.created_ms for p in gw.store.offload.pending_pairs(session_of(), 10))
    assert job.run_after_ms == first_ms + 30_000  # fewer than four pairs: after 30 s

    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": [pair(4)]})
    (job,) = gw.store.pipeline.jobs(SERVICE, ["pending"], 10)
    assert job.run_after_ms < first_ms + 30_000  # the fourth pair made it due now


def test_a_replayed_ingest_stores_nothing_twice_and_says_so(gw: Gateway) -> None:
    body = {"session_id": SESSION, "tool_pairs": [pair(1), pair(2)]}
    gw.ok("/v2/offload/ingest", body)
    again = gw.ok("/v2/offload/ingest", body)
    assert again["pairs"] == 0 and again["duplicates"] == 2
    assert again["note"] == "nothing new: all 2 pairs were already stored as sent"
    assert len(gw.store.offload.pending_pairs(session_of(), 10)) == 2


def test_a_reused_tool_call_id_with_another_result_is_refused_whole(gw: Gateway) -> None:
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": [pair(1)]})
    body = {"session_id": SESSION, "tool_pairs": [pair(2), pair(1, result="something else")]}
    envelope = gw.fails("/v2/offload/ingest", body, 409)
    assert envelope["message"].startswith("tool_pairs[1].tool_call_id: is already stored")
    assert [p.pair.tool_call_id for p in gw.store.offload.pending_pairs(session_of(), 10)] == ["toolu_001"]


def test_a_prompt_queues_the_task_stage(gw: Gateway) -> None:
    body = {
        "session_id": SESSION,
        "prompt": "Refactor the recall module",
        "recent_messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    data = gw.ok("/v2/offload/ingest", body)
    assert data["prompt_queued"] is True and data["pairs"] == 0
    (queued,) = gw.store.offload.pending_prompts(session_of(), 10)
    assert queued.prompt == "Refactor the recall module"
    assert [(t.role, t.content) for t in queued.recent] == [("user", "hi"), ("assistant", "hello")]
    assert [j.kind for j in gw.store.pipeline.jobs(SERVICE, ["pending"], 10)] == [TASK_JOB]


BAD_INGESTS = [
    ({"tool_pairs": [pair(1)]}, "session_id: is required"),
    ({"session_id": "a/../b", "tool_pairs": [pair(1)]}, "session_id: must match"),
    ({"session_id": "x" * 501, "tool_pairs": [pair(1)]}, "session_id: must match"),
    ({"session_id": SESSION}, "tool_pairs: must not be empty when no prompt is given"),
    ({"session_id": SESSION, "tool_pairs": []}, "tool_pairs: must not be empty when no prompt is given"),
    ({"session_id": SESSION, "prompt": "   "}, "prompt: must not be empty or whitespace-only"),
    ({"session_id": SESSION, "tool_pairs": [pair(1), pair(1)]}, "tool_pairs[1].tool_call_id: must be unique"),
    ({"session_id": SESSION, "tool_pairs": [{**pair(1), "tool_call_id": ""}]}, "tool_pairs[0].tool_call_id: must not"),
    ({"session_id": SESSION, "tool_pairs": [{**pair(1), "timestamp": None}]}, "tool_pairs[0].timestamp: must be"),
    (
        {"session_id": SESSION, "tool_pairs": [{k: v for k, v in pair(1).items() if k != "tool_name"}]},
        "tool_pairs[0].tool_name: is required",
    ),
    (
        {"session_id": SESSION, "tool_pairs": [{**pair(1), "duration_ms": -1}]},
        "tool_pairs[0].duration_ms: must be >= 0",
    ),
    ({"session_id": SESSION, "tool_pairs": [{**pair(1), "error": 5}]}, "tool_pairs[0].error: must be a string"),
    (
        {"session_id": SESSION, "prompt": "go", "recent_messages": [{"role": "tool", "content": "x"}]},
        "recent_messages[0].role: must be one of",
    ),
    ({"session_id": SESSION, "tool_pairs": "nope"}, "tool_pairs: must be an array"),
]


@pytest.mark.parametrize(("body", "message"), BAD_INGESTS)
def test_bad_ingests_are_refused_naming_the_field(gw: Gateway, body: dict[str, Any], message: str) -> None:
    envelope = gw.fails("/v2/offload/ingest", body, 400)
    assert envelope["message"].startswith(message), envelope["message"]
    nothing_stored(gw)


def test_a_body_over_one_mebibyte_is_413_and_stores_nothing(gw: Gateway) -> None:
    body = {"session_id": SESSION, "tool_pairs": [pair(1, result="x" * (1024 * 1024))]}
    gw.fails("/v2/offload/ingest", body, 413)
    nothing_stored(gw)


def test_offload_answers_at_v2_only(gw: Gateway) -> None:
    response = gw.post("/v3/offload/ingest", {"session_id": SESSION, "tool_pairs": [pair(1)]})
    assert response.status_code == 404


def test_offload_requires_the_data_plane_key(gw: Gateway) -> None:
    response = gw.post(
        "/v2/offload/ingest",
        {"session_id": SESSION, "tool_pairs": [pair(1)]},
        raw_headers={"authorization": "Bearer wrong-key", "x-tdai-service-id": SERVICE},
    )
    assert response.status_code == 401
    nothing_stored(gw)


# -- the stages, on the pipeline's jobs ---------------------------------------------------------------


def ingest_run(
    gw: Gateway, count: int = 8, prompt: str = "Find where the handlers are defined"
) -> list[dict[str, Any]]:
    pairs = [pair(i) for i in range(1, count + 1)]
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "prompt": prompt})
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": pairs})
    return pairs


def test_the_stages_summarise_every_pair_and_draw_the_task_graph(gw: Gateway) -> None:
    run_stages_now(gw)
    pairs = ingest_run(gw)
    gw.pipeline.drain()
    entries = gw.store.offload.entries(session_of())
    assert [e.tool_call_id for e in entries] == [p["tool_call_id"] for p in pairs]
    assert all(0 < len(e.summary) <= 200 and 0 <= e.score <= 10 for e in entries)
    assert all(e.node_id for e in entries), "every entry is placed on the graph"
    assert all(e.outline is None for e in entries), "only a file read has an outline"
    data = gw.ok("/v2/offload/query-mmd", {"session_id": SESSION})
    assert data["currentMmd"] == data["current_mmd"]
    (graph,) = data["mmds"]
    assert graph["filename"] == data["currentMmd"]
    assert "flowchart TD" in graph["content"]
    assert len(graph["version"]) == 12
    assert gw.store.pipeline.jobs(SERVICE, ["pending", "running", "dead"], 10) == []


def test_the_summary_stage_outlines_a_file_read_once_for_every_compaction(gw: Gateway) -> None:
    run_stages_now(gw)
    listing = "\n".join(["     1\timport os", "    12\tdef drop(rows):", "    30\tclass Store:"])
    read = {**pair(1, listing), "tool_name": "Read", "params": {"file_path": "/r/store.py"}}
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": [read, pair(2)]})
    gw.pipeline.drain()
    outlines = {e.tool_call_id: e.outline for e in gw.store.offload.entries(session_of())}
    assert outlines == {"toolu_001": "12 drop, 30 Store", "toolu_002": None}


def test_the_graph_stage_waits_for_six_entries_or_thirty_seconds(gw: Gateway) -> None:
    offload(gw).triggers = OffloadTriggers(summary_max_age_ms=0)
    before = now_ms()
    ingest_run(gw, count=4)
    gw.pipeline.drain()
    (job,) = gw.store.pipeline.jobs(SERVICE, ["pending"], 10)
    assert job.kind == GRAPH_JOB
    assert len(gw.store.offload.entries(session_of())) == 4
    # Four entries: the graph is due 30 s after the oldest summary, not now.
    assert job.run_after_ms >= before + 30_000


def test_a_new_prompt_starts_a_new_graph_and_pauses_or_ends_the_old_one(gw: Gateway) -> None:
    run_stages_now(gw)
    ingest_run(gw, count=6, prompt="Find where the handlers are defined")
    gw.pipeline.drain()
    first = gw.ok("/v2/offload/query-mmd", {"session_id": SESSION})["currentMmd"]
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "prompt": "New task: write the release notes for 0.2"})
    gw.ok("/v2/offload/ingest", {"session_id": SESSION, "tool_pairs": [pair(i) for i in range(20, 27)]})
    gw.pipeline.drain()
    data = gw.ok("/v2/offload/query-mmd", {"session_id": SESSION})
    assert data["currentMmd"] != first
    assert {g["filename"] for g in data["mmds"]} == {first, data["currentMmd"]}
    only_active = gw.ok("/v2/offload/query-mmd", {"session_id": SESSION, "limit": 1})
    assert [g["filename"] for g in only_active["mmds"]] == [data["currentMmd"]]


def test_query_mmd_of_an_unknown_session_is_empty(gw: Gateway) -> None:
    data = gw.ok("/v2/offload/query-mmd", {"session_id": "never-seen"})
    assert data == {"mmds": [], "currentMmd": None, "current_mmd": None}


def test_query_mmd_limit_must_be_positive(gw: Gateway) -> None:
    envelope = gw.fails("/v2/offload/query-mmd", {"session_id": SESSION, "limit": 0}, 400)
    assert envelope["message"].startswith("limit: must be >= 1")


# -- compact ------------------------------------------------------------------------------------------


def without_task_context(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages less the task graph block compaction adds after the last user turn."""
    return [m for m in messages if "<current_task_context>" not in json.dumps(m)]


def compacted(gw: Gateway, messages: list[dict[str, Any]], window: int, **extra: Any) -> dict[str, Any]:
    body = {"session_id": SESSION, "messages": messages, "ratio": 0.0, "context_window": window, **extra}
    body.setdefault("total_tokens", total_tokens(messages))
    return gw.ok("/v2/offload/compact", body)


def total_tokens(messages: list[dict[str, Any]]) -> int:
    from memhub.offload.tokens import message_tokens

    return sum(message_tokens(m) for m in messages)


def test_mild_compaction_swaps_results_for_summaries_with_a_readable_ref(gw: Gateway) -> None:
    run_stages_now(gw)
    pairs = ingest_run(gw)
    gw.pipeline.drain()
    messages = transcript(pairs)
    tokens = total_tokens(messages)
    data = compacted(gw, messages, window=int(tokens / 0.6))
    report = data["report"]
    assert report["resolvedLevel"] == "mild"
    assert report["originalCount"] == len(messages)
    assert report["mmdInjected"] == 1 and report["compactedCount"] == len(messages) + 1
    assert report["mildReplacements"] > 0
    assert report["tokensAfter"] < report["tokensBefore"]
    assert data["messages"][-1] == messages[-1]  # the last user turn is never touched
    text = json.dumps(data["messages"])
    refs = sorted({text[i : text.index(".md", i) + 3] for i in _find_all(text, REF_PATTERN)})
    assert refs
    for ref in refs:
        full = gw.ok("/v2/offload/read-ref", {"session_id": SESSION, "result_ref": ref, "max_tokens": 4096})
        assert full["content"] == grep_output(40)
        assert full["truncated"] is False


def _find_all(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def test_compaction_is_stable_across_turns(gw: Gateway) -> None:
    run_stages_now(gw)
    pairs = ingest_run(gw)
    gw.pipeline.drain()
    messages = transcript(pairs)
    window = int(total_tokens(messages) / 0.6)
    first = compacted(gw, messages, window)["messages"]
    later = [*messages[:-1], {"role": "assistant", "content": "Here is what I found."}, messages[-1]]
    second = compacted(gw, later, window)
    assert second["report"]["fastPathReplaced"] > 0
    old_part = without_task_context(first)[:-1]
    assert without_task_context(second["messages"])[: len(old_part)] == old_part


def test_below_the_mild_threshold_nothing_changes(gw: Gateway) -> None:
    run_stages_now(gw)
    pairs = ingest_run(gw)
    gw.pipeline.drain()
    messages = transcript(pairs)
    data = compacted(gw, messages, window=total_tokens(messages) * 10)
    assert data["report"]["resolvedLevel"] == "fastpath"
    assert data["report"]["mildReplacements"] == 0
    assert without_task_context(data["messages"]) == messages


def test_context_window_defaults_to_two_hundred_thousand(gw: Gateway) -> None:
    messages = transcript([pair(1)])
    body = {"session_id": SESSION, "messages": messages, "ratio": 0.9, "total_tokens": 150_000}
    data = gw.ok("/v2/offload/compact", body)
    assert data["report"]["resolvedLevel"] == "mild"  # 150,000 / 200,000 = 0.75


BAD_COMPACTS = [
    ({"messages": [], "ratio": 0.5}, "total_tokens: is required"),
    ({"messages": [], "ratio": 2.5, "total_tokens": 1}, "ratio: must be <= 2"),
    ({"messages": [], "ratio": -0.1, "total_tokens": 1}, "ratio: must be >= 0"),
    ({"messages": [], "ratio": 0.5, "total_tokens": 1, "context_window": 0}, "context_window: must be >= 1"),
    ({"messages": [], "ratio": 0.5, "total_tokens": -1}, "total_tokens: must be >= 0"),
    (
        {"messages": [{"role": "user", "content": "a"}, {"content": "b"}], "ratio": 0.5, "total_tokens": 1},
        "messages[1].role: must be a non-empty string",
    ),
    (
        {"messages": [{"role": "", "content": "a"}], "ratio": 0.5, "total_tokens": 1},
        "messages[0].role: must be a non-empty string",
    ),
    ({"messages": "x", "ratio": 0.5, "total_tokens": 1}, "messages: must be an array"),
    ({"messages": [], "ratio": 0.5, "total_tokens": 1, "message_tokens": [-1]}, "message_tokens[0]: must be >= 0"),
]


@pytest.mark.parametrize(("body", "message"), BAD_COMPACTS)
def test_bad_compactions_are_refused_naming_the_field(gw: Gateway, body: dict[str, Any], message: str) -> None:
    envelope = gw.fails("/v2/offload/compact", {"session_id": SESSION, **body}, 400)
    assert envelope["message"].startswith(message), envelope["message"]
    assert gw.store.offload.state(session_of()).compact.replaced == ()


# -- read-ref and isolation ------------------------------------------------------------------------


def first_ref(gw: Gateway) -> str:
    run_stages_now(gw)
    ingest_run(gw, count=4)
    gw.pipeline.drain()
    return gw.store.offload.entries(session_of())[0].result_ref


def test_read_ref_by_lines_and_by_query(gw: Gateway) -> None:
    ref = first_ref(gw)
    lines = gw.ok("/v2/offload/read-ref", {"session_id": SESSION, "result_ref": ref, "start_line": 2, "end_line": 3})
    assert lines["content"] == "\n".join(grep_output(40).splitlines()[1:3])
    assert lines["truncated"] is True
    hit = gw.ok(
        "/v2/offload/read-ref", {"session_id": SESSION, "result_ref": ref, "query": "HANDLER_17(", "max_tokens": 40}
    )
    assert hit["match_found"] is True and "def handler_17(request)" in hit["content"]
    miss = gw.ok("/v2/offload/read-ref", {"session_id": SESSION, "result_ref": ref, "query": "no such text"})
    assert miss == {"result_ref": ref, "content": "", "truncated": False, "match_found": False}


def test_a_session_state_is_its_users_and_nobody_elses(gw: Gateway) -> None:
    ref = first_ref(gw)
    other_user = {**ISO, "user_id": "user-2"}
    body = {"session_id": SESSION, "result_ref": ref}
    assert gw.fails("/v2/offload/read-ref", body, 404, isolation=other_user)["message"].startswith("result_ref")
    gw.fails("/v2/offload/read-ref", body, 404, service="svc-other")
    gw.fails("/v2/offload/read-ref", {**body, "session_id": "coding_session-001"}, 404)
    assert gw.ok("/v2/offload/query-mmd", {"session_id": SESSION}, isolation=other_user)["mmds"] == []
    assert gw.ok("/v2/offload/read-ref", body)["content"] == grep_output(40)


def test_sessions_a_colon_b_and_a_underscore_b_are_two_sessions(gw: Gateway) -> None:
    gw.ok("/v2/offload/ingest", {"session_id": "a:b", "tool_pairs": [pair(1)]})
    gw.ok("/v2/offload/ingest", {"session_id": "a_b", "tool_pairs": [pair(1, result="other")]})
    assert len(gw.store.offload.pending_pairs(session_of(session_id="a:b"), 10)) == 1
    assert len(gw.store.offload.pending_pairs(session_of(session_id="a_b"), 10)) == 1


BAD_READS = [
    ({"result_ref": ""}, "result_ref: must not be empty"),
    ({"result_ref": "r", "query": "x", "start_line": 1}, "query: cannot be combined with start_line or end_line"),
    ({"result_ref": "r", "start_line": 5, "end_line": 2}, "start_line: must not exceed end_line"),
    ({"result_ref": "r", "start_line": 0}, "start_line: must be >= 1"),
    ({"result_ref": "r", "max_tokens": 4097}, "max_tokens: must be <= 4096"),
    ({"result_ref": "r", "query": "  "}, "query: must not be empty or whitespace-only"),
]


@pytest.mark.parametrize(("body", "message"), BAD_READS)
def test_bad_reads_are_refused_naming_the_field(gw: Gateway, body: dict[str, Any], message: str) -> None:
    envelope = gw.fails("/v2/offload/read-ref", {"session_id": SESSION, **body}, 400)
    assert envelope["message"].startswith(message), envelope["message"]


# -- restarts -------------------------------------------------------------------------------------------


def test_a_restart_between_ingest_and_compact_loses_nothing(tmp_path: Path) -> None:
    first = build_gateway(tmp_path / "data")
    pairs = ingest_run(first)
    first.close()
    second = build_gateway(tmp_path / "data")
    try:
        run_stages_now(second)
        second.pipeline.drain()
        entries = second.store.offload.entries(session_of())
        assert [e.tool_call_id for e in entries] == [p["tool_call_id"] for p in pairs]
        messages = transcript(pairs)
        data = compacted(second, messages, window=int(total_tokens(messages) / 0.6))
        assert data["report"]["mildReplacements"] > 0
    finally:
        second.close()
