"""Extraction of wiki source archives: Markdown/text, PDF, DOCX, limits, root safety and incremental ingest."""

from __future__ import annotations

import io
import os
from pathlib import Path

import docx
import pypdf
import pytest

from memhub.knowledge.wiki.sources import (
    Limits,
    PathOutsideRoot,
    SourceError,
    content_hash,
    extract,
    extract_bytes,
    extract_directory,
    plan_ingest,
    safe_path,
)


def make_pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per page, xref offsets computed exactly."""
    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    font = 3 + 2 * count
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode()]
    for i, text in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {4 + 2 * i} 0 R >>".encode()
        )
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_docx(path: Path, build=None) -> Path:
    """Save a DOCX built by python-docx; `build(document)` adds content (none → an empty document)."""
    document = docx.Document()
    if build:
        build(document)
    document.save(str(path))
    return path


def _rich_docx(document) -> None:
    document.add_heading("Operations Guide", level=1)  # paragraph 1
    document.add_paragraph("Rotate the API keys every 90 days.")  # paragraph 2
    document.add_paragraph("")  # paragraph 3, empty but counted
    document.add_heading("Quotas", level=2)  # paragraph 4
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Tier"
    table.cell(0, 1).text = "Requests | min"
    table.cell(1, 0).text = "Gold"
    table.cell(1, 1).text = "600"
    document.add_paragraph("Quotas reset at midnight UTC.")  # paragraph 5


# --- PDF --------------------------------------------------------------------------------------


def test_minimal_pdf_is_valid_for_pypdf_itself() -> None:
    reader = pypdf.PdfReader(io.BytesIO(make_pdf(["alpha beta", "gamma"])))
    assert [p.extract_text() for p in reader.pages] == ["alpha beta", "gamma"]


def test_pdf_pages_become_units_located_by_page(tmp_path: Path) -> None:
    path = tmp_path / "policy.pdf"
    path.write_bytes(make_pdf(["Refund policy (v2)", "", "Rate limits apply per tenant"]))
    source = extract(path)
    assert source.kind == "pdf" and source.errors == []
    assert [(u.locator, u.text) for u in source.units] == [
        ("page 1", "Refund policy (v2)"),
        ("page 3", "Rate limits apply per tenant"),  # the blank page 2 yields no unit but keeps numbering
    ]
    assert source.hash == content_hash(path.read_bytes())


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4 this is not really a pdf", make_pdf(["truncated document"])[:150], b"", b"\x00\x01\x02garbage"],
)
def test_corrupt_pdf_is_reported_not_raised(data: bytes) -> None:
    source = extract_bytes("broken.pdf", data)
    assert source.units == []
    assert len(source.errors) == 1
    error = source.errors[0]
    assert error.filename == "broken.pdf" and error.kind == "error"
    assert "PDF could not be parsed" in error.reason


def test_encrypted_pdf_needs_password_and_empty_password_is_opened() -> None:
    reader = pypdf.PdfReader(io.BytesIO(make_pdf(["classified text"])))
    locked = pypdf.PdfWriter(clone_from=reader)
    locked.encrypt("s3cret", algorithm="RC4-128")
    buf = io.BytesIO()
    locked.write(buf)
    source = extract_bytes("locked.pdf", buf.getvalue())
    assert source.units == []
    assert source.errors == [SourceError("locked.pdf", "encrypted PDF: a password is required")]

    # Owner-password-only PDFs open with an empty user password; their text must still be found.
    open_pdf = pypdf.PdfWriter(clone_from=reader)
    open_pdf.encrypt("", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    open_pdf.write(buf)
    assert [u.text for u in extract_bytes("open.pdf", buf.getvalue()).units] == ["classified text"]


def test_pdf_without_text_is_a_reported_skip() -> None:
    source = extract_bytes("scan.pdf", make_pdf(["", ""]))
    assert source.units == []
    assert source.errors[0].kind == "skip" and "no extractable text in 2 page(s)" in source.errors[0].reason


# --- DOCX -------------------------------------------------------------------------------------


def test_docx_paragraphs_headings_and_tables_in_body_order(tmp_path: Path) -> None:
    source = extract(make_docx(tmp_path / "ops.docx", _rich_docx))
    assert source.kind == "docx" and source.errors == []
    got = [(u.locator, u.heading, u.text) for u in source.units]
    assert got == [
        ("paragraph 1", ("Operations Guide",), "Operations Guide"),
        ("paragraph 2", ("Operations Guide",), "Rotate the API keys every 90 days."),
        ("paragraph 4", ("Operations Guide", "Quotas"), "Quotas"),
        ("table 1", ("Operations Guide", "Quotas"), "| Tier | Requests \\| min |\n|---|---|\n| Gold | 600 |"),
        ("paragraph 5", ("Operations Guide", "Quotas"), "Quotas reset at midnight UTC."),
    ]


def test_docx_heading_levels_pop_the_path(tmp_path: Path) -> None:
    def build(document) -> None:
        document.add_heading("A", level=1)
        document.add_heading("A.1", level=2)
        document.add_heading("B", level=1)
        document.add_paragraph("under B")

    units = extract(make_docx(tmp_path / "h.docx", build)).units
    assert units[-1].heading == ("B",) and units[-1].locator == "paragraph 4"


def test_docx_merged_cells_are_rendered_once(tmp_path: Path) -> None:
    def build(document) -> None:
        table = document.add_table(rows=2, cols=3)
        table.cell(0, 0).merge(table.cell(0, 1)).text = "Merged"
        table.cell(0, 2).text = "C"
        for col, text in enumerate(["1", "2", "3"]):
            table.cell(1, col).text = text

    units = extract(make_docx(tmp_path / "m.docx", build)).units
    assert units[0].text.splitlines()[0] == "| Merged | C |"


def test_empty_docx_is_a_reported_skip(tmp_path: Path) -> None:
    def build(document) -> None:
        document.add_paragraph("   ")
        document.add_table(rows=1, cols=2)

    source = extract(make_docx(tmp_path / "empty.docx", build))
    assert source.units == []
    assert source.errors == [SourceError("empty.docx", "DOCX has no text", "skip")]


def test_corrupt_docx_is_reported(tmp_path: Path) -> None:
    source = extract_bytes("bad.docx", b"PK\x03\x04 not a real zip")
    assert source.units == [] and source.errors[0].kind == "error"
    assert source.errors[0].reason.startswith("DOCX could not be parsed")


# --- Markdown and text ------------------------------------------------------------------------


def test_markdown_front_matter_bom_crlf_and_heading_locators() -> None:
    text = (
        "---\r\ntitle: Deploys\r\ntags: [ops, release]\r\npaths:\r\n  - 'deploy/**'\r\n---\r\n"
        "Intro line.\r\n\r\n# Deploy\r\nStep one.\r\n\r\n## Rollback\r\nRun `undo`.\r\n"
        "```sh\r\n# not a heading\r\n```\r\n# Other\r\nEnd.\r\n"
    )
    source = extract_bytes("deploy.md", b"\xef\xbb\xbf" + text.encode())
    assert source.errors == []
    assert source.front_matter == {"title": "Deploys", "tags": ["ops", "release"], "paths": ["deploy/**"]}
    assert [(u.locator, u.heading) for u in source.units] == [
        ("line 7", ()),
        ("Deploy, lines 9-10", ("Deploy",)),
        ("Deploy > Rollback, lines 12-16", ("Deploy", "Rollback")),
        ("Other, lines 17-18", ("Other",)),
    ]
    assert "\r" not in "".join(u.text for u in source.units)
    assert "# not a heading" in source.units[2].text  # fenced code is not split on '#'


def test_an_impossible_date_in_front_matter_is_reported_not_raised() -> None:
    # YAML parses the form of 2020-13-01 as a date and then fails on the value (ValueError, not a YAMLError).
    source = extract_bytes("d.md", b"---\ntitle: T\nreviewed: 2020-13-01\n---\n# Body\ntext\n")
    assert source.front_matter == {}
    assert [u.locator for u in source.units] == ["Body, lines 5-6"]
    assert len(source.errors) == 1 and source.errors[0].reason.startswith("invalid YAML front matter: month must be")


def test_markdown_bad_front_matter_is_reported_and_body_kept() -> None:
    source = extract_bytes("x.md", b"---\ntitle: [unclosed\n---\n# Body\ntext\n")
    assert [u.locator for u in source.units] == ["Body, lines 4-5"]
    assert len(source.errors) == 1 and source.errors[0].reason.startswith("invalid YAML front matter")
    scalar = extract_bytes("y.md", b"---\njust a string\n---\nbody\n")
    assert scalar.errors[0].reason == "front matter is a str, not a mapping"
    unclosed = extract_bytes("z.md", b"---\ntitle: x\nbody\n")
    assert unclosed.errors[0].reason.startswith("front matter opened")


def test_plain_text_chunks_by_blank_lines_with_line_ranges() -> None:
    paragraphs = [f"para {i} " + "word " * 30 for i in range(6)]
    text = "\n\n".join(paragraphs)
    units = extract_bytes("notes.txt", text.encode()).units
    assert len(units) == 1 and units[0].locator == "lines 1-11"
    from memhub.knowledge.wiki import sources

    small = sources.text_units(text, chunk_chars=300)
    assert [u.locator for u in small] == ["lines 1-3", "lines 5-7", "lines 9-11"]
    assert small[1].text.startswith("para 2")


def test_non_utf8_and_binary_text_are_reported() -> None:
    gbk = extract_bytes("gbk.txt", "中文说明".encode("gbk"))
    assert gbk.units == [] and gbk.errors[0].reason.startswith("not UTF-8 text")
    binary = extract_bytes("blob.txt", b"abc\x00def")
    assert "binary content" in binary.errors[0].reason
    utf16 = extract_bytes("u16.txt", "héllo 世界".encode("utf-16"))
    assert utf16.units[0].text == "héllo 世界"


# --- limits, unknown types, root safety -------------------------------------------------------


def test_too_large_files_are_skipped_with_the_limit_named(tmp_path: Path) -> None:
    limits = Limits(text_bytes=100, binary_bytes=1000)
    (tmp_path / "big.md").write_text("x" * 101)
    (tmp_path / "ok.md").write_text("x" * 100)
    (tmp_path / "big.pdf").write_bytes(make_pdf(["a"]) + b"%" * 1000)
    big = extract(tmp_path / "big.md", limits=limits)
    assert big.units == [] and big.errors[0].kind == "skip"
    assert "exceeds the" in big.errors[0].reason and "(101 > 100 bytes)" in big.errors[0].reason
    assert extract(tmp_path / "ok.md", limits=limits).ok
    pdf = extract(tmp_path / "big.pdf", limits=limits)
    assert pdf.errors[0].kind == "skip" and "> 1000 bytes" in pdf.errors[0].reason
    assert "for .pdf files" in extract_bytes("u.pdf", b"x" * 1001, limits=limits).errors[0].reason


def test_unknown_extension_is_a_reported_skip(tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    source = extract(tmp_path / "image.png")
    assert source.kind is None
    assert source.errors == [SourceError("image.png", "unsupported file type '.png'", "skip")]
    assert extract_bytes("Makefile", b"all:").errors[0].reason == "unsupported file type '(no extension)'"


def test_safe_path_refuses_escapes(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    assert safe_path(tmp_path, "docs/a.md") == (tmp_path / "docs" / "a.md").resolve()
    for bad in ["../secret.md", "docs/../../x.md", "/etc/passwd", ""]:
        with pytest.raises(PathOutsideRoot):
            safe_path(tmp_path, bad)
    source = extract("../outside.md", root=tmp_path / "docs")
    assert source.units == [] and "outside the source root" in source.errors[0].reason


def test_missing_file_is_reported(tmp_path: Path) -> None:
    source = extract("gone.md", root=tmp_path)
    assert source.errors[0].reason.startswith("cannot read file")


# --- directories and incremental re-ingest ----------------------------------------------------


def _tree(root: Path) -> None:
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "deploy.md").write_text("# Deploy\nShip it.\n")
    (root / "notes.txt").write_text("plain notes\n")
    (root / "policy.pdf").write_bytes(make_pdf(["Policy text"]))
    make_docx(root / "ops.docx", _rich_docx)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("# hidden")
    (root / ".hidden.md").write_text("# hidden")


def test_directory_ingest_then_incremental_reingest(tmp_path: Path) -> None:
    root = tmp_path / "wiki"
    _tree(root)
    first = extract_directory(root)
    names = ["guides/deploy.md", "notes.txt", "ops.docx", "policy.pdf"]
    assert first.plan.added == names and first.plan.changed == [] and first.plan.removed == []
    assert [s.filename for s in first.sources] == names and all(s.ok for s in first.sources)
    assert first.errors == []
    assert first.hashes["notes.txt"] == content_hash(b"plain notes\n")

    (root / "notes.txt").write_text("plain notes, edited\n")
    (root / "policy.pdf").unlink()
    (root / "new.md").write_text("# New\n")
    second = extract_directory(root, first.hashes)
    assert second.plan.added == ["new.md"]
    assert second.plan.changed == ["notes.txt"]
    assert second.plan.unchanged == ["guides/deploy.md", "ops.docx"]
    assert second.plan.removed == ["policy.pdf"]
    assert [s.filename for s in second.sources] == ["new.md", "notes.txt"]  # unchanged files are not re-extracted

    third = plan_ingest(root, second.hashes)
    assert third.added == third.changed == third.removed == []


def test_one_bad_file_never_stops_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "wiki"
    root.mkdir()
    (root / "a.md").write_text("# A\nfine\n")
    (root / "b.pdf").write_bytes(b"%PDF-1.4 corrupt")
    make_docx(root / "c.docx")
    (root / "d.txt").write_text("also fine\n")
    (root / "e.bin").write_bytes(b"\x00")
    (root / "f.md").write_text("x" * 50)
    result = extract_directory(root, limits=Limits(text_bytes=40))
    assert [s.filename for s in result.sources if s.ok] == ["a.md", "d.txt"]
    reported = {(e.filename, e.kind) for e in result.errors}
    assert reported == {("b.pdf", "error"), ("c.docx", "skip"), ("e.bin", "skip"), ("f.md", "skip")}
    # Failed files are not remembered, so the next ingest retries them.
    assert sorted(result.hashes) == ["a.md", "d.txt"]


def test_symlink_escaping_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret\n")
    root = tmp_path / "wiki"
    root.mkdir()
    (root / "real.md").write_text("# Real\n")
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root / "real.md", root / "alias.md")  # inside the root: allowed
    result = extract_directory(root)
    assert [s.filename for s in result.sources] == ["alias.md", "real.md"]
    assert {(e.filename, e.reason) for e in result.errors} == {
        ("leak.md", "symlink points outside the source root; refused"),
        ("leakdir", "symlink points outside the source root; refused"),
    }
    assert "secret" not in " ".join(u.text for s in result.sources for u in s.units)
    assert extract("leak.md", root=root).errors[0].reason.endswith("resolves outside the source root")


def test_missing_root_marks_everything_removed(tmp_path: Path) -> None:
    plan = plan_ingest(tmp_path / "nope", {"a.md": "x"})
    assert plan.removed == ["a.md"] and plan.errors[0].reason == "source root is not a directory"
