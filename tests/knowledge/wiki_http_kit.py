"""Helpers for the `/v3/wiki/*` HTTP tests (tests/knowledge/test_wiki_http.py).

Everything goes through the real app (tests/conftest.py `build_gateway`): `WikiHttp` sends a route's
body with the gateway key and a service id and checks the envelope; the file helpers look at what a
wiki left under `<data_dir>/knowledge/`; `BuildGate` holds builds at their start so a test can see a
wiki `processing` (and a second one `pending` behind it) without sleeping.
"""

from __future__ import annotations

import base64
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub.knowledge.wiki.service import WikiService
from tests.knowledge.knowledge_http import KnowledgeHttp
from tests.knowledge.test_wiki_sources import make_docx, make_pdf

SERVICE = "svc-a"
OTHER_SERVICE = "svc-b"
TEAM = "team-wiki"
OTHER_TEAM = "team-other"
FIXTURE_WIKI = Path(__file__).parent / "fixtures" / "wiki"
WIKI_ID = r"^wiki-[0-9a-z]{8}$"
# The reference's WikiDetail plus memhub's additions.
DETAIL_FIELDS = {
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
    "last_sync_at",
    "created_at",
    "updated_at",
}
REPORT_FIELDS = {"added", "changed", "unchanged", "removed", "errors", "pages", "index"}
RAW_ITEM_FIELDS = {
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
# The fixture wiki's pages (every Markdown file; index.json files are the index, not pages).
FIXTURE_PAGES = sorted(p.relative_to(FIXTURE_WIKI).as_posix()[: -len(".md")] for p in FIXTURE_WIKI.rglob("*.md"))
Files = Mapping[str, str | bytes]


def entry(filename: str, content: str | bytes) -> dict[str, str]:
    """A raw/write file entry: text as utf-8, bytes (PDF, DOCX) base64-encoded."""
    if isinstance(content, bytes):
        return {"filename": filename, "content": base64.b64encode(content).decode("ascii"), "encoding": "base64"}
    return {"filename": filename, "content": content}


def pdf(*pages: str) -> bytes:
    """A valid PDF with one text line per page."""
    return make_pdf(list(pages))


def docx(build: Callable[[Any], None] | None = None) -> bytes:
    """DOCX bytes built by python-docx (`build(document)` adds content; None → an empty document)."""
    with tempfile.TemporaryDirectory() as tmp:
        return make_docx(Path(tmp) / "doc.docx", build).read_bytes()


def ops_guide(document: Any) -> None:
    """A DOCX: a heading and one paragraph."""
    document.add_heading("Operations Guide", level=1)
    document.add_paragraph("Rotate the API keys every 90 days.")


def fixture_files() -> dict[str, str]:
    """The fixture wiki (Markdown and authored index.json files) by relative path."""
    return {
        p.relative_to(FIXTURE_WIKI).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(FIXTURE_WIKI.rglob("*"))
        if p.is_file()
    }


@dataclass
class WikiHttp(KnowledgeHttp):
    """`/v3/wiki/*` over the gateway key, for one service id and team by default."""

    service: str = SERVICE
    team: str = TEAM

    @property
    def wikis(self) -> WikiService:
        """The app's wiki service (to wait for background builds)."""
        return self.gw.client.app.state.knowledge.wikis  # type: ignore[attr-defined,no-any-return]

    def wait(self) -> None:
        """Block until every queued build has finished."""
        self.wikis.wait_idle(timeout=120)

    # -- shortcuts ---------------------------------------------------------------------------------------

    def create(self, name: str, *, team: str | None = None, **fields: Any) -> str:
        """A new wiki (201); its id."""
        data = self.ok("wiki/create", {"team_id": team or self.team, "name": name, **fields}, status=201)
        return str(data["wiki_id"])

    def get(self, wiki_id: str) -> dict[str, Any]:
        """The wiki's detail."""
        return dict(self.ok("wiki/get", {"wiki_id": wiki_id}))

    def write(self, wiki_id: str, files: Files, *, team: str | None = None) -> Any:
        """raw/write these files (≤10 per call)."""
        entries = [entry(name, content) for name, content in files.items()]
        return self.ok("wiki/raw/write", {"team_id": team or self.team, "wiki_id": wiki_id, "files": entries})

    def write_all(self, wiki_id: str, files: Files) -> None:
        """raw/write any number of files, 10 per call."""
        items = list(files.items())
        for start in range(0, len(items), 10):
            self.write(wiki_id, dict(items[start : start + 10]))

    def ingest(self, wiki_id: str) -> dict[str, Any]:
        """Build now (`wait: true`); the detail with its `report`."""
        return dict(self.ok("wiki/ingest", {"wiki_id": wiki_id, "wait": True}))

    def built(self, name: str, files: Files) -> str:
        """A wiki made from these files and built once; its id."""
        wiki_id = self.create(name)
        self.write_all(wiki_id, files)
        detail = self.ingest(wiki_id)
        assert detail["status"] == "ready", detail
        return wiki_id

    def raw_ls(self, wiki_id: str) -> dict[str, dict[str, Any]]:
        """raw/ls items by filename."""
        return {item["filename"]: item for item in self.ok("wiki/raw/ls", {"wiki_id": wiki_id})["items"]}

    def page_ids(self, wiki_id: str) -> list[str]:
        """Ids of the pages the wiki serves."""
        return [item["id"] for item in self.ok("wiki/page/ls", {"wiki_id": wiki_id})["items"]]

    def read_page(self, wiki_id: str, ref: str) -> dict[str, Any]:
        """page/read of one ref: `{ref, content}` or `{ref, not_found: true}`."""
        (item,) = self.ok("wiki/page/read", {"wiki_id": wiki_id, "refs": [ref]})["items"]
        return dict(item)

    # -- files on disk -------------------------------------------------------------------------------------

    @property
    def knowledge_root(self) -> Path:
        """`<data_dir>/knowledge`."""
        return self.gw.data_dir / "knowledge"

    def wiki_dir(self, wiki_id: str, service: str | None = None) -> Path:
        """`<data_dir>/knowledge/<service, encoded>/<wiki id>`, as the app's wiki storage names it."""
        return self.wikis.files.wiki_dir(service or self.service, wiki_id)

    def raw_files(self, wiki_id: str) -> dict[str, bytes]:
        """The uploaded files on disk by relative name."""
        raw = self.wiki_dir(wiki_id) / "raw"
        if not raw.is_dir():
            return {}
        return {p.relative_to(raw).as_posix(): p.read_bytes() for p in sorted(raw.rglob("*")) if p.is_file()}

    def state(self, wiki_id: str) -> tuple[dict[str, dict[str, Any]], dict[str, bytes]]:
        """raw/ls and the raw files on disk: what a refused write must leave unchanged."""
        return self.raw_ls(wiki_id), self.raw_files(wiki_id)


class BuildGate:
    """Stands in for `build_generation`: each build signals `entered`, then waits for `release`."""

    def __init__(self, build: Callable[..., Any]) -> None:
        self._build = build
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        self.release.wait(timeout=120)
        return self._build(*args, **kwargs)


def ids_of(items: Iterable[Mapping[str, Any]], key: str = "id") -> list[str]:
    """One field of each item, in order."""
    return [str(item[key]) for item in items]
