"""`MemhubStore` with the real LangGraph package against a real gateway.

LangGraph ships no store conformance suite in its wheel, so the contract is checked two ways: the same
operations run on LangGraph's own reference store (`InMemoryStore`) and on ours must give the same answers, and
a compiled graph reads in its second run what its first run put.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

from memhub.adapters.langgraph import MemhubStore
from memhub.sdk import TDAMError, TransportError
from memhub.sdk.connection import Connection
from memhub.sdk.memory import MemoryClient
from tests.adapters.conftest import Served, closed_port
from tests.meta.org import Org


@pytest.fixture
def connection(served: Served) -> Connection:
    return served.connection()


@pytest.fixture
def store(connection: Connection) -> Iterator[MemhubStore]:
    with MemhubStore(connection) as s:
        yield s


def sdk(connection: Connection, **ids: str) -> MemoryClient:
    """A plain SDK client on the same scope, to see what the hub holds."""
    c = replace(connection, **ids) if ids else connection
    return MemoryClient(c.url, c.key or "", c.service_id, team_id=c.team_id or "", agent_id=c.agent_id or "",
                        user_id=c.user_id or "")  # fmt: skip


def plain(items: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return sorted((i.namespace, i.key, i.value) for i in items)


VALUES: list[dict[str, Any]] = [
    {"content": "Ada prefers green tea"},
    {"memory": "  leading and trailing spaces \n"},
    {"content": ""},
    {"text": "x", "kind": "pref", "n": 3, "ok": True, "none": None},
    {"nested": {"list": [1, 2.5, "drei", {"deep": ["é", "字"]}]}, "emoji": "🍵"},
    {},
]


def script(store: BaseStore) -> list[Any]:
    """A run of every operation kind; returns what each read answered."""
    out: list[Any] = []
    for i, value in enumerate(VALUES):
        store.put(("docs", "team"), f"k{i}", value)
    store.put(("docs", "team", "drafts"), "d1", {"status": "draft", "score": 4})
    store.put(("docs", "team", "drafts"), "d2", {"status": "final", "score": 9})
    store.put(("prefs",), "color", {"content": "blue"})
    store.put(("prefs",), "color", {"content": "green"})  # overwrite
    store.put(("prefs",), "gone", {"content": "to delete"})
    store.delete(("prefs",), "gone")
    store.delete(("prefs",), "never-was")
    for i in range(len(VALUES)):
        got = store.get(("docs", "team"), f"k{i}")
        out.append(got and (got.namespace, got.key, got.value))
    out.append(store.get(("prefs",), "color").value)  # type: ignore[union-attr]
    out.append(store.get(("prefs",), "gone"))
    out.append(store.get(("docs", "team", "drafts"), "k0"))  # same key, other namespace
    out.append(plain(store.search(("docs",), limit=100)))
    out.append(plain(store.search(("docs", "team", "drafts"), filter={"status": "final"})))
    out.append(plain(store.search(("docs", "team", "drafts"), filter={"score": {"$gt": 5}})))
    out.append(plain(store.search((), filter={"kind": "pref", "n": 3})))
    out.append(len(store.search(("docs",), limit=3)))
    out.append(len(store.search(("docs",), limit=3, offset=6)))
    out.append(store.list_namespaces())
    out.append(store.list_namespaces(prefix=("docs",)))
    out.append(store.list_namespaces(suffix=("drafts",)))
    out.append(store.list_namespaces(prefix=("docs", "*")))
    out.append(store.list_namespaces(max_depth=1))
    out.append(store.list_namespaces(limit=1, offset=1))
    return out


def test_answers_as_langgraphs_reference_store_does(store: MemhubStore) -> None:
    assert script(store) == script(InMemoryStore())


def test_get_returns_what_put_stored_with_stable_creation_time(store: MemhubStore) -> None:
    store.put(("notes",), "a", {"content": "first"})
    first = store.get(("notes",), "a")
    store.put(("notes",), "a", {"content": "second", "tags": ["x"]})
    second = store.get(("notes",), "a")
    assert isinstance(first, Item) and isinstance(second, Item)
    assert second.value == {"content": "second", "tags": ["x"]}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert second.created_at.tzinfo is not None


def test_items_are_l1_memories_the_hub_recalls(store: MemhubStore, connection: Connection) -> None:
    store.put(("memories",), "tea", {"content": "Ada drinks oolong tea every morning"})
    store.put(("memories",), "bike", {"content": "Ada cycles to the office"})
    with sdk(connection) as client:
        rows = client.query_atomic()["items"]
        assert sorted(r["content"] for r in rows) == ["Ada cycles to the office", "Ada drinks oolong tea every morning"]
        assert {r["type"] for r in rows} == {"episodic"}
        recalled = client.recall("what tea does Ada drink?")
        assert any("oolong" in m["content"] for m in recalled["memories"])
    hits = store.search(("memories",), query="oolong tea")
    assert [h.key for h in hits][:1] == ["tea"]
    assert hits[0].score is not None and hits[0].score > 0


def test_the_pipelines_own_memories_are_not_items(store: MemhubStore, connection: Connection) -> None:
    with sdk(connection) as client:
        client.add_atomic("Ada likes tea", type="episodic")
    assert store.search((), limit=100) == []
    assert store.search((), query="tea") == []
    assert store.list_namespaces() == []


def test_namespace_id_pairs_choose_whose_memory_it_is(store: MemhubStore, connection: Connection) -> None:
    store.put(("user", "user-someone-else", "memories"), "m", {"content": "Bo is vegetarian"})
    store.put(("memories",), "m", {"content": "Ada is vegan"})
    with sdk(connection, user_id="user-someone-else") as other:
        assert [r["content"] for r in other.query_atomic()["items"]] == ["Bo is vegetarian"]
    with sdk(connection) as own:
        assert [r["content"] for r in own.query_atomic()["items"]] == ["Ada is vegan"]
    assert store.get(("user", "user-someone-else", "memories"), "m").value == {"content": "Bo is vegetarian"}  # type: ignore[union-attr]
    assert plain(store.search(("user", "user-someone-else"))) == [
        (("user", "user-someone-else", "memories"), "m", {"content": "Bo is vegetarian"})
    ]
    # A prefix that pins no user reads the connection's user only: memhub keeps users apart.
    assert plain(store.search(())) == [(("memories",), "m", {"content": "Ada is vegan"})]


def test_pairs_can_be_switched_off(connection: Connection) -> None:
    with MemhubStore(connection, id_labels={}) as store:
        store.put(("user", "u-x"), "k", {"content": "kept with the connection's user"})
    with sdk(connection) as own:
        assert [r["content"] for r in own.query_atomic()["items"]] == ["kept with the connection's user"]


def test_async_twins_from_several_event_loops(store: MemhubStore) -> None:
    async def write() -> None:
        await store.aput(("a",), "k", {"content": "one"})
        await store.aput(("a", "b"), "k", {"v": 1, "w": [2]})

    async def read() -> tuple[Any, ...]:
        got = await store.aget(("a", "b"), "k")
        found = await store.asearch(("a",))
        names = await store.alist_namespaces()
        await store.adelete(("a",), "k")
        return got.value, plain(found), names, await store.aget(("a",), "k")  # type: ignore[union-attr]

    asyncio.run(write())
    value, found, names, deleted = asyncio.run(read())
    assert value == {"v": 1, "w": [2]}
    assert found == [(("a",), "k", {"content": "one"}), (("a", "b"), "k", {"v": 1, "w": [2]})]
    assert names == [("a",), ("a", "b")]
    assert deleted is None


def test_a_value_too_large_is_refused_before_anything_is_written(store: MemhubStore, connection: Connection) -> None:
    store.put(("n",), "k", {"content": "small"})
    with pytest.raises(ValueError, match="value: its text must be at most 8192 characters"):
        store.put(("n",), "k", {"content": "x" * 9000})
    with pytest.raises(ValueError, match="must fit in 4096 bytes"):
        store.put(("n",), "k" * 5000, {"content": "fine"})
    assert store.get(("n",), "k").value == {"content": "small"}  # type: ignore[union-attr]
    with sdk(connection) as client:
        assert client.count_atomic()["total"] == 1


def test_gateway_down_raises_instead_of_losing_the_write(connection: Connection) -> None:
    down = replace(connection, url=f"http://127.0.0.1:{closed_port()}", timeout=5.0)
    with MemhubStore(down) as store, pytest.raises(TransportError):
        store.put(("n",), "k", {"content": "lost?"})


def test_a_compiled_graph_remembers_across_runs(store: MemhubStore) -> None:
    def node(state: MessagesState, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        seen = runtime.store.search(("memories",), limit=100)
        text = state["messages"][-1].content
        runtime.store.put(("memories",), f"m{len(seen)}", {"content": str(text)})
        return {"messages": [("ai", json.dumps(sorted(i.value["content"] for i in seen)))]}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)
    graph.invoke({"messages": [("user", "I live in Lisbon")]})
    second = graph.invoke({"messages": [("user", "I work on compilers")]})
    assert json.loads(second["messages"][-1].content) == ["I live in Lisbon"]
    assert plain(store.search(("memories",))) == [
        (("memories",), "m0", {"content": "I live in Lisbon"}),
        (("memories",), "m1", {"content": "I work on compilers"}),
    ]


def test_without_langgraph_the_import_says_which_extra_to_install() -> None:
    code = "import sys; sys.modules['langgraph'] = None\nimport memhub.adapters.langgraph"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "pip install 'memhub[langgraph]'" in run.stderr


def test_a_user_key_alone_connects_and_is_held_to_its_user(served: Served) -> None:
    org = Org(served.gateway, service="svc-adapters-keys")
    ada = org.user("ada")
    team = org.team(ada, "ada-team")
    org.agent(ada, team, "ada-agent")
    # Only the key: the user, their only team and that team's only agent come from the gateway.
    with MemhubStore(Connection(url=served.url, key=ada.key, service_id=org.service)) as store:
        store.put(("memories",), "k", {"content": "Ada's own note"})
        assert store.get(("memories",), "k").value == {"content": "Ada's own note"}  # type: ignore[union-attr]
        with pytest.raises(TDAMError) as refused:
            store.put(("user", org.admin.user_id, "memories"), "k", {"content": "into someone else's memory"})
        assert refused.value.code == 403 and "user_id" in str(refused.value)
