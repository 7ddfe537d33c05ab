"""The memory generation log: recording, retention, list filters and cursors, get by log or by memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memhub.model.prompts import GenerationRef, PromptRef, TokenUsage
from memhub.pipeline.generation_log import MAX_ERROR_CHARS, RETENTION_MS, GenerationLogService
from memhub.store.sqlite.prompts import SQLitePromptStore
from memhub.timeutil import ms_to_iso, now_ms
from tests.conftest import ISO, Gateway, build_gateway
from tests.pipeline.test_memory_prompts import wire

DAY_MS = 86_400_000


@dataclass
class Clock:
    """A settable clock for the service under test."""

    now: int

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    built = build_gateway(tmp_path / "data")
    wire(built)
    yield built
    built.close()


@pytest.fixture
def clock() -> Clock:
    return Clock(now_ms())


@pytest.fixture
def log(gw: Gateway, clock: Clock) -> GenerationLogService:
    """The service the pipeline worker writes through, on the app's database."""
    return GenerationLogService(SQLitePromptStore(gw.store), clock=clock)


def ok(gw: Gateway, route: str, body: dict[str, Any], **kw: Any) -> Any:
    return gw.ok(f"/v3/memory-generation-log/{route}", body, isolation={}, **kw)


def fails(gw: Gateway, route: str, body: dict[str, Any], code: int) -> str:
    return gw.fails(f"/v3/memory-generation-log/{route}", body, code, isolation={})["message"]


def l1(log: GenerationLogService, *outputs: str, status: str = "succeeded", **kw: Any) -> str:
    return log.record("svc-a", "l1", status, scope=ISO, output_refs=[("l1", o) for o in outputs], **kw)  # type: ignore[arg-type]


def test_a_recorded_generation_reads_back_in_full(gw: Gateway, log: GenerationLogService) -> None:
    scope = {**ISO, "service_id": "svc-a", "task_id": "", "session_id": "s1"}  # a job's scope dict
    log_id = log.record(
        "svc-a",
        "l1",
        "succeeded",
        scope=scope,
        prompt=PromptRef("mp-1", 2, "team", "ab" * 32),
        input_refs=[("l0", "msg-1"), GenerationRef("l0", "msg-2")],
        output_refs=[("l1", "m_1_a")],
        model="gpt-x",
        latency_ms=1234,
        tokens=TokenUsage(100, 20),
    )
    got = ok(gw, "get", {"log_id": log_id})
    assert log_id.startswith("mgl-")
    assert got["layer"] == "l1" and got["status"] == "succeeded"
    assert (got["team_id"], got["agent_id"], got["user_id"], got["session_id"], got["task_id"]) == (
        "team-1",
        "agent-1",
        "user-1",
        "s1",
        None,
    )
    assert got["prompt"] == {"memory_prompt_id": "mp-1", "version": 2, "source": "team", "prompt_sha256": "ab" * 32}
    assert got["input_refs"] == [{"layer": "l0", "record_id": "msg-1"}, {"layer": "l0", "record_id": "msg-2"}]
    assert got["output_refs"] == [{"layer": "l1", "record_id": "m_1_a"}]
    assert (got["model"], got["latency_ms"], got["tokens"], got["error_message"]) == (
        "gpt-x",
        1234,
        {"prompt": 100, "completion": 20},
        None,
    )


def test_a_failed_generation_keeps_its_error_without_prompt_or_tokens(gw: Gateway, log: GenerationLogService) -> None:
    log_id = l1(log, status="failed", error="LLM said 500 " + "x" * 10_000)
    got = ok(gw, "get", {"log_id": log_id})
    assert got["status"] == "failed" and got["prompt"] is None and got["tokens"] is None
    assert got["error_message"].startswith("LLM said 500") and len(got["error_message"]) == MAX_ERROR_CHARS
    assert got["model"] == "offline" and got["output_refs"] == []


