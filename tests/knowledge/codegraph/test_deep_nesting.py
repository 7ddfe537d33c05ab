"""Extraction of deeply nested code: linear work, correct answers, and the per-file limits.

Work is counted, not timed: `syntax.WORK.visits` counts the tree nodes an extractor visits (the captured
nodes and every step `Lineage` takes), and doubling the nesting depth must at most double it. The two
tree-sitter costs that grew with depth and that no Python counter sees (a query pattern matching a
child of a node, `Node.parent` and the sibling getters) are kept out of the extractors by a check of their
source. The timings before and after are in bench/codegraph.py (the deep-nesting case).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tree_sitter import Node

import memhub.knowledge.codegraph as codegraph_package
from memhub.knowledge.codegraph import syntax
from memhub.knowledge.codegraph.indexer import _extractors, index_tree
from memhub.knowledge.codegraph.syntax import WORK, FileTooComplex, Lineage, in_document_order, kinds_query
from memhub.model.graph import FileFacts
from memhub.store.sqlite.graph import SQLiteGraph

FIXTURES = Path(__file__).parent / "fixtures"

# (suffix, shape, source nesting one construct n deep, the symbols it defines at depth n)
SHAPES: list[tuple[str, str, Callable[[int], str], Callable[[int], int]]] = [
    (".py", "nested calls", lambda n: "x = " + "f(a, " * n + "1" + ")" * n + "\n", lambda _: 1),
    (".py", "call chain", lambda n: "x = a" + ".b(c)" * n + "\n", lambda _: 1),
    (".js", "nested functions", lambda n: "function a() {" * n + "g(1);" + "}" * n + "\n", lambda n: n + 1),
    (
        ".ts",
        "nested namespaces",
        lambda n: "namespace A {" * n + "declare function f(): void;" + "}" * n + "\n",
        lambda n: n + 2,
    ),
    (".java", "nested classes", lambda n: "class A {" * n + "/** d */ void m() { g(); }" + "}" * n, lambda n: n + 2),
    (
        ".go",
        "nested literals",
        lambda n: "package p\nfunc m() {" + "func() {" * n + "g()" + "}()" * n + "}",
        lambda n: 2,
    ),
    (".rs", "nested modules", lambda n: "mod a {" * n + "use x::y; fn g() { y(); }" + "}" * n, lambda n: n + 2),
]
DEPTH = 400  # and twice that: both within the qualified-name limit for one-letter names


def _extract(suffix: str, source: str) -> tuple[FileFacts, int]:
    WORK.visits = 0
    facts = _extractors()[suffix][1]("deep" + suffix, source.encode())
    return facts, WORK.visits


@pytest.mark.parametrize(("suffix", "shape", "make", "symbols"), SHAPES, ids=[f"{s}-{n}" for s, n, _, _ in SHAPES])
def test_deep_nesting_is_extracted_with_work_linear_in_depth(
    suffix: str, shape: str, make: Callable[[int], str], symbols: Callable[[int], int]
) -> None:
    once, work_once = _extract(suffix, make(DEPTH))
    twice, work_twice = _extract(suffix, make(2 * DEPTH))
    assert (len(once.symbols), len(twice.symbols)) == (symbols(DEPTH), symbols(2 * DEPTH))
    assert once.parse_errors == twice.parse_errors == 0
    assert work_once > 0
    assert work_twice <= 2 * work_once + 16, (shape, work_once, work_twice)


def test_sixty_kilobytes_of_nested_python_calls_are_extracted() -> None:
    depth = 10_000  # the 60 KB file that took 41 s when the query matched children of argument lists
    facts, work = _extract(".py", "x = " + "f(a, " * depth + "1" + ")" * depth + "\n")
    calls = [r for r in facts.references if r.kind == "call"]
    assert [(r.target, r.line) for r in calls[:2]] == [("f", 1), ("f", 1)] and len(calls) == depth
    assert len([r for r in facts.references if r.kind == "reference" and r.target == "a"]) == depth
    assert work <= 2 * depth + 1


def test_java_docs_and_members_of_nested_classes_are_read() -> None:
    facts, _ = _extract(".java", SHAPES[4][2](50))
    methods = [s for s in facts.symbols if s.kind == "method"]
    assert [(s.qname.count("."), s.doc) for s in methods] == [(51, "d")]
    # `g()` inside the innermost class is its own method call, written out with the receiver.
    assert [r.target for r in facts.references if r.kind == "call"] == ["this.g"]


def test_definitions_nested_past_the_qualified_name_limit_are_refused() -> None:
    with pytest.raises(FileTooComplex, match=r"^too complex: definitions nested too deep"):
        _extract(".java", SHAPES[4][2](2 * syntax.QNAME_MAX))


def test_a_file_past_the_limits_is_skipped_with_its_reason_and_the_rest_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "good.py").write_text("def ok():\n    return helper()\n\ndef helper():\n    pass\n")
    (root / "Deep.java").write_text(SHAPES[4][2](2 * syntax.QNAME_MAX))
    first = index_tree(root, tmp_path / "g1.db", workers=1)
    assert first.added == ["good.py"]
    assert [(s.path, s.reason) for s in first.skipped] == [
        ("Deep.java", f"too complex: definitions nested too deep (a qualified name over {syntax.QNAME_MAX} characters)")
    ]
    # A file indexed before and too large a tree now: skipped, and its old symbols leave the graph.
    (root / "Deep.java").write_text("class Deep { void m() {} }\n")
    second = index_tree(root, tmp_path / "g2.db", tmp_path / "g1.db", workers=1)
    assert (second.added, second.skipped) == (["Deep.java"], [])
    monkeypatch.setattr(syntax, "FILE_MAX_NODES", 30)
    (root / "Deep.java").write_text("class Deep { void m() { a(); b(); c(); d(); e(); } }\n")
    third = index_tree(root, tmp_path / "g3.db", tmp_path / "g2.db", workers=1)
    assert (third.changed, third.removed) == ([], ["Deep.java"])
    assert [s.reason for s in third.skipped] == ["too complex: 51 syntax nodes (limit 30)"]
    graph = SQLiteGraph(tmp_path / "g3.db", readonly=True)
    try:
        assert sorted(f.path for f in graph.files()) == ["good.py"]
        assert graph.counts()["symbols"] == 3  # the module, ok, helper
    finally:
        graph.close()


# -- Lineage answers as tree-sitter does ---------------------------------------------------------------------


def _every_node(root: Node) -> Iterator[Node]:
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(node.children)


@pytest.mark.parametrize(
    ("package", "path"),
    [
        ("tree_sitter_python", "pyproj/shop/payments/service.py"),
        ("tree_sitter_java", "javaproj/com/acme/shop/Shop.java"),
        ("tree_sitter_rust", "rustproj/src/geo/shapes.rs"),
    ],
)
def test_lineage_gives_the_parents_and_siblings_tree_sitter_gives(package: str, path: str) -> None:
    root = syntax.parse(package, (FIXTURES / path).read_bytes())
    captured = in_document_order(kinds_query(syntax.grammar(package), ("identifier", "block")), root)
    lineage = Lineage(root, captured)
    nodes = list(_every_node(root))
    for node in [*captured, *reversed(nodes)]:  # captured ones first: the walks then start near them
        assert lineage.parent_of(node) == node.parent
        assert lineage.before(node) == node.prev_sibling
        assert lineage.after(node, named=True) == node.next_named_sibling
        assert lineage.before(node, named=True) == node.prev_named_sibling


# -- the extractors keep out of what grows with depth ----------------------------------------------------------

_DEPTH_COSTLY = {"parent", "prev_sibling", "next_sibling", "prev_named_sibling", "next_named_sibling"}


def test_extractors_ask_no_parent_or_sibling_of_tree_sitter_and_query_only_node_kinds() -> None:
    """tree-sitter's `Node.parent` and sibling getters walk down from the root (O(depth) per call), and a
    query pattern matching a child keeps one pending match per open ancestor: either, per node, makes
    extraction quadratic in nesting depth. `Lineage` and `kinds_query` are the ways in."""
    offenders: list[str] = []
    for module in sorted(Path(codegraph_package.__file__).parent.glob("*.py")):
        source = module.read_text(encoding="utf-8")
        if "tree_sitter" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr in _DEPTH_COSTLY:
                offenders.append(f"{module.name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Query" and module.name != "syntax.py":
                offenders.append(f"{module.name}:{node.lineno} Query(…)")
    assert offenders == []
