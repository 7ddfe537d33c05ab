"""Source files → wiki pages: naming rules, rendered Markdown of PDF / DOCX / text, links and their resolution."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.wiki.pages import (
    LinkResolver,
    Page,
    link_targets,
    normalise_ref,
    page_file,
    page_id,
    render_markdown,
    resolve_links,
)
from memhub.knowledge.wiki.sources import ExtractedSource, SourceUnit, extract, extract_bytes, split_front_matter
from tests.knowledge.test_wiki_sources import make_docx, make_pdf

# --- naming -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "file", "pid"),
    [
        ("payments/refunds.md", "payments/refunds.md", "payments/refunds"),
        ("README.MD", "README.MD", "README"),
        ("specs/api.pdf", "specs/api.pdf.md", "specs/api.pdf"),
        ("specs/api.docx", "specs/api.docx.md", "specs/api.docx"),
        ("notes.txt", "notes.txt.md", "notes.txt"),
        ("guide.markdown", "guide.markdown.md", "guide.markdown"),
        ("手册/退款.pdf", "手册/退款.pdf.md", "手册/退款.pdf"),
    ],
)
def test_page_file_and_page_id(source: str, file: str, pid: str) -> None:
    assert page_file(source) == file
    assert page_id(file) == pid


def test_page_id_of_a_name_without_md_is_the_name() -> None:
    assert page_id("specs/api.pdf") == "specs/api.pdf"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("payments/refunds", "payments/refunds"),
        ("payments/refunds.md", "payments/refunds"),
        ("wiki/payments/refunds.md", "payments/refunds"),
        ("wiki/payments/refunds", "payments/refunds"),
        ("./payments/refunds.md", "payments/refunds"),
        ("/wiki/payments/refunds.md", "payments/refunds"),
        ("././/payments/refunds", "payments/refunds"),
        ("  wiki/handbook.md  ", "handbook"),
        ("wiki\\payments\\refunds.md", "payments/refunds"),
        ("wiki/specs/api.pdf.md", "specs/api.pdf"),
        ("specs/api.pdf", "specs/api.pdf"),
    ],
)
def test_normalise_ref(ref: str, expected: str) -> None:
    assert normalise_ref(ref) == expected


def test_page_path_is_the_file_under_wiki() -> None:
    page = Page(id="a/b", file="a/b.md", title="B", text="", source="a/b.md")
    assert page.path == "wiki/a/b.md"
    assert page.kind == "guide" and page.links == ()


# --- rendered Markdown ----------------------------------------------------------------------------


def test_pdf_renders_page_sections_golden() -> None:
    source = extract_bytes("specs/policy.pdf", make_pdf(["Refund policy v2", "", "Limits apply per tenant"]))
    assert render_markdown(source) == (
        "---\n"
        "title: policy.pdf\n"
        "source: specs/policy.pdf\n"
        "---\n"
        "\n"
        "# policy.pdf\n"
        "\n"
        "## Page 1\n"
        "\n"
        "Refund policy v2\n"
        "\n"
        "## Page 3\n"  # the blank page 2 has no unit, the numbering is kept
        "\n"
        "Limits apply per tenant\n"
    )


def _ops_guide(document: Any) -> None:
    document.add_heading("Operations Guide", level=1)
    document.add_paragraph("Rotate the API keys every 90 days.")
    document.add_paragraph("")
    document.add_heading("Quotas", level=2)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Tier"
    table.cell(0, 1).text = "Requests | min"
    table.cell(1, 0).text = "Gold"
    table.cell(1, 1).text = "600"
    document.add_paragraph("Quotas reset at midnight UTC.")
    document.add_heading("Burst", level=3)
    document.add_paragraph("Bursts of twice the quota are allowed for a minute.")


def test_docx_renders_headings_of_their_level_golden(tmp_path: Path) -> None:
    source = extract(make_docx(tmp_path / "guide.docx", _ops_guide))
    assert render_markdown(source) == (
        "---\n"
        "title: Operations Guide\n"
        "source: guide.docx\n"
        "---\n"
        "\n"
        "# Operations Guide\n"
        "\n"
        "Rotate the API keys every 90 days.\n"
        "\n"
        "## Quotas\n"
        "\n"
        "| Tier | Requests \\| min |\n"
        "|---|---|\n"
        "| Gold | 600 |\n"
        "\n"
        "Quotas reset at midnight UTC.\n"
        "\n"
        "### Burst\n"
        "\n"
        "Bursts of twice the quota are allowed for a minute.\n"
    )


def test_docx_title_style_and_deep_headings_are_capped_at_six(tmp_path: Path) -> None:
    def build(document: Any) -> None:
        document.add_heading("Handbook", level=0)  # the Title style
        for level in range(1, 7):
            document.add_heading(f"Level {level}", level=level)
        document.add_paragraph("Deep text.")

    body = split_front_matter(render_markdown(extract(make_docx(tmp_path / "deep.docx", build))))[1]
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert headings == [
        "# Handbook",
        "## Level 1",
        "### Level 2",
        "#### Level 3",
        "##### Level 4",
        "###### Level 5",
        "###### Level 6",  # seven deep: capped at ######
    ]


def test_docx_without_headings_gets_its_file_name_as_title(tmp_path: Path) -> None:
    def build(document: Any) -> None:
        document.add_paragraph("First paragraph.")
        document.add_paragraph("Second paragraph.")

    text = render_markdown(extract(make_docx(tmp_path / "memo.docx", build)))
    assert text == (
        "---\ntitle: memo.docx\nsource: memo.docx\n---\n\n# memo.docx\n\nFirst paragraph.\n\nSecond paragraph.\n"
    )


def test_docx_heading_with_a_tab_is_still_a_heading(tmp_path: Path) -> None:
    # Numbered Word headings are typed "1.<TAB>Scope"; the heading path collapses the whitespace.
    def build(document: Any) -> None:
        document.add_heading("1.\tScope", level=1)
        document.add_paragraph("Body text.")
        document.add_heading("Quotas  and limits", level=2)
        document.add_paragraph("More text.")

    source = extract(make_docx(tmp_path / "numbered.docx", build))
    meta, body, _, _ = split_front_matter(render_markdown(source))
    assert meta["title"] == "1. Scope"
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert len(headings) == 2
    assert headings[0].startswith("# 1.") and headings[0].split() == ["#", "1.", "Scope"]
    assert headings[1].startswith("## ") and headings[1].split() == ["##", "Quotas", "and", "limits"]


def test_docx_repeated_heading_is_rendered_as_a_heading_each_time(tmp_path: Path) -> None:
    def build(document: Any) -> None:
        document.add_heading("Guide", level=1)
        document.add_heading("Notes", level=2)
        document.add_paragraph("First notes.")
        document.add_heading("Notes", level=2)
        document.add_paragraph("Second notes.")

    body = split_front_matter(render_markdown(extract(make_docx(tmp_path / "notes.docx", build))))[1]
    assert body == "\n# Guide\n\n## Notes\n\nFirst notes.\n\n## Notes\n\nSecond notes.\n"


def test_text_source_renders_its_chunks_under_the_file_name() -> None:
    source = extract_bytes("notes/todo.txt", b"buy milk\nwalk dog\n\nfile taxes\n")
    assert render_markdown(source) == (
        "---\ntitle: todo.txt\nsource: notes/todo.txt\n---\n\n# todo.txt\n\nbuy milk\nwalk dog\n\nfile taxes\n"
    )


def test_front_matter_title_wins_and_is_whitespace_collapsed() -> None:
    source = ExtractedSource(
        "a.txt",
        "text",
        units=[SourceUnit("Body.", "line 1")],
        front_matter={"title": "  Spaced \n  Title "},
    )
    assert render_markdown(source) == "---\ntitle: Spaced Title\nsource: a.txt\n---\n\n# Spaced Title\n\nBody.\n"


def test_blank_front_matter_title_falls_back_to_the_first_heading() -> None:
    source = ExtractedSource(
        "x.docx",
        "docx",
        units=[SourceUnit("Intro", "paragraph 1", ("Intro",)), SourceUnit("Text.", "paragraph 2", ("Intro",))],
        front_matter={"title": "   "},
    )
    assert split_front_matter(render_markdown(source))[0]["title"] == "Intro"


def test_front_matter_survives_yaml_special_characters_and_unicode(tmp_path: Path) -> None:
    def build(document: Any) -> None:
        document.add_heading("Q3: plan & review #1", level=1)
        document.add_paragraph("Text.")

    text = render_markdown(extract(make_docx(tmp_path / "q3 plan.docx", build)))
    assert split_front_matter(text)[:2] == (
        {"title": "Q3: plan & review #1", "source": "q3 plan.docx"},
        "\n# Q3: plan & review #1\n\nText.\n",
    )

    def build_zh(document: Any) -> None:
        document.add_heading("退款流程", level=1)
        document.add_paragraph("客服发起退款。")

    zh = render_markdown(extract(make_docx(tmp_path / "退款.docx", build_zh)))
    assert zh == "---\ntitle: 退款流程\nsource: 退款.docx\n---\n\n# 退款流程\n\n客服发起退款。\n"


# --- links --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "file", "expected"),
    [
        ("See [[refunds]].", "a.md", ["refunds"]),
        ("See [[ Refund policy ]].", "a.md", ["Refund policy"]),
        ("See [[payments/refunds|the refund page]].", "a.md", ["payments/refunds"]),
        ("See [[refunds#limits]].", "a.md", ["refunds"]),
        ("See [[refunds#limits|limits]].", "a.md", ["refunds"]),
        ("See [[#only-an-anchor]].", "a.md", []),
        ("See [x](refunds.md).", "payments/a.md", ["payments/refunds.md"]),
        ("See [x](./refunds.md#limits).", "payments/a.md", ["payments/refunds.md"]),
        ("See [x](../ops/setup.md).", "payments/a.md", ["ops/setup.md"]),
        ("See [x](/ops/setup.md).", "payments/deep/a.md", ["ops/setup.md"]),
        ('See [x](refunds.md "Refund policy").', "payments/a.md", ["payments/refunds.md"]),
        ("See [x](../../escape.md).", "payments/a.md", []),
        ("See [x](../escape.md).", "a.md", []),
        ("See [x](https://example.com/a.md) and [y](http://x.y).", "a.md", []),
        ("Mail [us](mailto:help@example.com).", "a.md", []),
        ("Jump [down](#section).", "a.md", []),
        ("Both [[one]] and [two](two.md) and [[three|3]].", "a.md", ["one", "three", "two.md"]),
    ],
)
def test_link_targets(text: str, file: str, expected: list[str]) -> None:
    assert link_targets(text, file) == expected


def _page(pid: str, title: str, text: str = "", file: str | None = None) -> Page:
    file = file or pid + ".md"
    return Page(id=pid, file=file, title=title, text=text, source=file)


RESOLVER_PAGES = [
    _page("payments/refunds", "Refund policy"),
    _page("ops/setup", "Installing the agent"),
    _page("specs/api.pdf", "API reference", file="specs/api.pdf.md"),
    _page("hr/leave", "请假制度"),
]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("payments/refunds.md", "payments/refunds"),  # by file
        ("payments/refunds", "payments/refunds"),  # by id
        ("refunds", "payments/refunds"),  # by base-name slug
        ("Refunds", "payments/refunds"),
        ("Refund policy", "payments/refunds"),  # by title slug
        ("refund-policy", "payments/refunds"),
        ("Installing the agent", "ops/setup"),
        ("setup.md", "ops/setup"),
        ("specs/api.pdf.md", "specs/api.pdf"),
        ("specs/api.pdf", "specs/api.pdf"),
        ("API reference", "specs/api.pdf"),
        ("请假制度", "hr/leave"),
        ("leave", "hr/leave"),
        ("nothing-like-it", None),
        ("", None),
    ],
)
def test_link_resolver(target: str, expected: str | None) -> None:
    assert LinkResolver(RESOLVER_PAGES).resolve(target) == expected


def test_ambiguous_slug_resolves_to_the_first_page() -> None:
    resolver = LinkResolver([_page("a/notes", "A"), _page("b/notes", "B")])
    assert resolver.resolve("notes") == "a/notes"
    assert resolver.resolve("b/notes") == "b/notes"


def test_exact_id_wins_over_another_pages_slug() -> None:
    # `a/b` comes first and its base-name slug is `b`, but a page whose id *is* `b` exists.
    resolver = LinkResolver([_page("a/b", "Alpha"), _page("b", "Beta")])
    assert resolver.resolve("b") == "b"
    assert resolver.resolve("b.md") == "b"
    assert resolver.resolve("a/b") == "a/b"


def test_resolve_links_drops_self_links_and_unresolved_and_keeps_order() -> None:
    pages = {
        p.id: p
        for p in [
            _page("guide", "Guide", "[[Refund policy]] [[guide]] [[missing]] [setup](ops/setup.md) [[refunds]]"),
            _page("payments/refunds", "Refund policy", "Back to [[Guide]]. [x](https://e.com) [self](refunds.md)"),
            _page("ops/setup", "Setup", "[up](../guide.md) [[payments/refunds|r]] [[ops/setup]]"),
            _page("ops/island", "Island", "No links."),
        ]
    }
    assert resolve_links(pages) == {
        "guide": ("payments/refunds", "ops/setup"),
        "payments/refunds": ("guide",),
        "ops/setup": ("payments/refunds", "guide"),
        "ops/island": (),
    }


def test_percent_encoded_relative_link_resolves_to_a_file_with_a_space() -> None:
    # Editors write a link to `my notes.md` as `my%20notes.md`; names with spaces are valid sources.
    pages = {
        p.id: p
        for p in [
            _page("docs/index", "Index", "Read [the notes](my%20notes.md)."),
            _page("docs/my notes", "Meeting log"),
        ]
    }
    assert resolve_links(pages)["docs/index"] == ("docs/my notes",)
