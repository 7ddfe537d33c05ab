"""A built generation loaded for reading: pages, search with link expansion, graph, index tools and retrieve()."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.wiki.indexer import PAGES_DIR, build_generation
from memhub.knowledge.wiki.passages import CAP_AGENT, CAP_HELP, CAP_WORKSPACE, TRUNCATION_MARKER
from memhub.knowledge.wiki.snapshot import RELATED_MAX, WikiSnapshot
from tests.knowledge.test_wiki_sources import make_pdf

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> WikiSnapshot:
    """The fixture knowledge tree (authored index, English and Chinese) built into generation 1."""
    base = tmp_path_factory.mktemp("fixture-wiki")
    shutil.copytree(FIXTURE, base / "src")
    build_generation(base / "src", base / "gen")
    return WikiSnapshot(1, base / "gen")


LINKED: dict[str, str | bytes] = {
    "guide.md": (
        "---\ntitle: Guide\n---\n# Guide\n\nStart with [[refunds]] and the [setup notes](ops/setup.md#install). "
        "Mail [us](mailto:a@b.c) or see [the site](https://example.com).\n"
    ),
    "payments/refunds.md": (
        "# Refunds\n\nRefunds are approved by support. Back to [[Guide]]. See [[ops/setup|setup]].\n"
    ),
    "payments/chargebacks.md": "# Chargebacks\n\nChargebacks follow [the refund rules](refunds.md).\n",
    "ops/README.md": '---\ntitle: Operations\npaths: ["infra/**"]\n---\n# Operations\n',
    "ops/setup.md": "# Setup\n\nInstall the agent before anything else. [Up](../guide.md)\n",
    "ops/island.md": "# Island\n\nNothing links here; it is about lighthouses.\n",
    "manual.pdf": make_pdf(["Lighthouse maintenance manual", "Refund appendix for lighthouse keepers"]),
}


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> WikiSnapshot:
    """A small generated-index wiki with wikilinks, relative links and a PDF page.

    Links: guide → refunds, setup; refunds → guide, setup; chargebacks → refunds; setup → guide.
    """
    base = tmp_path_factory.mktemp("linked-wiki")
    build_generation(_tree(base / "src", LINKED), base / "gen")
    return WikiSnapshot(3, base / "gen")


def _ids(result: dict[str, Any]) -> list[str]:
    return [r["id"] for r in result["results"]]


# --- pages --------------------------------------------------------------------------------------

FIXTURE_PAGES = [
    ("engineering/README", "Engineering", "page"),
    ("engineering/code-review", "Code review checklist", "guide"),
    ("engineering/deploy-runbook", "Deploy runbook", "guide"),
    ("engineering/frontend-style", "Front-end component style", "guide"),
    ("glossary-zh", "术语表", "guide"),
    ("handbook", "Team handbook", "guide"),
    ("hr/README", "人事与行政", "page"),
    ("hr/expenses", "报销制度", "guide"),
    ("hr/leave-policy-2019", "旧版请假制度（2019）", "guide"),
    ("hr/leave-policy", "请假制度", "guide"),
    ("payments/README", "Payments", "page"),
    ("payments/payments-code-style", "Payments service code conventions", "guide"),
    ("payments/refund-policy-2022", "Refund policy (2022 notice)", "guide"),
    ("payments/refunds-zh", "退款流程", "guide"),
    ("payments/refunds", "Refund policy", "guide"),
    ("standards/README", "Standards", "page"),
    ("standards/data-retention", "Data retention standard", "standard"),
    ("standards/password-policy-draft", "Password policy (draft)", "standard"),
    ("standards/security-baseline", "Security baseline", "standard"),
]


def test_pages_take_titles_and_kinds_from_the_index(wiki: WikiSnapshot) -> None:
    assert wiki.generation == 1
    items = wiki.list_pages()["items"]
    assert [(i["id"], i["title"], i["type"]) for i in items] == FIXTURE_PAGES
    by_id = {i["id"]: i for i in items}
    assert by_id["payments/refunds"] == {
        "id": "payments/refunds",
        "title": "Refund policy",
        "type": "guide",
        "path": "wiki/payments/refunds.md",
        "description": "When and how customers get refunds, limits per role, and approval steps.",
    }
    assert by_id["hr/README"]["description"] == ""  # not in the index: no summary
    assert wiki.source_names == sorted(f"{pid}.md" for pid, _, _ in FIXTURE_PAGES)


def test_pages_outside_an_authored_index_and_pdf_pages(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "index.json": json.dumps(
            {
                "schema_version": 1,
                "themes": [],
                "documents": [{"id": "manual", "title": "Lighthouse Manual", "file": "manual.pdf", "summary": "S."}],
            }
        ),
        "manual.pdf": make_pdf(["Keep the lamp lit."]),
        "loose.md": "---\ntitle: Loose page\n---\nNo heading here.\n",
        "bare.md": "Just text, no title at all.\n",
        "headed.md": "Intro line.\n\n# Headed page\n\nText.\n",
    }
    build_generation(_tree(tmp_path / "src", files), tmp_path / "gen")
    snap = WikiSnapshot(9, tmp_path / "gen")
    pages = {pid: (p.title, p.kind, p.source, p.summary) for pid, p in snap.pages.items()}
    assert pages == {
        "bare": ("bare", "page", "bare.md", ""),
        "headed": ("Headed page", "page", "headed.md", ""),
        "loose": ("Loose page", "page", "loose.md", ""),
        "manual.pdf": ("Lighthouse Manual", "guide", "manual.pdf", "S."),
    }


def test_read_pages_by_any_ref_in_the_order_asked(wiki: WikiSnapshot) -> None:
    refs = [
        "wiki/payments/refunds.md",
        "payments/refunds",
        "./hr/leave-policy.md",
        "missing/page",
        "/wiki/handbook.md",
    ]
    items = wiki.read_pages(refs)["items"]
    assert [i["ref"] for i in items] == refs
    refunds = (FIXTURE / "payments/refunds.md").read_text(encoding="utf-8")
    assert items[0] == {"ref": refs[0], "content": refunds}
    assert items[1]["content"] == refunds
    assert items[2]["content"].startswith("---\ntitle: 请假制度\n")
    assert items[3] == {"ref": "missing/page", "not_found": True}
    assert "Team handbook" in items[4]["content"]
    assert wiki.read_pages([]) == {"items": []}


def test_read_a_pdf_page_by_its_source_name(linked: WikiSnapshot) -> None:
    items = linked.read_pages(["manual.pdf", "wiki/manual.pdf.md"])["items"]
    assert items[0]["content"] == items[1]["content"]
    assert "## Page 2\n\nRefund appendix for lighthouse keepers\n" in items[0]["content"]


# --- search -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("refund approval", ["payments/refunds", "payments/refund-policy-2022", "engineering/deploy-runbook"]),
        ("退款", ["payments/refunds-zh"]),
        ("deploy rollback", ["engineering/deploy-runbook"]),
        ("password", ["standards/password-policy-draft", "standards/security-baseline"]),
        ("xyzzy plugh", []),
    ],
)
def test_search_golden(wiki: WikiSnapshot, query: str, expected: list[str]) -> None:
    result = wiki.search(query, 5)
    assert _ids(result) == expected
    assert result["count"] == len(expected)
    assert result["links"] == []  # the fixture pages do not link to each other


def test_search_result_shape(wiki: WikiSnapshot) -> None:
    first = wiki.search("refund approval", 1)["results"]
    assert len(first) == 1
    hit = first[0]
    assert set(hit) == {"id", "path", "title", "snippet", "score", "type", "hop", "related"}
    assert (hit["id"], hit["path"], hit["title"], hit["type"], hit["hop"], hit["related"]) == (
        "payments/refunds",
        "wiki/payments/refunds.md",
        "Refund policy",
        "guide",
        0,
        [],
    )
    assert hit["snippet"].startswith("# Refund policy Refunds under 500 EUR are approved by support")
    assert "title:" not in hit["snippet"]  # front matter is not part of the snippet
    assert isinstance(hit["score"], float) and hit["score"] > 0


def test_search_scores_are_descending_and_deterministic(wiki: WikiSnapshot) -> None:
    first = wiki.search("refund policy notice", 10)
    scores = [r["score"] for r in first["results"]]
    assert scores == sorted(scores, reverse=True)
    assert wiki.search("refund policy notice", 10) == first


def test_search_without_hop_returns_seeds_and_the_links_between_them(linked: WikiSnapshot) -> None:
    result = linked.search("refunds", 10)
    assert _ids(result) == ["payments/refunds", "payments/chargebacks", "manual.pdf", "guide"]
    assert all(r["hop"] == 0 and "via" not in r for r in result["results"])
    assert result["links"] == [
        {"source": "wiki/guide.md", "target": "wiki/payments/refunds.md", "weight": 1},
        {"source": "wiki/payments/chargebacks.md", "target": "wiki/payments/refunds.md", "weight": 1},
        {"source": "wiki/payments/refunds.md", "target": "wiki/guide.md", "weight": 1},
    ]


def test_search_hop_expands_along_links_with_decay_and_via(linked: WikiSnapshot) -> None:
    seeds = {r["id"]: r["score"] for r in linked.search("refunds", 10)["results"]}
    result = linked.search("refunds", 10, hop=1)
    assert _ids(result) == ["payments/refunds", "payments/chargebacks", "manual.pdf", "guide", "ops/setup"]
    setup = result["results"][-1]
    assert setup["hop"] == 1
    assert setup["via"] == "wiki/payments/refunds.md"  # reached from the best seed first
    assert setup["score"] == round(seeds["payments/refunds"] * 0.5, 4)
    assert {"source": "wiki/ops/setup.md", "target": "wiki/guide.md", "weight": 1} in result["links"]
    assert result["count"] == 5


def test_search_two_hops_follow_backlinks(linked: WikiSnapshot) -> None:
    result = linked.search("install agent", 10, hop=2)
    got = [(r["id"], r["hop"], r.get("via")) for r in result["results"]]
    assert got == [
        ("ops/setup", 0, None),
        ("guide", 0, None),
        ("payments/refunds", 1, "wiki/ops/setup.md"),
        ("payments/chargebacks", 2, "wiki/payments/refunds.md"),  # a backlink: chargebacks → refunds
    ]
    scores = {r["id"]: r["score"] for r in result["results"]}
    assert scores["payments/refunds"] == round(scores["ops/setup"] * 0.5, 4)
    assert scores["payments/chargebacks"] == round(scores["payments/refunds"] * 0.5, 4)


def test_search_decay_and_min_score(linked: WikiSnapshot) -> None:
    top = linked.search("refunds", 10)["results"][0]["score"]
    quarter = linked.search("refunds", 10, hop=1, decay=0.25)["results"][-1]
    assert (quarter["id"], quarter["score"]) == ("ops/setup", round(top * 0.25, 4))
    strict = linked.search("refunds", 10, hop=3, min_score=top)
    assert [r["hop"] for r in strict["results"]] == [0, 0, 0, 0]


def test_search_limit_bounds_seeds_and_expansion(linked: WikiSnapshot) -> None:
    assert _ids(linked.search("refunds", 2, hop=1)) == ["payments/refunds", "payments/chargebacks"]
    assert _ids(linked.search("refunds", 4, hop=2)) == [
        "payments/refunds",
        "payments/chargebacks",
        "manual.pdf",
        "guide",
    ]
    assert linked.search("refunds", 0) == {"results": [], "links": [], "count": 0}


def test_search_snippet_is_cut_around_the_query(wiki: WikiSnapshot) -> None:
    hit = wiki.search("rollback", 1)["results"][0]
    assert hit["id"] == "engineering/deploy-runbook"
    assert hit["snippet"].startswith("…") and "ollback" in hit["snippet"]


# --- graph and related ----------------------------------------------------------------------------


def test_graph_golden(linked: WikiSnapshot) -> None:
    graph = linked.graph()
    assert [(n["id"], n["label"], n["linkCount"], n["community"]) for n in graph["nodes"]] == [
        ("guide", "Guide", 4, 0),
        ("manual.pdf", "manual.pdf", 0, 1),
        ("ops/README", "Operations", 0, 2),
        ("ops/island", "Island", 0, 3),
        ("ops/setup", "Setup", 3, 0),
        ("payments/chargebacks", "Chargebacks", 1, 0),
        ("payments/refunds", "Refunds", 4, 0),
    ]
    assert graph["nodes"][0] == {
        "id": "guide",
        "label": "Guide",
        "type": "guide",
        "path": "wiki/guide.md",
        "linkCount": 4,
        "community": 0,
    }
    assert graph["nodes"][2]["type"] == "page"  # a theme README is a page, not an index document
    assert graph["edges"] == [
        {"source": "guide", "target": "payments/refunds", "weight": 1},
        {"source": "guide", "target": "ops/setup", "weight": 1},
        {"source": "ops/setup", "target": "guide", "weight": 1},
        {"source": "payments/chargebacks", "target": "payments/refunds", "weight": 1},
        {"source": "payments/refunds", "target": "guide", "weight": 1},
        {"source": "payments/refunds", "target": "ops/setup", "weight": 1},
    ]
    communities = graph["communities"]
    assert [(c["id"], c["size"], sorted(c["nodes"])) for c in communities] == [
        (0, 4, ["guide", "ops/setup", "payments/chargebacks", "payments/refunds"]),
        (1, 1, ["manual.pdf"]),
        (2, 1, ["ops/README"]),
        (3, 1, ["ops/island"]),
    ]


def test_links_and_backlinks(linked: WikiSnapshot) -> None:
    assert linked.links["guide"] == ("payments/refunds", "ops/setup")
    assert sorted(linked.backlinks["payments/refunds"]) == ["guide", "payments/chargebacks"]
    assert linked.backlinks["payments/chargebacks"] == []
    assert linked.degree("ops/setup") == 3


def test_related_directions_sorted_by_degree(linked: WikiSnapshot) -> None:
    assert linked.related("payments/refunds") == [
        {"title": "Guide", "path": "wiki/guide.md", "type": "guide", "direction": "both"},
        {"title": "Setup", "path": "wiki/ops/setup.md", "type": "guide", "direction": "out"},
        {"title": "Chargebacks", "path": "wiki/payments/chargebacks.md", "type": "guide", "direction": "in"},
    ]
    assert linked.related("payments/chargebacks") == [
        {"title": "Refunds", "path": "wiki/payments/refunds.md", "type": "guide", "direction": "out"}
    ]
    assert linked.related("ops/island") == []
    assert linked.related("no/such/page") == []


def test_related_is_capped_at_ten_best_connected_first(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"hub.md": "# Hub\n\nThe centre.\n"}
    for n in range(1, 13):
        extra = " [[p01]] [[p02]]" if n >= 10 else ""  # p01 and p02 gain backlinks from p10..p12
        files[f"p{n:02d}.md"] = f"# Page {n}\n\nSee [[hub]].{extra}\n"
    build_generation(_tree(tmp_path / "src", files), tmp_path / "gen")
    snap = WikiSnapshot(1, tmp_path / "gen")
    related = snap.related("hub")
    assert len(related) == RELATED_MAX == 10
    assert [r["path"] for r in related] == [f"wiki/p{n:02d}.md" for n in (1, 2, 10, 11, 12, 3, 4, 5, 6, 7)]
    assert {r["direction"] for r in related} == {"in"}


# --- index tools --------------------------------------------------------------------------------


def test_list_themes(wiki: WikiSnapshot) -> None:
    themes = wiki.list_themes()
    assert themes["root_documents"] == 2
    assert [(t["id"], t["title"], t["documents"], t["status"]) for t in themes["items"]] == [
        ("engineering", "Engineering", 3, "current"),
        ("hr", "人事与行政", 3, "current"),
        ("payments", "Payments", 4, "current"),
        ("standards", "Standards", 3, "current"),
    ]
    payments = themes["items"][2]
    assert payments["summary"] == "Refunds, chargebacks, settlement and the payments service code."
    assert payments["paths"] == []
    assert payments["tags"][:3] == ["payments", "refund", "chargeback"]


def test_get_index_root_theme_and_unknown(wiki: WikiSnapshot) -> None:
    root = wiki.get_index(None)
    assert root == {"theme": None, "index": json.loads((FIXTURE / "index.json").read_text(encoding="utf-8"))}
    hr = wiki.get_index("hr")
    assert hr == {"theme": "hr", "index": json.loads((FIXTURE / "hr/index.json").read_text(encoding="utf-8"))}
    assert wiki.get_index("no-such-theme") is None
    assert wiki.get_index("handbook") is None  # a root document is not a theme


def test_docs_for_paths_with_document_globs(wiki: WikiSnapshot) -> None:
    found = wiki.docs_for_paths(["src/payments/api/refund.py"])
    assert found == {
        "items": [
            {
                "id": "payments/payments-code-style",
                "title": "Payments service code conventions",
                "path": "wiki/payments/payments-code-style.md",
                "theme": "payments",
                "summary": "Money types, idempotency keys and logging rules for code under src/payments.",
                "status": "current",
                "matched_globs": ["src/payments/**"],
            }
        ],
        "count": 1,
    }
    web = wiki.docs_for_paths(["/home/me/repo/web/App.tsx"])["items"]
    assert [(d["id"], d["matched_globs"]) for d in web] == [("engineering/frontend-style", ["**/*.tsx", "web/**"])]
    assert [d["matched_globs"] for d in wiki.docs_for_paths(["lib/Button.tsx"])["items"]] == [["**/*.tsx"]]
    assert wiki.docs_for_paths(["README.md", "docs/intro.txt"]) == {"items": [], "count": 0}
    assert wiki.docs_for_paths([]) == {"items": [], "count": 0}


def test_docs_for_paths_with_theme_globs(linked: WikiSnapshot) -> None:
    found = linked.docs_for_paths(["infra/prod/main.tf"])
    assert [(d["id"], d["theme"], d["matched_globs"]) for d in found["items"]] == [
        ("ops/island", "ops", ["infra/**"]),
        ("ops/setup", "ops", ["infra/**"]),
    ]
    assert linked.list_themes()["items"][0]["paths"] == ["infra/**"]


def test_search_sources_with_locators(linked: WikiSnapshot, wiki: WikiSnapshot) -> None:
    found = linked.search_sources(["lighthouse"])
    assert [(r["filename"], r["locator"], r["matched"]) for r in found["results"]] == [
        ("manual.pdf", "page 1", ("lighthouse",)),
        ("manual.pdf", "page 2", ("lighthouse",)),
        ("ops/island.md", "Island, lines 1-3", ("lighthouse",)),
    ]
    assert found["count"] == 3
    assert found["results"][1]["snippet"] == "Refund appendix for lighthouse keepers"
    assert linked.search_sources(["lighthouse"], limit=1)["count"] == 1
    zh = wiki.search_sources(["退款", "审批"])
    assert zh["results"][0]["filename"] == "payments/refunds-zh.md"
    assert zh["results"][0]["matched"] == ("退款", "审批")
    assert wiki.search_sources(["xyzzy"]) == {"results": [], "count": 0}


# --- retrieve -----------------------------------------------------------------------------------

RETRIEVE_GOLDEN = [
    (
        "How do refunds work and who approves them?",
        ["payments"],
        ["payments/refunds", "handbook"],
        [("payments/refunds", "Refund policy"), ("handbook", "Team handbook")],
    ),
    (
        "How do I roll back a deploy?",
        ["engineering"],
        ["engineering/deploy-runbook"],
        [("engineering/deploy-runbook", "Deploy runbook"), ("engineering/deploy-runbook", "Rollback")],
    ),
    ("退款需要谁审批？", ["payments"], ["payments/refunds-zh"], [("payments/refunds-zh", "退款流程")]),
    (
        "What are the password rules?",
        ["standards"],
        ["standards/security-baseline"],
        [("standards/security-baseline", "Security baseline")],
    ),
]


@pytest.mark.parametrize(("question", "themes", "documents", "passages"), RETRIEVE_GOLDEN)
def test_retrieve_golden(
    wiki: WikiSnapshot,
    question: str,
    themes: list[str],
    documents: list[str],
    passages: list[tuple[str, str]],
) -> None:
    result = wiki.retrieve(question)
    assert result["skipped"] is None
    assert [t["id"] for t in result["themes"]] == themes
    assert [d["id"] for d in result["documents"]] == documents
    assert [(p["doc_id"], p["heading"]) for p in result["passages"]] == passages
    assert result["cap"] == CAP_WORKSPACE
    assert result["truncated"] is False
    assert result["chars"] == len(result["text"]) <= CAP_WORKSPACE
    first = result["documents"][0]
    assert result["text"].startswith(f"[source: {first['file']} — {first['title']}]\n")


def test_retrieve_result_shape(wiki: WikiSnapshot) -> None:
    result = wiki.retrieve("How do refunds work and who approves them?")
    assert result["themes"] == [{"id": "payments", "title": "Payments", "score": 7, "fallback": False}]
    assert result["documents"][0] == {
        "id": "payments/refunds",
        "title": "Refund policy",
        "file": "payments/refunds.md",
        "theme": "payments",
        "score": 11,
        "status": "current",
    }
    refunds = (FIXTURE / "payments/refunds.md").read_text(encoding="utf-8").split("---\n", 2)[2].strip("\n")
    assert result["passages"][0] == {
        "doc_id": "payments/refunds",
        "heading": "Refund policy",
        "chars": len(refunds),
        "truncated": False,
    }
    assert result["text"].startswith("[source: payments/refunds.md — Refund policy]\n" + refunds + "\n\n")


def test_retrieve_with_paths_in_context(wiki: WikiSnapshot) -> None:
    result = wiki.retrieve("What are the code conventions here?", paths=["src/payments/api/refund.py"])
    assert result["documents"][0]["id"] == "payments/payments-code-style"
    assert "integer minor units" in result["text"]
    without = wiki.retrieve("What are the code conventions here?")
    assert "payments/payments-code-style" not in [d["id"] for d in without["documents"]]


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("What did we discuss earlier?", "conversation_recall"),
        ("刚才我们聊了什么？", "conversation_recall"),
        ("How many refunds are in the database this month?", "data_question"),
    ],
)
def test_retrieve_skips_questions_that_need_no_knowledge(wiki: WikiSnapshot, question: str, reason: str) -> None:
    assert wiki.retrieve(question) == {"skipped": reason, "themes": [], "documents": [], "text": "", "cap": 6000}


TRUNCATING = "deploy release stage checks rollback calendar"


def test_retrieve_truncates_at_the_workspace_cap(wiki: WikiSnapshot) -> None:
    result = wiki.retrieve(TRUNCATING)
    assert result["truncated"] is True
    assert result["text"].endswith(TRUNCATION_MARKER)
    assert result["chars"] == len(result["text"]) <= CAP_WORKSPACE
    assert [p["heading"] for p in result["passages"]] == [
        "Deploy runbook",
        "Stage 2: checks before stage 2",
        "Stage 3: checks before stage 3",
        "Stage 4: checks before stage 4",
        "Stage 5: checks before stage 5",
        "Stage 6: checks before stage 6",
    ]
    assert "| W30 |" not in result["text"]  # the release calendar table is never cut in half


@pytest.mark.parametrize(("conversation", "cap"), [("agent", CAP_AGENT), ("help", CAP_HELP)])
def test_retrieve_fits_under_the_larger_agent_and_help_caps(wiki: WikiSnapshot, conversation: Any, cap: int) -> None:
    result = wiki.retrieve(TRUNCATING, conversation=conversation)
    assert result["cap"] == cap == 8000
    assert result["truncated"] is False
    assert not result["text"].endswith(TRUNCATION_MARKER)
    assert CAP_WORKSPACE < result["chars"] == len(result["text"]) <= cap
    assert [p["heading"] for p in result["passages"]][-3:] == [
        "Release calendar",
        "Rollback",
        "Code review checklist",
    ]
    assert [d["id"] for d in result["documents"]] == ["engineering/deploy-runbook", "engineering/code-review"]


def test_generation_pages_dir_is_what_the_snapshot_reads(linked: WikiSnapshot) -> None:
    assert linked.root == linked.directory / PAGES_DIR
    assert linked.generation == 3
    assert sorted(linked.pages) == [
        "guide",
        "manual.pdf",
        "ops/README",
        "ops/island",
        "ops/setup",
        "payments/chargebacks",
        "payments/refunds",
    ]
