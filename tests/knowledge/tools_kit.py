"""Helpers for the `/v3/tools/*` and `/v3/knowledge/tools-block` tests: wikis over HTTP, corpora, block parsing.

Everything goes through the real HTTP app (an in-process TestClient or a real socket: both are
`httpx.Client`s), nothing is mocked. `WikiApi` sends one fixed set of headers; the corpus helpers make
the Markdown / PDF / DOCX sources; `knowledge_tags` and `recipe` read the `<knowledge_tools>` block the way an agent
would: the resource tags, and the headers of the Step 1 / Step 2 curl recipes with `${VAR}` expanded
from an environment, as the agent's shell would.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import httpx

from tests.knowledge.test_wiki_sources import make_docx, make_pdf

FIXTURE_WIKI = Path(__file__).parent / "fixtures" / "wiki"
WIKI_TOOLS = (
    "get_info",
    "search",
    "list_pages",
    "read_page",
    "get_graph",
    "list_raw",
    "read_raw",
    "list_themes",
    "get_index",
    "docs_for_paths",
    "search_sources",
)
RAW_WRITE_BATCH = 10
CJK = re.compile(r"[\u4e00-\u9fff]")

# -- the mixed-format corpus: each fact lives in exactly one file ------------------------------------------
PDF_NAME = "manuals/relay-manual.pdf"
PDF_PAGES = (
    "Orbital relay operator manual",
    "The heliotrope valve opens at 42 bar of pressure",
    "Appendix with the maintenance contacts",
)
PDF_FACT = "heliotrope"  # only on page 2 of the PDF
DOCX_NAME = "cooling-guide.docx"
DOCX_TABLE_FACT = "Quasarpump"  # only in the DOCX table
DOCX_PARAGRAPH_FACT = "condenser"  # only in the DOCX's second paragraph
MD_NAME = "design/relay.md"
MD_FACT = "zephyr"  # only in the Markdown pages
MD_RELAY = (
    "---\ntitle: Relay design\n---\n"
    "# Relay design\n\nThe relay links the ground station to the orbit. See [[design/history]] for the past.\n\n"
    "## Why relays\n\nThe relay exists because of the zephyr constraint on direct links.\n"
)
MD_HISTORY = "# Relay history\n\nThe first [relay](relay.md) flew in 2019.\n"


def _cooling_guide(document: Any) -> None:
    document.add_heading("Cooling Guide", level=1)  # paragraph 1
    document.add_paragraph("Flush the condenser every week before the night shift.")  # paragraph 2
    document.add_heading("Temperature limits", level=2)  # paragraph 3
    table = document.add_table(rows=3, cols=2)  # table 1
    for row, (component, limit) in enumerate(
        [("Component", "Max temperature"), ("Quasarpump", "85 C"), ("Fan", "60 C")]
    ):
        table.cell(row, 0).text = component
        table.cell(row, 1).text = limit
    document.add_paragraph("Call the facilities desk for repairs.")  # paragraph 4


def text_file(filename: str, content: str) -> dict[str, str]:
    """A raw/write entry for a text file."""
    return {"filename": filename, "content": content, "encoding": "utf-8"}


def binary_file(filename: str, data: bytes) -> dict[str, str]:
    """A raw/write entry for a PDF or DOCX (base64)."""
    return {"filename": filename, "content": base64.b64encode(data).decode("ascii"), "encoding": "base64"}


def fixture_files() -> list[dict[str, str]]:
    """Every file of the authored fixture wiki (Markdown and index.json), by relative path."""
    return [
        text_file(p.relative_to(FIXTURE_WIKI).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(FIXTURE_WIKI.rglob("*"))
        if p.is_file()
    ]


def corpus_files(workdir: Path) -> list[dict[str, str]]:
    """Markdown (two linked pages) + a 3-page PDF + a DOCX with headings, paragraphs and a table."""
    docx = make_docx(workdir / "cooling-guide.docx", _cooling_guide).read_bytes()
    return [
        text_file(MD_NAME, MD_RELAY),
        text_file("design/history.md", MD_HISTORY),
        binary_file(PDF_NAME, make_pdf(list(PDF_PAGES))),
        binary_file(DOCX_NAME, docx),
    ]


# -- HTTP ---------------------------------------------------------------------------------------------------
@dataclass
class WikiApi:
    """POSTs with one fixed header set to `base` + path (a TestClient ignores the host; a socket client uses it)."""

    http: httpx.Client
    headers: dict[str, str]
    base: str = ""

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.http.post(self.base + path, json=body, headers=self.headers)

    def ok(self, path: str, body: Any, status: int = 200) -> Any:
        """A success envelope with this HTTP status; returns `data`."""
        response = self.post(path, body)
        envelope = response.json()
        assert response.status_code == status and envelope["code"] == 0, (path, response.status_code, envelope)
        assert envelope["message"] == "ok"
        return envelope["data"]

    def fails(self, path: str, body: Any, code: int) -> dict[str, Any]:
        """An error envelope with this code and HTTP status; returns the envelope."""
        response = self.post(path, body)
        envelope = response.json()
        assert response.status_code == code and envelope["code"] == code, (path, response.status_code, envelope)
        return envelope

    # -- wikis --
    def create(self, team_id: str, name: str, **extra: Any) -> dict[str, Any]:
        return self.ok("/v3/wiki/create", {"team_id": team_id, "name": name, **extra}, status=201)

    def upload(self, team_id: str, wiki_id: str, files: Sequence[Mapping[str, str]]) -> None:
        for i in range(0, len(files), RAW_WRITE_BATCH):
            batch = list(files[i : i + RAW_WRITE_BATCH])
            self.ok("/v3/wiki/raw/write", {"team_id": team_id, "wiki_id": wiki_id, "files": batch})

    def ingest(self, wiki_id: str) -> dict[str, Any]:
        """Build now (`wait: true`); returns the wiki detail with the build report."""
        return self.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True})

    def get(self, wiki_id: str) -> dict[str, Any]:
        return self.ok("/v3/wiki/get", {"wiki_id": wiki_id})

    def make(self, team_id: str, name: str, files: Sequence[Mapping[str, str]], **extra: Any) -> str:
        """A wiki with these sources, built and ready; returns its id."""
        wiki_id = self.create(team_id, name, **extra)["wiki_id"]
        self.upload(team_id, wiki_id, files)
        built = self.ingest(wiki_id)
        assert built["status"] == "ready", built
        return str(wiki_id)

    # -- tools --
    def tools(self, knowledge_id: str, **extra: Any) -> dict[str, Any]:
        return self.ok("/v3/tools/list", {"knowledge_id": knowledge_id, **extra})

    def call(self, knowledge_id: str, tool: str, params: Any = None) -> dict[str, Any]:
        body = {"knowledge_id": knowledge_id, "tool_name": tool, "params": {} if params is None else params}
        return self.ok("/v3/tools/call", body)

    def call_fails(self, knowledge_id: str, tool: str, params: Any, code: int) -> str:
        """tools/call refused with this code; returns the message."""
        body = {"knowledge_id": knowledge_id, "tool_name": tool, "params": params}
        return str(self.fails("/v3/tools/call", body, code)["message"])

    def block(self, team_id: str, **extra: Any) -> dict[str, Any]:
        return self.ok("/v3/knowledge/tools-block", {"team_id": team_id, **extra})


# -- the <knowledge_tools> block, read as an agent reads it ---------------------------------------------------
_TAG = re.compile(r"<knowledge (?P<attrs>[^<>]*?) />")
_ATTR = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Recipe:
    """One curl recipe: its URL template and its headers (name lower-cased → value, `${VAR}` expanded)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


