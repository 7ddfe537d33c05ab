"""`/v3/tools/list` and `/v3/tools/call` over HTTP (the reference knowledge service's contract): every wiki tool on a
built wiki with its exact result shape, param validation, the check order (id format 400 → resource 404 →
tool 403 → params 400), tool-level failures (`code: 0`, `data.isError`), stale reads, and who may call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GATEWAY_KEY, SERVICE, Gateway, build_gateway
from tests.knowledge.tools_kit import (
    CJK,
    DOCX_NAME,
    FIXTURE_WIKI,
    MD_HISTORY,
    MD_RELAY,
    PDF_NAME,
    PDF_PAGES,
    WIKI_TOOLS,
    WikiApi,
    corpus_files,
    fixture_files,
    text_file,
)
from tests.meta.org import Org

TEAM = "team-1"
NOT_FOUND = "knowledge resource not found"
BAD_FORMAT = (
    "knowledge_id: invalid knowledge_id format (expected wiki-… or cg-… and 8 of [0-9a-z], "
    "or skl-… and 12 of [0-9A-Za-z])"
)
DETAIL_KEYS = {
    "wiki_id",
    "team_id",
    "name",
    "service_url",
    "summary",
    "status",
    "internal_status",
    "sync_error",
    "version",
    "owner_user_id",
    "page_count",
    "source_count",
    "source_path",
    "stale",
    "last_sync_at",
    "created_at",
    "updated_at",
}
RAW_ITEM_KEYS = {
    "filename",
    "size",
    "status",
    "error",
    "created_at",
    "updated_at",
    "last_modified_by",
    "ingested_at",
    "uploaded_at",
}
# (type, required, default) of each param, per tool, in catalogue order.
CATALOGUE: dict[str, dict[str, tuple[str, bool, Any]]] = {
    "get_info": {},
    "search": {"query": ("string", True, None), "limit": ("integer", False, 20)},
    "list_pages": {},
    "read_page": {"refs": ("array", True, None)},
    "get_graph": {},
    "list_raw": {},
    "read_raw": {"filenames": ("array", True, None)},
    "list_themes": {},
    "get_index": {"theme": ("string", False, None)},
    "docs_for_paths": {"paths": ("array", True, None)},
    "search_sources": {"keywords": ("array", True, None)},
}
FIXTURE_PAGES = {
    p.relative_to(FIXTURE_WIKI).with_suffix("").as_posix() for p in FIXTURE_WIKI.rglob("*.md") if p.is_file()
}


@dataclass
class Built:
    """One gateway with three wikis of team-1: the authored fixture wiki, the mixed corpus, one never built."""

    gw: Gateway
    api: WikiApi
    fixture: str
    corpus: str
    draft: str


def gateway_api(gw: Gateway, service: str = SERVICE) -> WikiApi:
    return WikiApi(gw.client, {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": service})


def close(gw: Gateway) -> None:
    gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    gw.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    workdir = tmp_path_factory.mktemp("tools-http")
    with pytest.MonkeyPatch.context() as mp:  # module scope: clear MEMHUB_* like tests/conftest._clean_env
        for name in [n for n in os.environ if n.startswith(("MEMHUB_", "TDAI_"))]:
            mp.delenv(name)
        gw = build_gateway(workdir / "data")
    api = gateway_api(gw)
    fixture = api.make(TEAM, "handbook", fixture_files())
    corpus = api.make(TEAM, "relay docs", corpus_files(workdir), summary="Relay design, manuals and cooling")
    draft = api.create(TEAM, "not built yet")["wiki_id"]
    api.upload(TEAM, draft, [text_file("notes.md", "# Notes\n\nNothing built here.\n")])
    yield Built(gw, api, fixture, corpus, draft)
    close(gw)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Gateway, WikiApi]]:
    gw = build_gateway(tmp_path / "data")
    yield gw, gateway_api(gw)
    close(gw)


# -- tools/list ------------------------------------------------------------------------------------------------
def test_tools_list_shape_and_the_eleven_wiki_tools_in_catalogue_order(built: Built) -> None:
    data = built.api.tools(built.corpus)
    assert set(data) == {"knowledge_id", "type", "name", "summary", "status", "stale", "tools"}
    assert (data["knowledge_id"], data["type"], data["name"]) == (built.corpus, "wiki", "relay docs")
    assert (data["summary"], data["status"], data["stale"]) == ("Relay design, manuals and cooling", "ready", False)
    assert [t["name"] for t in data["tools"]] == list(WIKI_TOOLS) == list(CATALOGUE)
    for tool in data["tools"]:
        assert set(tool) == {"name", "description", "params"}
        assert tool["description"].strip() and not CJK.search(tool["description"])  # English by default
        expected = CATALOGUE[tool["name"]]
        assert list(tool["params"]) == list(expected), tool["name"]
        for name, view in tool["params"].items():
            type_, required, default = expected[name]
            assert set(view) <= {"type", "required", "description", "default", "enum"}
            assert view["type"] == type_
            assert view.get("required", False) is required and ("required" in view) is required  # `required?`
            assert view.get("default") == default and ("default" in view) is (default is not None)
            assert "enum" not in view and view["description"].strip()
    # A wiki without a summary of its own offers the summary its build wrote.
    fixture = built.api.tools(built.fixture)
    assert fixture["summary"] == "19 pages on Engineering, 人事与行政, Payments, Standards"


def test_tools_list_in_chinese(built: Built) -> None:
    en = built.api.tools(built.corpus)
    zh = built.api.tools(built.corpus, language="zh")
    assert en == built.api.tools(built.corpus, language="en")
    assert {k: v for k, v in zh.items() if k != "tools"} == {k: v for k, v in en.items() if k != "tools"}
    assert [t["name"] for t in zh["tools"]] == list(WIKI_TOOLS)
    for zh_tool, en_tool in zip(zh["tools"], en["tools"], strict=True):
        assert CJK.search(zh_tool["description"]) and zh_tool["description"] != en_tool["description"]
        assert list(zh_tool["params"]) == list(en_tool["params"])
        for name, view in zh_tool["params"].items():
            assert CJK.search(view["description"]), (zh_tool["name"], name)
            assert {k: v for k, v in view.items() if k != "description"} == {
                k: v for k, v in en_tool["params"][name].items() if k != "description"
            }
    message = built.api.fails("/v3/tools/list", {"knowledge_id": built.corpus, "language": "fr"}, 400)["message"]
    assert message.startswith("language:")


def test_tools_list_language_defaults_to_the_setting(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "data", knowledge_language="zh")
    try:
        api = gateway_api(gw)
        wiki_id = api.create(TEAM, "zh")["wiki_id"]
        assert all(CJK.search(t["description"]) for t in api.tools(wiki_id)["tools"])
        assert not any(CJK.search(t["description"]) for t in api.tools(wiki_id, language="en")["tools"])
    finally:
        close(gw)


def test_tools_list_errors(built: Built) -> None:
    api = built.api
    assert api.fails("/v3/tools/list", {}, 400)["message"] == "knowledge_id: is required"
    for bad in ("abc", "wiki-ABC12345", "wiki-123", "wiki-abcd12345", "cg-ab", "wiki_abcd1234"):
        assert api.fails("/v3/tools/list", {"knowledge_id": bad}, 400)["message"] == BAD_FORMAT, bad
    for unknown in ("wiki-zzzzzzzz", "cg-abcd1234"):  # well formed, but no such resource
        assert api.fails("/v3/tools/list", {"knowledge_id": unknown}, 404)["message"] == NOT_FOUND
    # Another tenant's wiki does not exist for this one: the same 404, for list and call.
    other = gateway_api(built.gw, service="svc-other")
    assert other.fails("/v3/tools/list", {"knowledge_id": built.corpus}, 404)["message"] == NOT_FOUND
    body = {"knowledge_id": built.corpus, "tool_name": "get_info", "params": {}}
    assert other.fails("/v3/tools/call", body, 404)["message"] == NOT_FOUND


# -- tools/call: every wiki tool ----------------------------------------------------------------------------------
def test_get_info_is_the_detail_with_service_id_and_an_integer_version(built: Built) -> None:
    info = built.api.call(built.fixture, "get_info")
    detail = built.api.get(built.fixture)
    assert set(info) == DETAIL_KEYS | {"service_id"}
    assert info == {**detail, "version": 1, "service_id": SERVICE}
    assert isinstance(info["version"], int) and detail["version"] == "1"
    assert (info["status"], info["page_count"], info["source_count"], info["stale"]) == ("ready", 19, 19, False)


def test_search_results_links_and_count(built: Built) -> None:
    data = built.api.call(built.corpus, "search", {"query": "relay"})
    assert set(data) == {"results", "links", "count", "stale"} and data["stale"] is False
    assert data["count"] == len(data["results"]) == 3
    for hit in data["results"]:
        assert set(hit) == {"id", "path", "title", "snippet", "score", "type", "hop", "related"}
        assert hit["hop"] == 0 and "via" not in hit  # tools/call search is pure BM25
        assert "relay" in hit["snippet"].lower()
        assert isinstance(hit["score"], float) and hit["score"] > 0
        assert hit["path"] == f"wiki/{hit['id']}.md" and hit["type"] == "guide"
    scores = [h["score"] for h in data["results"]]
    assert scores == sorted(scores, reverse=True)
    by_id = {h["id"]: h for h in data["results"]}
    assert set(by_id) == {"design/relay", "design/history", PDF_NAME}
    assert by_id["design/relay"]["title"] == "Relay design" and by_id[PDF_NAME]["related"] == []
    # The two pages link each other ([[wikilink]] one way, a Markdown link back).
    assert by_id["design/relay"]["related"] == [
        {"title": "Relay history", "path": "wiki/design/history.md", "type": "guide", "direction": "both"}
    ]
    assert data["links"] == [
        {"source": "wiki/design/history.md", "target": "wiki/design/relay.md", "weight": 1},
        {"source": "wiki/design/relay.md", "target": "wiki/design/history.md", "weight": 1},
    ]
    # The authored fixture wiki: the refund policy ranks first; limit caps the results.
    refunds = built.api.call(built.fixture, "search", {"query": "refund approval", "limit": 2})
    assert refunds["count"] == 2 and refunds["results"][0]["path"] == "wiki/payments/refunds.md"
    assert refunds["results"][0]["title"] == "Refund policy" and "refund" in refunds["results"][0]["snippet"].lower()
    nothing = built.api.call(built.fixture, "search", {"query": "xylophonequartz"})
    assert nothing == {"results": [], "links": [], "count": 0, "stale": False}


def test_list_pages(built: Built) -> None:
    data = built.api.call(built.fixture, "list_pages")
    assert set(data) == {"items", "stale"}
    assert {p["id"] for p in data["items"]} == FIXTURE_PAGES and len(data["items"]) == 19
    for page in data["items"]:
        assert set(page) == {"id", "title", "type", "path", "description"}
        assert page["path"] == f"wiki/{page['id']}.md"
    refunds = next(p for p in data["items"] if p["id"] == "payments/refunds")
    assert refunds == {
        "id": "payments/refunds",
        "title": "Refund policy",
        "type": "guide",
        "path": "wiki/payments/refunds.md",
        "description": "When and how customers get refunds, limits per role, and approval steps.",
    }
    corpus = {p["id"]: p for p in built.api.call(built.corpus, "list_pages")["items"]}
    assert set(corpus) == {"design/relay", "design/history", PDF_NAME, DOCX_NAME}
    assert corpus[PDF_NAME]["path"] == f"wiki/{PDF_NAME}.md" and corpus[DOCX_NAME]["title"] == "Cooling Guide"


def test_read_page_refs_with_and_without_md_and_wiki_prefix(built: Built) -> None:
    refunds = (FIXTURE_WIKI / "payments" / "refunds.md").read_text(encoding="utf-8")
    refs = ["payments/refunds", "payments/refunds.md", "wiki/payments/refunds.md", "wiki/payments/refunds", "nope/x"]
    data = built.api.call(built.fixture, "read_page", {"refs": refs})
    assert data == {
        "items": [{"ref": r, "content": refunds} for r in refs[:4]] + [{"ref": "nope/x", "not_found": True}],
        "stale": False,
    }
    # A PDF's page is the Markdown rendered from it: one section per PDF page.
    (pdf,) = built.api.call(built.corpus, "read_page", {"refs": [f"wiki/{PDF_NAME}.md"]})["items"]
    assert "## Page 2" in pdf["content"] and PDF_PAGES[1] in pdf["content"]
    assert pdf["content"].index("## Page 2") < pdf["content"].index(PDF_PAGES[1]) < pdf["content"].index("## Page 3")


def test_get_graph(built: Built) -> None:
    data = built.api.call(built.corpus, "get_graph")
    assert set(data) == {"nodes", "edges", "communities", "stale"}
    nodes = {n["id"]: n for n in data["nodes"]}
    assert set(nodes) == {"design/relay", "design/history", PDF_NAME, DOCX_NAME}
    for node in data["nodes"]:
        assert set(node) == {"id", "label", "type", "path", "linkCount", "community"}
    assert nodes["design/relay"]["label"] == "Relay design" and nodes["design/relay"]["linkCount"] == 2
    assert nodes[PDF_NAME]["linkCount"] == 0
    assert sorted((e["source"], e["target"], e["weight"]) for e in data["edges"]) == [
        ("design/history", "design/relay", 1),
        ("design/relay", "design/history", 1),
    ]
    linked = nodes["design/relay"]["community"]
    assert nodes["design/history"]["community"] == linked != nodes[PDF_NAME]["community"]
    groups = {c["id"]: c for c in data["communities"]}
    assert sorted(groups[linked]["nodes"]) == ["design/history", "design/relay"] and groups[linked]["size"] == 2
    assert sum(c["size"] for c in data["communities"]) == 4


def test_list_raw(built: Built) -> None:
    data = built.api.call(built.corpus, "list_raw")
    assert set(data) == {"items"}  # works without the index: no stale flag
    names = [i["filename"] for i in data["items"]]
    assert names == sorted(["design/relay.md", "design/history.md", PDF_NAME, DOCX_NAME])
    for item in data["items"]:
        assert set(item) == RAW_ITEM_KEYS
        assert item["status"] == "ingested" and item["error"] is None and item["ingested_at"]
        assert item["last_modified_by"] == "gateway-key"
    sizes = {i["filename"]: i["size"] for i in data["items"]}
    assert sizes["design/relay.md"] == len(MD_RELAY.encode()) and sizes["design/history.md"] == len(MD_HISTORY)
    fixture_names = [i["filename"] for i in built.api.call(built.fixture, "list_raw")["items"]]
    assert fixture_names == sorted(f["filename"] for f in fixture_files())


def test_read_raw_gives_extracted_text_of_pdf_and_docx(built: Built) -> None:
    names = [PDF_NAME, DOCX_NAME, "design/relay.md", "missing.pdf"]
    items = built.api.call(built.corpus, "read_raw", {"filenames": names})["items"]
    assert [i["filename"] for i in items] == names
    pdf, docx, md, missing = items
    assert pdf == {"filename": PDF_NAME, "content": "\n\n".join(f"[page {n}]\n{t}" for n, t in enumerate(PDF_PAGES, 1))}
    assert docx["content"].startswith("[paragraph 1]\nCooling Guide\n\n[paragraph 2]\nFlush the condenser")
    assert "[table 1]\n| Component | Max temperature |\n|---|---|\n| Quasarpump | 85 C |" in docx["content"]
    assert md == {"filename": "design/relay.md", "content": MD_RELAY}
    assert missing == {"filename": "missing.pdf", "not_found": True}


def test_list_themes_and_get_index(built: Built) -> None:
    themes = built.api.call(built.fixture, "list_themes")
    assert set(themes) == {"items", "root_documents", "stale"} and themes["root_documents"] == 2
    assert [t["id"] for t in themes["items"]] == ["engineering", "hr", "payments", "standards"]
    for theme in themes["items"]:
        assert set(theme) == {"id", "title", "summary", "tags", "status", "paths", "documents"}
    hr = themes["items"][1]
    assert (hr["title"], hr["status"], hr["documents"]) == ("人事与行政", "current", 3) and "请假" in hr["tags"]

    authored = json.loads((FIXTURE_WIKI / "index.json").read_text(encoding="utf-8"))
    assert built.api.call(built.fixture, "get_index") == {"theme": None, "index": authored, "stale": False}
    payments = json.loads((FIXTURE_WIKI / "payments" / "index.json").read_text(encoding="utf-8"))
    got = built.api.call(built.fixture, "get_index", {"theme": "payments"})
    assert got == {"theme": "payments", "index": payments, "stale": False}
    unknown = built.api.call(built.fixture, "get_index", {"theme": "astrology"})  # code 0, not an HTTP error
    assert unknown["isError"] is True and "astrology" in unknown["text"] and "list_themes" in unknown["text"]
    # A generated index (no index.json uploaded): top-level folders are the themes.
    generated = built.api.call(built.corpus, "list_themes")
    assert [(t["id"], t["documents"]) for t in generated["items"]] == [("design", 2), ("manuals", 1)]
    assert generated["root_documents"] == 1  # the DOCX at the root


def test_docs_for_paths_matches_paths_globs(built: Built) -> None:
    front = built.api.call(built.fixture, "docs_for_paths", {"paths": ["web/src/App.tsx"]})
    assert front == {
        "items": [
            {
                "id": "engineering/frontend-style",
                "title": "Front-end component style",
                "path": "wiki/engineering/frontend-style.md",
                "theme": "engineering",
                "summary": "Rules for React components, hooks and CSS modules.",
                "status": "current",
                "matched_globs": ["**/*.tsx", "web/**"],
            }
        ],
        "count": 1,
        "stale": False,
    }
    payments = built.api.call(built.fixture, "docs_for_paths", {"paths": ["docs/x.md", "src/payments/ledger.py"]})
    assert [(d["id"], d["matched_globs"]) for d in payments["items"]] == [
        ("payments/payments-code-style", ["src/payments/**"])
    ]
    assert built.api.call(built.fixture, "docs_for_paths", {"paths": ["README.md"]})["count"] == 0


def test_search_sources_locators_per_format(built: Built) -> None:
    def hits(keywords: Any) -> list[dict[str, Any]]:
        data = built.api.call(built.corpus, "search_sources", {"keywords": keywords})
        assert set(data) == {"results", "count", "stale"} and data["count"] == len(data["results"])
        for hit in data["results"]:
            assert set(hit) == {"filename", "locator", "snippet", "score", "matched"}
        return list(data["results"])

    (pdf,) = hits(["heliotrope"])
    assert (pdf["filename"], pdf["locator"], pdf["matched"]) == (PDF_NAME, "page 2", ["heliotrope"])
    assert pdf["snippet"] == PDF_PAGES[1]
    (table,) = hits("Quasarpump")
    assert (table["filename"], table["locator"]) == (DOCX_NAME, "table 1") and "Quasarpump" in table["snippet"]
    (paragraph,) = hits(["condenser"])
    assert (paragraph["filename"], paragraph["locator"]) == (DOCX_NAME, "paragraph 2")
    markdown = hits("zephyr constraint")
    assert markdown[0]["filename"] == "design/relay.md"
    assert markdown[0]["locator"].startswith("Relay design > Why relays")
    assert markdown[0]["matched"] == ["zephyr", "constraint"]
    # One space-separated string is the same as the array of its words.
    assert hits("zephyr constraint") == hits(["zephyr", "constraint"])
    assert hits(["xylophonequartz"]) == []


# -- validation and check order ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool", "params", "message"),
    [
        ("search", {"query": "a", "colour": "red"}, "invalid params: colour: unknown param"),
        ("get_info", {"verbose": True}, "invalid params: verbose: unknown param"),
        ("search", {"query": "a", "limit": "x"}, "invalid params: limit: expected integer"),
        ("search", {"query": "a", "limit": True}, "invalid params: limit: expected integer"),
        ("search", {"query": "a", "limit": 2.5}, "invalid params: limit: expected integer"),
        ("search", {"query": "a", "limit": 0}, "invalid params: limit: must be >= 1"),
        ("search", {"query": "a", "limit": 101}, "invalid params: limit: must be <= 100"),
        ("search", {"query": 7}, "invalid params: query: expected string"),
        ("search", {}, "invalid params: query: required"),
        ("search", {"query": None}, "invalid params: query: required"),
        ("search", {"query": "  "}, "invalid params: query: must not be empty"),
        ("read_page", {"refs": []}, "invalid params: refs: needs at least 1 item(s)"),
        ("read_page", {"refs": [f"p{i}" for i in range(21)]}, "invalid params: refs: at most 20 items"),
        ("read_page", {"refs": ["ok", 3]}, "invalid params: refs[1]: expected string"),
        ("read_page", {"refs": "payments/refunds"}, "invalid params: refs: expected array"),
        ("read_raw", {"filenames": [f"f{i}" for i in range(51)]}, "invalid params: filenames: at most 50 items"),
        ("docs_for_paths", {"paths": [""]}, "invalid params: paths[0]: must not be empty"),
        ("get_index", {"theme": 3}, "invalid params: theme: expected string"),
        ("search_sources", {"keywords": ""}, "invalid params: keywords: needs at least 1 item(s)"),
        ("search_sources", {"keywords": " ".join(["k"] * 21)}, "invalid params: keywords: at most 20 items"),
        ("search_sources", {"keywords": {"a": 1}}, "invalid params: keywords: expected array"),
    ],
)
def test_params_are_validated(built: Built, tool: str, params: dict[str, Any], message: str) -> None:
    assert built.api.call_fails(built.corpus, tool, params, 400) == message


def test_params_defaults_and_nulls(built: Built) -> None:
    # `limit: null` means the default (20); the default applies when absent.
    assert built.api.call(built.fixture, "search", {"query": "policy", "limit": None})["count"] > 2
    assert built.api.call(built.fixture, "get_index", {"theme": None})["theme"] is None


@pytest.mark.parametrize("params", [["query", "x"], "query=x", 3, None])
def test_params_must_be_an_object(built: Built, params: Any) -> None:
    assert built.api.call_fails(built.corpus, "search", params, 400) == "params: must be an object"


def test_params_may_be_omitted_for_tools_without_params(built: Built) -> None:
    data = built.api.ok("/v3/tools/call", {"knowledge_id": built.corpus, "tool_name": "list_pages"})
    assert len(data["items"]) == 4


def test_unknown_tool_is_403_naming_the_resource(built: Built) -> None:
    message = f"unknown tool: 'x' for wiki resource '{built.corpus}'. Use tools/list to see the available tools."
    assert built.api.call_fails(built.corpus, "x", {}, 403) == message
    # Code-graph tools, and prefixed names, are not wiki tools.
    for name in ("explore", "wiki_search", "SEARCH"):
        assert built.api.call_fails(built.corpus, name, {}, 403).startswith(f"unknown tool: '{name}' for wiki")


def test_check_order(built: Built) -> None:
    api = built.api
    # id format (400) beats everything after it.
    assert api.call_fails("wiki-BAD", "x", {"nope": 1}, 400) == BAD_FORMAT
    # An unknown resource (404) beats an unknown tool.
    assert api.call_fails("wiki-zzzzzzzz", "x", {"nope": 1}, 404) == NOT_FOUND
    assert api.call_fails("cg-zzzzzzzz", "explore", {"query": "a"}, 404) == NOT_FOUND
    # An unknown tool (403) beats bad params; a known tool with bad params is 400.
    assert api.call_fails(built.corpus, "x", {"nope": 1}, 403).startswith("unknown tool: 'x'")
    assert api.call_fails(built.corpus, "x", [1, 2], 400) == "params: must be an object"  # body schema first
    assert api.call_fails(built.corpus, "search", {"nope": 1}, 400) == "invalid params: nope: unknown param"
    assert api.fails("/v3/tools/call", {"knowledge_id": built.corpus}, 400)["message"] == "tool_name: is required"


# -- a wiki that never built, and stale reads -------------------------------------------------------------------
def test_not_built_wiki_says_so_and_still_lists_its_sources(built: Built) -> None:
    no_index = f"wiki {built.draft} has no index yet: upload sources with raw/write, then call ingest"
    index_tools = [
        ("search", {"query": "notes"}),
        ("read_page", {"refs": ["notes"]}),
        ("list_pages", {}),
        ("get_graph", {}),
        ("list_themes", {}),
        ("get_index", {}),
        ("docs_for_paths", {"paths": ["a.py"]}),
        ("search_sources", {"keywords": "notes"}),
    ]
    for tool, params in index_tools:
        assert built.api.call(built.draft, tool, params) == {"text": no_index, "isError": True, "status": "draft"}
    # Params are still checked first.
    assert built.api.call_fails(built.draft, "search", {}, 400) == "invalid params: query: required"
    raw = built.api.call(built.draft, "list_raw")["items"]
    assert [(i["filename"], i["status"], i["ingested_at"]) for i in raw] == [("notes.md", "uploaded", None)]
    text = built.api.call(built.draft, "read_raw", {"filenames": ["notes.md"]})
    assert text == {"items": [{"filename": "notes.md", "content": "# Notes\n\nNothing built here.\n"}]}
    info = built.api.call(built.draft, "get_info")
    assert (info["status"], info["version"], info["page_count"], info["stale"]) == ("draft", 0, 0, False)
    listed = built.api.tools(built.draft)
    assert (listed["status"], listed["summary"], listed["stale"]) == ("draft", None, False)


def test_first_build_failed_says_why(fresh: tuple[Gateway, WikiApi]) -> None:
    _, api = fresh
    wiki_id = api.create(TEAM, "broken")["wiki_id"]
    bad_index = json.dumps({"schema_version": 1, "themes": [], "colour": "red"})
    api.upload(TEAM, wiki_id, [text_file("a.md", "# A\n\nalpha\n"), text_file("index.json", bad_index)])
    assert api.ingest(wiki_id)["status"] == "failed"
    answer = api.call(wiki_id, "search", {"query": "alpha"})
    assert answer["isError"] is True and answer["status"] == "failed"
    assert answer["text"].startswith(f"wiki {wiki_id} has no index: the last build failed: ")
    assert "colour: unknown key" in answer["text"]


def test_failed_rebuild_keeps_serving_the_last_good_generation_as_stale(fresh: tuple[Gateway, WikiApi]) -> None:
    _, api = fresh
    wiki_id = api.make(TEAM, "ops", [text_file("deploy.md", "# Deploy\n\nDeploys run on Tuesdays with canaries.\n")])
    before = api.call(wiki_id, "search", {"query": "canaries"})
    assert before["count"] == 1 and before["stale"] is False
    bad_index = json.dumps({"schema_version": 1, "themes": [], "unexpected": True})
    api.upload(TEAM, wiki_id, [text_file("index.json", bad_index), text_file("new.md", "# New\n\ncanaries too\n")])
    failed = api.ingest(wiki_id)
    assert failed["status"] == "failed" and "unexpected: unknown key" in failed["sync_error"]

    after = api.call(wiki_id, "search", {"query": "canaries"})
    assert after == {**before, "stale": True}  # the old results, never an empty success
    pages = api.call(wiki_id, "list_pages")
    assert [p["id"] for p in pages["items"]] == ["deploy"] and pages["stale"] is True  # new.md is not served yet
    page = api.call(wiki_id, "read_page", {"refs": ["deploy"]})
    assert page["stale"] is True and "Tuesdays" in page["items"][0]["content"]
    listed = api.tools(wiki_id)
    assert (listed["status"], listed["stale"]) == ("failed", True)
    info = api.call(wiki_id, "get_info")
    assert (info["status"], info["stale"], info["version"]) == ("failed", True, 1)
    # Fixing the index makes it current again.
    api.upload(TEAM, wiki_id, [text_file("index.json", json.dumps({"schema_version": 1, "themes": []}))])
    assert api.ingest(wiki_id)["status"] == "ready"
    fixed = api.call(wiki_id, "search", {"query": "canaries"})
    assert fixed["stale"] is False and fixed["count"] == 2


# -- who may call -------------------------------------------------------------------------------------------------
def _bare(gw: Gateway, headers: dict[str, str], path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = gw.client.post(path, json=body, headers=headers)
    return response.status_code, response.json()


def test_tools_need_a_key_by_default(built: Built) -> None:
    body = {"knowledge_id": built.corpus}
    call = {**body, "tool_name": "search", "params": {"query": "zephyr"}}
    for path, payload in (("/v3/tools/list", body), ("/v3/tools/call", call)):
        status, envelope = _bare(built.gw, {"x-tdai-service-id": SERVICE}, path, payload)
        assert (status, envelope["message"]) == (401, "Unauthorized: missing Bearer token")
        status, envelope = _bare(
            built.gw, {"x-tdai-service-id": SERVICE, "authorization": "Bearer nope"}, path, payload
        )
        assert (status, envelope["message"]) == (401, "Unauthorized: invalid token")
    status, envelope = _bare(built.gw, {"authorization": f"Bearer {GATEWAY_KEY}"}, "/v3/tools/list", body)
    assert (status, envelope["message"]) == (401, "Missing x-tdai-service-id header")


def test_open_tools_read_with_the_tenant_header_alone(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "data", knowledge_tools_auth="open")
    try:
        wiki_id = gateway_api(gw).make(TEAM, "open", [text_file("a.md", "# A\n\nThe zephyr constraint.\n")])
        tenant = {"x-tdai-service-id": SERVICE}
        status, envelope = _bare(gw, tenant, "/v3/tools/list", {"knowledge_id": wiki_id})
        assert status == 200 and envelope["data"]["name"] == "open"
        call = {"knowledge_id": wiki_id, "tool_name": "search", "params": {"query": "zephyr"}}
        status, envelope = _bare(gw, tenant, "/v3/tools/call", call)
        assert status == 200 and envelope["data"]["count"] == 1
        # A credential that is presented is still checked.
        status, envelope = _bare(gw, {**tenant, "authorization": "Bearer wrong"}, "/v3/tools/call", call)
        assert (status, envelope["message"]) == (401, "Unauthorized: invalid token")
        status, _ = _bare(gw, {**tenant, "x-tdai-user-key": "sk-mem-not-a-key"}, "/v3/tools/call", call)
        assert status == 401
        # The tenant header is still required, and scopes what can be read.
        status, envelope = _bare(gw, {}, "/v3/tools/list", {"knowledge_id": wiki_id})
        assert (status, envelope["message"]) == (401, "Missing x-tdai-service-id header")
        status, envelope = _bare(gw, {"x-tdai-service-id": "svc-other"}, "/v3/tools/list", {"knowledge_id": wiki_id})
        assert (status, envelope["message"]) == (404, NOT_FOUND)
        # Only the tools are open: wiki management still needs a key.
        status, _ = _bare(gw, tenant, "/v3/wiki/list", {"team_id": TEAM})
        assert status == 401
        status, _ = _bare(gw, tenant, "/v3/knowledge/tools-block", {"team_id": TEAM})
        assert status == 401
    finally:
        close(gw)


def test_user_keys_members_see_the_wiki_others_get_404(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "data")
    try:
        org = Org(gw)
        alice, bob = org.users("alice", "bob")
        team = org.team(alice, "docs")
        alice_api = WikiApi(gw.client, org.headers(alice))
        wiki_id = alice_api.make(team, "docs", [text_file("a.md", "# A\n\nThe zephyr constraint.\n")])
        call = {"knowledge_id": wiki_id, "tool_name": "search", "params": {"query": "zephyr"}}
        # A member: with the gateway key + x-tdai-user-key, or the user key alone as the Bearer token.
        for headers in (org.headers(alice), {"authorization": f"Bearer {alice.key}", "x-tdai-service-id": SERVICE}):
            api = WikiApi(gw.client, headers)
            assert api.tools(wiki_id)["name"] == "docs"
            assert api.ok("/v3/tools/call", call)["count"] == 1
        # Not a member: the wiki does not exist for bob.
        for headers in (org.headers(bob), {"authorization": f"Bearer {bob.key}", "x-tdai-service-id": SERVICE}):
            api = WikiApi(gw.client, headers)
            assert api.fails("/v3/tools/list", {"knowledge_id": wiki_id}, 404)["message"] == NOT_FOUND
            assert api.fails("/v3/tools/call", call, 404)["message"] == NOT_FOUND
            assert api.fails("/v3/tools/call", {**call, "tool_name": "x"}, 404)["message"] == NOT_FOUND
        # Once bob joins the team he can read it; the system admin can read it without joining.
        org.join(team, alice, bob)
        assert WikiApi(gw.client, org.headers(bob)).ok("/v3/tools/call", call)["count"] == 1
        assert WikiApi(gw.client, org.headers(org.admin)).tools(wiki_id)["status"] == "ready"
    finally:
        close(gw)