def test_get_by_memory_finds_the_newest_generation_that_produced_it(
    gw: Gateway, log: GenerationLogService, clock: Clock
) -> None:
    first = l1(log, "m_1", "m_2")
    clock.now += 1000
    second = l1(log, "m_2")
    assert ok(gw, "get", {"memory_id": "m_1", "layer": "l1"})["log_id"] == first
    assert ok(gw, "get", {"memory_id": "m_2", "layer": "l1"})["log_id"] == second
    assert fails(gw, "get", {"memory_id": "m_1", "layer": "l2"}, 404) == "MEMORY_GENERATION_LOG_NOT_FOUND"
    assert fails(gw, "get", {"memory_id": "m_9", "layer": "l1"}, 404) == "MEMORY_GENERATION_LOG_NOT_FOUND"
    assert fails(gw, "get", {"log_id": "mgl-nope"}, 404) == "MEMORY_GENERATION_LOG_NOT_FOUND"
    other = gw.fails("/v3/memory-generation-log/get", {"log_id": first}, 404, isolation={}, service="svc-b")
    assert other["message"] == "MEMORY_GENERATION_LOG_NOT_FOUND"  # another instance's log


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "log_id: provide exactly one of log_id or memory_id"),
        ({"log_id": "a", "memory_id": "b", "layer": "l1"}, "log_id: provide exactly one of log_id or memory_id"),
        ({"memory_id": "m_1"}, "layer: is required with memory_id"),
        ({"memory_id": "m_1", "layer": "l0"}, "layer: must be one of 'l1', 'l2' or 'l3'"),
        ({"log_id": "  "}, "log_id: must not be empty"),
        ({"log_id": "a", "extra": 1}, "extra: is not a known field"),
    ],
)
def test_get_validation(gw: Gateway, body: dict[str, Any], message: str) -> None:
    assert fails(gw, "get", body, 400) == message


def test_list_filters_by_layer_status_and_team(gw: Gateway, log: GenerationLogService, clock: Clock) -> None:
    a = l1(log, "m_1")
    clock.now += 1
    b = l1(log, status="failed", error="boom")
    clock.now += 1
    c = log.record("svc-a", "l2", "succeeded", scope={"team_id": "team-2", "agent_id": "agent-1"})
    log.record("svc-b", "l1", "succeeded")  # another instance

    def ids(body: dict[str, Any]) -> list[str]:
        return [item["log_id"] for item in ok(gw, "list", body)["items"]]

    assert ids({}) == [c, b, a]  # newest first
    assert ids({"layer": "l1"}) == [b, a]
    assert ids({"status": "failed"}) == [b]
    assert ids({"layer": "l2", "status": "failed"}) == []
    assert ids({"team_id": "team-2"}) == [c]
    assert ids({"team_id": "team-1", "agent_id": "agent-1"}) == [b, a]


def test_list_pages_with_a_cursor_without_gaps_or_repeats(gw: Gateway, log: GenerationLogService, clock: Clock) -> None:
    made = []
    for i in range(5):
        made.append(l1(log, f"m_{i}"))
        if i != 2:  # two logs share a millisecond: the cursor must still tell them apart
            clock.now += 1
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = ok(gw, "list", {"limit": 2} | ({"cursor": cursor} if cursor else {}))
        seen += [item["log_id"] for item in page["items"]]
        pages += 1
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert pages == 3 and seen == made[::-1]


def test_a_bad_cursor_is_400(gw: Gateway) -> None:
    assert fails(gw, "list", {"cursor": "not-a-cursor"}, 400).startswith("INVALID_GENERATION_LOG_CURSOR")
    assert fails(gw, "list", {"cursor": "eyJ0IjoieCJ9"}, 400).startswith("INVALID_GENERATION_LOG_CURSOR")  # {"t":"x"}
    assert fails(gw, "list", {"cursor": "c" * 513}, 400) == "cursor: must be at most 512 characters"


