"""Contract tests of the L1 routes: atomic/add (memhub extension)|update|query|search|delete|count."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

import memhub.memory.atomic as atomic_service
from tests.conftest import ISO, SERVICE, Gateway, build_gateway

ATOMIC_ID = re.compile(r"^m_(\d{13})_[0-9a-f]{8}$")
BOTH = pytest.mark.parametrize("prefix", ["/v3", "/v2"])
TYPES = ["persona", "episodic", "instruction", "work_fact", "work_task", "work_method", "work_artifact"]
T0 = 1_769_851_800_000  # 2026-01-31T09:30:00Z
MINUTE = 60_000
DETAIL_KEYS = {
    "id",
    "type",
    "content",
    "version",
    "team_id",
    "user_id",
    "agent_id",
    "task_id",
    "created_at",
    "updated_at",
}


# -- helpers -------------------------------------------------------------------------------
def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def call(gw: Gateway, path: str, body: dict[str, Any]) -> Any:
    """`gw.ok` where the request options (isolation, headers, service) ride along in `body`."""
    options = {k: body.pop(k) for k in ("isolation", "headers", "service") if k in body}
    return gw.ok(path, body, **options)


def remember(gw: Gateway, content: str, type_: str = "persona", prefix: str = "/v3", **body: Any) -> dict[str, Any]:
    return call(gw, f"{prefix}/atomic/add", {"content": content, "type": type_, **body})


def update(gw: Gateway, memory_id: str, content: str, prefix: str = "/v3", **body: Any) -> dict[str, Any]:
    return call(gw, f"{prefix}/atomic/update", {"id": memory_id, "content": content, **body})


def query(gw: Gateway, prefix: str = "/v3", **body: Any) -> dict[str, Any]:
    return call(gw, f"{prefix}/atomic/query", body)


def search(gw: Gateway, text: str, prefix: str = "/v3", **body: Any) -> list[dict[str, Any]]:
    return call(gw, f"{prefix}/atomic/search", {"query": text, **body})["items"]


def count(gw: Gateway, **body: Any) -> int:
    return call(gw, "/v3/atomic/count", body)["total"]


def delete(gw: Gateway, ids: list[str], prefix: str = "/v3", **body: Any) -> int:
    data = call(gw, f"{prefix}/atomic/delete", {"ids": ids, **body})
    assert set(data) == {"deleted_count"}
    return data["deleted_count"]


def by_id(gw: Gateway, memory_id: str, **body: Any) -> dict[str, Any]:
    (item,) = [i for i in query(gw, limit=100, **body)["items"] if i["id"] == memory_id]
    return item


def stored(gw: Gateway) -> tuple[int, int]:
    """(L1 rows, audit rows) of every scope, read straight from the database file."""
    con = sqlite3.connect(gw.store.path)
    try:
        return (
            con.execute("SELECT COUNT(*) FROM l1_atomic").fetchone()[0],
            con.execute("SELECT COUNT(*) FROM memory_audit").fetchone()[0],
        )
    finally:
        con.close()


def refused(gw: Gateway, path: str, body: dict[str, Any], field: str) -> None:
    """A 400 whose message names `field`."""
    envelope = gw.fails(path, body, 400)
    assert any(p.startswith(f"{field}: ") for p in envelope["message"].split("; ")), envelope["message"]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The L1 service's clock, settable: `clock[0] = ms`."""
    now = [T0]
    monkeypatch.setattr(atomic_service, "now_ms", lambda: now[0])
    return now


