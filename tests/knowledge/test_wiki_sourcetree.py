"""Every file a wiki build reads goes through one checked open: symlinks out of the root, special files and
trees deeper than the walk's bound are refused or skipped with a reason, never read and never fatal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memhub.knowledge.wiki.indexer import PAGES_DIR, build_generation, source_statuses
from memhub.knowledge.wiki.sources import SourceError, plan_ingest
from memhub.knowledge.wiki.sourcetree import MAX_DEPTH, NotARegularFile, PathOutsideRoot, SourceTree

SECRET_INDEX = {
    "schema_version": 1,
    "themes": [],
    "documents": [{"id": "leaked", "title": "SECRET TITLE FROM OUTSIDE", "file": "a.md"}],
}


def _sources(tmp_path: Path) -> tuple[Path, Path]:
    """A source root with one page, and a folder outside it holding an index and a document."""
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nInside the root.\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "index.json").write_text(json.dumps(SECRET_INDEX), encoding="utf-8")
    (outside / "secret.md").write_text("# Secret\n\nOutside the root.\n", encoding="utf-8")
    return root, outside


def _generation_text(target: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(target.rglob("*")) if p.is_file())


def test_a_symlinked_index_json_leading_outside_the_root_is_never_read(tmp_path: Path) -> None:
    root, outside = _sources(tmp_path)
    (root / "index.json").symlink_to(outside / "index.json")
    target = tmp_path / "gen1"
    report = build_generation(root, target)
    assert report.index == "generated"  # the outside index is not the wiki's index
    assert SourceError("index.json", "symlink points outside the source root; refused") in report.errors
    assert "SECRET" not in _generation_text(target)
    assert json.loads((target / PAGES_DIR / "index.json").read_text())["documents"][0]["id"] == "a"


def test_a_symlinked_directory_leading_outside_the_root_is_not_walked(tmp_path: Path) -> None:
    root, outside = _sources(tmp_path)
    (root / "linked").symlink_to(outside, target_is_directory=True)
    target = tmp_path / "gen1"
    report = build_generation(root, target)
    assert report.added == ["a.md"]
    assert SourceError("linked", "symlink points outside the source root; refused") in report.errors
    assert "Outside the root" not in _generation_text(target) and "SECRET" not in _generation_text(target)


def test_a_symlink_inside_the_root_is_read_once_by_its_name(tmp_path: Path) -> None:
    root, _ = _sources(tmp_path)
    (root / "docs").mkdir()
    (root / "docs" / "b.md").write_text("# B\n\nBee.\n", encoding="utf-8")
    (root / "b-link.md").symlink_to(root / "docs" / "b.md")
    (root / "docs-link").symlink_to(root / "docs", target_is_directory=True)
    plan = plan_ingest(root)
    assert plan.added == ["a.md", "b-link.md", "docs/b.md"] and plan.errors == []


def test_the_checked_open_refuses_what_leaves_the_root(tmp_path: Path) -> None:
    root, outside = _sources(tmp_path)
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "loop.md").symlink_to(root / "loop.md")
    tree = SourceTree(root)
    assert tree.read_bytes("a.md") == b"# A\n\nInside the root.\n"
    for name in ("escape.md", "../outside/secret.md", str(outside / "secret.md"), "loop.md", "a\x00.md"):
        with pytest.raises(PathOutsideRoot):
            tree.read_bytes(name)
    with pytest.raises(NotARegularFile):
        tree.read_bytes(".")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_skipped_with_a_reason_instead_of_blocking_the_build(tmp_path: Path) -> None:
    root, _ = _sources(tmp_path)
    os.mkfifo(root / "pipe.md")
    with pytest.raises(NotARegularFile):
        SourceTree(root).read_bytes("pipe.md")  # opened without blocking, then refused
    report = build_generation(root, tmp_path / "gen1")
    assert report.added == ["a.md"]
    assert SourceError("pipe.md", "not a regular file (a FIFO, socket or device); skipped", "skip") in report.errors


def test_a_tree_a_thousand_directories_deep_builds_and_names_what_it_skipped(tmp_path: Path) -> None:
    root, _ = _sources(tmp_path)
    chain = [os.path.join(str(root), *["d"] * level) for level in range(1, 1001)]
    try:
        # os.makedirs and Path.mkdir(parents=True) recurse once per level; make the chain one level at a time.
        for level, path in enumerate(chain, start=1):
            os.mkdir(path)
            if level in (3, MAX_DEPTH, 1000):
                Path(path, f"level{level}.md").write_text(f"# Level {level}\n\nDepth {level}.\n", encoding="utf-8")
        report = build_generation(root, tmp_path / "gen1")
    finally:
        # shutil.rmtree (and so pytest's own clean-up of old temporary directories) recurses once per level too.
        for path in reversed(chain):
            if os.path.isdir(path):
                for name in os.listdir(path):
                    os.remove(os.path.join(path, name))
                os.rmdir(path)
    kept = "/".join(["d"] * MAX_DEPTH)
    assert report.added == sorted(["a.md", "d/d/d/level3.md", f"{kept}/level{MAX_DEPTH}.md"])
    skipped = f"{kept}/d"
    reason = f"more than {MAX_DEPTH} directory levels below the source root; skipped"
    assert [e for e in report.errors if e.filename == skipped] == [SourceError(skipped, reason, "skip")]
    assert source_statuses(report)[skipped] == ("skipped", reason)
