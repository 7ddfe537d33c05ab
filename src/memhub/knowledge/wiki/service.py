"""The wiki knowledge service: wikis of a team, their source files, builds, and reads through snapshots.

Lifecycle: `draft` (created) → `pending` (ingest queued) → `processing` (building) → `ready` | `failed`.
Builds are blue/green: a build writes a new generation directory, then one transaction points the
wiki at it, marks it ready and registers it in the knowledge registry (so a ready wiki is always
offered to agents). Until then, and after a failed build, reads keep using the last good generation
and say `stale: true`. A wiki that never built has nothing to serve, and says so, instead of
answering with an empty success.

Authorization: the gateway key acts for the whole tenant; a user key must belong to an active member
of the wiki's team (to anyone else the wiki does not exist). Deleting needs the wiki's owner, a team
admin or a system admin.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml

from memhub.errors import BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge
from memhub.knowledge.wiki.ai_index import llm_describer
from memhub.knowledge.wiki.build import BuildFailed, BuildReport, build_generation, source_statuses
from memhub.knowledge.wiki.index import IndexInvalid
from memhub.knowledge.wiki.pages import normalise_ref, page_file, page_id
from memhub.knowledge.wiki.snapshot import Conversation, WikiSnapshot
from memhub.knowledge.wiki.sources import (
    PathOutsideRoot,
    content_hash,
    decode_text,
    extract_bytes,
    safe_path,
    source_kind,
    split_front_matter,
)
from memhub.knowledge.wiki.storage import WikiFiles, filename_problem
from memhub.llm.client import ChatClient, LLMConfig
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.guards import membership
from memhub.meta.keys import random_base36
from memhub.meta.knowledge import register
from memhub.store.meta import MetaKind, MetaReader, MetaStore, MetaWriter, Row

log = logging.getLogger("memhub.wiki")

WIKI_ID_RE = re.compile(r"^wiki-[0-9a-z]{8}$")
BUSY_STATUSES = ("pending", "processing")
STATUSES = ("draft", "pending", "processing", "ready", "failed")
DELETE_MAX = 100
SYNC_ERROR_MAX = 500
# The reference's raw/write limits; PDF and DOCX files may be larger (they carry layout, not just text).
WRITE_FILES_MAX = 10
TEXT_FILE_MAX = 512 * 1024
BINARY_FILE_MAX = 5 * 1024 * 1024
WRITE_TOTAL_MAX = 5 * 1024 * 1024
PAGE_WRITE_MAX = 20
READ_MAX = 50
# Page names the reference reserves for its own structure files.
STRUCTURAL_PAGES = frozenset({"index", "schema", "purpose", "log", "overview"})
SNAPSHOTS_CACHED = 64
NOT_FOUND = "wiki not found"
IndexMode = Literal["rules", "ai"]


def wiki_not_found(wiki_id: str) -> NotFound:
    """The one answer for a wiki that is absent or belongs to a team the caller is not in."""
    return NotFound(f"{NOT_FOUND}: {wiki_id}")


def check_wiki_id(wiki_id: str, field_name: str = "wiki_id") -> None:
    """`wiki-` + 8 base36 characters, or 400."""
    if not WIKI_ID_RE.match(wiki_id):
        raise BadRequest(f"{field_name}: invalid wiki_id format (expected wiki- and 8 characters of [0-9a-z])")


def busy(row: Row) -> Conflict:
    """The reference's busy answer: 409 with the wiki's status and build step."""
    return Conflict("busy", data={"status": row["status"], "step": row.get("internal_status")})


def stale(row: Row) -> bool:
    """Whether reads are answered from an older generation than the sources (a build is queued, running or failed)."""
    return row["status"] != "ready" and row["generation"] > 0


@dataclass(frozen=True, slots=True)
class RawFile:
    """One file of a raw/write: its name and decoded bytes."""

    filename: str
    data: bytes


@dataclass(frozen=True, slots=True)
class WikiConfig:
    """Service settings: where wikis live, the URL agents reach them at, allowed local source roots."""

    files_root: Path
    public_url: str
    source_roots: tuple[Path, ...] = ()
    build_workers: int = 1
    llm: LLMConfig | None = None  # for `index: "ai"` ingests


@dataclass(frozen=True, slots=True)
class BuildJob:
    service_id: str
    wiki_id: str
    seq: int
    index_mode: IndexMode = "rules"


def _gated(caller: Caller) -> bool:
    """Membership rules apply to users that are not system admins; the gateway key acts for the tenant."""
    return caller.user_id is not None and not caller.is_system_admin


def _visible(r: MetaReader, caller: Caller, row: Row) -> bool:
    return not _gated(caller) or membership(r, row["team_id"], caller.user_id or "") is not None


def decode_upload(filename: str, content: str, encoding: str) -> bytes:
    """The bytes of an uploaded file; PDF and DOCX must come base64-encoded."""
    kind = source_kind(filename)
    if encoding == "base64":
        try:
            return base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"files: {filename}: content is not valid base64") from None
    if kind in ("pdf", "docx"):
        raise BadRequest(f"files: {filename}: {kind} files must be sent base64-encoded (encoding: base64)")
    return content.encode("utf-8")


@dataclass
class WikiService:
    """Wikis of every tenant of one data dir."""

    store: MetaStore
    config: WikiConfig
    files: WikiFiles = field(init=False)
    _snapshots: OrderedDict[tuple[str, str], WikiSnapshot] = field(init=False, default_factory=OrderedDict)
    _snapshot_lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _load_locks: dict[tuple[str, str], threading.Lock] = field(init=False, default_factory=dict)
    _executor: ThreadPoolExecutor | None = field(init=False, default=None)
    _futures: set[Future[None]] = field(init=False, default_factory=set)
    _closed: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.files = WikiFiles(self.config.files_root)

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

    def _row(self, r: MetaReader, caller: Caller, wiki_id: str) -> Row:
        check_wiki_id(wiki_id)
        row = r.get(MetaKind.WIKI, wiki_id)
        if row is None or not _visible(r, caller, row):
            raise wiki_not_found(wiki_id)
        return row

    def _team_guard(self, r: MetaReader, caller: Caller, team_id: str) -> None:
        if _gated(caller) and membership(r, team_id, caller.user_id or "") is None:
            raise Forbidden(f"not a member of team {team_id}")

    def row(self, caller: Caller, wiki_id: str) -> Row:
        """The wiki's row, if the caller may see it."""
        with self.store.reading(caller.service_id) as r:
            return self._row(r, caller, wiki_id)

    def _source_root(self, service_id: str, row: Row) -> Path:
        return Path(row["source_path"]) if row["source_path"] else self.files.raw_dir(service_id, row["wiki_id"])

    def _local_source(self, source_path: str) -> str:
        path = Path(source_path)
        if not path.is_absolute():
            raise BadRequest("source_path: must be an absolute path")
        resolved = path.resolve()
        if not any(resolved == root or root in resolved.parents for root in self.config.source_roots):
            raise Forbidden(
                "source_path: not under an allowed source root (set MEMHUB_WIKI_SOURCE_ROOTS to allow local folders)"
            )
        if not resolved.is_dir():
            raise BadRequest("source_path: not a directory")
        return str(resolved)

    # -- management ------------------------------------------------------------------------------------

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> tuple[Row, bool]:
        """wiki/create: idempotent on (team, name): (detail, True) when new, (existing detail, False) otherwise."""
        team_id, name = fields["team_id"], fields["name"]
        user_id = fields.get("user_id")
        if _gated(caller) and user_id is not None and user_id != caller.user_id:
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

    @staticmethod
    def _new_id(r: MetaReader) -> str:
        while True:
            wiki_id = "wiki-" + random_base36(8)
            if r.get(MetaKind.WIKI, wiki_id) is None:
                return wiki_id

    def list(self, caller: Caller, team_id: str, status: str | None, limit: int, offset: int) -> Row:
        """wiki/list: the team's wikis, newest first."""
        where: dict[str, Any] = {"team_id": team_id}
        if status is not None:
            where["status"] = status
        with self.store.reading(caller.service_id) as r:
            self._team_guard(r, caller, team_id)
            rows = r.find(MetaKind.WIKI, where, order_by=("-created_at", "wiki_id"), limit=limit, offset=offset)
            total = r.count(MetaKind.WIKI, where)
        return {"items": [self.detail(x) for x in rows], "total": total}

    def get(self, caller: Caller, wiki_id: str) -> Row:
        """wiki/get."""
        return self.detail(self.row(caller, wiki_id))

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
                self._register(w, row)
        return self.detail(row)

    def delete(self, caller: Caller, wiki_ids: Sequence[str]) -> Row:
        """wiki/delete: `{deleted_ids, failed:[{id, reason}]}`; files go after the commit."""
        ids = list(dict.fromkeys(wiki_ids))
        deleted: list[str] = []
        failed: list[Row] = []
        with self.store.writing(caller.service_id) as w:
            for wiki_id in ids:
                if not WIKI_ID_RE.match(wiki_id):
                    failed.append({"id": wiki_id, "reason": "invalid id"})
                    continue
                row = w.get(MetaKind.WIKI, wiki_id)
                if row is None or not _visible(w, caller, row):
                    failed.append({"id": wiki_id, "reason": "not found"})
                elif not self._may_delete(w, caller, row):
                    failed.append({"id": wiki_id, "reason": "forbidden"})
                else:
                    w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id})
                    w.delete(MetaKind.KNOWLEDGE, {"knowledge_id": wiki_id})
                    w.delete(MetaKind.WIKI, {"wiki_id": wiki_id})
                    deleted.append(wiki_id)
            if deleted:
                audit.record(w, caller, "wiki/delete", deleted, {"failed": failed})
        for wiki_id in deleted:
            self._forget(caller.service_id, wiki_id)
            self.files.remove_wiki(caller.service_id, wiki_id)
        return {"deleted_ids": deleted, "failed": failed}

    @staticmethod
    def _may_delete(r: MetaReader, caller: Caller, row: Row) -> bool:
        if not _gated(caller) or row["owner_user_id"] == caller.user_id:
            return True
        member = membership(r, row["team_id"], caller.user_id or "")
        return member is not None and member["role"] == "admin"

    # -- source files ------------------------------------------------------------------------------------

    def raw_ls(self, caller: Caller, wiki_id: str) -> Row:
        """Source files with size and status; works whatever the wiki's status."""
        with self.store.reading(caller.service_id) as r:
            self._row(r, caller, wiki_id)
            rows = r.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id}, order_by=("filename",))
        return {"items": [_source_view(x) for x in rows]}

    def raw_read(self, caller: Caller, wiki_id: str, filenames: Sequence[str]) -> Row:
        """The text of source files (PDF and DOCX as their extracted text, with page/paragraph markers)."""
        row = self.row(caller, wiki_id)
        root = self._source_root(caller.service_id, row)
        items: list[Row] = []
        for name in filenames:
            try:
                path = safe_path(root, name)
            except PathOutsideRoot:
                items.append({"filename": name, "not_found": True})
                continue
            if filename_problem(name) or not path.is_file():
                items.append({"filename": name, "not_found": True})
                continue
            items.append(_read_source(name, path))
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
                _upsert_source(w, wiki_id, f.filename, f.data, caller, now)
            audit.record(w, caller, "wiki/raw/write", [wiki_id], {"filenames": [f.filename for f in files]})
            w.update(MetaKind.WIKI, wiki_id, {"updated_at": now})
        return {"items": [{"filename": f.filename, "size": len(f.data)} for f in files]}

    def _writable(self, w: MetaWriter, caller: Caller, team_id: str | None, wiki_id: str) -> Row:
        row = self._row(w, caller, wiki_id)
        if team_id is not None and row["team_id"] != team_id:
            raise wiki_not_found(wiki_id)
        if row["source_path"]:
            raise BadRequest(f"wiki_id: {wiki_id} reads its sources from a local folder; edit the files there")
        if row["status"] in BUSY_STATUSES:
            raise busy(row)
        return row

    def raw_rm(self, caller: Caller, team_id: str, wiki_id: str, filenames: Sequence[str]) -> Row:
        """Delete source files; their pages go at the rebuild this queues (the last good index serves meanwhile)."""
        with self.store.writing(caller.service_id) as w:
            row = self._writable(w, caller, team_id, wiki_id)
            deleted: list[str] = []
            for name in dict.fromkeys(filenames):
                if filename_problem(name) is None and self.files.remove_raw(caller.service_id, wiki_id, name):
                    w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": name})
                    deleted.append(name)
            audit.record(w, caller, "wiki/raw/rm", [wiki_id], {"filenames": deleted})
            queued = self._queue_rebuild(w, row) if deleted else None
        pages = [page_id(page_file(n)) for n in deleted if not n.endswith("index.json")]
        if queued:
            self._submit(queued)
        return {"deleted_files": deleted, "deleted_pages": pages, "rewritten_pages": []}

    # -- pages -------------------------------------------------------------------------------------------

    def page_write(self, caller: Caller, team_id: str, wiki_id: str, pages: Sequence[tuple[str, str]]) -> Row:
        """Write hand-made pages: stored as Markdown sources marked `locked: true`, then rebuilt into the wiki."""
        if not pages or len(pages) > PAGE_WRITE_MAX:
            raise BadRequest(f"pages: must hold 1 to {PAGE_WRITE_MAX} pages")
        files: list[RawFile] = []
        for i, (ref, content) in enumerate(pages):
            pid = _page_ref(ref, f"pages[{i}].ref")
            data = _locked(content).encode("utf-8")
            if len(data) > TEXT_FILE_MAX:
                raise PayloadTooLarge(f"pages[{i}].content: {len(data)} bytes; the limit is {TEXT_FILE_MAX} bytes")
            files.append(RawFile(pid + ".md", data))
        with self.store.writing(caller.service_id) as w:
            row = self._writable(w, caller, team_id, wiki_id)
            now = now_iso()
            for f in files:
                self.files.write_raw(caller.service_id, wiki_id, f.filename, f.data)
                _upsert_source(w, wiki_id, f.filename, f.data, caller, now)
            audit.record(w, caller, "wiki/page/write", [wiki_id], {"files": [f.filename for f in files]})
            job = self._queue_rebuild(w, row, force=True)
        if job:
            self._submit(job)
        return {"items": [{"ref": page_id(f.filename), "size": len(f.data)} for f in files], "status": "pending"}

    def page_rm(self, caller: Caller, team_id: str, wiki_id: str, refs: Sequence[str]) -> Row:
        """Delete pages by deleting the source files they were made from."""
        snapshot = self._snapshot_or_none(caller, wiki_id)
        names: list[str] = []
        for i, ref in enumerate(refs):
            pid = _page_ref(ref, f"refs[{i}]")
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
        if index_mode == "ai" and self.config.llm is None:
            raise BadRequest("index: 'ai' needs an LLM (set MEMHUB_LLM_BASE_URL and MEMHUB_LLM_MODEL)")
        with self.store.writing(caller.service_id) as w:
            row = self._row(w, caller, wiki_id)
            if row["status"] in BUSY_STATUSES:
                raise busy(row)
            if not row["source_path"] and w.count(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id}) == 0:
                raise BadRequest(f"wiki_id: {wiki_id} has no source files; upload some with raw/write first")
            job = self._queue_rebuild(w, row, force=True, index_mode=index_mode)
            audit.record(w, caller, "wiki/ingest", [wiki_id], {"seq": job.seq if job else None, "index": index_mode})
        assert job is not None
        if not wait:
            self._submit(job)
            return {"wiki_id": wiki_id, "status": "pending"}, False
        report = self._build(job)
        detail = self.get(caller, wiki_id)
        return {**detail, "report": report.view() if report else None}, True

    def _queue_rebuild(
        self, w: MetaWriter, row: Row, *, force: bool = False, index_mode: IndexMode = "rules"
    ) -> BuildJob | None:
        if not force and row["generation"] == 0 and row["status"] == "draft":
            return None  # never ingested: the user ingests when the sources are complete
        seq = row["build_seq"] + 1
        w.update(
            MetaKind.WIKI,
            row["wiki_id"],
            {"status": "pending", "internal_status": None, "build_seq": seq, "updated_at": now_iso()},
        )
        return BuildJob(w.service_id, row["wiki_id"], seq, index_mode)

    def _submit(self, job: BuildJob) -> None:
        if self._closed:
            return  # shutting down: the row stays `pending` and is resumed at the next start
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.config.build_workers, thread_name_prefix="wiki-build")
        future = self._executor.submit(self._build, job)
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    def _set(self, job: BuildJob, changes: Row) -> Row | None:
        """Update the wiki if it still exists and no newer build was queued; the row after, or None."""
        with self.store.writing(job.service_id) as w:
            row = w.get(MetaKind.WIKI, job.wiki_id)
            if row is None or row["build_seq"] != job.seq:
                return None
            w.update(MetaKind.WIKI, job.wiki_id, {**changes, "updated_at": now_iso()})
            return w.get(MetaKind.WIKI, job.wiki_id)

    def _build(self, job: BuildJob) -> BuildReport | None:
        """Run one build; never raises (a failure is recorded on the wiki)."""
        row = self._set(job, {"status": "processing", "internal_status": "ingesting"})
        if row is None:
            return None
        target = self.files.generation_dir(job.service_id, job.wiki_id, job.seq)
        previous = (
            self.files.generation_dir(job.service_id, job.wiki_id, row["generation"]) if row["generation"] else None
        )
        client = ChatClient(self.config.llm) if job.index_mode == "ai" and self.config.llm else None
        try:
            describe = llm_describer(client) if client else None
            report = build_generation(self._source_root(job.service_id, row), target, previous, describe=describe)
            snapshot = WikiSnapshot(job.seq, target)  # loaded before the switch, so the first query is fast
        except BuildFailed as exc:
            self._fail(job, exc.reason)
            return None
        except Exception as exc:  # a bug or a disk error must end as `failed`, not as a wiki stuck in processing
            log.exception("wiki build %s/%s failed", job.service_id, job.wiki_id)
            self._fail(job, f"build failed: {type(exc).__name__}: {exc}")
            return None
        finally:
            if client is not None:
                client.close()
        if not self._commit(job, report, snapshot):
            self._discard(job)
            return None
        self.files.prune_generations(job.service_id, job.wiki_id, keep=job.seq)
        return report

    def _fail(self, job: BuildJob, reason: str) -> None:
        self._set(job, {"status": "failed", "internal_status": None, "sync_error": reason[:SYNC_ERROR_MAX]})
        self._discard(job)

    def _discard(self, job: BuildJob) -> None:
        """Remove what a build that did not become current left on disk (everything, if the wiki was deleted)."""
        with self.store.reading(job.service_id) as r:
            row = r.get(MetaKind.WIKI, job.wiki_id)
        if row is None:
            self.files.remove_wiki(job.service_id, job.wiki_id)
        elif row["build_seq"] == job.seq or row["status"] not in BUSY_STATUSES:
            self.files.prune_generations(job.service_id, job.wiki_id, keep=row["generation"])
        else:
            # A newer build is queued: only this build's own directory goes.
            shutil.rmtree(self.files.generation_dir(job.service_id, job.wiki_id, job.seq), ignore_errors=True)

    def _commit(self, job: BuildJob, report: BuildReport, snapshot: WikiSnapshot) -> bool:
        """The blue/green switch: one transaction points the wiki at the new generation and registers it."""
        now = now_iso()
        statuses = source_statuses(report)
        with self.store.writing(job.service_id) as w:
            row = w.get(MetaKind.WIKI, job.wiki_id)
            if row is None or row["build_seq"] != job.seq:
                return False  # deleted, or superseded by a newer build, meanwhile
            root = self._source_root(job.service_id, row)
            for name, (status, reason) in statuses.items():
                _record_status(w, job.wiki_id, name, status, reason, report.hashes.get(name), _size(root, name), now)
            # Files gone from a local folder leave the list with their pages (uploads leave it at raw/rm).
            if report.removed:
                w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": job.wiki_id, "filename": report.removed})
            for index_file in w.find(MetaKind.WIKI_SOURCE, {"wiki_id": job.wiki_id, "status": "uploaded"}):
                if PurePosixPath(index_file["filename"]).name == "index.json":
                    used = report.index == "authored"
                    reason = None if used else "not used: there is no index.json at the root, so the index is generated"
                    _record_status(
                        w,
                        job.wiki_id,
                        index_file["filename"],
                        "ingested" if used else "skipped",
                        reason,
                        None,
                        index_file["size"],
                        now,
                    )
            themes = [t.title for t in snapshot.index.themes]
            auto = _auto_summary(len(snapshot.pages), themes)
            w.update(
                MetaKind.WIKI,
                job.wiki_id,
                {
                    "status": "ready",
                    "internal_status": None,
                    "sync_error": None,
                    "generation": job.seq,
                    "version": row["version"] + 1,
                    "page_count": len(snapshot.pages),
                    "source_count": len(report.hashes),
                    "auto_summary": auto,
                    "last_sync_at": now,
                    "updated_at": now,
                },
            )
            stored = w.get(MetaKind.WIKI, job.wiki_id)
            assert stored is not None
            self._register(w, stored)
        with self._snapshot_lock:
            self._snapshots[(job.service_id, job.wiki_id)] = snapshot
            self._trim()
        return True

    def _register(self, w: MetaWriter, row: Row) -> None:
        register(
            w,
            {
                "knowledge_id": row["wiki_id"],
                "type": "wiki",
                "service_url": self.config.public_url,
                "name": row["name"],
                "summary": (row["summary"] if row["summary"] is not None else row["auto_summary"] or "")[:256] or None,
                "team_id": row["team_id"],
                "user_id": row["owner_user_id"],
            },
        )

    def resume(self) -> int:
        """At start: queue again the builds a previous process left pending or running (how many are
        returned), and point registrations of this server's wikis at its current public URL."""
        count = 0
        for service_id in self.files.tenants():
            with self.store.writing(service_id) as w:
                rows = w.find(MetaKind.WIKI, {"status": list(BUSY_STATUSES)})
                jobs = [self._queue_rebuild(w, row, force=True) for row in rows]
                # Registrations follow this server's public URL (it may have moved since they were written).
                moved = w.find(MetaKind.KNOWLEDGE, {"type": "wiki", "service_url !=": self.config.public_url})
                ours = {x["wiki_id"] for x in w.find(MetaKind.WIKI, {"wiki_id": [m["knowledge_id"] for m in moved]})}
                for entry in moved:
                    if entry["knowledge_id"] in ours:
                        w.update(MetaKind.KNOWLEDGE, entry["knowledge_id"], {"service_url": self.config.public_url})
            for job in jobs:
                if job:
                    self._submit(job)
                    count += 1
        return count

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done (tests, shutdown)."""
        for future in list(self._futures):
            future.result(timeout=timeout)

    def close(self) -> None:
        """Finish the running build; queued ones stay `pending` and resume at the next start."""
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    # -- reads ---------------------------------------------------------------------------------------------

    def _forget(self, service_id: str, wiki_id: str) -> None:
        with self._snapshot_lock:
            self._snapshots.pop((service_id, wiki_id), None)

    def _trim(self) -> None:
        while len(self._snapshots) > SNAPSHOTS_CACHED:
            self._snapshots.popitem(last=False)

    def snapshot_of(self, service_id: str, row: Row) -> WikiSnapshot | None:
        """The wiki's current generation, loaded (and cached) on first use; None before the first build."""
        if row["generation"] == 0:
            return None
        key = (service_id, row["wiki_id"])
        with self._snapshot_lock:
            cached = self._snapshots.get(key)
            if cached is not None and cached.generation == row["generation"]:
                self._snapshots.move_to_end(key)
                return cached
            load_lock = self._load_locks.setdefault(key, threading.Lock())
        # One loader per wiki (two requests for a cold wiki must not tokenise it twice); other wikis
        # keep answering meanwhile.
        with load_lock:
            with self._snapshot_lock:
                cached = self._snapshots.get(key)
            if cached is None or cached.generation != row["generation"]:
                cached = self._load(service_id, row)
            with self._snapshot_lock:
                newest = self._snapshots.get(key)
                if newest is None or newest.generation <= cached.generation:
                    self._snapshots[key] = cached
                    self._snapshots.move_to_end(key)
                self._trim()
            return cached

    def _load(self, service_id: str, row: Row) -> WikiSnapshot:
        directory = self.files.generation_dir(service_id, row["wiki_id"], row["generation"])
        try:
            return WikiSnapshot(row["generation"], directory)
        except (OSError, IndexInvalid):
            # A build switched generations and pruned this one after the row was read: read it again.
            with self.store.reading(service_id) as r:
                fresh = r.get(MetaKind.WIKI, row["wiki_id"])
            if fresh is None or fresh["generation"] in (0, row["generation"]):
                raise
            directory = self.files.generation_dir(service_id, row["wiki_id"], fresh["generation"])
            return WikiSnapshot(fresh["generation"], directory)

    def _snapshot_or_none(self, caller: Caller, wiki_id: str) -> WikiSnapshot | None:
        return self.snapshot_of(caller.service_id, self.row(caller, wiki_id))

    def read(self, caller: Caller, wiki_id: str) -> tuple[Row, WikiSnapshot | None]:
        """The wiki's row and its servable snapshot (None when it never built)."""
        row = self.row(caller, wiki_id)
        return row, self.snapshot_of(caller.service_id, row)

    def retrieve(
        self, caller: Caller, wiki_id: str, question: str, paths: Sequence[str], conversation: Conversation
    ) -> Row:
        """Seed 001 §4.2 retrieval: the capped knowledge block for one question."""
        row, snapshot = self.read(caller, wiki_id)
        if snapshot is None:
            raise Conflict(not_built_message(row), data={"status": row["status"], "step": row["internal_status"]})
        return {**snapshot.retrieve(question, paths=paths, conversation=conversation), "stale": stale(row)}


