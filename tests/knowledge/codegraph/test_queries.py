"""The code-graph tools over the ground-truth package: exact answers, file:line, truncation, unresolved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memhub.knowledge.codegraph.indexer import index_tree
from memhub.knowledge.codegraph.queries import run_tool
from memhub.store.sqlite.graph import SQLiteGraph

PROJECT = Path(__file__).parent / "fixtures" / "pyproj"


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteGraph]:
    db = tmp_path_factory.mktemp("cg") / "graph.db"
    index_tree(PROJECT, db)
    reader = SQLiteGraph(db, readonly=True)
    yield reader
    reader.close()


def _run(graph: SQLiteGraph, tool: str, **params: object) -> dict[str, object]:
    return run_tool(graph, tool, dict(params), source_root=PROJECT)


def test_callers_with_locations_resolution_and_totals(graph: SQLiteGraph) -> None:
    answer = _run(graph, "callers", symbol="shop.util.log", limit=20)
    assert answer["isError"] is False
    assert answer["total"] == 4 and answer["truncated"] is False
    first = answer["items"][0]  # type: ignore[index]
    assert first == {
        "qname": "shop.client.Session.send",
        "kind": "calls",
        "file": "shop/client.py",
        "line": 12,
        "resolution": "import",
        "confidence": 0.95,
    }
    assert "shop/client.py:12" in str(answer["text"])
    cut = _run(graph, "callers", symbol="shop.util.log", limit=2)
    assert (cut["total"], len(cut["items"]), cut["truncated"]) == (4, 2, True)  # type: ignore[arg-type]


def test_callees_list_the_unresolved_calls_a_symbol_makes(graph: SQLiteGraph) -> None:
    answer = _run(graph, "callees", symbol="shutdown", limit=20)
    assert answer["items"] == []
    [unresolved] = answer["unresolved"]  # type: ignore[misc]
    assert unresolved["target"] == "resource.close"
    assert sorted(unresolved["candidates"]) == ["shop.client.Client.close", "shop.client.Session.close"]


def test_a_plain_name_answers_for_every_symbol_of_that_name(graph: SQLiteGraph) -> None:
    answer = _run(graph, "refactor_scope", symbol="close")
    assert [s["qname"] for s in answer["symbols"]] == ["shop.client.Client.close", "shop.client.Session.close"]  # type: ignore[union-attr]
    assert answer["files"] == ["shop/client.py", "shop/payments/service.py"]
    assert answer["unresolved"][0]["from"] == "shop.payments.service.shutdown"  # type: ignore[index]


def test_impact_is_a_reverse_closure_with_depths(graph: SQLiteGraph) -> None:
    answer = _run(graph, "impact", symbol="normalise", depth=3)
    depths = {i["qname"]: i["depth"] for i in answer["items"]}  # type: ignore[union-attr]
    assert depths == {
        "shop.client.Session.encode": 1,
        "shop.util.slugify": 1,
        "shop.client.Session.send": 2,
        "shop.payments.service.checkout": 2,
        "shop.client.Client.get": 3,
    }
    shallow = _run(graph, "impact", symbol="normalise", depth=1)
    assert {i["qname"] for i in shallow["items"]} == {"shop.client.Session.encode", "shop.util.slugify"}  # type: ignore[union-attr]


def test_impact_follows_inheritance_and_overrides(graph: SQLiteGraph) -> None:
    answer = _run(graph, "impact", symbol="shop.payments.base.Provider.submit", depth=2)
    reached = {(i["qname"], i["kind"]) for i in answer["items"]}  # type: ignore[union-attr]
    assert ("shop.payments.base.CardProvider.submit", "overrides") in reached
    assert ("shop.payments.base.Provider.charge", "calls") in reached


def test_node_and_definition_show_source(graph: SQLiteGraph) -> None:
    answer = _run(graph, "node", symbol="Session.send", includeCode=True)
    [item] = answer["items"]  # type: ignore[misc]
    assert (item["file"], item["line"], item["end_line"]) == ("shop/client.py", 11, 13)
    assert (item["callers"], item["callees"]) == (1, 2)
    assert item["code"].splitlines()[0].strip() == "def send(self, payload):"
    assert "def encode" in str(_run(graph, "definition", symbol="shop.client.Session.encode")["text"])


def test_unknown_symbols_are_tool_errors_with_suggestions(graph: SQLiteGraph) -> None:
    answer = _run(graph, "callers", symbol="sessoin_send")
    assert answer["isError"] is True
    assert "no symbol named 'sessoin_send'" in str(answer["text"])
    near = _run(graph, "node", symbol="Provide")
    assert near["isError"] is True and "shop.payments.base.Provider" in str(near["text"])


def test_search_status_and_files(graph: SQLiteGraph) -> None:
    found = _run(graph, "search", query="provider", limit=3)
    assert found["items"][0]["qname"] == "shop.payments.base.Provider"  # type: ignore[index]
    only_classes = _run(graph, "search", query="provider", kind="class", limit=10)
    assert {i["kind"] for i in only_classes["items"]} == {"class"}  # type: ignore[union-attr]
    status = _run(graph, "status")
    assert (status["files"], status["unresolved"], status["parse_errors"]) == (6, 1, 0)
    tree = _run(graph, "files", path="shop/payments", format="flat")
    assert [i["path"] for i in tree["items"]] == [  # type: ignore[union-attr]
        "shop/payments/__init__.py",
        "shop/payments/base.py",
        "shop/payments/service.py",
    ]
    assert _run(graph, "files", pattern="**/client.py")["total"] == 1


def test_call_hierarchy_path_and_class_hierarchy(graph: SQLiteGraph) -> None:
    tree = _run(graph, "call_hierarchy", symbol="normalise", direction="callers", depth=3)
    assert "    - `shop.client.Client.get`" in str(tree["text"])
    down = _run(graph, "call_hierarchy", symbol="checkout", direction="callees", depth=1)
    assert "shop.payments.service.make_provider" in {i["qname"] for i in down["items"]}  # type: ignore[union-attr]
    route = _run(graph, "path", **{"from": "checkout", "to": "normalise"})
    assert [(i["from"], i["qname"]) for i in route["items"]] == [  # type: ignore[union-attr]
        ("shop.payments.service.checkout", "shop.util.slugify"),
        ("shop.util.slugify", "shop.util.normalise"),
    ]
    assert _run(graph, "path", **{"from": "normalise", "to": "checkout"})["found"] is False
    classes = _run(graph, "class_hierarchy", symbol="Provider")
    assert [s["qname"] for s in classes["subclasses"]] == ["shop.payments.base.CardProvider"]  # type: ignore[union-attr]
    assert _run(graph, "class_hierarchy", symbol="checkout")["isError"] is True


def test_file_deps(graph: SQLiteGraph) -> None:
    deps = _run(graph, "file_deps", file="shop/payments/service.py", direction="both")
    assert deps["imports"] == ["shop/__init__.py", "shop/payments/base.py", "shop/util.py"]
    assert _run(graph, "file_deps", file="shop/util.py", direction="imported_by")["imported_by"] == [
        "shop/client.py",
        "shop/payments/base.py",
        "shop/payments/service.py",
    ]
    assert _run(graph, "file_deps", file="nope.py")["isError"] is True


def test_explore_groups_source_by_file(graph: SQLiteGraph) -> None:
    answer = _run(graph, "explore", query="session send", maxFiles=2)
    assert str(answer["text"]).startswith("## shop/client.py")
    assert "def send(self, payload):" in str(answer["text"])
