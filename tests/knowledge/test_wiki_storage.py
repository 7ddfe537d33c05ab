"""Where wiki files live: source file name rules, per-tenant paths, atomic raw writes, removal and pruning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memhub.knowledge.wiki.sources import PathOutsideRoot
from memhub.knowledge.wiki.storage import FILENAME_MAX, WikiFiles, filename_problem

# --- filename rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "refunds.md",
        "payments/refunds.md",
        "a/b/c/deep.markdown",
        "manual.PDF",
        "specs/api.docx",
        "notes.txt",
        "notes.text",
        "index.json",
        "payments/index.json",
        "手册/退款流程.md",
        "with space/and-dash_under.md",
        "x" * (FILENAME_MAX - 3) + ".md",  # exactly at the limit
    ],
)
def test_accepted_names(name: str) -> None:
    assert filename_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (None, "must be a non-empty string"),
        (42, "must be a non-empty string"),
        ("", "must be a non-empty string"),
        ("   ", "must be a non-empty string"),
        ("x" * (FILENAME_MAX - 2) + ".md", f"must be at most {FILENAME_MAX} characters"),
        ("a\x00.md", "must not contain control characters or backslashes"),
        ("a\nb.md", "must not contain control characters or backslashes"),
        ("a\x7f.md", "must not contain control characters or backslashes"),
        ("docs\\a.md", "must not contain control characters or backslashes"),
        ("/etc/a.md", "must be a relative path"),
        ("a//b.md", "must not contain empty, '.' or '..' path segments"),
        ("a/", "must not contain empty, '.' or '..' path segments"),
        ("./a.md", "must not contain empty, '.' or '..' path segments"),
        ("a/./b.md", "must not contain empty, '.' or '..' path segments"),
        ("../a.md", "must not contain empty, '.' or '..' path segments"),
        ("a/../../b.md", "must not contain empty, '.' or '..' path segments"),
        (".hidden.md", "must not contain hidden path segments (starting with '.')"),
        ("docs/.git/config.md", "must not contain hidden path segments (starting with '.')"),
        ("data.json", "unsupported file type '.json'"),
        ("INDEX.JSON", "unsupported file type '.json'"),
        ("setup.exe", "unsupported file type '.exe'"),
        ("Makefile", "unsupported file type '(none)'"),
    ],
)
def test_refused_names(name: object, problem: str) -> None:
    found = filename_problem(name)
    assert found is not None and found.startswith(problem)


def test_unsupported_type_names_what_is_allowed() -> None:
    assert filename_problem("x.csv") == (
        "unsupported file type '.csv'; expected .docx, .markdown, .md, .pdf, .text, .txt or index.json"
    )


# --- paths --------------------------------------------------------------------------------------


def test_wiki_paths_layout(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    assert files.wiki_dir("svc-a", "w1") == tmp_path / "svc-a" / "w1"
    assert files.raw_dir("svc-a", "w1") == tmp_path / "svc-a" / "w1" / "raw"
    assert files.generation_dir("svc-a", "w1", 7) == tmp_path / "svc-a" / "w1" / "gen" / "7"


@pytest.mark.parametrize("service", ["team/a", "../up", "..", ".", "100%", "a%2Fb", "..%2F..", "租户", "a b", "x.y"])
def test_service_ids_never_leave_the_root_and_round_trip(tmp_path: Path, service: str) -> None:
    root = tmp_path / "knowledge"
    files = WikiFiles(root)
    wiki = files.wiki_dir(service, "w1")
    resolved = wiki.resolve()
    assert resolved.parent.parent == root.resolve(), f"{service!r} → {resolved}"
    assert resolved.parent != root.resolve()  # one directory per tenant, never the root itself
    files.write_raw(service, "w1", "a.md", b"# A\n")
    assert list(files.tenants()) == [service]


def test_distinct_service_ids_get_distinct_directories(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    services = ["a/b", "a%2Fb", "a_b", "a-b", "A/B"]
    assert len({files.wiki_dir(s, "w") for s in services}) == len(services)


def test_tenants_of_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert list(WikiFiles(tmp_path / "nowhere").tenants()) == []


def test_tenants_are_sorted_and_skip_plain_files(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    for service in ["zeta", "alpha", "mid/dle"]:
        files.write_raw(service, "w", "a.md", b"x")
    (tmp_path / "stray.txt").write_text("not a tenant")
    assert sorted(files.tenants()) == ["alpha", "mid/dle", "zeta"]
    assert "stray.txt" not in list(files.tenants())


# --- raw files ----------------------------------------------------------------------------------


def _all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_write_raw_creates_folders_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    files.write_raw("svc", "w", "payments/deep/refunds.md", b"# Refunds\n")
    files.write_raw("svc", "w", "top.pdf", b"%PDF-1.4")
    raw = files.raw_dir("svc", "w")
    assert _all_files(raw) == ["payments/deep/refunds.md", "top.pdf"]
    assert (raw / "payments/deep/refunds.md").read_bytes() == b"# Refunds\n"


def test_write_raw_overwrites_in_place(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    files.write_raw("svc", "w", "a.md", b"old content, longer than the new one")
    files.write_raw("svc", "w", "a.md", b"new")
    raw = files.raw_dir("svc", "w")
    assert (raw / "a.md").read_bytes() == b"new"
    assert _all_files(raw) == ["a.md"]


def test_failed_write_removes_its_temporary_file_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = WikiFiles(tmp_path)
    files.write_raw("svc", "w", "a.md", b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        files.write_raw("svc", "w", "a.md", b"new")
    raw = files.raw_dir("svc", "w")
    assert _all_files(raw) == ["a.md"]
    assert (raw / "a.md").read_bytes() == b"old"


@pytest.mark.parametrize("name", ["../escape.md", "a/../../escape.md", "/tmp/escape.md"])
def test_write_raw_refuses_names_outside_the_archive(tmp_path: Path, name: str) -> None:
    files = WikiFiles(tmp_path / "data")
    for attempt in range(2):  # once before the raw folder exists, once after
        with pytest.raises(PathOutsideRoot):
            files.write_raw("svc", "w", name, b"x")
        files.write_raw("svc", "w", f"ok{attempt}.md", b"fine")
    assert not (tmp_path / "data" / "svc" / "w" / "escape.md").exists()
    assert not (tmp_path / "escape.md").exists()


def test_write_raw_refuses_a_symlink_leading_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    files = WikiFiles(tmp_path / "data")
    files.write_raw("svc", "w", "a.md", b"x")
    (files.raw_dir("svc", "w") / "link").symlink_to(outside)
    with pytest.raises(PathOutsideRoot):
        files.write_raw("svc", "w", "link/evil.md", b"x")
    assert list(outside.iterdir()) == []


def test_remove_raw_deletes_the_file_and_the_folders_it_empties(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    files.write_raw("svc", "w", "a/b/c/doc.md", b"x")
    files.write_raw("svc", "w", "a/keep.md", b"y")
    raw = files.raw_dir("svc", "w")
    assert files.remove_raw("svc", "w", "a/b/c/doc.md") is True
    assert not (raw / "a/b").exists()  # b/c emptied and removed
    assert _all_files(raw) == ["a/keep.md"]
    assert files.remove_raw("svc", "w", "a/keep.md") is True
    assert raw.is_dir() and list(raw.iterdir()) == []  # the archive folder itself stays


def test_remove_raw_of_missing_or_outside_names_is_false(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path / "data")
    files.write_raw("svc", "w", "docs/a.md", b"x")
    victim = tmp_path / "data" / "svc" / "w" / "victim.md"
    victim.write_text("outside the archive")
    assert files.remove_raw("svc", "w", "missing.md") is False
    assert files.remove_raw("svc", "w", "docs") is False  # a folder is not a file
    assert files.remove_raw("svc", "w", "../victim.md") is False
    assert files.remove_raw("svc", "w", "/etc/passwd") is False
    assert files.remove_raw("other", "w", "docs/a.md") is False
    assert victim.exists()
    assert (files.raw_dir("svc", "w") / "docs/a.md").exists()


# --- generations and whole wikis ------------------------------------------------------------------


def test_prune_generations_keeps_only_the_one_asked(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    for n in (1, 2, 3, 4):
        gen = files.generation_dir("svc", "w", n)
        (gen / "pages").mkdir(parents=True)
        (gen / "manifest.json").write_text("{}")
    files.write_raw("svc", "w", "a.md", b"x")
    files.prune_generations("svc", "w", keep=3)
    gens = files.wiki_dir("svc", "w") / "gen"
    assert sorted(p.name for p in gens.iterdir()) == ["3"]
    assert (files.generation_dir("svc", "w", 3) / "manifest.json").is_file()
    assert (files.raw_dir("svc", "w") / "a.md").is_file()  # the archive is never pruned


def test_prune_generations_without_any_is_a_no_op(tmp_path: Path) -> None:
    WikiFiles(tmp_path).prune_generations("svc", "w", keep=1)
    assert list(tmp_path.iterdir()) == []


def test_remove_wiki_removes_only_that_wiki(tmp_path: Path) -> None:
    files = WikiFiles(tmp_path)
    files.write_raw("svc", "w1", "a.md", b"x")
    files.write_raw("svc", "w2", "a.md", b"x")
    files.write_raw("other", "w1", "a.md", b"x")
    files.remove_wiki("svc", "w1")
    assert not files.wiki_dir("svc", "w1").exists()
    assert files.wiki_dir("svc", "w2").is_dir()
    assert files.wiki_dir("other", "w1").is_dir()
    files.remove_wiki("svc", "w1")  # already gone: no error
