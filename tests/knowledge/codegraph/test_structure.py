"""The graph beyond calls: contains, imports, implements, references, class flavors, and the stored format."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memhub.knowledge.codegraph.go_facts import extract_go
from memhub.knowledge.codegraph.indexer import index_tree
from memhub.knowledge.codegraph.java_facts import extract_java
from memhub.knowledge.codegraph.javascript_facts import extract_javascript
from memhub.knowledge.codegraph.python_facts import extract_python
from memhub.knowledge.codegraph.queries import run_tool
from memhub.knowledge.codegraph.resolve import Graph, resolve
from memhub.store.sqlite.graph import GRAPH_FORMAT, SQLiteGraph
from tests.knowledge.codegraph.ground_truth import project_graph


def _pairs(graph: Graph, kind: str) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in graph.edges if e.kind == kind}


def _python(files: dict[str, str]) -> Graph:
    return resolve(extract_python(path, text.encode()) for path, text in files.items())


def test_every_definition_is_contained_by_its_parent_once() -> None:
    graph = project_graph("pyproj")
    contains = [e for e in graph.edges if e.kind == "contains"]
    assert sorted((e.src, e.dst) for e in contains) == sorted(
        (s.parent, s.qname) for s in graph.symbols.values() if s.parent is not None
    )
    assert all(e.resolution == "exact" and e.confidence == 1.0 for e in contains)


def test_imports_link_modules_in_the_repository_only() -> None:
    graph = _python(
        {
            "app/__init__.py": "",
            "app/models.py": "class User: ...\n",
            "app/util.py": "def log(): ...\n",
            "app/main.py": (
                "import os\nimport app.util\nfrom app.models import User\nfrom . import util\n"
                "from .models import User as U\n"
            ),
        }
    )
    edges = [e for e in graph.edges if e.kind == "imports"]
    # `import app.util` binds the package `app`; `from . import util` names the module; one edge per module.
    assert sorted((e.src, e.dst) for e in edges) == [
        ("app.main", "app"),
        ("app.main", "app.models"),
        ("app.main", "app.util"),
    ]
    by_dst = {e.dst: e for e in edges}
    assert (by_dst["app.models"].file, by_dst["app.models"].line) == ("app/main.py", 3)


def test_python_annotations_and_callbacks_are_references_not_calls() -> None:
    graph = _python(
        {
            "m.py": (
                "import threading\n"
                "class Client:\n"
                "    def send(self): ...\n"
                "def key(x): ...\n"
                "def worker(): ...\n"
                "def handler(): ...\n"
                "def make() -> Client:\n"
                "    return Client()\n"
                "def run(c: Client, items, handler) -> None:\n"
                "    sorted(items, key=key)\n"
                "    threading.Thread(target=worker)\n"
                "    handler()\n"
                "    use(handler)\n"
                "    x = make()\n"
                "    x.send()\n"
                "    local: Client = c\n"
                "    use(undefined_name, c)\n"
            ),
        }
    )
    refs = _pairs(graph, "references")
    assert refs == {("m.make", "m.Client"), ("m.run", "m.Client"), ("m.run", "m.key"), ("m.run", "m.worker")}
    calls = _pairs(graph, "calls")
    # `handler` is run's parameter: calling it or passing it on is not the module's `handler`.
    assert ("m.run", "m.handler") not in calls | refs
    # `make() -> Client` types x: the call on it resolves by receiver.
    send = [e for e in graph.edges if (e.src, e.dst) == ("m.run", "m.Client.send")]
    assert [e.resolution for e in send] == ["receiver"]
    first = next(e for e in graph.edges if e.kind == "references" and e.dst == "m.Client" and e.src == "m.run")
    assert (first.file, first.line) == ("m.py", 9)  # once per scope, at the first use


def test_declared_types_are_references_in_java_go_and_typescript() -> None:
    java = resolve(
        [
            extract_java("src/a/Repo.java", b"package a;\npublic class Repo { }\n"),
            extract_java(
                "src/a/Service.java",
                b"package a;\npublic class Service {\n  private Repo repo;\n"
                b"  Repo find(Repo other) { return other; }\n}\n",
            ),
        ]
    )
    assert {("a.Service", "a.Repo"), ("a.Service.find", "a.Repo")} <= _pairs(java, "references")
    go = resolve(
        [
            extract_go(
                "pkg/s/s.go",
                b"package s\ntype Repo struct{}\ntype Server struct{ repo *Repo }\n"
                b"func (s *Server) Use(r Repo) *Repo { return nil }\n",
            )
        ]
    )
    # The receiver naming its own type adds nothing to `contains`; the parameter and the field do.
    assert _pairs(go, "references") == {("pkg/s.Server", "pkg/s.Repo"), ("pkg/s.Server.Use", "pkg/s.Repo")}
    ts = resolve([extract_javascript("m.ts", b"class A {}\nfunction f(a: A): A { return a; }\n", {"m.ts"})])
    assert _pairs(ts, "references") == {("m.f", "m.A")}


def test_interfaces_are_implemented_and_flavors_recorded() -> None:
    java = resolve(
        [
            extract_java(
                "src/a/Shapes.java",
                b"package a;\ninterface Shape { double area(); }\ninterface Solid extends Shape { }\n"
                b"enum Color { RED }\nrecord Point(int x) { }\n"
                b"class Square implements Solid { public double area() { return 1; } }\n",
            )
        ]
    )
    flavors = {s.name: s.flavor for s in java.symbols.values() if s.kind == "class"}
    assert flavors == {"Shape": "interface", "Solid": "interface", "Color": "enum", "Point": "record", "Square": ""}
    assert _pairs(java, "implements") == {("a.Square", "a.Solid")}
    assert _pairs(java, "inherits") == {("a.Solid", "a.Shape")}
    # The method overrides the interface's, found through the interface's own base.
    assert ("a.Square.area", "a.Shape.area") in _pairs(java, "overrides")
    go = resolve([extract_go("p/p.go", b"package p\ntype S struct{}\ntype I interface{ M() }\ntype N int\n")])
    assert {s.name: s.flavor for s in go.symbols.values() if s.kind == "class"} == {
        "S": "struct",
        "I": "interface",
        "N": "",
    }
    ts = resolve([extract_javascript("m.ts", b"interface I {}\nenum E { A }\nclass C implements I {}\n", {"m.ts"})])
    assert {s.name: s.flavor for s in ts.symbols.values() if s.kind == "class"} == {
        "I": "interface",
        "E": "enum",
        "C": "",
    }


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "base.py").write_text("class Base:\n    def run(self): ...\n")
    (root / "pkg" / "impl.py").write_text(
        "from pkg.base import Base\nclass Impl(Base):\n    def run(self): ...\n"
        "    def start(self):\n        helper(self.run)\ndef helper(f): ...\n"
    )
    return root


def test_tools_show_flavors_members_and_references(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    (root / "pkg" / "base.py").write_text(
        "from typing import Protocol\nclass Base(Protocol):\n    def run(self): ...\n"
    )
    index_tree(root, tmp_path / "g.db")
    graph = SQLiteGraph(tmp_path / "g.db", readonly=True)
    try:
        node = run_tool(graph, "node", {"symbol": "pkg.impl.Impl"})
        [item] = node["items"]
        assert (item["members"], item["kind"]) == (2, "class")
        run = run_tool(graph, "node", {"symbol": "pkg.impl.Impl.run"})
        assert run["items"][0]["referenced_by"] == 1  # `helper(self.run)` hands the method over
        base = run_tool(graph, "node", {"symbol": "pkg.base.Base"})["items"][0]
        assert base["flavor"] == "protocol"
        hierarchy = run_tool(graph, "class_hierarchy", {"symbol": "pkg.base.Base"})
        assert [(c["qname"], c["kind"]) for c in hierarchy["subclasses"]] == [("pkg.impl.Impl", "implements")]
        assert "`pkg.impl.Impl` (implements)" in hierarchy["text"]
        impact = run_tool(graph, "impact", {"symbol": "pkg.base.Base"})
        assert "pkg.impl.Impl" in {i["qname"] for i in impact["items"]}
    finally:
        graph.close()


def test_a_generation_of_an_older_format_answers_and_is_rebuilt_not_patched(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    old = tmp_path / "g1.db"
    index_tree(root, old)
    # Make g1 what an earlier memhub wrote: no flavor column, no recorded format.
    con = sqlite3.connect(old)
    con.execute("ALTER TABLE symbols DROP COLUMN flavor")
    con.execute("DELETE FROM meta WHERE key = 'graph_format'")
    con.commit()
    con.close()
    reader = SQLiteGraph(old, readonly=True)
    try:
        assert reader.graph_format() == 1
        assert run_tool(reader, "node", {"symbol": "pkg.base.Base"})["items"][0]["qname"] == "pkg.base.Base"
    finally:
        reader.close()
    report = index_tree(root, tmp_path / "g2.db", previous=old)
    assert (report.unchanged, len(report.added)) == (0, 3)  # every file parsed again, none reused
    fresh = SQLiteGraph(tmp_path / "g2.db", readonly=True)
    try:
        assert fresh.graph_format() == GRAPH_FORMAT
        assert fresh.counts()["edges"] == len(resolve_tree(root).edges)
    finally:
        fresh.close()


def resolve_tree(root: Path) -> Graph:
    return resolve(extract_python(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py")))


def test_star_imports_bind_names_weaker_than_explicit_ones() -> None:
    graph = _python(
        {
            "a.py": "def f(): ...\ndef shared(): ...\n",
            "b.py": "def g(): ...\ndef shared(): ...\n",
            "c.py": "def shared(): ...\n",
            "main.py": "from a import *\nfrom b import *\nfrom c import shared\n"
            "def run():\n    f()\n    g()\n    shared()\n",
        }
    )
    calls = {(e.dst, e.resolution) for e in graph.edges if e.kind == "calls" and e.src == "main.run"}
    # Both star imports count (the second does not replace the first), and the explicit import wins.
    assert calls == {("a.f", "import"), ("b.g", "import"), ("c.shared", "import")}
    java = resolve(
        [
            extract_java("src/u/Log.java", b"package u;\npublic class Log { public static void info() {} }\n"),
            extract_java("src/d/Repo.java", b"package d;\npublic class Repo { public void save() {} }\n"),
            extract_java(
                "src/app/Main.java",
                b"package app;\nimport u.*;\nimport d.*;\nimport java.util.*;\n"
                b"class Main { void run() { Log.info(); Repo r = new Repo(); r.save(); }\n"
                b"  void list() { List<String> x = new ArrayList<>(); } }\n",
            ),
        ]
    )
    found = {(e.dst, e.kind, e.resolution) for e in java.edges if e.src == "app.Main.run" and e.kind != "references"}
    assert found == {
        ("u.Log.info", "calls", "import"),
        ("d.Repo", "instantiates", "import"),
        ("d.Repo.save", "calls", "receiver"),
    }


def test_javascript_export_star_does_not_bind_names_in_the_exporting_module() -> None:
    lib = extract_javascript("lib.js", b"export function f() {}\nexport function g() {}\n", {"lib.js", "index.js"})
    index = extract_javascript(
        "index.js", b'export * from "./lib.js";\nfunction run() { f(); }\n', {"lib.js", "index.js"}
    )
    graph = resolve([lib, index])
    assert not [e for e in graph.edges if e.src == "index.run" and e.dst == "lib.f" and e.resolution == "import"]