# -- add -----------------------------------------------------------------------------------
@BOTH
def test_add_returns_the_stored_detail(gateway: Gateway, clock: list[int], prefix: str) -> None:
    meta = {"owner": "张三", "deadline": "2026-02-01"}
    body = {"priority": 80, "background": "周末计划", "source_message_ids": ["msg-000000000001"], "metadata": meta}
    iso_ids = {**ISO, "task_id": "task-9", "session_id": "s9"}
    item = remember(gateway, "用户喜欢周末爬山", "instruction", prefix, isolation=iso_ids, **body)
    match = ATOMIC_ID.match(item["id"])
    assert match and int(match.group(1)) == T0, item["id"]
    assert item == {
        "id": item["id"],
        "type": "instruction",
        "content": "用户喜欢周末爬山",
        "priority": 80,
        "version": 0,
        "team_id": "team-1",
        "user_id": "user-1",
        "agent_id": "agent-1",
        "task_id": "task-9",
        "session_id": "s9",
        "source_message_ids": ["msg-000000000001"],
        "created_at": "2026-01-31T09:30:00.000Z",
        "updated_at": "2026-01-31T09:30:00.000Z",
        "background": "周末计划",
        "metadata": meta,
    }
    assert query(gateway, prefix, isolation=iso_ids) == {"items": [item], "total": 1}


def test_add_defaults(gateway: Gateway) -> None:
    item = remember(gateway, "plain fact")
    assert (item["priority"], item["version"], item["source_message_ids"], item["session_id"]) == (50, 0, [], "default")
    assert "background" not in item and "metadata" not in item
    assert set(item) >= DETAIL_KEYS
    match = ATOMIC_ID.match(item["id"])
    assert match and abs(int(match.group(1)) - datetime.now(UTC).timestamp() * 1000) < 60_000, item["id"]
    assert item["created_at"] == item["updated_at"] == iso(int(match.group(1)))


@pytest.mark.parametrize("type_", TYPES)
def test_every_memory_type_is_accepted(gateway: Gateway, type_: str) -> None:
    assert remember(gateway, f"a {type_} memory", type_)["type"] == type_
    assert count(gateway, type=type_) == 1
    assert count(gateway, type="persona" if type_ != "persona" else "episodic") == 0


@pytest.mark.parametrize("priority", [-1, 0, 100])
def test_priority_bounds_are_inclusive(gateway: Gateway, priority: int) -> None:
    assert remember(gateway, "bounded", priority=priority)["priority"] == priority


def test_content_of_8192_code_points_is_accepted(gateway: Gateway) -> None:
    ids = [remember(gateway, text)["id"] for text in ("记" * 8192, "😀" * 8192)]
    assert [len(by_id(gateway, i)["content"]) for i in ids] == [8192, 8192]


# -- update --------------------------------------------------------------------------------
@BOTH
def test_update_bumps_the_version_and_keeps_the_rest(gateway: Gateway, clock: list[int], prefix: str) -> None:
    memory = remember(gateway, "likes green tea", background="drinks", priority=70)
    clock[0] = T0 + MINUTE
    first = update(gateway, memory["id"], "likes black coffee", prefix)
    assert first == {"id": memory["id"], "version": "v1", "updated_at": iso(T0 + MINUTE)}
    item = by_id(gateway, memory["id"])
    assert (item["content"], item["version"], item["background"], item["priority"]) == (
        "likes black coffee",
        1,
        "drinks",  # an update without background keeps it
        70,
    )
    assert (item["created_at"], item["updated_at"]) == (iso(T0), iso(T0 + MINUTE))
    clock[0] = T0 + 2 * MINUTE
    second = update(gateway, memory["id"], "likes espresso", prefix, background="morning")
    assert second == {"id": memory["id"], "version": "v2", "updated_at": iso(T0 + 2 * MINUTE)}
    item = by_id(gateway, memory["id"])
    assert (item["content"], item["version"], item["background"]) == ("likes espresso", 2, "morning")
    assert isinstance(item["version"], int)
    assert [h["id"] for h in search(gateway, "espresso")] == [memory["id"]]
    assert search(gateway, "tea") == search(gateway, "coffee") == []  # the index follows the content
    audit = gateway.store.list_audit(SERVICE)
    assert [(a["record_id"], a["action"], a["version"], a["user_id"]) for a in audit] == [
        (memory["id"], "update", 2, "user-1"),
        (memory["id"], "update", 1, "user-1"),
    ]


