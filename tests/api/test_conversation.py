"""Contract tests of the L0 routes: conversation/add|query|search|delete|count under /v3 and /v2."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from memhub.index.tokenize import index_text, query_terms
from tests.conftest import ISO, Gateway, build_gateway

MSG_ID = re.compile(r"^msg-[0-9a-f]{12}$")
BOTH = pytest.mark.parametrize("prefix", ["/v3", "/v2"])
CJK = "记"  # one BMP code point, three UTF-8 bytes


# -- helpers -------------------------------------------------------------------------------
def msg(content: str = "hello there", role: str = "user", **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def at(minute: int) -> str:
    """An input instant on a fixed day (what clients send)."""
    return f"2026-01-31T09:{minute:02d}:00Z"


def iso(minute: int) -> str:
    """The same instant as the gateway writes it back."""
    return f"2026-01-31T09:{minute:02d}:00.000Z"


POST_OPTIONS = ("isolation", "headers", "service")


def call(gw: Gateway, path: str, body: dict[str, Any]) -> Any:
    """`gw.ok` where the request options (isolation, headers, service) ride along in `body`."""
    options = {k: body.pop(k) for k in POST_OPTIONS if k in body}
    return gw.ok(path, body, **options)


def add(gw: Gateway, *messages: str | dict[str, Any], prefix: str = "/v3", **body: Any) -> list[str]:
    """Add messages (plain strings become user messages) and return the accepted ids."""
    items = [msg(m) if isinstance(m, str) else m for m in messages]
    return call(gw, f"{prefix}/conversation/add", {"session_id": "s1", "messages": items, **body})["accepted_ids"]


def query(gw: Gateway, prefix: str = "/v3", **body: Any) -> dict[str, Any]:
    return call(gw, f"{prefix}/conversation/query", body)


def search(gw: Gateway, text: str, prefix: str = "/v3", **body: Any) -> list[dict[str, Any]]:
    return call(gw, f"{prefix}/conversation/search", {"query": text, **body})["messages"]


def count(gw: Gateway, **body: Any) -> int:
    return call(gw, "/v3/conversation/count", body)["total"]


def stored_messages(gw: Gateway) -> int:
    """Rows in the L0 table of every scope, read straight from the database file."""
    con = sqlite3.connect(gw.store.path)
    try:
        return con.execute("SELECT COUNT(*) FROM l0_messages").fetchone()[0]
    finally:
        con.close()


def refused(gw: Gateway, path: str, body: dict[str, Any], field: str, **kwargs: Any) -> dict[str, Any]:
    """A 400 whose message names `field`."""
    envelope = gw.fails(path, body, 400, **kwargs)
    parts = envelope["message"].split("; ")
    assert any(p.startswith(f"{field}: ") for p in parts), envelope["message"]
    return envelope


# -- add -----------------------------------------------------------------------------------
@BOTH
def test_add_acknowledges_every_message(gateway: Gateway, prefix: str) -> None:
    body = {"session_id": "s1", "messages": [msg("one"), msg("two", "assistant"), msg("three")]}
    data = gateway.ok(f"{prefix}/conversation/add", body)
    assert set(data) == {"accepted_ids", "accepted_versions", "total_count"}
    assert all(MSG_ID.match(i) for i in data["accepted_ids"]), data
    assert len(set(data["accepted_ids"])) == 3
    assert data["accepted_versions"] == ["v1", "v1", "v1"]
    assert data["total_count"] == 3
    listed = query(gateway, prefix)["messages"]
    assert [m["id"] for m in listed] == data["accepted_ids"]
    assert [(m["role"], m["content"]) for m in listed] == [("user", "one"), ("assistant", "two"), ("user", "three")]


def test_add_accepts_exactly_100_messages_and_8192_code_points(gateway: Gateway) -> None:
    assert len(add(gateway, *[f"m{i}" for i in range(100)])) == 100
    long_ids = add(gateway, CJK * 8192, "😀" * 8192, "a" * 8192, session_id="long")
    stored = {m["id"]: m["content"] for m in query(gateway, session_id="long")["messages"]}
    assert [len(stored[i]) for i in long_ids] == [8192, 8192, 8192]
    assert stored_messages(gateway) == 103


def test_query_returns_the_full_message_view(gateway: Gateway) -> None:
    iso_ids = {**ISO, "task_id": "task-9"}
    message = msg("the view", "assistant", recorded_at="2026-01-31T17:30:00+08:00", timestamp="2026-01-31T09:00:00Z")
    (mid,) = add(gateway, message, session_id="sess-v", isolation=iso_ids)
    data = query(gateway, isolation=iso_ids)
    assert data["total"] == 1
    assert data["messages"] == [
        {
            "id": mid,
            "session_id": "sess-v",
            "team_id": "team-1",
            "user_id": "user-1",
            "agent_id": "agent-1",
            "task_id": "task-9",
            "role": "assistant",
            "content": "the view",
            "timestamp": "2026-01-31T09:30:00.000Z",  # = recorded_at, normalised to UTC
            "message_time": "2026-01-31T09:00:00.000Z",
        }
    ]


def test_missing_isolation_ids_fall_into_the_default_bucket(gateway: Gateway) -> None:
    gateway.ok("/v2/conversation/add", {"messages": [msg("no ids")]}, isolation={})
    (m,) = query(gateway, "/v2", isolation={})["messages"]
    assert (m["team_id"], m["user_id"], m["agent_id"], m["task_id"], m["session_id"]) == (
        "default",
        "default",
        "default",
        "",
        "default",
    )
    assert query(gateway)["total"] == 0  # user-1 sees nothing of the default bucket


def test_isolation_ids_come_from_headers_when_the_body_has_none(gateway: Gateway) -> None:
    headers = {"x-tdai-team-id": "team-1", "x-tdai-agent-id": "agent-1", "x-tdai-user-id": "user-1"}
    gateway.ok("/v3/conversation/add", {"messages": [msg("via headers")]}, isolation={}, headers=headers)
    (m,) = query(gateway)["messages"]
    assert (m["content"], m["user_id"], m["session_id"]) == ("via headers", "user-1", "default")


def test_message_time_defaults_to_recorded_at(gateway: Gateway) -> None:
    add(gateway, msg("epoch", recorded_at="1970-01-01T00:00:00Z"), msg("later", recorded_at=at(5)))
    views = {m["content"]: m for m in query(gateway)["messages"]}
    assert views["epoch"]["timestamp"] == views["epoch"]["message_time"] == "1970-01-01T00:00:00.000Z"
    assert views["later"]["timestamp"] == views["later"]["message_time"] == iso(5)


# -- query / count -------------------------------------------------------------------------
@BOTH
def test_query_pages_in_time_order_with_default_limit_20(gateway: Gateway, prefix: str) -> None:
    minutes = list(range(25))
    # Two batches, each out of order: the result must follow recorded_at, not insertion.
    add(gateway, *[msg(f"m{m}", recorded_at=at(m)) for m in reversed(minutes[::2])], prefix=prefix)
    add(gateway, *[msg(f"m{m}", recorded_at=at(m)) for m in reversed(minutes[1::2])], prefix=prefix)
    first = query(gateway, prefix)
    assert first["total"] == 25
    assert [m["content"] for m in first["messages"]] == [f"m{m}" for m in range(20)]
    assert [m["timestamp"] for m in first["messages"]] == [iso(m) for m in range(20)]
    rest = query(gateway, prefix, offset=20)
    assert [m["content"] for m in rest["messages"]] == [f"m{m}" for m in range(20, 25)]
    assert rest["total"] == 25
    window = query(gateway, prefix, limit=3, offset=7)
    assert [m["content"] for m in window["messages"]] == ["m7", "m8", "m9"]
    assert query(gateway, prefix, offset=25) == {"messages": [], "total": 25}
    assert len(query(gateway, prefix, limit=100)["messages"]) == 25


def test_session_filter_on_query_count_and_search(gateway: Gateway) -> None:
    add(gateway, "pizza in session one", "more from one", session_id="s1")
    add(gateway, "pizza in session two", session_id="s2")
    add(gateway, msg("pizza without session"), session_id=None)
    assert query(gateway)["total"] == 4
    assert count(gateway) == 4
    only = query(gateway, session_id="s1")
    assert only["total"] == 2
    assert {m["session_id"] for m in only["messages"]} == {"s1"}
    assert count(gateway, session_id="s2") == 1
    assert count(gateway, session_id="default") == 1
    assert count(gateway, session_id="nope") == 0
    assert query(gateway, headers={"x-tdai-session-id": "s2"})["total"] == 1
    assert {h["session_id"] for h in search(gateway, "pizza")} == {"s1", "s2", "default"}
    assert [h["content"] for h in search(gateway, "pizza", session_id="s2")] == ["pizza in session two"]


def test_time_window_on_query_count_and_search(gateway: Gateway) -> None:
    add(gateway, *[msg(f"apple note {m}", recorded_at=at(m)) for m in (10, 20, 30)])
    assert [m["timestamp"] for m in query(gateway, time_start=at(20))["messages"]] == [iso(20), iso(30)]
    assert [m["timestamp"] for m in query(gateway, time_end=at(20))["messages"]] == [iso(10), iso(20)]
    both = query(gateway, time_start=at(15), time_end="2026-01-31T11:25:00+02:00")  # = 09:25Z
    assert (both["total"], [m["timestamp"] for m in both["messages"]]) == (1, [iso(20)])
    assert count(gateway, time_start=at(20), time_end=at(20)) == 1
    assert count(gateway, time_start=at(31)) == 0
    assert count(gateway, time_end=at(30)) == 3
    hits = search(gateway, "apple", time_start=at(11), time_end=at(30))
    assert sorted(h["content"] for h in hits) == ["apple note 20", "apple note 30"]


def test_count_shape_and_v2_has_no_count_routes(gateway: Gateway) -> None:
    add(gateway, "a", "b")
    assert gateway.ok("/v3/conversation/count", {}) == {"total": 2}
    for path in ("/v2/conversation/count", "/v2/atomic/count"):
        envelope = gateway.fails(path, {}, 404)
        assert path in envelope["message"]


def test_another_user_sees_nothing(gateway: Gateway) -> None:
    add(gateway, "private pizza")
    other = {**ISO, "user_id": "user-2"}
    assert query(gateway, isolation=other) == {"messages": [], "total": 0}
    assert gateway.ok("/v3/conversation/count", {}, isolation=other) == {"total": 0}
    assert gateway.ok("/v3/conversation/search", {"query": "pizza"}, isolation=other)["messages"] == []
    assert search(gateway, "pizza", service="svc-b") == []


# -- metadata ------------------------------------------------------------------------------
def test_metadata_round_trips_in_query_and_search(gateway: Gateway) -> None:
    meta = {"source": "wechat", "tags": ["家庭", "周末"], "n": 3, "nested": {"ok": True, "none": None}}
    with_meta, without = add(gateway, msg("kayak trip", metadata=meta), msg("kayak rental"))
    views = {m["id"]: m for m in query(gateway)["messages"]}
    assert views[with_meta]["metadata"] == meta
    assert "metadata" not in views[without]
    (hit,) = [h for h in search(gateway, "kayak") if h["id"] == with_meta]
    assert hit["metadata"] == meta


def test_metadata_of_exactly_4096_bytes_is_accepted(gateway: Gateway) -> None:
    # {"k":"…"} is 8 bytes of JSON around the value; 1362 × 3-byte characters + 2 ASCII = 4088.
    meta = {"k": CJK * 1362 + "ab"}
    (mid,) = add(gateway, msg("sized", metadata=meta))
    assert query(gateway)["messages"][0]["metadata"] == meta
    too_big = {"messages": [msg(metadata={"k": CJK * 1362 + "abc"})]}
    refused(gateway, "/v3/conversation/add", too_big, "messages[0].metadata")
    assert [m["id"] for m in query(gateway)["messages"]] == [mid]


# -- idempotency ---------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["body", "header"])
def test_idempotency_key_replays_the_first_ids(gateway: Gateway, where: str) -> None:
    body: dict[str, Any] = {"session_id": "s1", "messages": [msg("once"), msg("only once", "assistant")]}
    kwargs: dict[str, Any] = {}
    if where == "body":
        body["idempotency_key"] = "key-1"
    else:
        kwargs["headers"] = {"Idempotency-Key": "key-1"}
    first = gateway.ok("/v3/conversation/add", body, **kwargs)
    again = gateway.ok("/v3/conversation/add", body, **kwargs)
    mirror = gateway.ok("/v2/conversation/add", body, **kwargs)
    assert first == again == mirror
    assert stored_messages(gateway) == 2
    assert count(gateway) == 2


def test_header_and_body_keys_share_one_namespace(gateway: Gateway) -> None:
    body = {"messages": [msg("same")]}
    first = gateway.ok("/v3/conversation/add", body, headers={"Idempotency-Key": "k"})
    second = gateway.ok("/v3/conversation/add", {**body, "idempotency_key": "k"})
    assert first == second and stored_messages(gateway) == 1


@pytest.mark.parametrize(
    "changed",
    [
        {"messages": [msg("something else")]},
        {"messages": [msg("once", "assistant")]},
        {"messages": [msg("once")], "session_id": "another"},
        {"messages": [msg("once", recorded_at=at(1))]},
        {"messages": [msg("once"), msg("once")]},
    ],
    ids=["content", "role", "session", "recorded_at", "extra-message"],
)
def test_reused_idempotency_key_with_another_body_is_409(gateway: Gateway, changed: dict[str, Any]) -> None:
    ids = add(gateway, msg("once"), idempotency_key="key-1")
    envelope = gateway.fails("/v3/conversation/add", {"session_id": "s1", **changed, "idempotency_key": "key-1"}, 409)
    assert envelope["message"].startswith("idempotency_key: ")
    assert envelope["data"] == {"accepted_ids": ids}
    assert stored_messages(gateway) == 1


def test_idempotency_keys_are_per_scope(gateway: Gateway) -> None:
    mine = add(gateway, "same text", idempotency_key="k")
    theirs = add(gateway, "same text", idempotency_key="k", isolation={**ISO, "user_id": "user-2"})
    assert mine != theirs and stored_messages(gateway) == 2


# -- delete --------------------------------------------------------------------------------
def delete(gw: Gateway, prefix: str = "/v3", **body: Any) -> int:
    data = call(gw, f"{prefix}/conversation/delete", body)
    assert set(data) == {"deleted_count"}
    return data["deleted_count"]


@BOTH
def test_delete_by_message_ids_dedupes_and_trims(gateway: Gateway, prefix: str) -> None:
    a, b, c = add(gateway, "alpha walrus", "beta walrus", "gamma walrus")
    assert delete(gateway, prefix, message_ids=[f"  {a} ", b, b, "msg-000000000000"]) == 2
    assert [m["id"] for m in query(gateway)["messages"]] == [c]
    assert [h["id"] for h in search(gateway, "walrus")] == [c]  # the index forgot them too
    assert delete(gateway, prefix, message_ids=[a, b]) == 0


@BOTH
def test_delete_by_session_ids(gateway: Gateway, prefix: str) -> None:
    add(gateway, "x1", "x2", session_id="x")
    add(gateway, "y1", session_id="y")
    (keep,) = add(gateway, "z1", session_id="z")
    assert delete(gateway, prefix, session_ids=["x", " y", "x", "missing"]) == 3
    assert [m["id"] for m in query(gateway)["messages"]] == [keep]


def test_delete_overlaps_count_once(gateway: Gateway) -> None:
    (a,) = add(gateway, "a", session_id="old")
    add(gateway, "b", session_id="old")
    (c,) = add(gateway, "c", session_id="new")
    (d,) = add(gateway, "d", session_id="kept")
    assert delete(gateway, session_ids=["old", "new"], message_ids=[a, c]) == 3
    assert [m["id"] for m in query(gateway)["messages"]] == [d]


def test_deprecated_session_id_deletes_a_session_only_when_it_is_the_sole_target(gateway: Gateway) -> None:
    """`session_id` is also the isolation context clients send everywhere; next to explicit targets
    it must not widen a delete to the whole session (the original merges it, losing data)."""
    (a,) = add(gateway, "a", session_id="ctx")
    (b,) = add(gateway, "b", session_id="ctx")
    assert delete(gateway, session_id="ctx", message_ids=[a]) == 1
    assert [m["id"] for m in query(gateway)["messages"]] == [b]
    assert delete(gateway, session_id="ctx") == 1
    assert count(gateway) == 0


def test_delete_never_reaches_another_scope(gateway: Gateway) -> None:
    (mine,) = add(gateway, "mine", session_id="shared")
    other = {**ISO, "agent_id": "agent-2"}
    assert delete(gateway, message_ids=[mine], session_ids=["shared"], isolation=other) == 0
    assert count(gateway) == 1


# -- search --------------------------------------------------------------------------------
@BOTH
def test_search_hits_carry_score_ids_and_session(gateway: Gateway, prefix: str) -> None:
    ids = add(gateway, *[f"walrus fact {i}" for i in range(6)], "walrus walrus walrus", "nothing here", prefix=prefix)
    hits = search(gateway, "walrus", prefix)
    assert len(hits) == 5  # default limit
    assert hits[0]["id"] == ids[6]  # the densest match ranks first
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
    for hit in hits:
        assert {k: hit[k] for k in ("team_id", "user_id", "agent_id", "task_id", "session_id", "role")} == {
            **ISO,
            "task_id": "",
            "session_id": "s1",
            "role": "user",
        }
        assert hit["id"] in ids[:7] and "walrus" in hit["content"] and hit["timestamp"].endswith("Z")
    assert len(search(gateway, "walrus", prefix, limit=7)) == 7
    assert len(search(gateway, "walrus", prefix, limit=2)) == 2
    assert search(gateway, "zebra", prefix) == []


def test_chinese_two_character_query_finds_the_message(gateway: Gateway) -> None:
    (mid,) = add(gateway, "周末和朋友去吃四川火锅")
    add(gateway, "明天下午开会讨论预算")
    # The neighbouring message may follow through its context column, but never ahead of the match.
    assert search(gateway, "火锅")[0]["id"] == mid
    assert search(gateway, "滑雪") == []


def test_chinese_query_segmented_differently_still_matches_through_bigrams(gateway: Gateway) -> None:
    document, text = "我明天要去北京大学参观", "京大"
    # Precondition: jieba gives the query no word the document's words contain.
    assert not set(query_terms(text).words) & set(index_text(document).words.split())
    (mid,) = add(gateway, document)
    add(gateway, "南京的天气很好")
    assert [h["id"] for h in search(gateway, text)] == [mid]


def test_english_stemming(gateway: Gateway) -> None:
    (mid,) = add(gateway, "I love hiking in the Alps")
    add(gateway, "we talked about taxes")
    assert search(gateway, "hike")[0]["id"] == mid
    assert search(gateway, "HIKES")[0]["id"] == mid


# -- validation: every bad value is a 400 naming the field, and nothing is written -----------
LONG_ID = "x" * 257


def one(**fields: Any) -> dict[str, Any]:
    """An add body with one message whose fields are overridden."""
    return {"session_id": "s1", "messages": [{"role": "user", "content": "ok", **fields}]}


ADD_CASES = [
    ("empty-list", {"messages": []}, "messages"),
    ("101-messages", {"messages": [msg()] * 101}, "messages"),
    ("no-messages", {"session_id": "s1"}, "messages"),
    ("messages-object", {"messages": msg()}, "messages"),
    ("messages-string", {"messages": "hello"}, "messages"),
    ("message-string", {"messages": ["hello"]}, "messages[0]"),
    ("role-system", one(role="system"), "messages[0].role"),
    ("role-upper", one(role="User"), "messages[0].role"),
    ("role-missing", {"messages": [{"content": "x"}]}, "messages[0].role"),
    ("content-empty", one(content=""), "messages[0].content"),
    ("content-8193", one(content="a" * 8193), "messages[0].content"),
    ("content-8193-cjk", one(content=CJK * 8193), "messages[0].content"),
    ("content-int", one(content=123), "messages[0].content"),
    ("content-null", one(content=None), "messages[0].content"),
    ("content-list", one(content=["a"]), "messages[0].content"),
    ("second-message", {"messages": [msg("fine"), msg("")]}, "messages[1].content"),
    ("timestamp-year-10000-utc", one(timestamp="9999-12-31T23:59:59-14:00"), "messages[0].timestamp"),
    ("timestamp-year-0-utc", one(timestamp="0001-01-01T00:00:00+01:00"), "messages[0].timestamp"),
    ("timestamp-date", one(timestamp="2026-01-31"), "messages[0].timestamp"),
    ("timestamp-words", one(timestamp="yesterday"), "messages[0].timestamp"),
    ("timestamp-epoch", one(timestamp=1769851800000), "messages[0].timestamp"),
    ("timestamp-bad-day", one(timestamp="2026-02-30T09:30:00Z"), "messages[0].timestamp"),
    ("recorded-year-10000-utc", one(recorded_at="9999-12-31 23:30:00-01:00"), "messages[0].recorded_at"),
    ("metadata-4097", one(metadata={"k": "x" * 4089}), "messages[0].metadata"),
    ("metadata-list", one(metadata=["a"]), "messages[0].metadata"),
    ("session-257", {**one(), "session_id": LONG_ID}, "session_id"),
    ("session-int", {**one(), "session_id": 7}, "session_id"),
    ("team-257", {**one(), "team_id": LONG_ID}, "team_id"),
    ("user-257", {**one(), "user_id": LONG_ID}, "user_id"),
    ("agent-257", {**one(), "agent_id": LONG_ID}, "agent_id"),
    ("task-257", {**one(), "task_id": LONG_ID}, "task_id"),
    ("idem-empty", {**one(), "idempotency_key": ""}, "idempotency_key"),
    ("idem-257", {**one(), "idempotency_key": "k" * 257}, "idempotency_key"),
]
READ_CASES = [
    *[
        (f"{route}-{name}", route, {"query": "x", **body} if route == "search" else body, field)
        for route in ("query", "search", "count")
        for name, body, field in [
            ("start-year-0-utc", {"time_start": "0001-01-01T00:59:59+01:00"}, "time_start"),
            ("end-year-10000-utc", {"time_end": "9999-12-31T23:59:59-00:01"}, "time_end"),
            ("end-words", {"time_end": "tomorrow"}, "time_end"),
            ("start-after-end", {"time_start": at(30), "time_end": at(10)}, "time_start"),
            ("session-257", {"session_id": LONG_ID}, "session_id"),
            ("user-257", {"user_id": LONG_ID}, "user_id"),
        ]
    ],
    *[
        (f"{route}-{name}", route, {"query": "x", **body} if route == "search" else body, field)
        for route in ("query", "search")
        for name, body, field in [
            ("limit-0", {"limit": 0}, "limit"),
            ("limit-101", {"limit": 101}, "limit"),
            ("limit-string", {"limit": "5"}, "limit"),
            ("limit-float", {"limit": 1.5}, "limit"),
            ("limit-bool", {"limit": True}, "limit"),
            ("limit-null", {"limit": None}, "limit"),
        ]
    ],
    ("query-offset-negative", "query", {"offset": -1}, "offset"),
    ("query-offset-string", "query", {"offset": "0"}, "offset"),
    ("search-query-missing", "search", {"limit": 5}, "query"),
    ("search-query-empty", "search", {"query": ""}, "query"),
    ("search-query-2049", "search", {"query": "q" * 2049}, "query"),
    ("search-query-int", "search", {"query": 5}, "query"),
]
DELETE_CASES = [
    ("nothing", {}, "message_ids"),
    ("message-ids-empty", {"message_ids": []}, "message_ids"),
    ("session-ids-empty", {"session_ids": []}, "session_ids"),
    ("both-empty", {"message_ids": [], "session_ids": []}, "message_ids"),
    ("whitespace-ids", {"message_ids": ["  ", ""]}, "message_ids"),
    ("control-character-id", {"message_ids": ["msg-1\t"]}, "message_ids[0]"),
    ("whitespace-sessions", {"session_ids": [" "]}, "message_ids"),
    ("5001-message-ids", {"message_ids": [f"msg-{i:012x}" for i in range(5001)]}, "message_ids"),
    ("101-session-ids", {"session_ids": ["seed", *[f"s{i}" for i in range(100)]]}, "session_ids"),
    ("ids-string", {"message_ids": "msg-000000000000"}, "message_ids"),
    ("id-int", {"message_ids": [1], "session_ids": ["seed"]}, "message_ids[0]"),
    ("id-257", {"message_ids": [LONG_ID], "session_ids": ["seed"]}, "message_ids[0]"),
    ("sessions-null-item", {"session_ids": [None, "seed"]}, "session_ids[0]"),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway for the validation tables (they must not write), holding one message in session "seed"."""
    gw = build_gateway(tmp_path_factory.mktemp("l0-validation"))
    add(gw, "seed message", session_id="seed")
    yield gw
    gw.client.close()
    gw.store.close()


