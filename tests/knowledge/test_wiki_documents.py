"""PDF and DOCX sources under limits: zip bombs refused before parsing, caps that truncate with a note,
a child process whose memory or time runs out failing only its own file, and raw/read that never parses
the same document twice."""

from __future__ import annotations

import io
import re
import shutil
import struct
import sys
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from memhub.knowledge.wiki import docworker
from memhub.knowledge.wiki.documents import docx_zip_problem
from memhub.knowledge.wiki.extract_cache import ExtractionCache
from memhub.knowledge.wiki.indexer import PAGES_DIR, build_generation, source_statuses
from memhub.knowledge.wiki.sourcefiles import read_source
from memhub.knowledge.wiki.sources import Limits, SourceError, extract_bytes, split_front_matter
from memhub.knowledge.wiki.sourcetree import SourceTree
from tests.conftest import build_gateway
from tests.knowledge.test_wiki_sources import make_docx, make_pdf
from tests.knowledge.wiki_http_kit import WikiHttp, docx, ops_guide

MB = 1024 * 1024
DOCUMENT_XML = "word/document.xml"
_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
)
_PARAGRAPH = b"<w:p><w:r><w:t>All work and no play makes a dull document.</w:t></w:r></w:p>"
_TAIL = b"</w:body></w:document>"