def test_list_defaults_to_the_last_week_and_takes_a_window(
    gw: Gateway, log: GenerationLogService, clock: Clock
) -> None:
    clock.now = now_ms() - 10 * DAY_MS
    old = l1(log, "m_old")
    clock.now = now_ms()
    new = l1(log, "m_new")
    assert [i["log_id"] for i in ok(gw, "list", {})["items"]] == [new]
    window = {"start_time": ms_to_iso(now_ms() - 11 * DAY_MS), "end_time": ms_to_iso(now_ms() - 9 * DAY_MS)}
    assert [i["log_id"] for i in ok(gw, "list", window)["items"]] == [old]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"start_time": "2026-01-01T00:00:00Z"}, "start_time: start_time and end_time must be provided together"),
        ({"end_time": "2026-01-01T00:00:00Z"}, "start_time: start_time and end_time must be provided together"),
        (
            {"start_time": "2026-01-02T00:00:00Z", "end_time": "2026-01-01T00:00:00Z"},
            "start_time: must not be after end_time",
        ),
        (
            {"start_time": "2026-01-01T00:00:00Z", "end_time": "2026-04-01T00:00:00.001Z"},
            "end_time: the time range must not exceed 90 days",
        ),
        ({"limit": 101}, "limit: must be <= 100"),
        ({"limit": 0}, "limit: must be >= 1"),
        ({"status": "running"}, "status: must be one of 'succeeded' or 'failed'"),
        ({"layer": "l0"}, "layer: must be one of 'l1', 'l2' or 'l3'"),
        ({"offset": 3}, "offset: is not a known field"),
    ],
)
def test_list_validation(gw: Gateway, body: dict[str, Any], message: str) -> None:
    assert fails(gw, "list", body, 400) == message


def test_records_older_than_30_days_are_pruned_on_write(gw: Gateway, log: GenerationLogService, clock: Clock) -> None:
    start = clock.now
    oldest = l1(log, "m_old")
    clock.now = start + RETENTION_MS - DAY_MS
    kept = l1(log, "m_kept")
    assert ok(gw, "get", {"log_id": oldest})["log_id"] == oldest  # 29 days old: still there
    clock.now = start + RETENTION_MS + 1
    l1(log, "m_new")
    assert fails(gw, "get", {"log_id": oldest}, 404) == "MEMORY_GENERATION_LOG_NOT_FOUND"
    assert fails(gw, "get", {"memory_id": "m_old", "layer": "l1"}, 404) == "MEMORY_GENERATION_LOG_NOT_FOUND"
    assert ok(gw, "get", {"log_id": kept})["log_id"] == kept
    outputs = gw.store._reader().execute("SELECT record_id FROM generation_log_outputs ORDER BY record_id").fetchall()
    assert [r[0] for r in outputs] == ["m_kept", "m_new"]  # the pruned log's output rows went with it


def test_get_and_list_accept_query_strings(gw: Gateway, log: GenerationLogService, clock: Clock) -> None:
    first = l1(log, "m_1")
    clock.now += 1
    second = l1(log, "m_2")
    headers = gw.headers()
    listed = gw.client.get("/v3/memory-generation-log/list", params={"layer": "l1", "limit": "1"}, headers=headers)
    page = listed.json()["data"]
    assert listed.status_code == 200 and [i["log_id"] for i in page["items"]] == [second]
    params = {"limit": "1", "cursor": page["next_cursor"]}
    rest = gw.client.get("/v3/memory-generation-log/list", params=params, headers=headers).json()["data"]
    assert [i["log_id"] for i in rest["items"]] == [first]
    by_memory = gw.client.get(
        "/v3/memory-generation-log/get", params={"memory_id": "m_1", "layer": "l1"}, headers=headers
    )
    assert by_memory.json()["data"]["log_id"] == first
    bad = gw.client.get("/v3/memory-generation-log/list", params={"limit": "1.5"}, headers=headers)
    assert (bad.status_code, bad.json()["message"]) == (400, "limit: must be an integer")
