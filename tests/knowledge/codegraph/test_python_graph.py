"""Python call-graph ground truth: a small package whose every call edge was written down by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhub.knowledge.codegraph.facts import FileFacts
from memhub.knowledge.codegraph.python_facts import expression_name, extract_python, module_name
from memhub.knowledge.codegraph.resolve import Graph, resolve

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = FIXTURES / "pyproj"
EXPECTED = json.loads((FIXTURES / "pyproj_expected.json").read_text(encoding="utf-8"))
CALL_KINDS = ("calls", "instantiates", "decorates")


def _facts(root: Path) -> list[FileFacts]:
    return [extract_python(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py"))]


@pytest.fixture(scope="module")
def graph() -> Graph:
    return resolve(_facts(PROJECT))


def test_every_call_edge_is_found_and_nothing_else(graph: Graph) -> None:
    found = {(e.src, e.dst) for e in graph.edges if e.kind in CALL_KINDS}
    expected = {(src, dst) for src, dst, _ in EXPECTED["edges"]}
    assert found - expected == set(), "false edges"
    assert expected - found == set(), "missed edges"


def test_an_ambiguous_call_is_listed_with_its_candidates_not_guessed(graph: Graph) -> None:
    [(src, target, candidates, _)] = EXPECTED["unresolvable"]
    [entry] = [u for u in graph.unresolved if u.src == src]
    assert entry.target == target
    assert sorted(entry.candidates) == sorted(candidates)
    assert not [e for e in graph.edges if e.src == src and e.kind == "calls"]


def test_inheritance_and_overrides(graph: Graph) -> None:
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "inherits"} == {tuple(x) for x in EXPECTED["inherits"]}
    assert {(e.src, e.dst) for e in graph.edges if e.kind == "overrides"} == {tuple(x) for x in EXPECTED["overrides"]}


def test_edges_say_how_they_were_resolved(graph: Graph) -> None:
    by_pair = {(e.src, e.dst, e.kind): e for e in graph.edges}
    send = by_pair[("shop.client.Session.send", "shop.client.Session.encode", "calls")]
    assert (send.resolution, send.confidence, send.file, send.line) == ("receiver", 0.8, "shop/client.py", 13)
    log = by_pair[("shop.client.Session.send", "shop.util.log", "calls")]
    assert (log.resolution, log.confidence) == ("import", 0.95)
    local = by_pair[("shop.util.slugify", "shop.util.normalise", "calls")]
    assert (local.resolution, local.confidence) == ("scope", 0.9)
    through_super = by_pair[("shop.payments.base.CardProvider.refund", "shop.payments.base.Provider.charge", "calls")]
    assert (through_super.resolution, through_super.confidence) == ("receiver", 0.8)
    init = by_pair[("shop.client.Client.__init__", "shop.client.Session", "instantiates")]
    assert init.resolution == "scope"


def test_calls_leaving_the_repository_are_counted_not_listed(graph: Graph) -> None:
    # print, str, .strip(), .lower(), .replace(), NotImplementedError, HANDLERS[kind](...) …
    assert graph.external >= 6
    assert all(not u.target.startswith(("print", "str")) for u in graph.unresolved)


def test_symbols_carry_kinds_lines_docs_and_signatures(graph: Graph) -> None:
    session = graph.symbols["shop.client.Session"]
    assert (session.kind, session.line, session.parent) == ("class", 7, "shop.client")
    send = graph.symbols["shop.client.Session.send"]
    assert (send.kind, send.signature) == ("method", "def send(self, payload)")
    assert graph.symbols["shop.payments.service"].doc.startswith("Checkout")
    assert graph.symbols["shop.util.timed.wrapper"].kind == "function"
    assert graph.symbols["shop"].kind == "module"


def test_module_names() -> None:
    assert module_name("pkg/sub/mod.py") == "pkg.sub.mod"
    assert module_name("pkg/__init__.py") == "pkg"
    assert module_name("setup.py") == "setup"


def test_syntax_errors_are_counted_and_the_rest_still_indexed() -> None:
    source = b"def good():\n    helper()\n\ndef broken(:\n    pass\n\ndef helper():\n    return 1\n"
    facts = extract_python("m.py", source)
    assert facts.parse_errors >= 1
    names = {s.qname for s in facts.symbols}
    assert {"m.good", "m.helper"} <= names
    graph = resolve([facts])
    assert ("m.good", "m.helper") in {(e.src, e.dst) for e in graph.edges}


def test_duplicate_definitions_are_kept_apart() -> None:
    source = b"if X:\n    def f():\n        pass\nelse:\n    def f():\n        pass\n"
    qnames = [s.qname for s in extract_python("m.py", source).symbols if s.kind == "function"]
    assert qnames == ["m.f", "m.f@2"]


def test_computed_expressions_have_no_name() -> None:
    from memhub.knowledge.codegraph.syntax import parser

    tree = parser("tree_sitter_python").parse(b"a.b.c\nf().g\nx[0].y\n")
    exprs = [stmt.named_children[0] for stmt in tree.root_node.named_children]
    assert [expression_name(e) for e in exprs] == ["a.b.c", None, None]


def test_inheritance_cycles_do_not_hang() -> None:
    source = b"class A(B):\n    def f(self):\n        self.g()\n\nclass B(A):\n    def g(self):\n        pass\n"
    graph = resolve([extract_python("m.py", source)])
    assert ("m.A.f", "m.B.g") in {(e.src, e.dst) for e in graph.edges}


def test_python_receivers_loops_literals_and_the_unique_name_tier() -> None:
    source = b"""
class Base:
    def __init__(self): ...
    def save(self): ...
class Child(Base):
    def __init__(self):
        super().__init__()
    def save(self):
        super(Child, self).save()
    @classmethod
    def make(cls):
        return cls()
class Header:
    def append(self, s): ...
def rule(d): ...
def ping(): ...
def what(data, rules, target):
    out = []
    out.append(1)
    " ".join(data)
    for rule in rules:
        rule(data)
    target.ping()
"""
    graph = resolve([extract_python("m.py", source)])
    calls = {(e.src, e.dst, e.resolution) for e in graph.edges if e.kind == "calls"}
    assert ("m.Child.__init__", "m.Base.__init__", "receiver") in calls
    assert ("m.Child.save", "m.Base.save", "receiver") in calls
    assert ("m.Child.make", "m.Child.__init__", "receiver") in calls  # `cls()` constructs the class
    # A list's append, a string's join and a loop variable are not the repository's functions.
    assert not {(s, d) for s, d, _ in calls if d in ("m.Header.append", "m.rule")}
    # One function named ping, on a receiver of unknown type: the unique-name tier, at confidence 0.5.
    [guess] = [e for e in graph.edges if e.dst == "m.ping" and e.kind == "calls"]
    assert (guess.src, guess.resolution, guess.confidence) == ("m.what", "unique_name", 0.5)
