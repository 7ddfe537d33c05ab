"""Building wiki generations: pages, authored vs generated index, incremental rebuilds, failures and statuses."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.wiki.index import IndexIssue, dump_index_json
from memhub.knowledge.wiki.indexer import (
    MANIFEST_FILE,
    PAGES_DIR,
    UNITS_FILE,
    BuildFailed,
    BuildReport,
    build_generation,
    read_manifest,
    read_units,
    source_statuses,
)
from memhub.knowledge.wiki.pages import page_file
from memhub.knowledge.wiki.sources import Limits, SourceError, SourceUnit
from tests.knowledge.test_wiki_sources import make_docx, make_pdf

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"
FIXTURE_SOURCES = sorted(p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*.md"))
FIXTURE_INDEXES = sorted(p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("index.json"))


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def _pages(generation: Path) -> list[str]:
    root = generation / PAGES_DIR
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


SMALL: dict[str, str | bytes] = {
    "guide.md": "---\ntitle: Guide\ntags: [start]\n---\n# Guide\n\nWhere to begin.\n",
    "payments/README.md": "---\ntitle: Payments\nsummary: Money matters.\n---\n# Payments\n",
    "payments/refunds.md": "# Refunds\n\nRefunds are approved by support.\n",
    "specs/api.pdf": make_pdf(["API reference", "Rate limits per tenant"]),
}


@pytest.fixture
def fixture_src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    return src


# --- the fixture wiki (authored index) ------------------------------------------------------------


def test_fixture_builds_with_its_authored_index(fixture_src: Path, tmp_path: Path) -> None:
    gen = tmp_path / "gen" / "1"
    report = build_generation(fixture_src, gen)
    assert len(FIXTURE_SOURCES) == 19
    assert report.added == FIXTURE_SOURCES
    assert (report.changed, report.unchanged, report.removed, report.kept_previous) == ([], [], [], [])
    assert report.errors == []
    assert report.pages == 19
    assert report.index == "authored"
    assert report.hashes == {name: _sha(fixture_src / name) for name in FIXTURE_SOURCES}
    # Markdown sources are their own pages, byte for byte; every index.json sits next to its pages.
    assert _pages(gen) == sorted(FIXTURE_SOURCES + FIXTURE_INDEXES)
    for name in FIXTURE_SOURCES + FIXTURE_INDEXES:
        assert (gen / PAGES_DIR / name).read_bytes() == (fixture_src / name).read_bytes(), name
    manifest = read_manifest(gen)
    assert manifest["hashes"] == report.hashes
    assert manifest["index"] == "authored"
    assert manifest["errors"] == []
    units = read_units(gen)
    assert sorted(units) == FIXTURE_SOURCES
    assert units["payments/refunds.md"][0].locator == "Refund policy, lines 7-16"


def test_generation_layout_and_report_view(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    gen = tmp_path / "g1"
    report = build_generation(src, gen)
    assert sorted(p.name for p in gen.iterdir()) == [MANIFEST_FILE, PAGES_DIR, UNITS_FILE]
    view = report.view()
    assert view["added"] == ["guide.md", "payments/README.md", "payments/refunds.md", "specs/api.pdf"]
    assert (view["changed"], view["unchanged"], view["removed"], view["kept_previous"]) == ([], 0, [], [])
    assert (view["pages"], view["index"], view["errors"]) == (4, "generated", [])
    units = json.loads((gen / UNITS_FILE).read_text(encoding="utf-8"))
    assert units["specs/api.pdf"] == [["API reference", "page 1"], ["Rate limits per tenant", "page 2"]]
    assert units["payments/refunds.md"] == [["# Refunds\n\nRefunds are approved by support.", "Refunds, lines 1-3"]]
    assert read_units(gen)["specs/api.pdf"] == [
        SourceUnit("API reference", "page 1"),
        SourceUnit("Rate limits per tenant", "page 2"),
    ]


def test_generated_index_from_front_matter_and_headings_golden(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    gen = tmp_path / "g1"
    build_generation(src, gen)
    assert _pages(gen) == [
        "guide.md",
        "index.json",
        "payments/README.md",
        "payments/index.json",
        "payments/refunds.md",
        "specs/api.pdf.md",
        "specs/index.json",
    ]
    pages = gen / PAGES_DIR
    assert json.loads((pages / "index.json").read_text(encoding="utf-8")) == {
        "schema_version": 1,
        "themes": [
            {
                "id": "payments",
                "title": "Payments",
                "summary": "Money matters.",
                "tags": [],
                "index": "payments/index.json",
                "status": "current",
            },
            {
                "id": "specs",
                "title": "specs",
                "summary": "",
                "tags": [],
                "index": "specs/index.json",
                "status": "current",
            },
        ],
        "documents": [
            {
                "id": "guide",
                "title": "Guide",
                "summary": "Where to begin.",
                "tags": ["start"],
                "file": "guide.md",
                "status": "current",
            }
        ],
    }
    assert json.loads((pages / "specs/index.json").read_text(encoding="utf-8")) == {
        "schema_version": 1,
        "theme": "specs",
        "documents": [
            {
                "id": "specs/api.pdf",
                "title": "api.pdf",
                "summary": "API reference",
                "tags": [],
                "file": "api.pdf.md",
                "status": "current",
            }
        ],
    }
    assert (pages / "specs/api.pdf.md").read_text(encoding="utf-8") == (
        "---\ntitle: api.pdf\nsource: specs/api.pdf\n---\n\n# api.pdf\n\n"
        "## Page 1\n\nAPI reference\n\n## Page 2\n\nRate limits per tenant\n"
    )


def test_docx_and_text_sources_become_rendered_pages(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()

    def build(document: Any) -> None:
        document.add_heading("Operations", level=1)
        document.add_paragraph("Rotate keys.")

    make_docx(src / "ops.docx", build)
    _tree(src, {"notes.txt": "first line\n"})
    gen = tmp_path / "g"
    build_generation(src, gen)
    pages = gen / PAGES_DIR
    assert (pages / "ops.docx.md").read_text(encoding="utf-8") == (
        "---\ntitle: Operations\nsource: ops.docx\n---\n\n# Operations\n\nRotate keys.\n"
    )
    assert (pages / "notes.txt.md").read_text(encoding="utf-8") == (
        "---\ntitle: notes.txt\nsource: notes.txt\n---\n\n# notes.txt\n\nfirst line\n"
    )


# --- incremental rebuilds -------------------------------------------------------------------------


def test_unchanged_files_reuse_the_previous_page_and_units(fixture_src: Path, tmp_path: Path) -> None:
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    build_generation(fixture_src, g1)
    # Tamper with the previous generation: only a reused page / unit list would carry the marks.
    (g1 / PAGES_DIR / "handbook.md").write_text("REUSED PAGE\n", encoding="utf-8")
    units = json.loads((g1 / UNITS_FILE).read_text(encoding="utf-8"))
    units["handbook.md"] = [["REUSED UNIT", "line 1"]]
    (g1 / UNITS_FILE).write_text(json.dumps(units), encoding="utf-8")

    report = build_generation(fixture_src, g2, g1)
    assert report.unchanged == FIXTURE_SOURCES
    assert (report.added, report.changed, report.removed) == ([], [], [])
    assert report.view()["unchanged"] == 19
    assert report.pages == 19
    assert (g2 / PAGES_DIR / "handbook.md").read_text(encoding="utf-8") == "REUSED PAGE\n"
    assert read_units(g2)["handbook.md"] == [SourceUnit("REUSED UNIT", "line 1")]
    assert read_manifest(g2)["hashes"] == read_manifest(g1)["hashes"]


def test_changed_added_and_removed_files(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    build_generation(src, g1)
    _tree(
        src, {"payments/refunds.md": "# Refunds\n\nRefunds now need a finance lead.\n", "new.md": "# New\n\nFresh.\n"}
    )
    (src / "specs/api.pdf").unlink()
    report = build_generation(src, g2, g1)
    assert report.added == ["new.md"]
    assert report.changed == ["payments/refunds.md"]
    assert report.unchanged == ["guide.md", "payments/README.md"]
    assert report.removed == ["specs/api.pdf"]
    assert report.pages == 4
    assert sorted(report.hashes) == ["guide.md", "new.md", "payments/README.md", "payments/refunds.md"]
    assert "finance lead" in (g2 / PAGES_DIR / "payments/refunds.md").read_text(encoding="utf-8")
    assert not (g2 / PAGES_DIR / "specs").exists()  # no page and no theme left for the removed PDF
    assert "specs/api.pdf" not in read_units(g2)
    assert [t["id"] for t in json.loads((g2 / PAGES_DIR / "index.json").read_text())["themes"]] == ["payments"]


def test_changed_file_that_now_fails_keeps_its_previous_version(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    first = build_generation(src, g1)
    (src / "specs/api.pdf").write_bytes(b"%PDF-1.4 truncated garbage")
    report = build_generation(src, g2, g1)
    assert report.changed == ["specs/api.pdf"]
    assert report.kept_previous == ["specs/api.pdf"]
    assert [e.filename for e in report.errors] == ["specs/api.pdf"]
    assert "PDF could not be parsed" in report.errors[0].reason
    assert report.hashes["specs/api.pdf"] == first.hashes["specs/api.pdf"]  # retried on the next build
    assert report.pages == 4
    page = "specs/api.pdf.md"
    assert (g2 / PAGES_DIR / page).read_bytes() == (g1 / PAGES_DIR / page).read_bytes()
    assert read_units(g2)["specs/api.pdf"] == read_units(g1)["specs/api.pdf"]
    status, reason = source_statuses(report)["specs/api.pdf"]
    assert status == "failed"
    assert reason is not None and reason.endswith("(the previous version is kept)")
    assert read_manifest(g2)["errors"] == [
        {"filename": "specs/api.pdf", "reason": report.errors[0].reason, "kind": "error"}
    ]


def test_new_file_that_fails_is_reported_and_left_out(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    build_generation(src, g1)
    _tree(src, {"broken.pdf": b"not a pdf at all", "bad.docx": b"PK\x03\x04 not a zip"})
    report = build_generation(src, g2, g1)
    assert report.added == ["bad.docx", "broken.pdf"]
    assert report.kept_previous == []
    assert sorted(e.filename for e in report.errors) == ["bad.docx", "broken.pdf"]
    assert "broken.pdf" not in report.hashes and "bad.docx" not in report.hashes
    assert not (g2 / PAGES_DIR / "broken.pdf.md").exists()
    assert not (g2 / PAGES_DIR / "bad.docx.md").exists()
    statuses = source_statuses(report)
    assert statuses["broken.pdf"][0] == "failed" and "PDF could not be parsed" in str(statuses["broken.pdf"][1])
    assert statuses["bad.docx"][0] == "failed" and "DOCX could not be parsed" in str(statuses["bad.docx"][1])
    assert statuses["guide.md"] == ("ingested", None)


def test_index_json_is_not_an_unsupported_file_but_other_files_are(fixture_src: Path, tmp_path: Path) -> None:
    _tree(fixture_src, {"data.csv": "a,b\n", "payments/logo.png": b"\x89PNG", "payments/extra.json": "{}"})
    report = build_generation(fixture_src, tmp_path / "g")
    assert sorted((e.filename, e.kind) for e in report.errors) == [
        ("data.csv", "skip"),
        ("payments/extra.json", "skip"),
        ("payments/logo.png", "skip"),
    ]
    statuses = source_statuses(report)
    assert statuses["data.csv"] == ("skipped", "unsupported file type '.csv'")
    assert not any(name.endswith("index.json") for name in statuses)


def test_too_large_files_are_skipped(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"small.md": "# S\n\nok\n", "big.md": "# B\n\n" + "x" * 100 + "\n"})
    report = build_generation(src, tmp_path / "g", limits=Limits(text_bytes=50))
    assert list(report.hashes) == ["small.md"]
    status, reason = source_statuses(report)["big.md"]
    assert status == "skipped" and reason is not None and reason.startswith("file too large")


def test_leftovers_in_the_target_are_replaced(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    gen = _tree(tmp_path / "g", {"junk.txt": "half-built", "pages/old.md": "# Old\n", "units.json": "garbage"})
    build_generation(src, gen)
    assert not (gen / "junk.txt").exists()
    assert "old.md" not in _pages(gen)
    assert "specs/api.pdf" in read_units(gen)


# --- authored index -----------------------------------------------------------------------------

AUTHORED: dict[str, str | bytes] = {
    "index.json": dump_index_json(
        {
            "schema_version": 1,
            "themes": [{"id": "specs", "title": "Specifications", "index": "specs/index.json"}],
            "documents": [{"id": "manual", "title": "Manual", "file": "manual.pdf"}],
        }
    ),
    "specs/index.json": dump_index_json(
        {
            "schema_version": 1,
            "theme": "specs",
            "documents": [
                {"id": "api", "title": "API", "file": "api.DOCX"},
                {"id": "notes", "title": "Notes", "file": "notes.txt"},
                {"id": "guide", "title": "Guide", "file": "guide.md"},
            ],
        }
    ),
    "manual.pdf": make_pdf(["Lighthouse manual"]),
    "specs/notes.txt": "plain notes\n",
    "specs/guide.md": "# Guide\n\nRead me.\n",
}


def _authored_src(tmp_path: Path) -> Path:
    src = _tree(tmp_path / "src", AUTHORED)

    def build(document: Any) -> None:
        document.add_paragraph("API body.")

    make_docx(src / "specs/api.DOCX", build)
    return src


def test_authored_index_file_entries_point_at_the_pages(tmp_path: Path) -> None:
    src = _authored_src(tmp_path)
    gen = tmp_path / "g"
    report = build_generation(src, gen)
    assert report.index == "authored"
    assert report.errors == []
    pages = gen / PAGES_DIR
    root = json.loads((pages / "index.json").read_text(encoding="utf-8"))
    theme = json.loads((pages / "specs/index.json").read_text(encoding="utf-8"))
    assert [d["file"] for d in root["documents"]] == ["manual.pdf.md"]
    assert [d["file"] for d in theme["documents"]] == ["api.DOCX.md", "notes.txt.md", "guide.md"]
    assert theme["documents"][0] == {"id": "api", "title": "API", "file": "api.DOCX.md"}  # nothing else touched
    assert (pages / "specs/index.json").read_text(encoding="utf-8") == dump_index_json(theme)
    assert _pages(gen) == [
        "index.json",
        "manual.pdf.md",
        "specs/api.DOCX.md",
        "specs/guide.md",
        "specs/index.json",
        "specs/notes.txt.md",
    ]
    # The sources themselves are untouched.
    assert (src / "index.json").read_text(encoding="utf-8") == AUTHORED["index.json"]


def _root_index(documents: list[dict[str, object]]) -> str:
    return json.dumps({"schema_version": 1, "themes": [], "documents": documents})


@pytest.mark.parametrize(
    ("files", "issue"),
    [
        (
            {"index.json": _root_index([{"id": "a", "title": "A", "file": "a.md", "colour": "red"}])},
            IndexIssue("index.json", "documents[0].colour", "unknown key"),
        ),
        (
            {"index.json": _root_index([{"id": "a", "title": "A", "file": "a.md", "paths": ["src/{a,b}/**"]}])},
            IndexIssue(
                "index.json",
                "documents[0].paths[0]",
                "brace expansion {a,b} is not supported; list each glob separately",
            ),
        ),
        (
            {"index.json": _root_index([{"id": "g", "title": "Ghost", "file": "ghost.md"}])},
            IndexIssue("index.json", "documents[0].file", "file not found: ghost.md"),
        ),
        (
            {"index.json": _root_index([{"id": "m", "title": "Missing PDF", "file": "missing.pdf"}])},
            IndexIssue("index.json", "documents[0].file", "file not found: missing.pdf.md"),
        ),
        (
            {
                "index.json": json.dumps(
                    {"schema_version": 1, "themes": [{"id": "t", "title": "T", "index": "t/index.json"}]}
                ),
                "t/index.json": json.dumps({"schema_version": 1, "theme": "t", "documents": [{"id": "x"}]}),
            },
            IndexIssue("t/index.json", "documents[0].title", "required key missing"),
        ),
    ],
    ids=["unknown-key", "bad-glob", "missing-file", "missing-pdf-page", "theme-index"],
)
def test_invalid_authored_index_fails_the_build_with_issues(
    tmp_path: Path, files: dict[str, str | bytes], issue: IndexIssue
) -> None:
    src = _tree(tmp_path / "src", {"a.md": "# A\n\nAlpha.\n", **files})
    with pytest.raises(BuildFailed) as failed:
        build_generation(src, tmp_path / "g")
    assert issue in failed.value.issues
    assert failed.value.reason.startswith("invalid index: ")
    assert str(issue) in failed.value.reason


@pytest.mark.parametrize("where", ["index.json", "t/index.json"])
def test_invalid_json_in_an_authored_index_fails_the_build(tmp_path: Path, where: str) -> None:
    files: dict[str, str | bytes] = {
        "a.md": "# A\n",
        "index.json": json.dumps({"schema_version": 1, "themes": [{"id": "t", "title": "T", "index": "t/index.json"}]}),
        "t/index.json": json.dumps({"schema_version": 1, "theme": "t", "documents": []}),
    }
    files[where] = '{"schema_version": 1,'
    src = _tree(tmp_path / "src", files)
    with pytest.raises(BuildFailed) as failed:
        build_generation(src, tmp_path / "g")
    assert failed.value.reason.startswith(f"{where}: not valid JSON")
    assert [(i.path, i.field) for i in failed.value.issues] == [(where, "")]
    assert failed.value.issues[0].rule.startswith("invalid JSON")


def test_theme_index_without_a_root_index_is_not_authored(tmp_path: Path) -> None:
    # Only a root index.json makes the index authored; a stray theme index is replaced by a generated one.
    src = _tree(tmp_path / "src", {"t/a.md": "# A\n\nAlpha.\n", "t/index.json": "{broken"})
    report = build_generation(src, tmp_path / "g")
    assert report.index == "generated"
    theme = json.loads((tmp_path / "g" / PAGES_DIR / "t/index.json").read_text(encoding="utf-8"))
    assert [d["id"] for d in theme["documents"]] == ["t/a"]


# --- nothing usable -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"data.csv": "a,b\n"},
        {"index.json": _root_index([])},
        {"broken.pdf": b"not a pdf", "empty.md": ""},
    ],
    ids=["empty", "unsupported-only", "index-only", "all-failing"],
)
def test_no_usable_source_fails_the_build(tmp_path: Path, files: dict[str, str | bytes]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _tree(src, files)
    with pytest.raises(BuildFailed) as failed:
        build_generation(src, tmp_path / "g")
    assert failed.value.reason.startswith("no usable source file")
    assert failed.value.issues == []


# --- statuses -----------------------------------------------------------------------------------


def test_source_statuses_of_a_report() -> None:
    report = BuildReport(
        hashes={"ok.md": "h1", "partial.pdf": "h2", "kept.docx": "h3"},
        kept_previous=["kept.docx"],
        errors=[
            SourceError("partial.pdf", "page 2 could not be read: boom"),
            SourceError("kept.docx", "DOCX could not be parsed: bad zip"),
            SourceError("new.pdf", "PDF could not be parsed: junk"),
            SourceError("image.png", "unsupported file type '.png'", "skip"),
            SourceError("empty.md", "file has no text", "skip"),
        ],
    )
    assert source_statuses(report) == {
        "ok.md": ("ingested", None),
        "partial.pdf": ("ingested", "page 2 could not be read: boom"),
        "kept.docx": ("failed", "DOCX could not be parsed: bad zip (the previous version is kept)"),
        "new.pdf": ("failed", "PDF could not be parsed: junk"),
        "image.png": ("skipped", "unsupported file type '.png'"),
        "empty.md": ("skipped", "file has no text"),
    }


def test_partial_problem_keeps_ingested_with_the_reason(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "index.json": _root_index([{"id": "a", "title": "A", "file": "a.md"}]),
        "a.md": "# A\n\nAlpha.\n",
        "bad.md": "---\ntitle: [unclosed\n---\n# Bad\n\nStill readable.\n",
    }
    src = _tree(tmp_path / "src", files)
    report = build_generation(src, tmp_path / "g1")
    status, reason = source_statuses(report)["bad.md"]
    assert status == "ingested"
    assert reason is not None and reason.startswith("invalid YAML front matter")
    assert "Still readable." in (tmp_path / "g1" / PAGES_DIR / "bad.md").read_text(encoding="utf-8")


def test_partial_problem_of_an_unchanged_file_is_still_reported_after_a_rebuild(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "index.json": _root_index([{"id": "a", "title": "A", "file": "a.md"}]),
        "a.md": "# A\n\nAlpha.\n",
        "bad.md": "---\ntitle: [unclosed\n---\n# Bad\n\nStill readable.\n",
    }
    src = _tree(tmp_path / "src", files)
    first = source_statuses(build_generation(src, tmp_path / "g1"))["bad.md"]
    _tree(src, {"a.md": "# A\n\nAlpha, edited.\n"})  # an unrelated change triggers the rebuild
    second = source_statuses(build_generation(src, tmp_path / "g2", tmp_path / "g1"))["bad.md"]
    assert second == first


# --- robustness -----------------------------------------------------------------------------------


def test_two_sources_never_share_a_page(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"api.pdf": make_pdf(["From the PDF"]), "api.pdf.md": "# API\n\nFrom Markdown.\n"})
    gen = tmp_path / "g"
    report = build_generation(src, gen)
    written = [p for p in _pages(gen) if p.endswith(".md")]
    # Either both survive as distinct pages or the clash is reported; never one silently overwriting the other.
    assert len({page_file(name) for name in report.hashes}) == len(report.hashes)
    assert report.pages == len(written)


def test_generated_index_under_a_hidden_data_dir(tmp_path: Path) -> None:
    # The default data dir is ~/.memhub: a dot in an *ancestor* of the generation must not hide its pages.
    base = tmp_path / ".memhub" / "knowledge"
    src = _tree(base / "src", SMALL)
    gen = base / "gen" / "1"
    build_generation(src, gen)
    index = json.loads((gen / PAGES_DIR / "index.json").read_text(encoding="utf-8"))
    assert [t["id"] for t in index["themes"]] == ["payments", "specs"]
    theme = json.loads((gen / PAGES_DIR / "payments/index.json").read_text(encoding="utf-8"))
    assert [d["id"] for d in theme["documents"]] == ["payments/refunds"]


def test_unchanged_file_missing_from_a_damaged_previous_generation_is_rebuilt(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    build_generation(src, g1)
    (g1 / PAGES_DIR / "guide.md").unlink()
    (g1 / UNITS_FILE).unlink()
    report = build_generation(src, g2, g1)
    assert sorted(report.hashes) == ["guide.md", "payments/README.md", "payments/refunds.md", "specs/api.pdf"]
    assert report.pages == 4
    assert (g2 / PAGES_DIR / "guide.md").read_text(encoding="utf-8") == SMALL["guide.md"]
    assert sorted(read_units(g2)) == sorted(report.hashes)


def test_previous_generation_without_manifest_means_a_full_build(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", SMALL)
    report = build_generation(src, tmp_path / "g2", tmp_path / "never-built")
    assert report.added == ["guide.md", "payments/README.md", "payments/refunds.md", "specs/api.pdf"]
    assert report.pages == 4