@BOTH
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES])
def test_add_refuses(seeded: Gateway, prefix: str, body: dict[str, Any], field: str) -> None:
    refused(seeded, f"{prefix}/conversation/add", body, field)
    assert stored_messages(seeded) == 1


@pytest.mark.parametrize(("route", "body", "field"), [c[1:] for c in READ_CASES], ids=[c[0] for c in READ_CASES])
def test_reads_refuse(seeded: Gateway, route: str, body: dict[str, Any], field: str) -> None:
    for prefix in ["/v3"] if route == "count" else ["/v3", "/v2"]:
        refused(seeded, f"{prefix}/conversation/{route}", body, field)
    assert stored_messages(seeded) == 1


@BOTH
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in DELETE_CASES], ids=[c[0] for c in DELETE_CASES])
def test_delete_refuses(seeded: Gateway, prefix: str, body: dict[str, Any], field: str) -> None:
    refused(seeded, f"{prefix}/conversation/delete", body, field)
    assert stored_messages(seeded) == 1


def test_overlong_isolation_header_is_refused(gateway: Gateway) -> None:
    refused(gateway, "/v3/conversation/add", one(), "x-tdai-user-id", isolation={}, headers={"x-tdai-user-id": LONG_ID})
    assert stored_messages(gateway) == 0


def test_query_of_exactly_2048_characters_is_accepted(gateway: Gateway) -> None:
    (mid,) = add(gateway, "quokka sighting")
    assert [h["id"] for h in search(gateway, "quokka " + "q" * 2041)] == [mid]