@BOTH
def test_update_of_an_unknown_id_is_404(gateway: Gateway, prefix: str) -> None:
    envelope = gateway.fails(f"{prefix}/atomic/update", {"id": "m_1_deadbeef", "content": "x"}, 404)
    assert "m_1_deadbeef" in envelope["message"]
    memory = remember(gateway, "of service a")
    gateway.fails(f"{prefix}/atomic/update", {"id": memory["id"], "content": "x"}, 404, service="svc-b")
    assert by_id(gateway, memory["id"])["content"] == "of service a"


@pytest.mark.parametrize("field", ["user_id", "agent_id", "team_id", "task_id"])
def test_update_of_another_owners_memory_answers_as_an_unknown_id(gateway: Gateway, field: str) -> None:
    memory = remember(gateway, "owned by user-1", isolation={**ISO, "task_id": "t1"})
    intruder = {**ISO, "task_id": "t1", field: "someone-else"}
    unknown = "m_1_deadbeef"
    for prefix in ("/v3", "/v2"):
        # A 403 would confirm that the id exists somewhere: the answer is the one for an unknown id.
        foreign = gateway.fails(
            f"{prefix}/atomic/update", {"id": memory["id"], "content": "hijacked"}, 404, isolation=intruder
        )
        missing = gateway.fails(
            f"{prefix}/atomic/update", {"id": unknown, "content": "hijacked"}, 404, isolation=intruder
        )
        assert foreign["message"].replace(memory["id"], unknown) == missing["message"]
        assert set(foreign) == set(missing)
    item = by_id(gateway, memory["id"], isolation={**ISO, "task_id": "t1"})
    assert (item["content"], item["version"]) == ("owned by user-1", 0)
    assert stored(gateway) == (1, 0)


# -- query / count -------------------------------------------------------------------------
@BOTH
def test_query_pages_newest_first_with_default_limit_20(gateway: Gateway, clock: list[int], prefix: str) -> None:
    ids = []
    for i in range(25):
        clock[0] = T0 + i * MINUTE
        ids.append(remember(gateway, f"fact {i}", prefix=prefix)["id"])
    first = query(gateway, prefix)
    assert first["total"] == 25
    assert [i["id"] for i in first["items"]] == ids[::-1][:20]
    assert all(set(i) >= DETAIL_KEYS and isinstance(i["version"], int) for i in first["items"])
    assert [i["id"] for i in query(gateway, prefix, offset=20)["items"]] == ids[4::-1]
    assert [i["id"] for i in query(gateway, prefix, limit=3, offset=2)["items"]] == [ids[22], ids[21], ids[20]]
    assert query(gateway, prefix, offset=25) == {"items": [], "total": 25}
    clock[0] = T0 + 30 * MINUTE
    update(gateway, ids[0], "fact 0, revised", prefix)
    assert query(gateway, prefix, limit=1)["items"][0]["id"] == ids[0]  # ordered by updated_at


def test_type_and_time_filters_on_query_count_and_search(gateway: Gateway, clock: list[int]) -> None:
    made = {}
    for minute, type_ in [(0, "persona"), (10, "episodic"), (20, "persona"), (30, "instruction")]:
        clock[0] = T0 + minute * MINUTE
        made[minute] = remember(gateway, f"llama note {minute}", type_)["id"]

    def ids(**body: Any) -> list[str]:
        return [i["id"] for i in query(gateway, **body)["items"]]

    assert ids(type="persona") == [made[20], made[0]]
    assert count(gateway, type="persona") == 2 and count(gateway, type="work_task") == 0
    assert ids(time_start=iso(T0 + 10 * MINUTE)) == [made[30], made[20], made[10]]
    assert ids(time_end=iso(T0 + 10 * MINUTE)) == [made[10], made[0]]
    window = {"time_start": "2026-01-31T11:35:00+02:00", "time_end": iso(T0 + 20 * MINUTE)}  # 09:35Z .. 09:50Z
    assert ids(**window) == [made[20], made[10]]
    assert count(gateway, **window) == 2 and count(gateway, type="persona", **window) == 1
    assert sorted(h["id"] for h in search(gateway, "llama", **window)) == sorted([made[10], made[20]])
    # The window applies to updated_at, so an update moves a memory into a later window.
    clock[0] = T0 + 40 * MINUTE
    update(gateway, made[0], "llama note 0, revised")
    assert ids(time_start=iso(T0 + 35 * MINUTE)) == [made[0]]
    assert query(gateway, time_start=iso(T0 + 35 * MINUTE))["total"] == 1


