"""Rust call-graph ground truth: a small crate whose every call edge was written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.knowledge.codegraph.indexer import index_tree
from memhub.knowledge.codegraph.resolve import Graph, resolve
from memhub.knowledge.codegraph.rust_facts import extract_rust
from memhub.store.sqlite.graph import SQLiteGraph
from tests.knowledge.codegraph.ground_truth import (
    CALL_KINDS,
    FIXTURES,
    call_pairs,
    expected,
    expected_ambiguities,
    listed_ambiguities,
    project_facts,
    project_graph,
    recall,
    truth_pairs,
)

PROJECT = "rustproj"


@pytest.fixture(scope="module")
def graph() -> Graph:
    return project_graph(PROJECT)


def _pairs(graph: Graph, kind: str) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in graph.edges if e.kind == kind}


def test_no_false_edge_and_recall_of_the_hand_written_truth(graph: Graph) -> None:
    truth = expected(PROJECT)
    assert call_pairs(graph) - truth_pairs(truth) == set(), "false edges"
    assert recall(graph, truth) >= 0.8, sorted(truth_pairs(truth) - call_pairs(graph))


def test_ambiguous_calls_are_listed_with_their_candidates_not_guessed(graph: Graph) -> None:
    assert listed_ambiguities(graph) == expected_ambiguities(expected(PROJECT))
    for entry in graph.unresolved:
        assert not {(entry.src, candidate) for candidate in entry.candidates} & call_pairs(graph)


def test_dynamic_calls_macros_and_struct_literals_make_no_edge(graph: Graph) -> None:
    for src, why in expected(PROJECT)["no_calls_from"]:
        assert not [e for e in graph.edges if e.src == src and e.kind in CALL_KINDS], why
    literal = [e for e in graph.edges if e.dst in ("src/util.Point", "src/geo/render.Canvas") and e.kind in CALL_KINDS]
    assert not literal, "Point { … } and Canvas { … } are literals, not calls"


def test_trait_impls_are_implements_and_their_methods_override(graph: Graph) -> None:
    truth = expected(PROJECT)
    assert _pairs(graph, "implements") == {tuple(x) for x in truth["implements"]}
    assert _pairs(graph, "inherits") == {tuple(x) for x in truth["inherits"]}
    assert _pairs(graph, "overrides") == {tuple(x) for x in truth["overrides"]}
    flavors = {s.qname: s.flavor for s in graph.symbols.values() if s.kind == "class"}
    assert flavors["src/geo.Shape"] == "trait"
    assert flavors["src/geo/shapes.Circle"] == "struct"
    assert flavors["src/geo/shapes.Round"] == "alias"


def test_syntax_errors_are_counted_and_the_rest_indexed(graph: Graph) -> None:
    errors = {f.path: f.parse_errors for f in project_facts(PROJECT)}
    assert [path for path, count in errors.items() if count] == expected(PROJECT)["syntax_errors"]
    assert {("src/broken.whole", "src/shop.Repo.new"), ("src/broken.whole", "src/shop.Repo.refresh")} <= call_pairs(
        graph
    )


def test_edges_say_how_they_were_resolved(graph: Graph) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graph.edges}
    aliased = by_pair[("src.main", "src/geo/shapes.area", "calls")]
    assert (aliased.resolution, aliased.file, aliased.line) == ("import", "src/main.rs", 13)
    receiver = by_pair[("src/shop.Repo.save", "src/shop.Repo.validate", "calls")]
    assert (receiver.resolution, receiver.file, receiver.line) == ("receiver", "src/shop.rs", 31)
    own_self = by_pair[("src/geo/shapes.Circle.new", "src/geo/shapes.Circle.checked", "calls")]
    assert (own_self.resolution, own_self.line) == ("scope", 19)
    glob = by_pair[("src/shop.Cache.put", "src/util.log_line", "calls")]
    assert glob.resolution == "import"  # `use crate::util::*` binds every name of util, weaker than explicit ones
    default = by_pair[("src/geo/shapes.Circle.summary", "src/geo.Shape.describe", "calls")]
    assert default.resolution == "receiver"
    implements = by_pair[("src/geo/shapes.Circle", "src/geo.Shape", "implements")]
    assert (implements.file, implements.line) == ("src/geo/shapes.rs", 35)
    # Ok ×3, Err, HashMap::new, insert, to_string ×3, is_empty, unwrap ×2, iter, for_each, len, max, cloned,
    # String::from ×2: the prelude, std types and the methods of values of std types.
    assert graph.external == 19


def test_the_crate_indexes_as_rust(tmp_path: Path) -> None:
    root = FIXTURES / PROJECT
    report = index_tree(root, tmp_path / "rust.db")
    assert sorted(report.added) == sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rs"))
    assert report.parse_errors == {"src/broken.rs": 2}
    stored = SQLiteGraph(tmp_path / "rust.db", readonly=True)
    try:
        assert {f.language for f in stored.files()} == {"rust"}
        assert stored.counts()["edges"] > 40
    finally:
        stored.close()


SOURCE = b"""//! Shapes.
use std::fmt::{self, Display};
use crate::geo::shapes::{Circle, area as a};
use super::store;
use self::inner::*;
use store::Repo as R;
mod inner;