def knowledge_tags(text: str) -> list[dict[str, str]]:
    """The attributes of every `<knowledge …/>` tag, XML entities decoded."""
    entities = {"&quot;": '"', "&lt;": "<", "&gt;": ">", "&amp;": "&"}
    tags = []
    for match in _TAG.finditer(text):
        attrs = {}
        for name, value in _ATTR.findall(match.group("attrs")):
            attrs[name] = re.sub(r"&(quot|lt|gt|amp);", lambda m: entities[m.group(0)], value)
        tags.append(attrs)
    return tags


def sh_words(line: str, env: Mapping[str, str]) -> list[str]:
    """The words of one shell command line, as POSIX sh makes them for the recipes.

    Single quotes are literal, double quotes expand `${VAR}` from `env` (an unset one is a KeyError: the block
    asked for a variable the agent was not told to set), a backslash escapes one character, and adjacent
    quoted parts join into one word (`'it'"'"'s'` is `it's`).
    """
    words: list[str] = []
    word: list[str] | None = None
    i = 0
    while i < len(line):
        c = line[i]
        if c in " \t":
            if word is not None:
                words.append("".join(word))
                word = None
            i += 1
            continue
        word = [] if word is None else word
        if c == "'":
            end = line.index("'", i + 1)
            word.append(line[i + 1 : end])
        elif c == '"':
            end = line.index('"', i + 1)  # the recipes never escape a quote inside double quotes
            word.append(Template(line[i + 1 : end]).substitute(env))
        elif c == "\\":
            end = i + 1
            word.append(line[end : end + 1])
        else:
            assert c != "$", f"an unquoted expansion in the recipe: {line!r}"
            end = i
            word.append(c)
        i = end + 1
    if word is not None:
        words.append("".join(word))
    return words


def recipe(text: str, step: int, env: Mapping[str, str]) -> Recipe:
    """The curl recipe of `### Step <n>`: the URL template, each `-H` header and the `-d` body."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"### Step {step}"))
    curl = next(i for i in range(start, len(lines)) if lines[i].startswith("curl "))
    words = sh_words(lines[curl].removesuffix(" \\"), env)
    # `-sS`, never `-k`: the agent verifies TLS before it sends its key.
    assert words[:4] == ["curl", "-sS", "-X", "POST"], lines[curl]
    out = Recipe(url=words[4])
    for line in lines[curl + 1 :]:
        assert line.startswith("  -"), f"the recipe ended without a -d line: {line!r}"
        if line.startswith("  -d "):
            out.body = line[len("  -d ") :]
            return out
        assert line.startswith("  -H ") and line.endswith(" \\"), line
        (flag, header) = sh_words(line.removesuffix(" \\"), env)
        assert flag == "-H"
        name, sep, value = header.partition(":")
        assert sep, f"not a header: {header!r}"
        out.headers[name.strip().lower()] = value.strip()
    raise AssertionError("no -d line")


def resolve(url_template: str, resource_url: str) -> str:
    """`<url>/tools/list` with the resource's url put in, as the block tells the agent to do."""
    assert url_template.startswith("<url>/"), url_template
    return resource_url + url_template[len("<url>") :]


__all__ = [
    "CJK",
    "DOCX_NAME",
    "DOCX_PARAGRAPH_FACT",
    "DOCX_TABLE_FACT",
    "FIXTURE_WIKI",
    "MD_FACT",
    "MD_HISTORY",
    "MD_NAME",
    "MD_RELAY",
    "PDF_FACT",
    "PDF_NAME",
    "PDF_PAGES",
    "WIKI_TOOLS",
    "Recipe",
    "WikiApi",
    "binary_file",
    "corpus_files",
    "fixture_files",
    "knowledge_tags",
    "recipe",
    "resolve",
    "sh_words",
    "text_file",
]
