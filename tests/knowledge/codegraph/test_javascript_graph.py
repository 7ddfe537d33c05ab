"""JavaScript / TypeScript call-graph ground truth: two small projects whose every call edge was written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.codegraph.facts import FileFacts
from memhub.knowledge.codegraph.javascript_facts import (
    LANGUAGES,
    _parser,
    expression_name,
    extract_javascript,
    language_of,
    module_name,
    resolve_specifier,
)
from memhub.knowledge.codegraph.resolve import Graph, resolve

FIXTURES = Path(__file__).parent / "fixtures"
PROJECTS = ("jsproj", "tsproj")
CALL_KINDS = ("calls", "instantiates", "decorates")


def _facts(root: Path) -> list[FileFacts]:
    files = sorted(p for p in root.rglob("*") if p.suffix in LANGUAGES)
    known = {p.relative_to(root).as_posix() for p in files}
    return [extract_javascript(p.relative_to(root).as_posix(), p.read_bytes(), known) for p in files]


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    return {name: resolve(_facts(FIXTURES / name)) for name in PROJECTS}


def _expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}_expected.json").read_text(encoding="utf-8"))


def _call_pairs(graph: Graph) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in graph.edges if e.kind in CALL_KINDS}


def precision_recall(graph: Graph, expected: dict[str, Any]) -> tuple[float, float]:
    """Edge precision and recall over (caller, callee) pairs, the PyCG convention."""
    found = _call_pairs(graph)
    truth = {(src, dst) for src, dst, _ in expected["edges"]}
    hits = len(found & truth)
    return (hits / len(found) if found else 1.0), hits / len(truth)


@pytest.mark.parametrize("name", PROJECTS)
def test_no_false_edge_and_recall_of_the_hand_written_truth(graphs: dict[str, Graph], name: str) -> None:
    graph, expected = graphs[name], _expected(name)
    truth = {(src, dst) for src, dst, _ in expected["edges"]}
    assert _call_pairs(graph) - truth == set(), "false edges"
    precision, recall = precision_recall(graph, expected)
    assert precision == 1.0
    assert recall >= 0.9, sorted(truth - _call_pairs(graph))


@pytest.mark.parametrize("name", PROJECTS)
def test_the_graph_is_the_same_when_facts_do_not_know_the_other_files(graphs: dict[str, Graph], name: str) -> None:
    # Facts from each file alone (what an incremental index caches) resolve to the same graph.
    root = FIXTURES / name
    files = sorted(p for p in root.rglob("*") if p.suffix in LANGUAGES)
    alone = resolve(extract_javascript(p.relative_to(root).as_posix(), p.read_bytes()) for p in files)
    assert sorted(alone.edges, key=repr) == sorted(graphs[name].edges, key=repr)
    assert alone.unresolved == graphs[name].unresolved


@pytest.mark.parametrize("name", PROJECTS)
def test_ambiguous_calls_are_listed_with_their_candidates_not_guessed(graphs: dict[str, Graph], name: str) -> None:
    graph, expected = graphs[name], _expected(name)
    listed = {(u.src, u.target, tuple(sorted(u.candidates))) for u in graph.unresolved}
    assert listed == {(src, target, tuple(sorted(cands))) for src, target, cands, _ in expected["unresolvable"]}
    for src, _, _, _ in expected["unresolvable"]:
        [entry] = [u for u in graph.unresolved if u.src == src]
        assert not [e for e in graph.edges if e.src == src and e.line == entry.line and e.kind == "calls"]


@pytest.mark.parametrize("name", PROJECTS)
def test_dynamic_and_shadowed_calls_make_no_edge(graphs: dict[str, Graph], name: str) -> None:
    graph, expected = graphs[name], _expected(name)
    pairs = _call_pairs(graph)
    for src, dst, why in expected["must_not"]:
        assert (src, dst) not in pairs, why
    for src, why in expected["no_calls_from"]:
        assert not [e for e in graph.edges if e.src == src and e.kind in CALL_KINDS], why


@pytest.mark.parametrize("name", PROJECTS)
def test_inheritance_and_overrides(graphs: dict[str, Graph], name: str) -> None:
    graph, expected = graphs[name], _expected(name)
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "inherits"} == {tuple(x) for x in expected["inherits"]}
    implemented = {tuple(x) for x in expected.get("implements", [])}
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "implements"} == implemented
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "overrides"} == {tuple(x) for x in expected["overrides"]}


def test_javascript_edges_say_how_they_were_resolved(graphs: dict[str, Graph]) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graphs["jsproj"].edges}
    send = by_pair[("src/session.Session.send", "src/session.Session.encode", "calls")]
    assert (send.resolution, send.confidence, send.file, send.line) == ("receiver", 0.8, "src/session.js", 11)
    alias = by_pair[("src/session.Session.send", "src/util.log", "calls")]
    assert (alias.resolution, alias.confidence) == ("import", 0.95)
    local = by_pair[("src/util.slugify", "src/util.normalise", "calls")]
    assert (local.resolution, local.confidence) == ("scope", 0.9)
    new = by_pair[("src/app.main", "src/session.Client", "instantiates")]
    assert (new.resolution, new.line, new.col) == ("import", 6, 21)
    assert by_pair[("src/app.main", "src/session.Client.constructor", "calls")].resolution == "import"
    guessed = by_pair[("src/legacy/store.audit", "src/legacy/logger.Logger.info", "calls")]
    assert (guessed.resolution, guessed.confidence) == ("unique_name", 0.5)
    parent = by_pair[("src/payments/base.CardProvider.refund", "src/payments/base.Provider.charge", "calls")]
    assert parent.resolution == "receiver"


def test_typescript_edges_say_how_they_were_resolved(graphs: dict[str, Graph]) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graphs["tsproj"].edges}
    field = by_pair[("src/service.UserService.register", "src/models.Repository.save", "calls")]
    assert (field.resolution, field.file, field.line) == ("receiver", "src/service.ts", 13)
    decorator = by_pair[("src/service.UserService", "src/lib/decorators.logged", "decorates")]
    assert (decorator.resolution, decorator.line) == ("import", 10)
    jsx = by_pair[("src/App.App", "src/components/Button.Button", "calls")]
    assert (jsx.resolution, jsx.file, jsx.line) == ("import", "src/App.tsx", 10)
    returned = by_pair[("src/App.App", "src/service.UserService.register", "calls")]
    assert returned.resolution == "receiver"


def test_calls_leaving_the_repository_are_counted_not_listed(graphs: dict[str, Graph]) -> None:
    # console.log, JSON.*, fs.*, new Map(), Map and Array methods, String(), setTimeout,
    # super() without a base constructor …
    assert graphs["jsproj"].external >= 15
    assert graphs["tsproj"].external >= 8
    for graph in graphs.values():
        assert all(not u.target.startswith(("console", "JSON", "fs.", "this.cache")) for u in graph.unresolved)


def test_symbols_carry_kinds_lines_docs_and_signatures(graphs: dict[str, Graph]) -> None:
    js, ts = graphs["jsproj"].symbols, graphs["tsproj"].symbols
    assert js["src/util"].kind == "module"
    assert js["src/util"].doc == "String helpers shared by the shop."
    assert (js["src/util.normalise"].doc, js["src/util.normalise"].line) == ("Lower-case and trim.", 4)
    assert js["src/util.log"].kind == "function"  # an arrow bound to a const
    assert js["src/util.timed.wrapper"].parent == "src/util.timed"
    assert js["src/legacy/logger.Logger.quiet"].signature == "static quiet()"
    assert js["src/legacy/store.load"].kind == "function"  # exports.load = function load(…)
    assert (ts["src/models.Repository"].kind, ts["src/models.Repository"].doc) == ("class", "Where entities are kept.")
    assert ts["src/models.Repository.save"].kind == "method"
    assert ts["src/shapes.Circle"].bases == ("Shape",)
    assert ts["src/memory.MemoryRepository"].bases == ("Repository",)
    assert ts["src/shapes.Shape.area"].signature == "area(): number"
    assert ts["src/lib/decorators.trace"].signature == "function trace(message: string, level = 0): void"
    assert "src/lib/decorators.trace@2" not in ts  # overload signatures are not definitions
    assert ts["src/components/Button.Button"].doc == "A button that reports clicks."


def test_module_names_and_languages() -> None:
    assert module_name("src/util.ts") == "src/util"
    assert module_name("src/lib/index.tsx") == "src/lib/index"
    assert module_name("a/b.test.js") == "a/b.test"
    assert module_name("README.md") == "README.md"
    languages = [language_of(p) for p in ("a.mjs", "b.cts", "c.tsx", "d.py")]
    assert languages == ["javascript", "typescript", "typescript", None]


def test_import_specifiers_resolve_against_the_repository() -> None:
    known = {"src/util.ts", "src/lib/index.ts", "src/view.tsx", "src/old.cjs", "src/data.json", "main.js"}
    assert resolve_specifier("src/app.ts", "./util", known) == "src/util"
    assert resolve_specifier("src/app.ts", "./util.js", known) == "src/util"  # NodeNext: the compiled name
    assert resolve_specifier("src/app.ts", "./lib", known) == "src/lib/index"
    assert resolve_specifier("src/app.ts", "./view", known) == "src/view"
    assert resolve_specifier("src/deep/x.js", "../old", known) == "src/old"
    assert resolve_specifier("src/app.ts", "../main", known) == "main"
    assert resolve_specifier("src/app.ts", "./data.json", known) == "src/data.json"  # not a module: outside
    assert resolve_specifier("src/app.ts", "./missing", known) == "src/missing"
    assert resolve_specifier("src/app.ts", "../../up", known) == "../../up"
    assert resolve_specifier("src/app.ts", "react", known) == "react"
    assert resolve_specifier("src/app.ts", "node:fs", known) == "node:fs"


def test_syntax_errors_are_counted_and_the_rest_still_indexed() -> None:
    # A missing ")" and a stray "=": two errors; every function is still read, the broken one included.
    source = b"function good() {\n  helper();\n}\n\nfunction broken(a {\n  helper();\n}\n\nconst y = = 2;\n\n"
    source += b"function helper() {\n  return 1;\n}\n"
    for path in ("m.js", "m.ts", "m.tsx"):
        facts = extract_javascript(path, source, {path})
        assert facts.parse_errors == 2
        assert {"m.good", "m.broken", "m.helper"} <= {s.qname for s in facts.symbols}
        edges = {(e.src, e.dst) for e in resolve([facts]).edges if e.kind == "calls"}
        assert edges == {("m.good", "m.helper"), ("m.broken", "m.helper")}
    assert extract_javascript("ok.ts", b"export const x = 1;\n", set()).parse_errors == 0


def test_callbacks_belong_to_the_enclosing_function_and_closures_have_their_own_scope() -> None:
    source = b"""
