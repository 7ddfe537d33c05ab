"""MemoryClient / AsyncMemoryClient, client side only: construction, request shapes, guards, isolation.

Every test runs against both clients through `httpx.MockTransport`, so what is asserted is the request
that would have gone on the wire; nothing of the server is involved (tests/sdk/test_client_live.py and
tests/e2e/test_sdk_v3.py do the real round trips).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from memhub.sdk import AsyncMemoryClient, AtomicMemoryType, MemoryClient, ParamError
from memhub.sdk.memory import MAX_DELETE_ATOMIC, MAX_DELETE_MESSAGES, MAX_DELETE_SESSIONS

ENDPOINT = "https://memory.example.com"
ISO = {"team_id": "team-a", "agent_id": "agent-a", "user_id": "user-a"}
BASE = dict(ISO)
BOUND = {**ISO, "task_id": "task-a"}
Client = MemoryClient | AsyncMemoryClient


class Wire(httpx.MockTransport):
    """Answers every request with an empty success envelope and keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.closed = 0
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json={"code": 0, "message": "ok", "request_id": "req-1", "data": {"ok": True}})

    @property
    def last(self) -> tuple[str, Any]:
        request = self.requests[-1]
        return request.url.path, json.loads(request.content)

    def close(self) -> None:
        self.closed += 1

    async def aclose(self) -> None:
        self.closed += 1


def invoke(result: Any) -> Any:
    """A client call's result: awaited (in a fresh loop) when the client is async."""
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


@pytest.fixture(params=[MemoryClient, AsyncMemoryClient], ids=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> type[Client]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def make(kind: type[Client], wire: Wire) -> Iterator[Callable[..., Client]]:
    """Build a client of the parametrized kind over `wire`; `**overrides` replace the defaults."""
    made: list[Client] = []

    def build(**overrides: Any) -> Client:
        args: dict[str, Any] = {
            "endpoint": ENDPOINT,
            "api_key": "sk-test",
            "service_id": "svc-1",
            **ISO,
            "transport": wire,
            **overrides,
        }
        client = kind(**args)
        made.append(client)
        return client

    yield build
    for client in made:
        invoke(client.close())


# -- construction ------------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["team_id", "agent_id", "user_id"])
def test_isolation_ids_are_required(make: Callable[..., Client], missing: str) -> None:
    with pytest.raises(ParamError, match=missing):
        make(**{missing: ""})
    with pytest.raises(ParamError, match=missing):
        make(**{missing: "   "})


def test_all_missing_ids_are_named_at_once(kind: type[Client]) -> None:
    with pytest.raises(ParamError, match="team_id, agent_id, user_id"):
        kind(ENDPOINT, "k", "svc")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"endpoint": ""}, "endpoint must be provided"),
        ({"endpoint": "   "}, "endpoint must be provided"),
        ({"endpoint": "memory.example.com"}, "valid HTTP"),
        ({"endpoint": "ftp://memory.example.com"}, "valid HTTP"),
        ({"endpoint": "http://"}, "valid HTTP"),
        ({"endpoint": "http://[::1"}, "valid HTTP"),
        ({"api_key": ""}, "api_key must be provided"),
        ({"api_key": "  "}, "api_key must be provided"),
        ({"service_id": None}, "service_id must be provided"),
        ({"service_id": ""}, "service_id must be provided"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"timeout": -1.5}, "timeout must be a positive number"),
        ({"timeout": True}, "timeout must be a positive number"),
        ({"timeout": "5"}, "timeout must be a positive number"),
    ],
)
def test_connection_options_are_validated(make: Callable[..., Client], overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamError, match=message):
        make(**overrides)


def test_a_transport_of_the_wrong_kind_is_refused() -> None:
    class SyncOnly(httpx.BaseTransport):
        pass

    class AsyncOnly(httpx.AsyncBaseTransport):
        pass

    with pytest.raises(ParamError, match="BaseTransport"):
        MemoryClient(ENDPOINT, "k", "svc", **ISO, transport=AsyncOnly())  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="AsyncBaseTransport"):
        AsyncMemoryClient(ENDPOINT, "k", "svc", **ISO, transport=SyncOnly())  # type: ignore[arg-type]


