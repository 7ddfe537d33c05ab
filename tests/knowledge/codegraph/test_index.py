"""Indexing a tree into a graph generation: discovery rules, the stored graph, incremental == clean rebuild."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memhub.knowledge.codegraph.indexer import _FACTS, MAX_DEPTH, discover, index_tree
from memhub.knowledge.codegraph.python_facts import extract_python
from memhub.knowledge.codegraph.resolve import resolve
from memhub.store.sqlite.graph import SQLiteGraph

PROJECT = Path(__file__).parent / "fixtures" / "pyproj"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(PROJECT, root)
    return root


_SNAPSHOT = {
    "edges": "SELECT * FROM edges",
    "symbols": "SELECT * FROM symbols",
    # Row ids are internal keys: a patched generation numbers new rows after the old ones.
    "unresolved": "SELECT src, target, kind, file, line, candidates_json FROM unresolved",
    "candidates": (
        "SELECT u.src, u.line, c.qname FROM unresolved_candidates c JOIN unresolved u ON u.id = c.unresolved_id"
    ),
    "fts": "SELECT qname, name, path, doc FROM symbols_fts",
    "externals": "SELECT value FROM meta WHERE key IN ('external_by_file', 'external_calls')",
}


def _snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    graph = SQLiteGraph(db, readonly=True)
    try:
        return {name: sorted(tuple(r) for r in graph.con.execute(sql)) for name, sql in _SNAPSHOT.items()}
    finally:
        graph.close()


def test_the_stored_graph_is_the_resolved_graph(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    report = index_tree(root, tmp_path / "g1.db")
    assert sorted(report.added) == sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    expected = resolve(
        extract_python(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py"))
    )
    graph = SQLiteGraph(tmp_path / "g1.db", readonly=True)
    try:
        assert graph.counts()["edges"] == len(expected.edges)
        assert graph.counts()["symbols"] == len(expected.symbols)
        callers = graph.edges_of(["shop.util.log"], "callers", kinds=["calls"], limit=50)
        wanted = {e.src for e in expected.edges if e.dst == "shop.util.log" and e.kind == "calls"}
        assert {e.src for e in callers} == wanted
        found = graph.search_symbols("normalise")
        assert found[0].qname == "shop.util.normalise"
        assert [s.qname for s in graph.symbols_named("Session")] == ["shop.client.Session"]
        reached, truncated = graph.closure(["shop.util.normalise"], "callers", kinds=["calls"], depth=3, limit=50)
        by_node = {r.qname: r.depth for r in reached}
        assert by_node["shop.util.slugify"] == 1
        assert by_node["shop.client.Session.encode"] == 1
        assert by_node["shop.client.Session.send"] == 2
        assert by_node["shop.client.Client.get"] == 3
        assert truncated is False
        cut, truncated = graph.closure(["shop.util.normalise"], "callers", kinds=["calls"], depth=3, limit=2)
        assert len(cut) == 2 and truncated is True
        assert graph.meta()["external_calls"] == expected.external
    finally:
        graph.close()


def test_an_unchanged_tree_reparses_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    index_tree(root, tmp_path / "g1.db")
    again = index_tree(root, tmp_path / "g2.db", tmp_path / "g1.db")
    assert (again.added, again.changed, again.removed, again.lines_parsed) == ([], [], [], 0)
    assert again.unchanged == len(list(root.rglob("*.py")))
    assert _snapshot(tmp_path / "g1.db") == _snapshot(tmp_path / "g2.db")


def test_discovery_skips_what_is_not_source(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ok.py").write_text("def f():\n    pass\n")
    (root / "pkg" / "big.py").write_bytes(b"x = 1\n" * 50)
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.py").write_text("def g():\n    pass\n")
    (root / ".git").mkdir()
    (root / ".git" / "hook.py").write_text("x = 1\n")
    (root / "pkg" / "blob.py").write_bytes(b"\x00\x01binary")
    os.symlink(root, root / "pkg" / "loop")  # a link back up: never followed
    files, skipped = discover(root, max_bytes=200)
    assert [rel for rel, _ in files] == ["pkg/blob.py", "pkg/ok.py"]
    assert [(s.path, s.reason.split(":")[0]) for s in skipped] == [("pkg/big.py", "too large")]
    report = index_tree(root, tmp_path / "g.db", max_bytes=200)
    assert report.added == ["pkg/ok.py"]
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("pkg/big.py", "too large: 300 bytes (limit 200)"),
        ("pkg/blob.py", "binary content"),
    ]


def test_a_tree_a_thousand_directories_deep_is_indexed_down_to_the_depth_bound(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "top.py").write_text("def top():\n    pass\n")
    chain = [os.path.join(str(root), *["d"] * level) for level in range(1, 1001)]
    try:
        # os.makedirs recurses once per level: make the chain one level at a time.
        for level, path in enumerate(chain, start=1):
            os.mkdir(path)
            if level in (MAX_DEPTH, 1000):
                Path(path, f"level{level}.py").write_text(f"def level{level}():\n    pass\n")
        files, skipped = discover(root)
        report = index_tree(root, tmp_path / "g.db")
    finally:
        # shutil.rmtree (and pytest's own clean-up of old temporary directories) recurses once per level too.
        for path in reversed(chain):
            for name in os.listdir(path):
                if not os.path.isdir(os.path.join(path, name)):
                    os.remove(os.path.join(path, name))
            os.rmdir(path)
    kept = "/".join(["d"] * MAX_DEPTH)
    assert [rel for rel, _ in files] == ["top.py", f"{kept}/level{MAX_DEPTH}.py"]
    reason = f"more than {MAX_DEPTH} directory levels below the root; skipped"
    assert [(s.path, s.reason) for s in skipped] == [(f"{kept}/d", reason)]
    assert report.added == ["top.py", f"{kept}/level{MAX_DEPTH}.py"]
    assert [(s.path, s.reason) for s in report.skipped] == [(f"{kept}/d", reason)]


def test_syntax_errors_are_counted_per_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "bad.py").write_text("def good():\n    helper()\n\ndef broken(:\n    pass\n\ndef helper():\n    pass\n")
    report = index_tree(root, tmp_path / "g.db")
    assert report.parse_errors["bad.py"] >= 1
    graph = SQLiteGraph(tmp_path / "g.db", readonly=True)
    try:
        assert graph.counts()["parse_errors"] >= 1
        assert [e.dst for e in graph.edges_of(["bad.good"], "callees", kinds=["calls"], limit=5)] == ["bad.helper"]
    finally:
        graph.close()


# -- incremental == clean rebuild ---------------------------------------------------------------------------

_FILES = ["shop/util.py", "shop/client.py", "shop/payments/base.py", "shop/payments/service.py"]
_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["append_call", "delete", "rename", "add_module", "drop_line", "rebase", "forget_facts"]),
        st.integers(0, len(_FILES) - 1),
        st.sampled_from(["log", "normalise", "slugify", "make_provider", "build_client", "missing"]),
    ),
    min_size=1,
    max_size=4,
)


def _apply(root: Path, edit: tuple[str, int, str], step: int) -> None:
    action, which, name = edit
    candidates = sorted(p for p in root.rglob("*.py"))
    if not candidates:
        return
    target = candidates[which % len(candidates)]
    if action == "append_call":
        target.write_text(target.read_text() + f"\n\ndef added_{step}():\n    {name}()\n")
    elif action == "delete" and len(candidates) > 1:
        target.unlink()
    elif action == "rename":
        target.rename(target.with_name(f"moved_{step}.py"))
    elif action == "add_module":
        (root / "shop" / f"extra_{step}.py").write_text(f"from shop.util import {name}\n\n\ndef use():\n    {name}()\n")
    elif action == "rebase":
        # Bases change: methods reached through the class change for callers and subclasses elsewhere.
        text = target.read_text().replace("class CardProvider(Provider):", "class CardProvider:")
        target.write_text(text + f"\n\nclass Sub{step}(CardProvider):\n    def submit(self, amount):\n        pass\n")
    elif action == "drop_line":
        lines = target.read_text().splitlines()
        if lines:
            target.write_text("\n".join(lines[: len(lines) // 2]) + "\n")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
def test_incremental_index_equals_a_clean_rebuild(tmp_path_factory: object, edits: list[tuple[str, int, str]]) -> None:
    base = tmp_path_factory.mktemp("inc")  # type: ignore[attr-defined]
    root = _copy(base)
    previous = base / "g0.db"
    index_tree(root, previous)
    for step, edit in enumerate(edits, start=1):
        _apply(root, edit, step)
        if edit[0] == "forget_facts":
            _FACTS.clear()  # as after a restart: the previous generation's facts are read from its file
        current = base / f"g{step}.db"
        index_tree(root, current, previous)
        previous = current
    clean = base / "clean.db"
    index_tree(root, clean)
    assert _snapshot(previous) == _snapshot(clean)


# The other languages' fixtures: cross-file methods (Go packages, Rust impls in another module),
# interfaces implemented, folder modules; files deleted, cut short, renamed and duplicated.
_PROJECTS = ["goproj", "javaproj", "rustproj", "tsproj", "jsproj"]
_FILE_EDITS = st.lists(
    st.tuples(st.sampled_from(["delete", "drop_line", "rename", "duplicate", "forget_facts"]), st.integers(0, 50)),
    min_size=1,
    max_size=4,
)


def _apply_to_any(root: Path, edit: tuple[str, int], step: int) -> None:
    action, which = edit
    candidates = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".go", ".java", ".rs", ".ts", ".js"))
    if not candidates:
        return
    target = candidates[which % len(candidates)]
    if action == "delete" and len(candidates) > 1:
        target.unlink()
    elif action == "drop_line":
        lines = target.read_text().splitlines()
        target.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    elif action == "rename":
        target.rename(target.with_name(f"moved{step}{target.suffix}"))
    elif action == "duplicate":
        shutil.copy(target, target.with_name(f"copy{step}{target.suffix}"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(project=st.sampled_from(_PROJECTS), edits=_FILE_EDITS)
# Found by the search, kept so every run checks it: deletes src/lib/index.ts, which service.ts imports as `./lib`.
@example(project="tsproj", edits=[("delete", 1)])
def test_incremental_index_equals_a_clean_rebuild_in_every_language(
    tmp_path_factory: object, project: str, edits: list[tuple[str, int]]
) -> None:
    base = tmp_path_factory.mktemp("inc")  # type: ignore[attr-defined]
    root = base / "repo"
    shutil.copytree(PROJECT.parent / project, root)
    previous = base / "g0.db"
    index_tree(root, previous)
    for step, edit in enumerate(edits, start=1):
        _apply_to_any(root, edit, step)
        if edit[0] == "forget_facts":
            _FACTS.clear()
        current = base / f"g{step}.db"
        index_tree(root, current, previous)
        previous = current
    clean = base / "clean.db"
    index_tree(root, clean)
    assert _snapshot(previous) == _snapshot(clean)


def _every_source_file() -> list[tuple[str, str]]:
    """(project, file) for each source file of each fixture project, as the indexer finds them."""
    return [(project, rel) for project in ("pyproj", *_PROJECTS) for rel, _ in discover(PROJECT.parent / project)[0]]


@pytest.mark.parametrize("action", ["delete", "empty"])
@pytest.mark.parametrize(("project", "rel"), _every_source_file())
def test_the_dependents_of_any_deleted_or_emptied_file_are_resolved_again(
    tmp_path: Path, project: str, rel: str, action: str
) -> None:
    """Each file in turn, every language: the random search samples a few, this walks them all. An importer
    may name the file by another spelling than its module (`./lib` for src/lib/index.ts, a Go import path
    for its package folder); its edges into the file must still be redone, not kept from the last build."""
    root = tmp_path / "repo"
    shutil.copytree(PROJECT.parent / project, root)
    index_tree(root, tmp_path / "g0.db")
    if action == "delete":
        (root / rel).unlink()
    else:
        (root / rel).write_text("\n")
    index_tree(root, tmp_path / "g1.db", tmp_path / "g0.db")
    index_tree(root, tmp_path / "clean.db")
    assert _snapshot(tmp_path / "g1.db") == _snapshot(tmp_path / "clean.db")


def test_javascript_and_typescript_trees_are_indexed(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    for project in ("jsproj", "tsproj"):
        root = fixtures / project
        report = index_tree(root, tmp_path / f"{project}.db")
        sources = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.suffix != ".json")
        assert sorted(report.added) == sources
        graph = SQLiteGraph(tmp_path / f"{project}.db", readonly=True)
        try:
            languages = {f.language for f in graph.files()}
            assert languages == ({"javascript"} if project == "jsproj" else {"typescript"})
            assert graph.counts()["edges"] > 20
        finally:
            graph.close()