def test_count_shape(gateway: Gateway) -> None:
    remember(gateway, "a")
    remember(gateway, "b", "instruction")
    assert gateway.ok("/v3/atomic/count", {}) == {"total": 2}
    assert gateway.ok("/v3/atomic/count", {"type": "instruction"}) == {"total": 1}
    gateway.fails("/v2/atomic/count", {}, 404)


def test_another_scope_sees_nothing(gateway: Gateway) -> None:
    remember(gateway, "private walrus")
    for other in ({**ISO, "user_id": "user-2"}, {**ISO, "agent_id": "agent-2"}, {**ISO, "task_id": "t"}):
        assert query(gateway, isolation=other) == {"items": [], "total": 0}
        assert count(gateway, isolation=other) == 0
        assert search(gateway, "walrus", isolation=other) == []
    assert search(gateway, "walrus", service="svc-b") == []
    assert len(search(gateway, "walrus", isolation={**ISO, "session_id": "any"})) == 1  # L1 spans sessions


# -- search --------------------------------------------------------------------------------
@BOTH
def test_search_items_are_details_with_scores(gateway: Gateway, prefix: str) -> None:
    ids = [remember(gateway, f"otter fact number {i}", prefix=prefix)["id"] for i in range(6)]
    dense = remember(gateway, "otter otter otter", prefix=prefix)["id"]
    remember(gateway, "unrelated", prefix=prefix)
    hits = search(gateway, "otter", prefix)
    assert len(hits) == 5  # default limit
    assert hits[0]["id"] == dense
    assert all(DETAIL_KEYS | {"score"} <= set(h) and h["id"] in [*ids, dense] for h in hits)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
    assert len(search(gateway, "otter", prefix, limit=7)) == 7
    assert len(search(gateway, "otter", prefix, limit=1)) == 1
    assert search(gateway, "zebra", prefix) == []


@BOTH
def test_search_type_filter_applies_before_the_top_k(gateway: Gateway, prefix: str) -> None:
    for i in range(15):
        remember(gateway, f"coffee coffee coffee {i}", "persona", prefix)
    wanted = {
        remember(gateway, f"coffee was mentioned once in a long note {i}", "instruction", prefix)["id"]
        for i in range(6)
    }
    # Precondition: without the filter the top 5 hold no instruction at all.
    assert {h["type"] for h in search(gateway, "coffee", prefix, limit=5)} == {"persona"}
    hits = search(gateway, "coffee", prefix, limit=5, type="instruction")
    assert len(hits) == 5 and {h["type"] for h in hits} == {"instruction"} and {h["id"] for h in hits} <= wanted
    assert len(search(gateway, "coffee", prefix, limit=100, type="instruction")) == 6
    assert search(gateway, "coffee", prefix, type="work_fact") == []
    assert search(gateway, "coffee", prefix, type="no-such-type") == []


def test_chinese_and_english_search(gateway: Gateway) -> None:
    hotpot = remember(gateway, "用户周末喜欢和朋友去吃四川火锅")["id"]
    campus = remember(gateway, "用户明天要去北京大学参观")["id"]
    hiking = remember(gateway, "The user loves hiking in the Alps")["id"]
    remember(gateway, "用户在学习西班牙语")
    assert [h["id"] for h in search(gateway, "火锅")] == [hotpot]
    assert [h["id"] for h in search(gateway, "京大")] == [campus]  # only the bigram column has it
    assert [h["id"] for h in search(gateway, "hike")] == [hiking]
    assert search(gateway, "滑雪") == []