def test_param_error_is_a_value_error() -> None:
    """Code written against the original's ValueError for a session-less write keeps catching it."""
    assert issubclass(ParamError, ValueError)


# -- headers and URL ---------------------------------------------------------------------------------
def test_headers_and_url(make: Callable[..., Client], wire: Wire) -> None:
    invoke(make(endpoint=ENDPOINT + "/").read_core())
    request = wire.requests[-1]
    assert request.method == "POST" and str(request.url) == ENDPOINT + "/v3/core/read"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.headers["x-tdai-service-id"] == "svc-1"
    assert request.headers["Content-Type"] == "application/json"
    assert "x-tdai-user-key" not in request.headers

    invoke(make(endpoint="http://gw.internal:8420/memory", user_key="sk-mem-u").read_core())
    request = wire.requests[-1]
    assert str(request.url) == "http://gw.internal:8420/memory/v3/core/read"  # a path prefix is kept
    assert request.headers["x-tdai-user-key"] == "sk-mem-u"


# -- request shapes ----------------------------------------------------------------------------------
MESSAGES = [{"role": "user", "content": "hi"}]
WINDOW = {"time_start": "2026-01-01T00:00:00Z", "time_end": "2026-02-01T00:00:00Z"}
# (method, args, kwargs, path, body) for a client bound to session "s-bound" and task "task-a".
SHAPES: list[tuple[str, tuple[Any, ...], dict[str, Any], str, dict[str, Any]]] = [
    (
        "add_conversation",
        (MESSAGES,),
        {},
        "/v3/conversation/add",
        {**BOUND, "session_id": "s-bound", "messages": MESSAGES},
    ),
    (
        "add_conversation",
        (MESSAGES,),
        {"session_id": "s-call", "idempotency_key": "turn-7"},
        "/v3/conversation/add",
        {**BOUND, "session_id": "s-call", "messages": MESSAGES, "idempotency_key": "turn-7"},
    ),
    (
        "query_conversation",
        (),
        {"limit": 0, "offset": 0, **WINDOW},
        "/v3/conversation/query",
        {**BOUND, "session_id": "s-bound", "limit": 0, "offset": 0, **WINDOW},
    ),
    (
        "search_conversation",
        ("hotpot",),
        {"limit": 5, "session_id": "s-call"},
        "/v3/conversation/search",
        {**BOUND, "session_id": "s-call", "query": "hotpot", "limit": 5},
    ),
    (
        "delete_conversation",
        (),
        {"message_ids": ["m1"]},
        "/v3/conversation/delete",
        {**BOUND, "message_ids": ["m1"]},
    ),
    (
        "count_conversation",
        (),
        WINDOW,
        "/v3/conversation/count",
        {**BOUND, "session_id": "s-bound", **WINDOW},
    ),
    (
        "update_atomic",
        ("m_1", "new content"),
        {"background": "drinks"},
        "/v3/atomic/update",
        {**BOUND, "session_id": "s-bound", "id": "m_1", "content": "new content", "background": "drinks"},
    ),
    (
        "add_atomic",
        ("a fact",),
        {"type": "episodic", "metadata": {"k": 1}},
        "/v3/atomic/add",
        {**BOUND, "session_id": "s-bound", "content": "a fact", "type": "episodic", "metadata": {"k": 1}},
    ),
    (
        "add_atomic",
        ("likes tea", "persona"),
        {},
        "/v3/atomic/add",
        {**BOUND, "session_id": "s-bound", "content": "likes tea", "type": "persona"},
    ),
    (
        "add_atomic",
        ("ship on fridays", "instruction"),
        {"priority": 80, "background": "release", "metadata": {"source": "mcp"}, "session_id": "s-2"},
        "/v3/atomic/add",
        {
            **BOUND,
            "session_id": "s-2",
            "content": "ship on fridays",
            "type": "instruction",
            "priority": 80,
            "background": "release",
            "metadata": {"source": "mcp"},
        },
    ),
    (
        "create_memories",
        ([{"content": "a fact"}],),
        {},
        "/v3/atomic/create",
        {**BOUND, "session_id": "s-bound", "records": [{"content": "a fact"}]},
    ),
    (
        "query_atomic",
        (),
        {"type": "persona", "limit": 3, "offset": 6},
        "/v3/atomic/query",
        {**BOUND, "session_id": "s-bound", "type": "persona", "limit": 3, "offset": 6},
    ),
    (
        "recall",
        ("tea?",),
        {},
        "/v3/recall",
        {**BOUND, "session_id": "s-bound", "query": "tea?", "include_persona": True, "include_scenes": True},
    ),
    (
        "recall",
        ("tea?",),
        {
            "messages": [{"role": "user", "content": "hi", "timestamp": "2026-01-31T09:30:00Z", "id": "m-1"}],
            "max_tokens": 800,
            "max_chars": 3000,
            "include_persona": False,
            "include_scenes": False,
            "session_id": "s-2",
        },
        "/v3/recall",
        {
            **BOUND,
            "session_id": "s-2",
            "query": "tea?",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 800,
            "max_chars": 3000,
            "include_persona": False,
            "include_scenes": False,
        },
    ),
    ("compose_context", ("tea?",), {}, "/v3/context/compose", {**BOUND, "session_id": "s-bound", "query": "tea?"}),
    (
        "compose_context",
        ("tea?",),
        {"session_id": "s-2", "help_mode": False, "paths": ["a.py"], "caps": {"total": 5000}, "language": "zh"},
        "/v3/context/compose",
        {
            **BOUND,
            "session_id": "s-2",
            "query": "tea?",
            "help_mode": False,
            "paths": ["a.py"],
            "caps": {"total": 5000},
            "language": "zh",
        },
    ),
    (
        "search_atomic",
        ("tea",),
        {"limit": 5, "type": "work_fact", **WINDOW},
        "/v3/atomic/search",
        {**BOUND, "session_id": "s-bound", "query": "tea", "limit": 5, "type": "work_fact", **WINDOW},
    ),
    (
        "delete_atomic",
        ([" m_1 ", "m_1", "m_2"],),
        {},
        "/v3/atomic/delete",
        {**BOUND, "session_id": "s-bound", "ids": ["m_1", "m_2"]},
    ),
    (
        "count_atomic",
        (),
        {"type": "persona"},
        "/v3/atomic/count",
        {**BOUND, "session_id": "s-bound", "type": "persona"},
    ),
    ("list_scenarios", (), {}, "/v3/scenario/ls", BOUND),
    ("list_scenarios", (), {"path_prefix": "travel/"}, "/v3/scenario/ls", {**BOUND, "path_prefix": "travel/"}),
    ("read_scenario", ("a/b.md",), {}, "/v3/scenario/read", {**BOUND, "path": "a/b.md"}),
    (
        "write_scenario",
        ("a/b.md", "text"),
        {"summary": "sum"},
        "/v3/scenario/write",
        {**BOUND, "path": "a/b.md", "content": "text", "summary": "sum"},
    ),
    ("rm_scenario", ("a/b.md",), {}, "/v3/scenario/rm", {**BOUND, "path": "a/b.md"}),
    ("count_scenario", (), {}, "/v3/scenario/count", BOUND),
    ("read_core", (), {}, "/v3/core/read", BOUND),
    ("write_core", ("# Persona",), {}, "/v3/core/write", {**BOUND, "content": "# Persona"}),
    ("count_core", (), {}, "/v3/core/count", BOUND),
    ("clear_chat_memory", ([" mem-1 ", "mem-1"],), {}, "/v3/chat-memory/clear", {"memory_ids": ["mem-1"]}),
]


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "path", "body"), SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)]
)
def test_request_shapes(
    make: Callable[..., Client],
    wire: Wire,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    path: str,
    body: dict[str, Any],
) -> None:
    client = make(session_id="s-bound", task_id="task-a")
    assert invoke(getattr(client, method)(*args, **kwargs)) == {"ok": True}
    assert wire.last == (path, body)
    assert list(wire.last[1]) == list(body)  # the original's key order, too