def not_built_message(row: Row) -> str:
    """Why a wiki that never built cannot answer, and what to do about it."""
    if row["status"] in BUSY_STATUSES:
        return f"wiki {row['wiki_id']} is building its first index (status {row['status']}); retry shortly"
    if row["status"] == "failed":
        return f"wiki {row['wiki_id']} has no index: the last build failed: {row['sync_error']}"
    return f"wiki {row['wiki_id']} has no index yet: upload sources with raw/write, then call ingest"


def _auto_summary(pages: int, themes: Sequence[str]) -> str:
    about = ", ".join(themes[:8]) + (", …" if len(themes) > 8 else "")
    return f"{pages} page{'s' if pages != 1 else ''}" + (f" on {about}" if about else "")


def _source_view(row: Row) -> Row:
    return {
        "filename": row["filename"],
        "size": row["size"],
        "status": row["status"],
        "error": row["error"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "last_modified_by": row["last_modified_by"],
        "ingested_at": row["ingested_at"],
        "uploaded_at": row["uploaded_at"],
    }


def _upsert_source(w: MetaWriter, wiki_id: str, filename: str, data: bytes, caller: Caller, now: str) -> None:
    existing = w.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": filename}, limit=1)
    changes = {
        "size": len(data),
        "sha256": content_hash(data),
        "status": "uploaded",
        "error": None,
        "last_modified_by": caller.actor,
        "uploaded_at": now,
        "updated_at": now,
    }
    if existing:
        w.update(MetaKind.WIKI_SOURCE, existing[0]["id"], changes)
    else:
        w.insert(
            MetaKind.WIKI_SOURCE,
            {
                "id": f"{wiki_id}:{content_hash(filename.encode())[:24]}",
                "wiki_id": wiki_id,
                "filename": filename,
                "ingested_at": None,
                "created_at": now,
                **changes,
            },
        )


def _size(root: Path, name: str) -> int:
    try:
        return (root / name).stat().st_size
    except OSError:
        return 0


def _record_status(
    w: MetaWriter,
    wiki_id: str,
    filename: str,
    status: str,
    reason: str | None,
    digest: str | None,
    size: int,
    now: str,
) -> None:
    existing = w.find(MetaKind.WIKI_SOURCE, {"wiki_id": wiki_id, "filename": filename}, limit=1)
    changes: Row = {"status": status, "error": reason, "size": size, "updated_at": now}
    if digest:
        changes["sha256"] = digest
    if status == "ingested":
        changes["ingested_at"] = now
    if existing:
        w.update(MetaKind.WIKI_SOURCE, existing[0]["id"], changes)
        return
    # A file of a local source folder: known from the build itself.
    w.insert(
        MetaKind.WIKI_SOURCE,
        {
            "id": f"{wiki_id}:{content_hash(filename.encode())[:24]}",
            "wiki_id": wiki_id,
            "filename": filename,
            "sha256": digest or "",
            "last_modified_by": None,
            "uploaded_at": None,
            "ingested_at": now if status == "ingested" else None,
            "created_at": now,
            **changes,
        },
    )


def _read_source(name: str, path: Path) -> Row:
    data = path.read_bytes()
    if source_kind(name) in ("pdf", "docx"):
        extracted = extract_bytes(name, data)
        if not extracted.ok:
            reason = "; ".join(e.reason for e in extracted.errors) or "no text"
            return {"filename": name, "content": "", "error": reason}
        return {"filename": name, "content": "\n\n".join(f"[{u.locator}]\n{u.text}" for u in extracted.units)}
    try:
        return {"filename": name, "content": decode_text(data)}
    except ValueError as exc:
        return {"filename": name, "content": "", "error": str(exc)}


def _page_ref(ref: str, where: str) -> str:
    """A page ref for page/write and page/rm: a relative name, not a reserved structure file."""
    pid = normalise_ref(ref)
    problem = filename_problem(pid + ".md")
    if problem:
        raise BadRequest(f"{where}: {problem}")
    if PurePosixPath(pid).name.lower() in STRUCTURAL_PAGES:
        raise BadRequest(f"{where}: {PurePosixPath(pid).name}.md is a reserved structure file")
    return pid


def _locked(content: str) -> str:
    """The page with `locked: true` in its front matter (added, or set when the front matter exists)."""
    meta, body, _, problem = split_front_matter(content.replace("\r\n", "\n"))
    if problem:
        raise BadRequest(f"pages: content: {problem}")
    meta["locked"] = True
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + body.lstrip("\n")


__all__ = ["RawFile", "WikiConfig", "WikiService", "check_wiki_id", "decode_upload", "not_built_message", "stale"]
