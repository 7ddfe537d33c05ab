"""The two-layer index: generation is byte-stable, validation reports every problem precisely."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.wiki.globs import glob_matches, glob_problem
from memhub.knowledge.wiki.index import (
    IndexInvalid,
    IndexIssue,
    dump_index_json,
    generate_index,
    load_index,
    validate_index,
    write_index,
)

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    shutil.copytree(FIXTURE, root)
    return root


def _edit(root: Path, rel: str, change: Any) -> None:
    path = root / rel
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _issues(root: Path) -> list[IndexIssue]:
    return validate_index(root)[1]


def test_committed_index_files_are_byte_identical_to_regeneration() -> None:
    generated = generate_index(FIXTURE)
    on_disk = sorted(p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("index.json"))
    assert sorted(generated) == on_disk
    for rel, data in generated.items():
        assert (FIXTURE / rel).read_bytes() == dump_index_json(data).encode("utf-8"), rel


def test_write_index_is_idempotent(tree: Path) -> None:
    before = {p: p.read_bytes() for p in tree.rglob("index.json")}
    for p in before:
        p.unlink()
    write_index(tree)
    assert {p: p.read_bytes() for p in tree.rglob("index.json")} == before


def test_load_fixture(tree: Path) -> None:
    index = load_index(tree)
    assert [t.id for t in index.themes] == ["engineering", "hr", "payments", "standards"]
    assert [d.id for d in index.documents] == ["glossary-zh", "handbook"]
    doc = index.document("payments/payments-code-style")
    assert doc is not None and doc.paths == ("src/payments/**",) and doc.file == "payments/payments-code-style.md"
    archived = index.document("hr/leave-policy-2019")
    assert archived is not None and archived.status == "archived" and archived.theme == "hr"
    draft = index.document("standards/password-policy-draft")
    assert draft is not None and (draft.kind, draft.lifecycle) == ("standard", "draft")
    assert index.document("payments/refunds").updated == "2024-05-01"  # type: ignore[union-attr]
    summary = index.document("engineering/code-review").summary  # type: ignore[union-attr]
    assert summary == "What reviewers check before approving a merge request."  # from `description`


def test_generation_falls_back_to_h1_and_first_paragraph(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "oncall.md").write_text(
        "# On-call guide\n\n| a | b |\n|---|---|\n\nPage the owner\nwithin 5 minutes.\n\nMore.\n", encoding="utf-8"
    )
    data = generate_index(tmp_path)
    assert data["index.json"]["themes"][0]["title"] == "ops"
    doc = data["ops/index.json"]["documents"][0]
    assert doc == {
        "id": "ops/oncall",
        "title": "On-call guide",
        "summary": "Page the owner within 5 minutes.",
        "tags": [],
        "file": "oncall.md",
        "status": "current",
    }


def test_generation_rejects_bad_front_matter_without_writing(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "a.md").write_text("---\ntitle: A\npaths: ['src/{a,b}/**']\nstatus: old\n---\n# A\n")
    (tmp_path / "ops" / "b.md").write_text("---\ntitle: [unclosed\n---\n# B\n")
    with pytest.raises(IndexInvalid) as info:
        write_index(tmp_path)
    assert {(i.path, i.field) for i in info.value.issues} == {
        ("ops/a.md", "front matter.paths[0]"),
        ("ops/a.md", "front matter.status"),
        ("ops/b.md", "front matter"),
    }
    assert not (tmp_path / "index.json").exists()


def test_missing_root_index(tmp_path: Path) -> None:
    assert _issues(tmp_path) == [IndexIssue("index.json", "", "missing file")]
    with pytest.raises(IndexInvalid, match=r"index\.json: <file>: missing file"):
        load_index(tmp_path)


def test_invalid_json(tree: Path) -> None:
    (tree / "hr" / "index.json").write_text("{ not json", encoding="utf-8")
    [issue] = _issues(tree)
    assert (issue.path, issue.field) == ("hr/index.json", "")
    assert issue.rule.startswith("invalid JSON at line 1")


BAD_CASES = [
    ("unknown root key", "index.json", lambda d: d.update(extra=1), ("index.json", "extra", "unknown key")),
    (
        "unknown document key",
        "payments/index.json",
        lambda d: d["documents"][0].update(globs=["*.py"]),
        ("payments/index.json", "documents[0].globs", "unknown key"),
    ),
    (
        "wrong schema version",
        "index.json",
        lambda d: d.update(schema_version="1"),
        ("index.json", "schema_version", "must be 1, got '1'"),
    ),
    (
        "tags not a list",
        "index.json",
        lambda d: d["themes"][1].update(tags="人事"),
        ("index.json", "themes[1].tags", "must be a list of strings, got string"),
    ),
    (
        "title wrong type",
        "hr/index.json",
        lambda d: d["documents"][0].update(title=3),
        ("hr/index.json", "documents[0].title", "must be a string, got int"),
    ),
    (
        "missing required",
        "hr/index.json",
        lambda d: d["documents"][1].pop("file"),
        ("hr/index.json", "documents[1].file", "required key missing"),
    ),
    (
        "missing file",
        "engineering/index.json",
        lambda d: d["documents"][0].update(file="gone.md"),
        ("engineering/index.json", "documents[0].file", "file not found: engineering/gone.md"),
    ),
    (
        "file outside root",
        "index.json",
        lambda d: d["documents"][0].update(file="../secret.md"),
        ("index.json", "documents[0].file", "must be a relative path inside the knowledge root"),
    ),
    (
        "bad status",
        "hr/index.json",
        lambda d: d["documents"][0].update(status="old"),
        ("hr/index.json", "documents[0].status", "must be one of current, archived, got 'old'"),
    ),
    (
        "bad lifecycle",
        "standards/index.json",
        lambda d: d["documents"][0].update(lifecycle="pending"),
        ("standards/index.json", "documents[0].lifecycle", "must be one of published, in-force, draft, got 'pending'"),
    ),
    (
        "lifecycle on a guide",
        "hr/index.json",
        lambda d: d["documents"][0].update(lifecycle="draft"),
        ("hr/index.json", "documents[0].lifecycle", "only allowed when kind is 'standard'"),
    ),
    (
        "standard without lifecycle",
        "standards/index.json",
        lambda d: d["documents"][1].pop("lifecycle"),
        ("standards/index.json", "documents[1].lifecycle", "required for kind 'standard'"),
    ),
    (
        "unclosed bracket glob",
        "payments/index.json",
        lambda d: d["documents"][0].update(paths=["src/[ab/**"]),
        ("payments/index.json", "documents[0].paths[0]", "glob has an unclosed '['"),
    ),
    (
        "glob that can never match",
        "index.json",
        lambda d: d["themes"][0].update(paths=["web//*.tsx"]),
        ("index.json", "themes[0].paths[0]", "glob has an empty path segment ('//') and can never match"),
    ),
    (
        "paths not a list",
        "engineering/index.json",
        lambda d: d["documents"][2].update(paths="**/*.tsx"),
        ("engineering/index.json", "documents[2].paths", "must be a list of globs, got string"),
    ),
    (
        "theme index for another theme",
        "hr/index.json",
        lambda d: d.update(theme="payments"),
        ("hr/index.json", "theme", "must be 'hr' (the root index's theme id), got 'payments'"),
    ),
    (
        "duplicate theme id",
        "index.json",
        lambda d: d["themes"][1].update(id="engineering"),
        [
            ("hr/index.json", "theme", "must be 'engineering' (the root index's theme id), got 'hr'"),
            ("index.json", "themes[1].id", "duplicate theme id 'engineering'"),
        ],
    ),
    (
        "duplicate document id",
        "hr/index.json",
        lambda d: d["documents"][0].update(id="handbook"),
        ("hr/index.json", "documents[0].id", "duplicate document id 'handbook' (first in index.json)"),
    ),
    (
        "documents not an array",
        "payments/index.json",
        lambda d: d.update(documents={}),
        ("payments/index.json", "documents", "must be an array, got object"),
    ),
    (
        "always not boolean",
        "index.json",
        lambda d: d["documents"][1].update(always="yes"),
        ("index.json", "documents[1].always", "must be a boolean, got string"),
    ),
]


@pytest.mark.parametrize(("name", "rel", "change", "expected"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_malformed_index(tree: Path, name: str, rel: str, change: Any, expected: Any) -> None:
    _edit(tree, rel, change)
    wanted = [IndexIssue(*e) for e in expected] if isinstance(expected, list) else [IndexIssue(*expected)]
    assert _issues(tree) == wanted
    with pytest.raises(IndexInvalid) as info:
        load_index(tree)
    assert info.value.issues == wanted


def test_every_problem_is_reported_not_just_the_first(tree: Path) -> None:
    _edit(tree, "index.json", lambda d: d.update(extra=1, themes=[*d["themes"], {"id": "x"}]))
    _edit(tree, "hr/index.json", lambda d: d["documents"][0].update(status="old", paths=["/abs/**"]))
    fields = [(i.path, i.field) for i in _issues(tree)]
    assert fields == [
        ("index.json", "extra"),
        # Each theme's own index is checked when the walk over themes reaches it, so hr comes before themes[4].
        ("hr/index.json", "documents[0].paths[0]"),
        ("hr/index.json", "documents[0].status"),
        ("index.json", "themes[4].title"),
        ("index.json", "themes[4].index"),
    ]


@pytest.mark.parametrize(
    ("glob", "problem"),
    [
        ("src/**", None),
        ("**/*.tsx", None),
        ("[!.]*.py", None),
        ("", "glob is empty"),
        ("src/{a,b}.py", "brace expansion {a,b} is not supported; list each glob separately"),
        ("/src/**", "glob is absolute; globs are relative to the repository root"),
        ("src/", "glob ends with '/', so it names a directory and can never match a file; add '**'"),
        ("src/../x", "glob has a '..' segment and can never match a normalised path"),
        ("src/a**", "'**' must be a whole path segment"),
        ("[]x", "glob has an empty character class '[]' and can never match"),
        ("src\\x.py", "glob uses a backslash; use '/' as the separator"),
        (" src/**", "glob has leading or trailing whitespace"),
        (3, "glob must be a string"),
    ],
)
def test_glob_problem(glob: object, problem: str | None) -> None:
    assert glob_problem(glob) == problem


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/payments/**", "src/payments/api/refund.py", True),
        ("src/payments/**", "/home/me/repo/src/payments/x.py", True),
        ("src/payments/**", "src/orders/x.py", False),
        ("src/payments/**", "payments/x.py", False),
        ("**/*.tsx", "web/App.tsx", True),
        ("**/*.tsx", "App.tsx", True),
        ("*.tsx", "web/deep/App.tsx", True),
        ("web/*.tsx", "web/deep/App.tsx", False),
        ("src/*/api.py", "src/a/api.py", True),
        ("src/?.py", "src/ab.py", False),
        ("[!.]*.md", "README.md", True),
        ("docs/**", "docs\\guide.md", True),
    ],
)
def test_glob_matches(glob: str, path: str, matches: bool) -> None:
    assert glob_matches(glob, path) is matches