def test_every_call_is_covered_by_the_shape_table() -> None:
    methods = {n for n in dir(MemoryClient) if not n.startswith("_") and inspect.isfunction(getattr(MemoryClient, n))}
    assert methods - {"close", "with_isolation"} == {s[0] for s in SHAPES}


def test_none_values_are_dropped_but_falsy_values_kept(make: Callable[..., Client], wire: Wire) -> None:
    client = make()
    invoke(client.query_conversation(limit=None, offset=0, time_start=None))
    assert wire.last[1] == {**BASE, "offset": 0}
    invoke(client.write_scenario("a.md", "", summary=None))
    assert wire.last[1] == {**BASE, "path": "a.md", "content": ""}
    invoke(client.add_conversation(MESSAGES, session_id="s", idempotency_key=None))
    assert "idempotency_key" not in wire.last[1]


def test_recall_sends_role_and_text_of_any_message_shape(make: Callable[..., Client], wire: Wire) -> None:
    """The shapes capture reads (dicts, objects, content parts) go out as `{role, content}` text, nothing else."""
    history = [
        {"role": "user", "content": "plain", "name": "ada", "timestamp": 1_700_000_000},
        SimpleNamespace(role="assistant", content="from an object", tool_calls=[]),
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                {"type": "tool_result", "content": "hidden"},
            ],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    invoke(make().recall("q", messages=history))
    assert wire.last[1]["messages"] == [
        {"role": "user", "content": "plain"},
        {"role": "assistant", "content": "from an object"},
        {"role": "user", "content": "see\n[image]"},
        {"role": "assistant", "content": "done"},
    ]
    invoke(make().recall("q", messages=[]))
    assert wire.last[1]["messages"] == []  # an empty history is sent as such, not dropped


