"""Instants on the wire: years 1–9999 in UTC at every route that takes one, naive values read as UTC, and a
stored value outside that range (written before the range was checked) rendered instead of failing reads."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.ids import message_id
from memhub.model import NewMessage
from memhub.scope import MemoryScope
from tests.conftest import ISO, SERVICE, Gateway, build_gateway

RANGE_RULE = "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC"
# Each of these is a valid calendar date and time whose offset carries it out of years 1-9999 in UTC.
PAST_END = "9999-12-31T23:59:59-14:00"
BEFORE_START = "0001-01-01T00:00:00+01:00"
MIN_MS, MAX_MS = -62_135_596_800_000, 253_402_300_799_999  # 0001-01-01T00:00:00.000Z, 9999-12-31T23:59:59.999Z
SCOPE = MemoryScope(SERVICE, ISO["team_id"], ISO["user_id"], ISO["agent_id"], "")


def rows(gw: Gateway, table: str) -> int:
    con = sqlite3.connect(gw.store.path)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def add(gw: Gateway, *messages: dict[str, Any], session: str = "s1") -> list[str]:
    return gw.ok("/v3/conversation/add", {"session_id": session, "messages": list(messages)})["accepted_ids"]


def refused_with(gw: Gateway, path: str, body: dict[str, Any], field: str) -> None:
    envelope = gw.fails(path, body, 400)
    assert f"{field}: {RANGE_RULE}" in envelope["message"].split("; "), envelope["message"]
    assert envelope["data"]["errors"][0] == {"field": field, "rule": RANGE_RULE}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    built = build_gateway(tmp_path / "data", pipeline_idle_seconds=3600)
    yield built
    built.close()


# -- the range, at the edge ------------------------------------------------------------------------
EDGE_CASES = [
    ("/v3/conversation/add", {"messages": [{"role": "user", "content": "x", "timestamp": PAST_END}]}, "timestamp"),
    ("/v3/conversation/add", {"messages": [{"role": "user", "content": "x", "recorded_at": BEFORE_START}]}, "rec"),
    ("/v3/conversation/query", {"time_start": BEFORE_START}, "time_start"),
    ("/v3/conversation/search", {"query": "x", "time_end": PAST_END}, "time_end"),
    ("/v3/conversation/count", {"time_end": PAST_END}, "time_end"),
    ("/v3/atomic/query", {"time_end": PAST_END}, "time_end"),
    ("/v3/atomic/search", {"query": "x", "time_start": BEFORE_START}, "time_start"),
    ("/v3/atomic/count", {"time_start": BEFORE_START}, "time_start"),
]


@pytest.mark.parametrize(("path", "body", "field"), EDGE_CASES, ids=[f"{p}:{f}" for p, _, f in EDGE_CASES])
def test_an_instant_outside_years_1_to_9999_utc_is_a_400_naming_the_field(
    gw: Gateway, path: str, body: dict[str, Any], field: str
) -> None:
    expected = {"timestamp": "messages[0].timestamp", "rec": "messages[0].recorded_at"}.get(field, field)
    refused_with(gw, path, body, expected)
    assert rows(gw, "l0_messages") == 0 and rows(gw, "pipeline_sessions") == 0


def test_the_second_message_out_of_range_refuses_the_whole_add(gw: Gateway) -> None:
    fine = {"role": "user", "content": "fine", "timestamp": "2026-01-31T09:30:00Z"}
    late = {"role": "user", "content": "late", "timestamp": PAST_END}
    refused_with(gw, "/v3/conversation/add", {"session_id": "s1", "messages": [fine, late]}, "messages[1].timestamp")
    assert rows(gw, "l0_messages") == 0


def test_the_generation_log_window_is_checked_too(gw: Gateway) -> None:
    response = gw.client.get(
        "/v3/memory-generation-log/list",
        params={"start_time": BEFORE_START, "end_time": "0001-01-02T00:00:00Z"},
        headers=gw.headers(),
    )
    envelope = response.json()
    assert response.status_code == 400 and envelope["message"] == f"start_time: {RANGE_RULE}", envelope


def test_the_first_and_last_millisecond_are_accepted_and_read_back_exactly(gw: Gateway) -> None:
    first, last = "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"
    add(
        gw,
        {"role": "user", "content": "first", "timestamp": "0001-01-01T01:00:00+01:00"},
        {"role": "user", "content": "last", "timestamp": "9999-12-31T09:59:59.999-14:00", "recorded_at": last},
    )
    listed = gw.ok("/v3/conversation/query", {"time_start": first, "time_end": last})["messages"]
    assert {m["content"]: m["message_time"] for m in listed} == {"first": first, "last": last}
    assert gw.ok("/v3/conversation/count", {"time_start": last, "time_end": last}) == {"total": 1}


# -- naive instants are UTC ------------------------------------------------------------------------------
NAIVE_RECORDED = "2023-05-08 14:00:05.5"  # a space for the T, as SQL and Python's str(datetime) write it


def test_a_naive_timestamp_is_stored_and_returned_as_that_utc_instant(gw: Gateway) -> None:
    add(
        gw,
        {"role": "user", "content": "naive", "timestamp": "2023-05-08T13:56:00", "recorded_at": NAIVE_RECORDED},
    )
    (message,) = gw.ok("/v3/conversation/query", {})["messages"]
    assert message["message_time"] == "2023-05-08T13:56:00.000Z"
    assert message["timestamp"] == "2023-05-08T14:00:05.500Z"


@pytest.mark.parametrize("layer", ["conversation", "atomic"])
def test_naive_bounds_filter_query_search_and_count_as_utc(gw: Gateway, layer: str) -> None:
    if layer == "conversation":
        stamps = {"morning": "2023-05-08T08:00:00Z", "noon": "2023-05-08T12:00:00+00:00", "night": "2023-05-08T22:00Z"}
        add(gw, *[{"role": "user", "content": f"walrus {k}", "recorded_at": v} for k, v in stamps.items()])
    else:
        # L1 filters on the time a memory was last written: set it as a migrated store would have it.
        for name in ("morning", "noon", "night"):
            gw.ok("/v3/atomic/add", {"content": f"walrus {name}", "type": "episodic"})
        con = sqlite3.connect(gw.store.path)
        with con:
            for name, hour in (("morning", 8), ("noon", 12), ("night", 22)):
                ms = 1683504000000 + hour * 3_600_000  # 2023-05-08T00:00Z + hour
                con.execute("UPDATE l1_atomic SET updated_ms = ? WHERE content = ?", (ms, f"walrus {name}"))
        con.close()
    window = {"time_start": "2023-05-08T11:00:00", "time_end": "2023-05-08 13:00:00"}
    items = "messages" if layer == "conversation" else "items"
    assert [m["content"] for m in gw.ok(f"/v3/{layer}/query", window)[items]] == ["walrus noon"]
    assert [m["content"] for m in gw.ok(f"/v3/{layer}/search", {"query": "walrus", **window})[items]] == ["walrus noon"]
    assert gw.ok(f"/v3/{layer}/count", window) == {"total": 1}
    assert gw.ok(f"/v3/{layer}/count", {"time_end": "2023-05-08T07:59:59"}) == {"total": 0}


# -- stored values from before the check ------------------------------------------------------------------
def _store_raw(gw: Gateway, content: str, message_ms: int, recorded_ms: int) -> str:
    """A message written through the store, as an unchecked gateway once let it in."""
    (mid,), _ = gw.store.add_messages(SCOPE, "s1", [NewMessage(message_id(), "user", content, recorded_ms, message_ms)])
    return mid


def test_a_stored_instant_outside_the_range_renders_clamped_and_reads_keep_working(gw: Gateway) -> None:
    add(gw, {"role": "user", "content": "an ordinary walrus", "timestamp": "2026-01-31T09:30:00Z"})
    late = _store_raw(gw, "a walrus from year 10000", MAX_MS + 50_400_000, MAX_MS + 1)
    early = _store_raw(gw, "a walrus from year 0", MIN_MS - 3_600_000, MIN_MS - 1)
    listed = {m["id"]: m for m in gw.ok("/v3/conversation/query", {})["messages"]}
    assert (listed[late]["timestamp"], listed[late]["message_time"]) == ("9999-12-31T23:59:59.999Z",) * 2
    assert (listed[early]["timestamp"], listed[early]["message_time"]) == ("0001-01-01T00:00:00.000Z",) * 2
    hits = {h["id"] for h in gw.ok("/v3/conversation/search", {"query": "walrus"})["messages"]}
    assert {late, early} <= hits and len(hits) == 3
    recent = gw.ok("/v3/conversation/search", {"query": "walrus", "recency_half_life_days": 30})["messages"]
    assert len(recent) == 3
    assert gw.ok("/v3/conversation/count", {}) == {"total": 3}


def test_a_stored_memory_time_outside_the_range_renders_clamped(gw: Gateway) -> None:
    memory = gw.ok("/v3/atomic/add", {"content": "walrus facts", "type": "episodic"})["id"]
    con = sqlite3.connect(gw.store.path)
    with con:
        stray = (MIN_MS - 1, MAX_MS + 1, memory)
        con.execute("UPDATE l1_atomic SET created_ms = ?, updated_ms = ? WHERE id = ?", stray)
    con.close()
    (item,) = gw.ok("/v3/atomic/query", {})["items"]
    assert (item["created_at"], item["updated_at"]) == ("0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z")
    assert [i["id"] for i in gw.ok("/v3/atomic/search", {"query": "walrus"})["items"]] == [memory]


def test_the_pipeline_extracts_a_session_holding_such_a_message(gw: Gateway) -> None:
    _store_raw(gw, "I will visit Lisbon tomorrow with my sister.", MAX_MS + 50_400_000, MAX_MS + 1)
    gw.ok("/v3/conversation/add", {"session_id": "s1", "messages": [{"role": "user", "content": "I love hiking."}]})
    gw.pipeline.drain()
    status = gw.ok("/v2/pipeline/status", {})
    assert status["l1"]["dead"] == 0 and status["waiting_sessions"] == 0, status
    assert gw.pipeline.jobs_failed == 0
    assert gw.ok("/v3/atomic/count", {})["total"] >= 1
