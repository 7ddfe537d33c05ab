"""The wiki knowledge service: wikis of a team, their source files and pages, and reads through snapshots.

Lifecycle: `draft` (created) → `pending` (ingest queued) → `processing` (building) → `ready` | `failed`.
Builds run in the background and switch generations blue/green (memhub.knowledge.wiki.builds); until a
build is current, and after a failed one, reads keep using the last good generation and say
`stale: true`. A wiki that never built has nothing to serve, and says so, instead of answering with an
empty success.

Authorization (memhub.knowledge.access, as for every kind): the gateway key acts for the whole tenant; a
user key must belong to an active member of the wiki's team (to anyone else the wiki does not exist).
Deleting needs the wiki's owner, a team admin or a system admin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from memhub.errors import BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge
from memhub.knowledge.access import gated
from memhub.knowledge.lifecycle import BUSY_STATUSES, busy, stale
from memhub.knowledge.service import ResourceConfig, ResourceService
from memhub.knowledge.tools import tool_error
from memhub.knowledge.wiki.builds import IndexMode, WikiBuilds, register_wiki
from memhub.knowledge.wiki.extract_cache import ExtractionCache
from memhub.knowledge.wiki.kind import WIKI
from memhub.knowledge.wiki.pages import page_file, page_id
from memhub.knowledge.wiki.snapshot import Conversation, Rescore, WikiSnapshot
from memhub.knowledge.wiki.snapshot_cache import SnapshotCache
from memhub.knowledge.wiki.sourcefiles import (
    BINARY_FILE_MAX,
    PAGE_WRITE_MAX,
    TEXT_FILE_MAX,
    WRITE_FILES_MAX,
    WRITE_TOTAL_MAX,
    RawFile,
    decode_upload,
    page_ref,
    read_source,
    source_root,
    source_view,
    upsert_source,
    with_locked_front_matter,
)
from memhub.knowledge.wiki.sources import source_kind
from memhub.knowledge.wiki.sourcetree import SourceTree
from memhub.knowledge.wiki.storage import WikiFiles, filename_problem
from memhub.llm.client import ChatClient
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaWriter

WIKI_ID_RE = WIKI.id_re
SOURCE_HITS = 10


@dataclass(frozen=True, slots=True)
class WikiConfig(ResourceConfig):
    """Service settings: where wikis live, the URL agents reach them at, allowed local source roots, the build
    queue, and the LLM of `index: "ai"` ingests."""

    chat: ChatClient | None = None  # shared with the pipeline; the composition root closes it


SnapshotTool = Callable[[WikiSnapshot, dict[str, Any]], dict[str, Any] | None]

# Tools answered from the built index; list_raw / read_raw / get_info work without one.
_SNAPSHOT_TOOLS: dict[str, SnapshotTool] = {
    "search": lambda s, p: s.search(p["query"], p["limit"]),
    "list_pages": lambda s, p: s.list_pages(),
    "read_page": lambda s, p: s.read_pages(p["refs"]),
    "get_graph": lambda s, p: s.graph(),
    "list_themes": lambda s, p: s.list_themes(),
    "get_index": lambda s, p: s.get_index(p.get("theme")),
    "docs_for_paths": lambda s, p: s.docs_for_paths(p["paths"]),
    "search_sources": lambda s, p: s.search_sources(p["keywords"], SOURCE_HITS),
}


@dataclass
class WikiService(ResourceService):
    """Wikis of every tenant of one data dir."""

    KIND = WIKI
    ROOTS_SETTING = "MEMHUB_WIKI_SOURCE_ROOTS"

    config: WikiConfig
    files: WikiFiles = field(init=False)
    snapshots: SnapshotCache = field(init=False)
    builds: WikiBuilds = field(init=False)

    def __post_init__(self) -> None:
        self.files = WikiFiles(self.config.files_root)
        self.snapshots = SnapshotCache(self.files, self.store)
        self.builds = WikiBuilds(
            store=self.store,
            files=self.files,
            snapshots=self.snapshots,
            public_url=self.config.public_url,
            limits=self.config.builds,
            chat=self.config.chat,
            source_roots=self.config.source_roots,
        )

    # -- rows, views and access ------------------------------------------------------------------

    def detail(self, row: Row) -> Row:
        """WikiDetail on the wire (`version` is a string, as in the reference), plus memhub's fields."""
        return {
            "wiki_id": row["wiki_id"],
            "team_id": row["team_id"],
            "name": row["name"],
            "service_url": self.config.public_url,
            "summary": row["summary"] if row["summary"] is not None else row["auto_summary"],
            "status": row["status"],
            "internal_status": row["internal_status"],
            "sync_error": row["sync_error"],
            "version": str(row["version"]),
            "owner_user_id": row["owner_user_id"],
            "page_count": row["page_count"],
            "source_count": row["source_count"],
            "source_path": row["source_path"],
            "stale": stale(row),
            "last_sync_at": row["last_sync_at"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }

    # -- management ------------------------------------------------------------------------------------

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> tuple[Row, bool]:
        """wiki/create: idempotent on (team, name): (detail, True) when new, (existing detail, False) otherwise."""
        team_id, name = fields["team_id"], fields["name"]
        user_id = fields.get("user_id")
        if gated(caller) and user_id is not None and user_id != caller.user_id:
            raise Forbidden("user_id: does not match the caller")
        source_path = self._local_source(fields["source_path"]) if fields.get("source_path") else None
        with self.store.writing(caller.service_id) as w:
            self._team_guard(w, caller, team_id)
            if w.get(MetaKind.TEAM, team_id) is None and caller.user_id is not None:
                raise NotFound(f"team not found: {team_id}")
            existing = w.find(MetaKind.WIKI, {"team_id": team_id, "name": name}, limit=1)
            if existing:
                return self.detail(existing[0]), False
            now = now_iso()
            wiki_id = self._new_id(w)
            row = {
                "wiki_id": wiki_id,
                "team_id": team_id,
                "name": name,
                "summary": fields.get("summary"),
                "auto_summary": None,
                "status": "draft",
                "internal_status": None,
                "sync_error": None,
                "version": 0,
                "generation": 0,
                "build_seq": 0,
                "owner_user_id": caller.user_id or user_id,
                "agent_id": fields.get("agent_id"),
                "task_id": fields.get("task_id"),
                "source_path": source_path,
                "page_count": 0,
                "source_count": 0,
                "last_sync_at": None,
                "created_at": now,
                "updated_at": now,
            }
            w.insert(MetaKind.WIKI, row)
            audit.record(w, caller, "wiki/create", [wiki_id], {"team_id": team_id, "source_path": source_path})
        # The directory marks the tenant as having wikis, which is how `resume` finds interrupted builds.
        self.files.wiki_dir(caller.service_id, wiki_id).mkdir(parents=True, exist_ok=True)
        return self.detail(row), True

    def update_meta(self, caller: Caller, wiki_id: str, changes: Mapping[str, Any]) -> Row:
        """wiki/update-meta: name and/or summary (the registry entry follows)."""
        with self.store.writing(caller.service_id) as w:
            row = self._row(w, caller, wiki_id)
            patch = {k: v for k, v in changes.items() if k in ("name", "summary")}
            if "name" in patch and patch["name"] is None:
                raise BadRequest("name: must be a non-empty string, not null (send summary: null to clear the summary)")
            renamed = "name" in patch and patch["name"] != row["name"]
            if renamed and w.find(MetaKind.WIKI, {"team_id": row["team_id"], "name": patch["name"]}, limit=1):
                raise Conflict(f"name: a wiki named {patch['name']!r} already exists in this team")
            row = audit.changed(w, caller, MetaKind.WIKI, wiki_id, patch, "wiki/update-meta")
            if w.get(MetaKind.KNOWLEDGE, wiki_id) is not None:
                register_wiki(w, row, self.config.public_url)
        return self.detail(row)

    def _drop(self, w: MetaWriter, resource_id: str) -> None:
        w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": resource_id})
        super()._drop(w, resource_id)

    def _forget(self, service_id: str, resource_id: str) -> None:
        self.snapshots.forget(service_id, resource_id)

    # -- source files ------------------------------------------------------------------------------------

    def raw_ls(self, caller: Caller, wiki_id: str) -> Row:
        """Source files with size and status; works whatever the wiki's status."""
        with self.store.reading(caller.service_id) as r:
            self._row(r, caller, wiki_id)
            rows = r.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id}, order_by=("filename",))
        return {"items": [source_view(x) for x in rows]}

    def raw_read(self, caller: Caller, wiki_id: str, filenames: Sequence[str]) -> Row:
        """The text of source files (PDF and DOCX as their extracted text, with page/paragraph markers)."""
        row = self.row(caller, wiki_id)
        tree = SourceTree(source_root(self.files, caller.service_id, row))
        cache = ExtractionCache(self.files.extracted_dir(caller.service_id, wiki_id))
        items: list[Row] = []
        for name in filenames:
            if filename_problem(name) or not tree.is_file(name):
                items.append({"filename": name, "not_found": True})
                continue
            # The current generation already holds the text of every document it was built from.
            items.append(read_source(name, tree, cache, lambda: self.snapshot_of(caller.service_id, row)))
        return {"items": items}

    def raw_write(self, caller: Caller, team_id: str, wiki_id: str, files: Sequence[RawFile]) -> Row:
        """Store uploaded source files (≤10 per call, text ≤512 KB, PDF/DOCX ≤5 MB, ≤5 MB in all)."""
        if not files or len(files) > WRITE_FILES_MAX:
            raise BadRequest(f"files: must hold 1 to {WRITE_FILES_MAX} files")
        total = 0
        for i, f in enumerate(files):
            problem = filename_problem(f.filename)
            if problem:
                raise BadRequest(f"files[{i}].filename: {problem}")
            limit = BINARY_FILE_MAX if source_kind(f.filename) in ("pdf", "docx") else TEXT_FILE_MAX
            if len(f.data) > limit:
                raise PayloadTooLarge(f"files[{i}]: {f.filename} is {len(f.data)} bytes; the limit is {limit} bytes")
            total += len(f.data)
        if total > WRITE_TOTAL_MAX:
            raise PayloadTooLarge(f"files: {total} bytes in all; the limit is {WRITE_TOTAL_MAX} bytes per call")
        if len({f.filename for f in files}) != len(files):
            raise BadRequest("files: the same filename appears twice")
        with self.store.writing(caller.service_id) as w:
            self._writable(w, caller, team_id, wiki_id)
            # Files are written inside the transaction: if any write fails, no row says it exists.
            now = now_iso()
            for f in files:
                self.files.write_raw(caller.service_id, wiki_id, f.filename, f.data)
                upsert_source(w, wiki_id, f.filename, f.data, caller, now)
            audit.record(w, caller, "wiki/raw/write", [wiki_id], {"filenames": [f.filename for f in files]})
            w.update(MetaKind.WIKI, wiki_id, {"updated_at": now})
        return {"items": [{"filename": f.filename, "size": len(f.data)} for f in files]}

    def _writable(self, w: MetaWriter, caller: Caller, team_id: str | None, wiki_id: str) -> Row:
        row = self._row(w, caller, wiki_id)
        if team_id is not None and row["team_id"] != team_id:
            raise WIKI.not_found(wiki_id)
        if row["source_path"]:
            raise BadRequest(f"wiki_id: {wiki_id} reads its sources from a local folder; edit the files there")
        if row["status"] in BUSY_STATUSES:
            raise busy(row)
        return row

    def raw_rm(self, caller: Caller, team_id: str, wiki_id: str, filenames: Sequence[str]) -> Row:
        """Delete source files; their pages go at the rebuild this queues (the last good index serves meanwhile)."""
        with ExitStack() as stack:
            with self.store.writing(caller.service_id) as w:
                row = self._writable(w, caller, team_id, wiki_id)
                place = stack.enter_context(self.builds.reserve(caller.service_id))  # 429 here deletes nothing
                deleted: list[str] = []
                for name in dict.fromkeys(filenames):
                    if filename_problem(name) is None and self.files.remove_raw(caller.service_id, wiki_id, name):
                        w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": name})
                        deleted.append(name)
                audit.record(w, caller, "wiki/raw/rm", [wiki_id], {"filenames": deleted})
                queued = self.builds.queue(w, row) if deleted else None
            if queued:
                self.builds.submit(queued, place)
        pages = [page_id(page_file(n)) for n in deleted if not n.endswith("index.json")]
        return {"deleted_files": deleted, "deleted_pages": pages, "rewritten_pages": []}

    # -- pages -------------------------------------------------------------------------------------------

    def page_write(self, caller: Caller, team_id: str, wiki_id: str, pages: Sequence[tuple[str, str]]) -> Row:
        """Write hand-made pages: stored as Markdown sources marked `locked: true`, then rebuilt into the wiki."""
        if not pages or len(pages) > PAGE_WRITE_MAX:
            raise BadRequest(f"pages: must hold 1 to {PAGE_WRITE_MAX} pages")
        files: list[RawFile] = []
        for i, (ref, content) in enumerate(pages):
            pid = page_ref(ref, f"pages[{i}].ref")
            data = with_locked_front_matter(content).encode("utf-8")
            if len(data) > TEXT_FILE_MAX:
                raise PayloadTooLarge(f"pages[{i}].content: {len(data)} bytes; the limit is {TEXT_FILE_MAX} bytes")
            files.append(RawFile(pid + ".md", data))
        with ExitStack() as stack:
            with self.store.writing(caller.service_id) as w:
                row = self._writable(w, caller, team_id, wiki_id)
                place = stack.enter_context(self.builds.reserve(caller.service_id))  # 429 here writes nothing
                now = now_iso()
                for f in files:
                    self.files.write_raw(caller.service_id, wiki_id, f.filename, f.data)
                    upsert_source(w, wiki_id, f.filename, f.data, caller, now)
                audit.record(w, caller, "wiki/page/write", [wiki_id], {"files": [f.filename for f in files]})
                job = self.builds.queue(w, row, force=True)
            if job:
                self.builds.submit(job, place)
        return {"items": [{"ref": page_id(f.filename), "size": len(f.data)} for f in files], "status": "pending"}

    def page_rm(self, caller: Caller, team_id: str, wiki_id: str, refs: Sequence[str]) -> Row:
        """Delete pages by deleting the source files they were made from."""
        snapshot = self._snapshot_or_none(caller, wiki_id)
        names: list[str] = []
        for i, ref in enumerate(refs):
            pid = page_ref(ref, f"refs[{i}]")
            page = snapshot.pages.get(pid) if snapshot else None
            names.append(page.source if page else pid + ".md")
        result = self.raw_rm(caller, team_id, wiki_id, names)
        return {"deleted_pages": result["deleted_pages"], "rewritten_files": []}

    # -- builds -------------------------------------------------------------------------------------------

    def ingest(
        self, caller: Caller, wiki_id: str, *, wait: bool = False, index_mode: IndexMode = "rules"
    ) -> tuple[Row, bool]:
        """Queue a rebuild (or run it now with `wait`); (result, finished). 409 busy while one is queued or running.

        `index_mode="ai"` has the configured LLM write the summaries and tags authors left out.
        """
        if index_mode == "ai" and self.config.chat is None:
            raise BadRequest("index: 'ai' needs an LLM (set MEMHUB_LLM_BASE_URL and MEMHUB_LLM_MODEL)")
        with ExitStack() as stack:
            with self.store.writing(caller.service_id) as w:
                row = self._row(w, caller, wiki_id)
                if row["status"] in BUSY_STATUSES:
                    raise busy(row)
                if not row["source_path"] and w.count(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id}) == 0:
                    raise BadRequest(f"wiki_id: {wiki_id} has no source files; upload some with raw/write first")
                place = stack.enter_context(self.builds.reserve(caller.service_id))  # 429 here writes nothing
                job = self.builds.queue(w, row, force=True, index_mode=index_mode)
                seq = job.seq if job else None
                audit.record(w, caller, "wiki/ingest", [wiki_id], {"seq": seq, "index": index_mode})
            assert job is not None
            built = self.builds.submit(job, place)
        if not wait:
            return {"wiki_id": wiki_id, "status": "pending"}, False
        report = built.result()
        detail = self.get(caller, wiki_id)
        return {**detail, "report": report.view() if report else None}, True

    # -- reads ---------------------------------------------------------------------------------------------

    def snapshot_of(self, service_id: str, row: Row) -> WikiSnapshot | None:
        """The wiki's current generation, loaded (and cached) on first use; None before the first build."""
        return self.snapshots.snapshot_of(service_id, row)

    def _snapshot_or_none(self, caller: Caller, wiki_id: str) -> WikiSnapshot | None:
        return self.snapshot_of(caller.service_id, self.row(caller, wiki_id))

    def read(self, caller: Caller, wiki_id: str) -> tuple[Row, WikiSnapshot | None]:
        """The wiki's row and its servable snapshot (None when it never built)."""
        row = self.row(caller, wiki_id)
        return row, self.snapshot_of(caller.service_id, row)

    def retrieve(
        self,
        caller: Caller,
        wiki_id: str,
        question: str,
        paths: Sequence[str],
        conversation: Conversation,
        rescore: Rescore = "none",
    ) -> Row:
        """The two-layer index retrieval walk: the capped knowledge block for one question."""
        row, snapshot = self.read(caller, wiki_id)
        if snapshot is None:
            raise Conflict(not_built_message(row), data={"status": row["status"], "step": row["internal_status"]})
        found = snapshot.retrieve(question, paths=paths, conversation=conversation, rescore=rescore)
        return {**found, "stale": stale(row)}

    # -- tools ---------------------------------------------------------------------------------------------

    def tool_view(self, row: Row) -> Row:
        """The wiki as tools/list shows it."""
        detail = self.detail(row)
        return {k: detail[k] for k in ("name", "summary", "status", "stale")}

    def call_tool(self, caller: Caller, row: Row, tool_name: str, params: dict[str, Any]) -> Row:
        """One wiki tool (params already checked); a wiki that never built answers the index tools with a
        tool error naming its status."""
        wiki_id = row["wiki_id"]
        if tool_name == "get_info":
            return {**self.detail(row), "service_id": caller.service_id, "version": row["version"]}
        if tool_name == "list_raw":
            return self.raw_ls(caller, wiki_id)
        if tool_name == "read_raw":
            return self.raw_read(caller, wiki_id, params["filenames"])
        snapshot = self.snapshot_of(caller.service_id, row)
        if snapshot is None:
            return tool_error(not_built_message(row), status=row["status"])
        data = _SNAPSHOT_TOOLS[tool_name](snapshot, params)
        if data is None:  # get_index of a theme the index does not have
            return tool_error(f"unknown theme {params.get('theme')!r}; call list_themes for the theme ids")
        return {**data, "stale": stale(row)}


def not_built_message(row: Row) -> str:
    """Why a wiki that never built cannot answer, and what to do about it."""
    if row["status"] in BUSY_STATUSES:
        return f"wiki {row['wiki_id']} is building its first index (status {row['status']}); retry shortly"
    if row["status"] == "failed":
        return f"wiki {row['wiki_id']} has no index: the last build failed: {row['sync_error']}"
    return f"wiki {row['wiki_id']} has no index yet: upload sources with raw/write, then call ingest"


__all__ = ["RawFile", "WikiConfig", "WikiService", "decode_upload", "not_built_message", "stale"]