def test_create_memories_sends_an_unbound_session_as_null(make: Callable[..., Client], wire: Wire) -> None:
    """The original does not None-strip this body; the wire stays identical."""
    invoke(make().create_memories([{"content": "x"}]))
    assert wire.last[1] == {**BASE, "session_id": None, "records": [{"content": "x"}]}


# -- sessions ----------------------------------------------------------------------------------------
def test_a_write_needs_a_session_and_nothing_is_sent_without_one(make: Callable[..., Client], wire: Wire) -> None:
    client = make()
    with pytest.raises(ParamError, match="requires session_id"):
        invoke(client.add_conversation(MESSAGES))
    with pytest.raises(ValueError, match="requires session_id"):  # as the original raises it
        invoke(client.add_conversation(MESSAGES, session_id=""))
    assert wire.requests == []
    invoke(client.add_conversation(MESSAGES, session_id="s-new"))
    assert wire.last == ("/v3/conversation/add", {**BASE, "session_id": "s-new", "messages": MESSAGES})


def test_reads_without_a_session_aggregate_and_profiles_never_send_one(make: Callable[..., Client], wire: Wire) -> None:
    unbound = make()
    for call in (unbound.query_conversation(), unbound.count_atomic(), unbound.search_atomic("q")):
        invoke(call)
        assert "session_id" not in wire.last[1]
    bound = make(session_id="s-bound")
    for call in (bound.read_core(), bound.list_scenarios(), bound.write_core("x"), bound.count_scenario()):
        invoke(call)
        assert "session_id" not in wire.last[1]


def test_conversation_deletes_never_use_the_bound_session(make: Callable[..., Client], wire: Wire) -> None:
    client = make(session_id="constructor-session-must-not-be-deleted")
    with pytest.raises(ParamError, match="intentionally NOT used"):
        invoke(client.delete_conversation())
    assert wire.requests == []
    invoke(client.delete_conversation(message_ids=[" m1 ", "m1", "m2"]))
    assert wire.last == ("/v3/conversation/delete", {**BASE, "message_ids": ["m1", "m2"]})


