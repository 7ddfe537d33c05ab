"""Go call-graph ground truth: a small module whose every call edge was written by hand."""

from __future__ import annotations

import pytest

from memhub.knowledge.codegraph.go_facts import extract_go
from memhub.knowledge.codegraph.resolve import Graph
from tests.knowledge.codegraph.ground_truth import (
    CALL_KINDS,
    call_pairs,
    expected,
    expected_ambiguities,
    listed_ambiguities,
    project_facts,
    project_graph,
    recall,
    truth_pairs,
)

PROJECT = "goproj"


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


def test_dynamic_calls_and_composite_literals_make_no_edge(graph: Graph) -> None:
    for src, why in expected(PROJECT)["no_calls_from"]:
        assert not [e for e in graph.edges if e.src == src and e.kind in CALL_KINDS], why
    assert not [e for e in graph.edges if e.dst == "pkg/shop.Cart" and e.kind in CALL_KINDS], "Cart{} is a literal"


def test_embedding_is_inheritance(graph: Graph) -> None:
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "inherits"} == {
        tuple(x) for x in expected(PROJECT)["inherits"]
    }


def test_syntax_errors_are_counted_and_the_rest_indexed(graph: Graph) -> None:
    errors = {f.path: f.parse_errors for f in project_facts(PROJECT)}
    assert [path for path, count in errors.items() if count] == expected(PROJECT)["syntax_errors"]
    assert ("pkg/broken.Whole", "pkg/store.Repo.Refresh") in call_pairs(graph)


def test_edges_say_how_they_were_resolved(graph: Graph) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graph.edges}
    aliased = by_pair[("pkg/shop.NewServer", "pkg/store.NewRepo", "calls")]
    assert (aliased.resolution, aliased.file, aliased.line) == ("import", "pkg/shop/server.go", 31)
    receiver = by_pair[("pkg/store.Repo.Save", "pkg/store.Repo.validate", "calls")]
    assert receiver.resolution == "receiver"
    sibling = by_pair[("pkg/store.NewRepo", "pkg/store.newCache", "calls")]
    assert (sibling.resolution, sibling.file) == ("scope", "pkg/store/repo.go")
    assert graph.external == 6  # fmt.Println, errors.New, clear, append, strings.TrimSpace, log.Println


def test_symbols_imports_and_bindings() -> None:
    source = b"""package shop

import (
	"fmt"
	st "example.com/app/pkg/store"
	_ "embed"
)

// Server serves.
type Server struct {
	Base
	repo *st.Repo
}

// Start starts.
func (s *Server) Start(r st.Repo, n int) (*Server, error) {
	x := &Server{}
	var y Server
	z := NewThing()
	fmt.Println(x, y, z)
	return nil, nil
}
"""
    facts = extract_go("pkg/shop/server.go", source)
    assert (facts.module, facts.parse_errors) == ("pkg/shop", 0)
    symbols = {s.qname: s for s in facts.symbols}
    server = symbols["pkg/shop.Server"]
    assert (server.kind, server.bases, server.doc) == ("class", ("Base",), "Server serves.")
    start = symbols["pkg/shop.Server.Start"]
    assert (start.kind, start.parent, start.doc) == ("method", "pkg/shop.Server", "Start starts.")
    imports = {(i.module, i.alias) for i in facts.imports}
    assert imports == {("fmt", "fmt"), ("example.com/app/pkg/store", "st"), ("embed", "_embed")}
    bindings = {(b.scope, b.name, b.type_expr) for b in facts.bindings}
    assert {
        ("pkg/shop.Server", "repo", "st.Repo"),
        ("pkg/shop.Server.Start", "s", "Server"),
        ("pkg/shop.Server.Start", "r", "st.Repo"),
        ("pkg/shop.Server.Start", "()", "Server"),
        ("pkg/shop.Server.Start", "x", "Server"),
        ("pkg/shop.Server.Start", "y", "Server"),
        ("pkg/shop.Server.Start", "z", "()NewThing"),
    } <= bindings
    assert extract_go("main.go", b"package main\nfunc main() {}\n").module == "main"