def document_xml(size: int) -> Iterator[bytes]:
    """A valid `word/document.xml` of about `size` bytes of repeated paragraphs, in 1 MB pieces."""
    yield _HEAD
    block = _PARAGRAPH * (MB // len(_PARAGRAPH))
    for _ in range(max(size // len(block), 1)):
        yield block
    yield _TAIL


def replaced_member(tmp_path: Path, name: str, chunks: Iterable[bytes], *, extra: int = 0) -> bytes:
    """A DOCX made by python-docx with member `name` replaced by `chunks` (and `extra` tiny members added)."""
    base = make_docx(tmp_path / "base.docx", ops_guide)
    out = io.BytesIO()
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename != name:
                dst.writestr(info, src.read(info))
        with dst.open(name, "w") as member:
            for chunk in chunks:
                member.write(chunk)
        for i in range(extra):
            dst.writestr(f"extra/item{i}.xml", b"<x/>")
    return out.getvalue()


def lie_about_size(data: bytes, name: str, declared: int) -> bytes:
    """The zip with `name`'s uncompressed size rewritten to `declared` in its local and central headers."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        struct.pack_into("<I", out, archive.getinfo(name).header_offset + 22, declared)
    end = out.rfind(b"PK\x05\x06")
    (record,) = struct.unpack_from("<I", out, end + 16)  # where the central directory starts
    while out[record : record + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", out, record + 28)
        if out[record + 46 : record + 46 + name_len] == name.encode():
            struct.pack_into("<I", out, record + 24, declared)
        record += 46 + name_len + extra_len + comment_len
    return bytes(out)


# --- zip bombs ----------------------------------------------------------------------------------


def test_a_docx_declaring_more_than_the_uncompressed_limit_is_refused_unparsed(tmp_path: Path) -> None:
    bomb = replaced_member(tmp_path, DOCUMENT_XML, document_xml(60 * MB))
    assert len(bomb) < MB  # the shape of the incident: a small file that inflates to tens of megabytes
    source = extract_bytes("bomb.docx", bomb)
    assert source.units == []
    (error,) = source.errors
    assert error.kind == "skip"
    assert re.fullmatch(r"DOCX refused: declares 6\d\.\d MB uncompressed \(limit 50\.0 MB\)", error.reason)


def test_a_docx_member_inflating_more_than_the_ratio_is_refused(tmp_path: Path) -> None:
    bomb = replaced_member(tmp_path, DOCUMENT_XML, document_xml(20 * MB))
    problem = docx_zip_problem("bomb.docx", bomb, Limits())
    assert problem is not None and problem.kind == "skip"
    assert problem.reason.startswith(f"DOCX refused: {DOCUMENT_XML} inflates ")
    assert problem.reason.endswith("; limit 100x)")
    # The same member within a looser ratio passes the zip checks: the ratio is what refused it.
    assert docx_zip_problem("bomb.docx", bomb, Limits(zip_ratio=100_000)) is None


def test_a_docx_whose_directory_understates_a_member_is_refused_by_the_bounded_read(tmp_path: Path) -> None:
    honest = replaced_member(tmp_path, DOCUMENT_XML, document_xml(20 * MB))
    lying = lie_about_size(honest, DOCUMENT_XML, 4096)
    with zipfile.ZipFile(io.BytesIO(lying)) as archive:
        assert archive.getinfo(DOCUMENT_XML).file_size == 4096  # the directory passes the declared checks
    problem = docx_zip_problem("liar.docx", lying, Limits())
    assert problem is not None and problem.kind == "error"
    assert problem.reason == f"DOCX could not be parsed: BadZipFile: Bad CRC-32 for file '{DOCUMENT_XML}'"


def test_a_docx_with_too_many_members_is_refused(tmp_path: Path) -> None:
    crowded = replaced_member(tmp_path, "docProps/app.xml", [b"<Properties/>"], extra=1_000)
    source = extract_bytes("crowded.docx", crowded)
    assert source.units == []
    (error,) = source.errors
    assert error.kind == "skip" and error.reason.startswith("DOCX refused: 1,0") and "(limit 1,000)" in error.reason


def test_an_ordinary_docx_passes_the_zip_checks(tmp_path: Path) -> None:
    assert docx_zip_problem("ops.docx", docx(ops_guide), Limits()) is None


# --- caps ---------------------------------------------------------------------------------------


def _page_front_matter(target: Path, page: str) -> dict[str, object]:
    meta, _, _, _ = split_front_matter((target / PAGES_DIR / page).read_text(encoding="utf-8"))
    return meta


def test_a_pdf_over_the_page_cap_is_truncated_with_a_note_in_the_report_and_the_page(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "long.pdf").write_bytes(make_pdf([f"Page {n} text" for n in range(1, 6)]))
    target = tmp_path / "gen1"
    report = build_generation(root, target, limits=Limits(pdf_pages=3))
    note = "truncated: only the first 3 of 5 pages were extracted (limit 3 pages per PDF)"
    assert report.errors == [SourceError("long.pdf", note, "truncated")]
    assert source_statuses(report) == {"long.pdf": ("ingested", note)}
    page = (target / PAGES_DIR / "long.pdf.md").read_text(encoding="utf-8")
    assert "Page 3 text" in page and "Page 4 text" not in page
    assert _page_front_matter(target, "long.pdf.md")["truncated"] == note


def test_a_docx_over_the_paragraph_cap_is_truncated_with_a_note(tmp_path: Path) -> None:
    def build(document) -> None:
        for n in range(1, 6):
            document.add_paragraph(f"Paragraph number {n}.")

    source = extract_bytes("many.docx", docx(build), limits=Limits(docx_paragraphs=2))
    assert [u.locator for u in source.units] == ["paragraph 1", "paragraph 2"]
    assert source.errors == [
        SourceError(
            "many.docx",
            "truncated: only the first 2 paragraphs (limit per DOCX) were extracted, up to paragraph 2",
            "truncated",
        )
    ]


def test_text_over_the_character_and_unit_caps_is_cut_at_the_cap_with_a_note() -> None:
    body = "\n\n".join(f"# Section {n}\n\nSome words for section {n}." for n in range(1, 6)).encode()
    by_units = extract_bytes("notes.md", body, limits=Limits(units=2))
    assert [u.locator for u in by_units.units] == ["Section 1, lines 1-3", "Section 2, lines 5-7"]
    assert by_units.truncation == "truncated: only the first 2 text units were kept (limit 2 per file)"
    by_chars = extract_bytes("notes.md", body, limits=Limits(chars=40))
    assert sum(len(u.text) for u in by_chars.units) == 40
    assert by_chars.truncation == (
        "truncated: only the first 40 characters of text were kept (limit 40 per file), up to Section 2, lines 5-7"
    )


# --- the child process --------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_a_child_over_its_memory_limit_fails_its_own_file_and_the_build_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nStill built.\n", encoding="utf-8")
    # Within the zip limits this test sets, so it is parsed: the 160 MB member cannot fit in 128 MB.
    (root / "big.docx").write_bytes(replaced_member(tmp_path, DOCUMENT_XML, document_xml(160 * MB)))
    limits = Limits(process_memory_bytes=128 * MB, zip_uncompressed_bytes=1024 * MB, zip_ratio=1_000_000)
    target = tmp_path / "gen1"
    report = build_generation(root, target, limits=limits)
    reason = "extraction ran out of memory (limit 128 MB) and was stopped"
    assert report.errors == [SourceError("big.docx", reason)]
    assert source_statuses(report) == {"a.md": ("ingested", None), "big.docx": ("failed", reason)}
    assert report.hashes.keys() == {"a.md"} and (target / PAGES_DIR / "a.md").is_file()


def test_a_child_past_the_wall_clock_limit_is_killed_and_reported() -> None:
    # No process answers within a microsecond of being asked.
    source = extract_bytes("slow.pdf", make_pdf(["text"]), limits=Limits(process_wall_seconds=1e-6))
    assert source.units == []
    assert source.errors == [SourceError("slow.pdf", "extraction stopped: it ran longer than 1e-06 s and was killed")]


# --- raw/read -----------------------------------------------------------------------------------


@pytest.fixture
def wk(tmp_path: Path) -> Iterator[WikiHttp]:
    api = WikiHttp(build_gateway(tmp_path / "data"))
    yield api
    api.wait()
    api.gw.close()


def test_raw_read_extracts_a_document_once_and_the_build_s_text_is_reused(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"guide.pdf": make_pdf(["Rotate keys every 90 days", "Quotas reset at midnight"])})
    read = {"wiki_id": wiki_id, "filenames": ["guide.pdf"]}
    expected = {
        "filename": "guide.pdf",
        "content": "[page 1]\nRotate keys every 90 days\n\n[page 2]\nQuotas reset at midnight",
    }

    before = docworker.extraction_count()
    assert wk.ok("wiki/raw/read", read)["items"] == [expected]  # not built yet: extracted now, once
    assert wk.ok("wiki/raw/read", read)["items"] == [expected]
    assert docworker.extraction_count() == before + 1
    assert len(list((wk.wiki_dir(wiki_id) / "extracted").glob("*.json"))) == 1

    wk.ingest(wiki_id)  # the build extracts it for its own generation …
    built = docworker.extraction_count()
    assert built == before + 2
    shutil.rmtree(wk.wiki_dir(wiki_id) / "extracted")
    assert wk.ok("wiki/raw/read", read)["items"] == [expected]  # … and raw/read takes it from there
    assert docworker.extraction_count() == built

    # New content, new hash: the old text is never served, the new one is extracted once.
    wk.write(wiki_id, {"guide.pdf": make_pdf(["Rotate keys every 30 days"])})
    changed = [{"filename": "guide.pdf", "content": "[page 1]\nRotate keys every 30 days"}]
    assert wk.ok("wiki/raw/read", read)["items"] == changed
    assert wk.ok("wiki/raw/read", read)["items"] == changed
    assert docworker.extraction_count() == built + 1


def test_a_truncated_document_is_read_with_its_note_and_cached_under_its_limits(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "three.pdf").write_bytes(make_pdf(["one", "two", "three"]))
    cache = ExtractionCache(tmp_path / "extracted", Limits(pdf_pages=2))
    note = "truncated: only the first 2 of 3 pages were extracted (limit 2 pages per PDF)"
    item = read_source("three.pdf", SourceTree(root), cache, lambda: None)
    assert item == {"filename": "three.pdf", "content": "[page 1]\none\n\n[page 2]\ntwo", "truncated": note}
    count = docworker.extraction_count()
    assert read_source("three.pdf", SourceTree(root), cache, lambda: None) == item  # from the cache file
    assert docworker.extraction_count() == count
    # An entry made under other limits is not reused.
    whole = read_source("three.pdf", SourceTree(root), ExtractionCache(tmp_path / "extracted"), lambda: None)
    assert whole == {"filename": "three.pdf", "content": "[page 1]\none\n\n[page 2]\ntwo\n\n[page 3]\nthree"}
    assert docworker.extraction_count() == count + 1


def test_raw_read_of_a_local_file_over_its_byte_limit_is_refused_unread(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nSmall.\n", encoding="utf-8")
    with (root / "huge.txt").open("wb") as handle:
        handle.truncate(6 * MB)  # sparse: over the 5 MB text limit without writing it
    api = WikiHttp(build_gateway(tmp_path / "data", wiki_source_roots=[root]))
    try:
        wiki_id = api.create("local", source_path=str(root))
        items = api.ok("wiki/raw/read", {"wiki_id": wiki_id, "filenames": ["huge.txt", "a.md"]})["items"]
        assert items[0]["filename"] == "huge.txt" and items[0]["content"] == ""
        assert items[0]["error"].startswith("file too large: 6.0 MB exceeds the 5.0 MB limit for .txt files")
        assert items[1] == {"filename": "a.md", "content": "# A\n\nSmall.\n"}
    finally:
        api.wait()
        api.gw.close()