# -- delete --------------------------------------------------------------------------------
@BOTH
def test_delete_dedupes_trims_and_audits(gateway: Gateway, prefix: str) -> None:
    a, b, c = (remember(gateway, f"heron {n}")["id"] for n in "abc")
    assert delete(gateway, [f" {a} ", b, b, "m_1_00000000"], prefix) == 2
    assert [i["id"] for i in query(gateway)["items"]] == [c]
    assert [h["id"] for h in search(gateway, "heron")] == [c]
    assert delete(gateway, [a], prefix) == 0
    audit = gateway.store.list_audit(SERVICE)
    assert sorted((x["record_id"], x["action"], x["version"]) for x in audit) == sorted(
        [(a, "delete", 0), (b, "delete", 0)]
    )


def test_delete_accepts_5000_ids_and_never_reaches_another_scope(gateway: Gateway) -> None:
    mine = remember(gateway, "mine")["id"]
    theirs = remember(gateway, "theirs", isolation={**ISO, "user_id": "user-2"})["id"]
    fillers = [f"m_{i}_00000000" for i in range(4998)]
    assert delete(gateway, [mine, theirs, *fillers]) == 1
    assert count(gateway) == 0
    assert count(gateway, isolation={**ISO, "user_id": "user-2"}) == 1


# -- validation: every bad value is a 400 naming the field, and nothing is written -----------
SEED = "<seed-id>"  # replaced by the seeded memory's id
DROP = "<drop>"  # removes the key from the body
LONG = "x" * 257

ADD_CASES = [
    ("content-missing", {"content": DROP}, "content"),
    ("content-empty", {"content": ""}, "content"),
    ("content-8193", {"content": "a" * 8193}, "content"),
    ("content-8193-cjk", {"content": "记" * 8193}, "content"),
    ("content-int", {"content": 123}, "content"),
    ("type-missing", {"type": DROP}, "type"),
    ("type-null", {"type": None}, "type"),
    ("type-unknown", {"type": "fact"}, "type"),
    ("type-case", {"type": "Persona"}, "type"),
    ("type-empty", {"type": ""}, "type"),
    ("type-list", {"type": ["persona"]}, "type"),
    ("priority-low", {"priority": -2}, "priority"),
    ("priority-high", {"priority": 101}, "priority"),
    ("priority-string", {"priority": "50"}, "priority"),
    ("priority-bool", {"priority": True}, "priority"),
    ("priority-float", {"priority": 50.5}, "priority"),
    ("background-257", {"background": LONG}, "background"),
    ("background-int", {"background": 5}, "background"),
    ("sources-string", {"source_message_ids": "msg-1"}, "source_message_ids"),
    ("sources-int", {"source_message_ids": [1]}, "source_message_ids[0]"),
    ("sources-501", {"source_message_ids": ["m"] * 501}, "source_message_ids"),
    ("metadata-4097", {"metadata": {"k": "x" * 4089}}, "metadata"),
    ("metadata-list", {"metadata": []}, "metadata"),
    ("team-257", {"team_id": LONG}, "team_id"),
    ("user-257", {"user_id": LONG}, "user_id"),
    ("agent-257", {"agent_id": LONG}, "agent_id"),
    ("task-257", {"task_id": LONG}, "task_id"),
    ("session-257", {"session_id": LONG}, "session_id"),
]
UPDATE_CASES = [
    ("id-missing", {"content": "changed"}, "id"),
    ("id-empty", {"id": "", "content": "changed"}, "id"),
    ("id-257", {"id": LONG, "content": "changed"}, "id"),
    ("id-int", {"id": 7, "content": "changed"}, "id"),
    ("content-missing", {"id": SEED}, "content"),
    ("content-empty", {"id": SEED, "content": ""}, "content"),
    ("content-8193", {"id": SEED, "content": "b" * 8193}, "content"),
    ("content-null", {"id": SEED, "content": None}, "content"),
    ("background-257", {"id": SEED, "content": "changed", "background": LONG}, "background"),
    ("user-257", {"id": SEED, "content": "changed", "user_id": LONG}, "user_id"),
]
READ_CASES = [
    *[
        (f"{route}-{name}", route, {"query": "seed", **body} if route == "search" else body, field)
        for route in ("query", "search", "count")
        for name, body, field in [
            ("start-year-0-utc", {"time_start": "0001-01-01T00:59:59+01:00"}, "time_start"),
            ("end-year-10000-utc", {"time_end": "9999-12-31T23:59:59-00:01"}, "time_end"),
            ("end-date-only", {"time_end": "2026-01-31"}, "time_end"),
            ("start-after-end", {"time_start": iso(T0), "time_end": iso(T0 - 1)}, "time_start"),
            ("type-empty", {"type": ""}, "type"),
            ("type-65", {"type": "t" * 65}, "type"),
            ("agent-257", {"agent_id": LONG}, "agent_id"),
        ]
    ],
    *[
        (f"{route}-{name}", route, {"query": "seed", **body} if route == "search" else body, field)
        for route in ("query", "search")
        for name, body, field in [
            ("limit-0", {"limit": 0}, "limit"),
            ("limit-101", {"limit": 101}, "limit"),
            ("limit-string", {"limit": "5"}, "limit"),
            ("limit-float", {"limit": 1.5}, "limit"),
            ("limit-bool", {"limit": False}, "limit"),
        ]
    ],
    ("query-offset-negative", "query", {"offset": -1}, "offset"),
    ("search-query-missing", "search", {}, "query"),
    ("search-query-empty", "search", {"query": ""}, "query"),
    ("search-query-2049", "search", {"query": "q" * 2049}, "query"),
    ("search-query-list", "search", {"query": ["seed"]}, "query"),
]
DELETE_CASES = [
    ("ids-missing", {}, "ids"),
    ("ids-empty", {"ids": []}, "ids"),
    ("ids-blank", {"ids": [" ", ""]}, "ids"),
    ("ids-string", {"ids": SEED}, "ids"),
    ("ids-5001", {"ids": [SEED, *[f"m_{i}_00000000" for i in range(5000)]]}, "ids"),
    ("id-int", {"ids": [SEED, 1]}, "ids[1]"),
    ("id-257", {"ids": [SEED, LONG]}, "ids[1]"),
    ("team-257", {"ids": [SEED], "team_id": LONG}, "team_id"),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, dict[str, Any]]]:
    """One gateway for the validation tables (they must not write), holding one memory."""
    gw = build_gateway(tmp_path_factory.mktemp("l1-validation"))
    yield gw, remember(gw, "seed memory")
    gw.client.close()
    gw.store.close()


