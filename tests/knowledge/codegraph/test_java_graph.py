"""Java call-graph ground truth: a small package tree whose every call edge was written by hand."""

from __future__ import annotations

import pytest

from memhub.knowledge.codegraph.java_facts import extract_java
from memhub.knowledge.codegraph.resolve import Graph
from tests.knowledge.codegraph.ground_truth import (
    call_pairs,
    expected,
    expected_ambiguities,
    listed_ambiguities,
    project_facts,
    project_graph,
    recall,
    truth_pairs,
)

PROJECT = "javaproj"


@pytest.fixture(scope="module")
def graph() -> Graph:
    return project_graph(PROJECT)


def test_no_false_edge_and_recall_of_the_hand_written_truth(graph: Graph) -> None:
    truth = expected(PROJECT)
    assert call_pairs(graph) - truth_pairs(truth) == set(), "false edges"
    assert recall(graph, truth) >= 0.8, sorted(truth_pairs(truth) - call_pairs(graph))


def test_the_ambiguous_call_is_listed_with_its_candidates_not_guessed(graph: Graph) -> None:
    truth = expected(PROJECT)
    assert listed_ambiguities(graph) == expected_ambiguities(truth)
    [entry] = graph.unresolved
    assert not {(entry.src, candidate) for candidate in entry.candidates} & call_pairs(graph)


def test_inheritance_and_overrides_but_constructors_do_not_override(graph: Graph) -> None:
    truth = expected(PROJECT)
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "inherits"} == {tuple(x) for x in truth["inherits"]}
    implemented = {tuple(x) for x in truth.get("implements", [])}
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "implements"} == implemented
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "overrides"} == {tuple(x) for x in truth["overrides"]}


def test_syntax_errors_are_counted_and_the_rest_indexed(graph: Graph) -> None:
    errors = {f.path: f.parse_errors for f in project_facts(PROJECT)}
    assert [path for path, count in errors.items() if count] == expected(PROJECT)["syntax_errors"]
    assert ("com.acme.app.Broken.whole", "com.acme.shop.Repo.refresh") in call_pairs(graph)


def test_edges_say_how_they_were_resolved(graph: Graph) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graph.edges}
    static_import = by_pair[("com.acme.shop.Shop.checkout", "com.acme.util.Strings.trim", "calls")]
    assert (static_import.resolution, static_import.line) == ("import", 25)
    field = by_pair[("com.acme.shop.Shop.checkout", "com.acme.shop.Repo.save", "calls")]
    assert field.resolution == "receiver"
    same_package = by_pair[("com.acme.shop.Item.<init>", "com.acme.shop.Validation.require", "calls")]
    assert same_package.resolution == "scope"
    assert graph.external >= 10  # System.out.println, List/Map methods, String methods, JDK exceptions


def test_symbols_imports_and_bindings() -> None:
    source = b"""package com.acme;
import java.util.List;
import static com.acme.util.Strings.trim;
import com.acme.util.*;
/** A shop. */
public class Shop<T> extends Base<T> implements Api {
    private Repo repo;
    Shop(Repo r) { super(); }
    void go(List<String> names) { Foo f = new Foo(); var g = new Bar(); }
    interface Api2 extends Api {}
    enum Mode { ON; void flip() {} }
}
"""
    facts = extract_java("src/com/acme/Shop.java", source)
    assert facts.module == "com.acme" and facts.parse_errors == 0
    symbols = {s.qname: s for s in facts.symbols}
    shop = symbols["com.acme.Shop"]
    assert (shop.kind, shop.bases, shop.doc) == ("class", ("Base", "Api"), "A shop.")
    assert symbols["com.acme.Shop.<init>"].kind == "method"
    assert symbols["com.acme.Shop.Api2"].bases == ("Api",)
    assert symbols["com.acme.Shop.Mode.flip"].parent == "com.acme.Shop.Mode"
    imports = {(i.module, i.name, i.alias) for i in facts.imports}
    assert imports == {
        ("java.util", "List", "List"),
        ("com.acme.util.Strings", "trim", "trim"),
        ("com.acme.util", "*", "*com.acme.util"),
    }
    bindings = {(b.scope, b.name, b.type_expr) for b in facts.bindings}
    assert {
        ("com.acme.Shop", "repo", "Repo"),
        ("com.acme.Shop.<init>", "r", "Repo"),
        ("com.acme.Shop.go", "names", "List"),
        ("com.acme.Shop.go", "f", "Foo"),
        ("com.acme.Shop.go", "g", "Bar"),
    } <= bindings
    assert extract_java("Main.java", b"class Main {}").module == "Main"