# -- delete guards -----------------------------------------------------------------------------------
@pytest.mark.parametrize("ids", [[" "], [None], [1], "message-id", [], ["ok", ""]])
def test_invalid_message_ids_never_reach_the_transport(make: Callable[..., Client], wire: Wire, ids: Any) -> None:
    with pytest.raises(ParamError):
        invoke(make().delete_conversation(message_ids=ids))
    assert wire.requests == []


def test_limits_count_unique_ids(make: Callable[..., Client], wire: Wire) -> None:
    client = make()
    ids = [f"message-{i}" for i in range(MAX_DELETE_MESSAGES)]
    invoke(client.delete_conversation(message_ids=[*ids, ids[0]]))
    assert wire.last[1]["message_ids"] == ids
    with pytest.raises(ParamError, match=f"message_ids accepts at most {MAX_DELETE_MESSAGES} items, got 5001"):
        invoke(client.delete_conversation(message_ids=[*ids, "overflow"]))
    sessions = [f"s{i}" for i in range(MAX_DELETE_SESSIONS)]
    invoke(client.delete_conversation(session_ids=sessions))
    assert wire.last[1] == {**BASE, "session_ids": sessions}
    with pytest.raises(ParamError, match="session_ids accepts at most 100 items, got 101"):
        invoke(client.delete_conversation(session_ids=[*sessions, "s100"]))
    atomic = [f"m_{i}" for i in range(MAX_DELETE_ATOMIC)]
    invoke(client.delete_atomic([*atomic, " m_0 "]))
    assert wire.last[1]["ids"] == atomic
    with pytest.raises(ParamError, match="ids accepts at most 5000 items, got 5001"):
        invoke(client.delete_atomic([*atomic, "m_x"]))
    with pytest.raises(ParamError, match="memory_ids accepts at most 100 items, got 101"):
        invoke(client.clear_chat_memory([f"mem-{i}" for i in range(101)]))
    assert len(wire.requests) == 3


@pytest.mark.parametrize("message_ids", [None, ["message-1"]])
def test_the_deprecated_session_id_counts_towards_the_limit(
    make: Callable[..., Client], wire: Wire, message_ids: list[str] | None
) -> None:
    sessions = [f"session-{i}" for i in range(100)]
    with pytest.raises(ParamError, match="session_ids accepts at most 100 items, got 101"):
        invoke(make().delete_conversation(session_ids=sessions, session_id="session-extra", message_ids=message_ids))
    assert wire.requests == [] and len(sessions) == 100


@pytest.mark.parametrize(
    ("session_ids", "legacy", "expected"),
    [
        ([f"s-{i}" for i in range(99)], "s-99", [f"s-{i}" for i in range(100)]),
        ([f"s-{i}" for i in range(100)], "s-0", [f"s-{i}" for i in range(100)]),
        ([*(f"s-{i}" for i in range(100)), "s-0"], " s-0 ", [f"s-{i}" for i in range(100)]),
        (None, " legacy ", ["legacy"]),
    ],
    ids=["boundary", "duplicate-legacy", "trim-and-deduplicate", "legacy-only"],
)
def test_the_deprecated_session_id_merges_into_session_ids(
    make: Callable[..., Client], wire: Wire, session_ids: list[str] | None, legacy: str, expected: list[str]
) -> None:
    original = None if session_ids is None else list(session_ids)
    invoke(make(session_id="bound").delete_conversation(session_ids=session_ids, session_id=legacy))
    assert wire.last == ("/v3/conversation/delete", {**BASE, "session_ids": expected})
    assert session_ids == original  # the caller's list is not mutated