function helper() {}
function outer(items) {
  items.forEach((item) => helper(item));
  const inner = () => helper();
  function named() { helper(); }
  return [inner, named];
}
"""
    facts = extract_javascript("m.js", source, {"m.js"})
    functions = [s.qname for s in facts.symbols if s.kind == "function"]
    assert functions == ["m.helper", "m.outer", "m.outer.inner", "m.outer.named"]
    edges = {(e.src, e.dst) for e in resolve([facts]).edges if e.kind == "calls"}
    assert edges == {("m.outer", "m.helper"), ("m.outer.inner", "m.helper"), ("m.outer.named", "m.helper")}


def test_commonjs_and_default_exports() -> None:
    files = {
        "a.js": b"function f() {}\nfunction g() {}\nmodule.exports = { f, h: g, k() { f(); } };\n",
        "b.js": b"export default class {\n  run() {}\n}\n",
        "c.js": b"const a = require('./a');\nconst { h } = require('./a');\nimport B from './b';\n"
        b"function main() { a.f(); h(); a.k(); new B().run(); }\n",
    }
    facts = [extract_javascript(path, data, set(files)) for path, data in files.items()]
    edges = {(e.src, e.dst) for e in resolve(facts).edges if e.kind in CALL_KINDS}
    assert edges == {
        ("a.k", "a.f"),
        ("c.main", "a.f"),
        ("c.main", "a.g"),
        ("c.main", "a.k"),
        ("c.main", "b.default"),
        ("c.main", "b.default.run"),
    }


def test_declarations_define_symbols_but_other_modules_augmentations_do_not() -> None:
    source = b"""