def _fill(value: Any, seed_id: str) -> Any:
    if value == SEED:
        return seed_id
    if isinstance(value, list):
        return [_fill(v, seed_id) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, seed_id) for k, v in value.items() if v != DROP}
    return value


def _refused_and_unchanged(seeded: tuple[Gateway, dict[str, Any]], path: str, body: dict[str, Any], field: str) -> None:
    gw, seed = seeded
    refused(gw, path, _fill(body, seed["id"]), field)
    assert stored(gw) == (1, 0)
    assert query(gw)["items"] == [seed]


@BOTH
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES])
def test_add_refuses(seeded: tuple[Gateway, dict[str, Any]], prefix: str, body: dict[str, Any], field: str) -> None:
    _refused_and_unchanged(seeded, f"{prefix}/atomic/add", {"content": "new", "type": "persona", **body}, field)


@BOTH
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_update_refuses(seeded: tuple[Gateway, dict[str, Any]], prefix: str, body: dict[str, Any], field: str) -> None:
    _refused_and_unchanged(seeded, f"{prefix}/atomic/update", body, field)


@pytest.mark.parametrize(("route", "body", "field"), [c[1:] for c in READ_CASES], ids=[c[0] for c in READ_CASES])
def test_reads_refuse(seeded: tuple[Gateway, dict[str, Any]], route: str, body: dict[str, Any], field: str) -> None:
    for prefix in ["/v3"] if route == "count" else ["/v3", "/v2"]:
        _refused_and_unchanged(seeded, f"{prefix}/atomic/{route}", body, field)


@BOTH
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in DELETE_CASES], ids=[c[0] for c in DELETE_CASES])
def test_delete_refuses(seeded: tuple[Gateway, dict[str, Any]], prefix: str, body: dict[str, Any], field: str) -> None:
    _refused_and_unchanged(seeded, f"{prefix}/atomic/delete", body, field)