/// A server.
#[derive(Debug)]
pub struct Server<T: Shape> {
    repo: Box<R>,
    item: T,
    tags: Vec<String>,
}

/// Has an area.
pub trait Shape: Display + store::Named {
    /// The area.
    fn area(&self) -> f64;
}

impl<T: Shape> Server<T> {
    /// Opens one.
    pub fn open(repo: &mut R, cb: impl Fn(u32)) -> Result<Self, String> {
        let x = Self::build();
        let y: Circle = make();
        let z = Circle { r: 1.0 };
        let w = Circle::new().unwrap();
        let (p, q) = pair();
        Ok(Self { repo, item: x })
    }
}

impl fmt::Display for Server<u8> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.item.area())
    }
}

enum Kind { A, B(u32) }
union Bits { a: u32 }
type Alias = Server<u8>;
"""


def test_symbols_imports_and_bindings() -> None:
    facts = extract_rust("src/geo/mod.rs", SOURCE)
    assert (facts.module, facts.language, facts.parse_errors) == ("src/geo", "rust", 0)
    symbols = {s.qname: s for s in facts.symbols}
    assert symbols["src/geo"].doc == "Shapes."
    server = symbols["src/geo.Server"]
    assert (server.kind, server.flavor, server.doc, server.signature) == (
        "class",
        "struct",
        "A server.",
        "pub struct Server<T: Shape>",
    )
    shape = symbols["src/geo.Shape"]
    assert (shape.flavor, shape.bases, shape.doc) == ("trait", ("Display", "store.Named"), "Has an area.")
    area = symbols["src/geo.Shape.area"]
    assert (area.kind, area.parent, area.doc) == ("method", "src/geo.Shape", "The area.")
    assert (symbols["src/geo.Server.open"].kind, symbols["src/geo.Server.open"].parent) == ("method", "src/geo.Server")
    assert symbols["src/geo.Server.open"].doc == "Opens one."
    assert symbols["src/geo.Server.fmt"].parent == "src/geo.Server"
    assert {q: s.flavor for q, s in symbols.items() if s.name in ("Kind", "Bits", "Alias")} == {
        "src/geo.Kind": "enum",
        "src/geo.Bits": "union",
        "src/geo.Alias": "alias",
    }
    assert symbols["src/geo.Alias"].bases == ("Server",)
    imports = {(i.module, i.name, i.alias) for i in facts.imports}
    assert {
        ("std", "fmt", "fmt"),
        ("std::fmt", "Display", "Display"),
        ("src/geo/shapes", "Circle", "Circle"),
        ("src/geo/shapes", "area", "a"),
        ("src", "store", "store"),  # super:: of src/geo
        ("src/geo/inner", "*", "*src/geo/inner"),
        ("src/geo/inner", None, "inner"),  # `mod inner;` binds the child module
        ("src/store", "Repo", "R"),  # a path from a name `use super::store` brought
    } <= imports
    refs = {(r.kind, r.target, r.scope) for r in facts.references}
    assert ("implements", "fmt.Display", "src/geo.Server") in refs
    assert ("call", "Server.build", "src/geo.Server.open") in refs  # Self::build
    assert ("call", "self.item.area", "src/geo.Server.fmt") in refs  # inside write!
    assert not [r for r in refs if r[0] == "call" and r[1] in ("Circle", "Self", "write")]
    bindings = {(b.scope, b.name, b.type_expr) for b in facts.bindings}
    assert {
        ("src/geo.Server", "repo", "R"),  # Box<R> is an R
        ("src/geo.Server", "item", "Shape"),  # T: Shape
        ("src/geo.Server", "tags", "Vec"),
        ("src/geo.Server.open", "repo", "R"),
        ("src/geo.Server.open", "cb", ""),
        ("src/geo.Server.open", "()", "Server"),  # Result<Self, String>
        ("src/geo.Server.open", "x", "()Server.build"),
        ("src/geo.Server.open", "y", "Circle"),
        ("src/geo.Server.open", "z", "Circle"),
        ("src/geo.Server.open", "w", "()Circle.new"),
        ("src/geo.Server.open", "p", ""),
        ("src/geo.Server.fmt", "f", "fmt.Formatter"),
    } <= bindings


def test_module_paths_and_crate_paths() -> None:
    def module(path: str) -> str:
        return extract_rust(path, b"").module

    assert module("src/lib.rs") == "src"
    assert module("src/main.rs") == "src"
    assert module("src/geo/mod.rs") == "src/geo"
    assert module("src/geo/shapes.rs") == "src/geo/shapes"
    assert module("crates/core/src/lib.rs") == "crates/core/src"
    source = b"fn f() { crate::x::g(); super::h(); }\nmod m { fn k() { super::f(); } }\n"
    facts = extract_rust("crates/core/src/a/b.rs", source)
    imports = {(i.module, i.alias, i.scope) for i in facts.imports}
    assert {
        ("crates/core/src", "crate", "crates/core/src/a/b"),
        ("crates/core/src/a", "super", "crates/core/src/a/b"),
        ("crates/core/src/a/b", "super", "crates/core/src/a/b/m"),
    } <= imports
    targets = {(r.target, r.scope) for r in facts.references if r.kind == "call"}
    assert targets == {
        ("crate.x.g", "crates/core/src/a/b.f"),
        ("super.h", "crates/core/src/a/b.f"),
        ("super.f", "crates/core/src/a/b/m.k"),
    }


def test_an_impl_in_another_module_adds_methods_to_the_type() -> None:
    shapes = extract_rust("src/shapes.rs", b"pub struct Circle;\npub trait Shape { fn area(&self) -> f64 { 0.0 } }\n")
    extra = extract_rust(
        "src/extra.rs",
        b"use crate::shapes::{Circle, Shape};\nimpl Shape for Circle {}\n"
        b"impl Circle {\n    pub fn twice(&self) -> f64 { self.area() * 2.0 }\n}\n",
    )
    main = extract_rust("src/main.rs", b"mod shapes;\nmod extra;\nfn main() { shapes::Circle.twice(); }\n")
    graph = resolve([shapes, extra, main])
    assert "src/shapes.Circle.twice" in graph.symbols
    assert _pairs(graph, "implements") == {("src/shapes.Circle", "src/shapes.Shape")}
    assert ("src/shapes.Circle.twice", "src/shapes.Shape.area") in call_pairs(graph)