declare global { interface Window { app: string } }
declare module "express" { interface Request { user: string } }
export declare class Api { fetch(id: string): Item; }
declare function helper(x: number): string;
export function overloaded(x: string): void;
export function overloaded(x: unknown): void {}
"""
    symbols = {s.qname: s.kind for s in extract_javascript("types.d.ts", source, set()).symbols}
    assert symbols == {
        "types.d": "module",
        "types.d.Api": "class",
        "types.d.Api.fetch": "method",
        "types.d.helper": "function",
        "types.d.overloaded": "function",
    }
    known = {"lib/api.js", "lib/api.d.ts", "lib/types.d.ts"}
    assert resolve_specifier("main.js", "./lib/api", known) == "lib/api"  # the implementation, not its .d.ts
    assert resolve_specifier("main.ts", "./lib/types", known) == "lib/types.d"


def test_deeply_nested_code_does_not_exhaust_the_stack() -> None:
    source = b"f(" * 3000 + b")" * 3000 + b";\nfunction f() {}\n"
    facts = extract_javascript("deep.js", source, {"deep.js"})
    assert len([r for r in facts.references if r.target == "f"]) == 3000


def test_computed_expressions_have_no_name() -> None:
    tree = _parser("javascript").parse(b"a.b.c;\nthis.x.y;\nf().g;\nx[0].y;\na?.b;\n")
    exprs = [stmt.named_children[0] for stmt in tree.root_node.named_children]
    assert [expression_name(e) for e in exprs] == ["a.b.c", "this.x.y", None, None, "a.b"]
