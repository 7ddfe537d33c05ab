"""`/v3/wiki/*`: wiki management, source files, pages and search (the reference knowledge service's routes)."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute, Reply
from memhub.api.knowledge_schemas import (
    PageRead,
    PageRm,
    PageWrite,
    RawRead,
    RawRm,
    RawWrite,
    WikiCreate,
    WikiDelete,
    WikiIngest,
    WikiList,
    WikiRef,
    WikiRetrieve,
    WikiSearch,
    WikiUpdateMeta,
)
from memhub.errors import Conflict
from memhub.knowledge.services import KnowledgeServices
from memhub.knowledge.wiki.service import RawFile, decode_upload, not_built_message, stale
from memhub.knowledge.wiki.snapshot import WikiSnapshot

# base64 makes a 5 MB upload about 6.7 MB of JSON.
RAW_WRITE_BODY_BYTES = 8 * 1024 * 1024


def _knowledge(call: GuardedCall) -> KnowledgeServices:
    assert call.knowledge is not None, "knowledge routes are mounted with the knowledge services"
    return call.knowledge


def _snapshot(call: GuardedCall, wiki_id: str) -> tuple[dict[str, Any], WikiSnapshot]:
    """The wiki's servable snapshot; 409 naming the status when it never built."""
    row, snapshot = _knowledge(call).wikis.read(call.caller, wiki_id)
    if snapshot is None:
        raise Conflict(not_built_message(row), data={"status": row["status"], "step": row["internal_status"]})
    return row, snapshot


def create(call: GuardedCall, body: WikiCreate) -> Reply:
    detail, created = _knowledge(call).wikis.create(call.caller, body.fields())
    return Reply(detail, 201 if created else 200)


def list_wikis(call: GuardedCall, body: WikiList) -> Any:
    return _knowledge(call).wikis.list(call.caller, body.team_id, body.status, body.limit, body.offset)


def get(call: GuardedCall, body: WikiRef) -> Any:
    return _knowledge(call).wikis.get(call.caller, body.wiki_id)


def update_meta(call: GuardedCall, body: WikiUpdateMeta) -> Any:
    changes = {k: v for k, v in body.fields().items() if k in ("name", "summary")}
    return _knowledge(call).wikis.update_meta(call.caller, body.wiki_id, changes)


def delete(call: GuardedCall, body: WikiDelete) -> Any:
    return _knowledge(call).wikis.delete(call.caller, body.wiki_ids)


def ingest(call: GuardedCall, body: WikiIngest) -> Reply:
    data, finished = _knowledge(call).wikis.ingest(call.caller, body.wiki_id, wait=body.wait, index_mode=body.index)
    return Reply(data, 200 if finished else 202)


def raw_ls(call: GuardedCall, body: WikiRef) -> Any:
    return _knowledge(call).wikis.raw_ls(call.caller, body.wiki_id)


def raw_read(call: GuardedCall, body: RawRead) -> Any:
    return _knowledge(call).wikis.raw_read(call.caller, body.wiki_id, body.filenames)


def raw_write(call: GuardedCall, body: RawWrite) -> Any:
    files = [RawFile(f.filename, decode_upload(f.filename, f.content, f.encoding)) for f in body.files]
    return _knowledge(call).wikis.raw_write(call.caller, body.team_id, body.wiki_id, files)


def raw_rm(call: GuardedCall, body: RawRm) -> Any:
    return _knowledge(call).wikis.raw_rm(call.caller, body.team_id, body.wiki_id, body.filenames)


def page_ls(call: GuardedCall, body: WikiRef) -> Any:
    row, snapshot = _snapshot(call, body.wiki_id)
    return {**snapshot.list_pages(), "stale": stale(row)}


def page_read(call: GuardedCall, body: PageRead) -> Any:
    row, snapshot = _snapshot(call, body.wiki_id)
    return {**snapshot.read_pages(body.refs), "stale": stale(row)}


def page_write(call: GuardedCall, body: PageWrite) -> Reply:
    pages = [(p.ref, p.content) for p in body.pages]
    return Reply(_knowledge(call).wikis.page_write(call.caller, body.team_id, body.wiki_id, pages), 202)


def page_rm(call: GuardedCall, body: PageRm) -> Any:
    return _knowledge(call).wikis.page_rm(call.caller, body.team_id, body.wiki_id, body.refs)


def graph(call: GuardedCall, body: WikiRef) -> Any:
    row, snapshot = _snapshot(call, body.wiki_id)
    return {**snapshot.graph(), "stale": stale(row)}


def search(call: GuardedCall, body: WikiSearch) -> Any:
    row, snapshot = _snapshot(call, body.wiki_id)
    found = snapshot.search(body.query, body.limit, hop=body.hop, decay=body.decay, min_score=body.minScore)
    return {**found, "stale": stale(row)}


def retrieve(call: GuardedCall, body: WikiRetrieve) -> Any:
    wikis = _knowledge(call).wikis
    return wikis.retrieve(call.caller, body.wiki_id, body.question, body.paths, body.conversation, body.rescore)


ROUTES = [
    GuardedRoute(
        "create",
        WikiCreate,
        create,
        Guard.DATA,
        summary="Create a wiki (idempotent by team and name)",
        statuses=(200, 201),
    ),
    GuardedRoute("list", WikiList, list_wikis, Guard.DATA, summary="A team's wikis"),
    GuardedRoute("get", WikiRef, get, Guard.DATA, summary="One wiki"),
    GuardedRoute("update-meta", WikiUpdateMeta, update_meta, Guard.DATA, summary="Rename or re-describe a wiki"),
    GuardedRoute("delete", WikiDelete, delete, Guard.DATA, summary="Delete wikis with their files"),
    GuardedRoute(
        "ingest", WikiIngest, ingest, Guard.DATA, summary="Rebuild the wiki from its sources", statuses=(200, 202)
    ),
    GuardedRoute("raw/ls", WikiRef, raw_ls, Guard.DATA, summary="Source files and their ingest status"),
    GuardedRoute("raw/read", RawRead, raw_read, Guard.DATA, summary="Read source files (PDF/DOCX as text)"),
    GuardedRoute(
        "raw/write", RawWrite, raw_write, Guard.DATA, summary="Upload source files", max_body_bytes=RAW_WRITE_BODY_BYTES
    ),
    GuardedRoute("raw/rm", RawRm, raw_rm, Guard.DATA, summary="Delete source files (their pages go at the rebuild)"),
    GuardedRoute("page/ls", WikiRef, page_ls, Guard.DATA, summary="Every page"),
    GuardedRoute("page/read", PageRead, page_read, Guard.DATA, summary="Read pages"),
    GuardedRoute(
        "page/write",
        PageWrite,
        page_write,
        Guard.DATA,
        summary="Write locked pages",
        max_body_bytes=RAW_WRITE_BODY_BYTES,
        statuses=(202,),
    ),
    GuardedRoute("page/rm", PageRm, page_rm, Guard.DATA, summary="Delete pages"),
    GuardedRoute("graph", WikiRef, graph, Guard.DATA, summary="The page link graph"),
    GuardedRoute("search", WikiSearch, search, Guard.DATA, summary="BM25 page search with optional link expansion"),
    GuardedRoute("retrieve", WikiRetrieve, retrieve, Guard.DATA, summary="The capped knowledge block for a question"),
]