def test_deprecated_session_id_errors(make: Callable[..., Client], wire: Wire) -> None:
    client = make()
    for legacy in ("", "   "):
        with pytest.raises(ParamError, match="session_id must be a non-empty string"):
            invoke(client.delete_conversation(session_id=legacy))
    with pytest.raises(ParamError, match="session_ids must be a list"):
        invoke(client.delete_conversation(session_ids="s1", session_id="s2"))  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="delete_atomic requires a non-empty ids list"):
        invoke(client.delete_atomic([]))
    with pytest.raises(ParamError, match="clear_chat_memory requires a non-empty memory_ids list"):
        invoke(client.clear_chat_memory([]))
    assert wire.requests == []


# -- with_isolation ----------------------------------------------------------------------------------
def test_with_isolation_overrides_clears_and_keeps(make: Callable[..., Client], wire: Wire) -> None:
    client = make(session_id="bound-session", task_id="task-a")
    clone = client.with_isolation(agent_id="agent-b", session_id=None, task_id=None)
    assert type(clone) is type(client)
    invoke(clone.query_conversation(limit=0, offset=0))
    assert wire.last[1] == {"team_id": "team-a", "agent_id": "agent-b", "user_id": "user-a", "limit": 0, "offset": 0}
    invoke(client.query_conversation())  # the original is unchanged
    assert wire.last[1] == {**BOUND, "session_id": "bound-session"}

    kept = client.with_isolation(team_id="team-b", user_id="")  # omitted keeps; an empty id keeps too
    assert (kept.team_id, kept.agent_id, kept.user_id) == ("team-b", "agent-a", "user-a")
    assert (kept.session_id, kept.task_id) == ("bound-session", "task-a")
    switched = client.with_isolation(session_id="s-2", task_id="task-b")
    invoke(switched.count_conversation())
    assert wire.last[1] == {**ISO, "task_id": "task-b", "session_id": "s-2"}
    unbound = client.with_isolation(session_id=None)
    with pytest.raises(ParamError, match="requires session_id"):
        invoke(unbound.add_conversation(MESSAGES))


def test_with_isolation_shares_the_connection(make: Callable[..., Client], wire: Wire) -> None:
    client = make()
    clone = client.with_isolation(session_id="s")
    assert clone._http is client._http
    invoke(clone.read_core())
    invoke(client.read_core())
    assert len(wire.requests) == 2
    invoke(clone.close())  # one connection: closing a clone closes it for all
    assert wire.closed == 1


def test_context_managers_close(wire: Wire) -> None:
    with MemoryClient(ENDPOINT, "k", "svc", **ISO, transport=wire) as client:
        client.read_core()
    assert wire.closed == 1

    async def use() -> None:
        async with AsyncMemoryClient(ENDPOINT, "k", "svc", **ISO, transport=wire) as client:
            await client.read_core()

    asyncio.run(use())
    assert wire.closed == 2 and len(wire.requests) == 2


# -- async parity ------------------------------------------------------------------------------------
def _public(cls: type) -> dict[str, Any]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


def test_async_client_has_the_same_methods_as_coroutines() -> None:
    sync, async_ = _public(MemoryClient), _public(AsyncMemoryClient)
    assert set(sync) == set(async_)
    for name, method in sync.items():
        if isinstance(method, property):
            continue
        assert inspect.signature(method).parameters == inspect.signature(async_[name]).parameters, name
        assert inspect.iscoroutinefunction(async_[name]) == (name != "with_isolation"), name
        assert method.__doc__ == async_[name].__doc__, name


def test_async_argument_errors_surface_on_await() -> None:
    """An async call validates when awaited, so a caller's `coro.close()` or `wait_for` sees no early raise."""
    client = AsyncMemoryClient(ENDPOINT, "k", "svc", **ISO, transport=Wire())
    pending = client.delete_conversation()
    assert inspect.iscoroutine(pending)
    with pytest.raises(ParamError):
        asyncio.run(_awaited(pending))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def test_atomic_memory_type_lists_the_servers_types() -> None:
    from memhub.api.schemas import MemoryType  # the server side, only to compare

    assert set(AtomicMemoryType.__args__) == set(MemoryType.__args__)  # type: ignore[attr-defined]
