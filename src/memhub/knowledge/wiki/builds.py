"""Wiki builds: turning a wiki's sources into a new generation (memhub.knowledge.wiki.indexer) and the
blue/green switch that makes it current; the queue, the `build_seq` guard and resume are
memhub.knowledge.builds's, shared with every kind.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from memhub.knowledge.build_queue import Deadline
from memhub.knowledge.builds import ResourceBuilds
from memhub.knowledge.lifecycle import mark_queued
from memhub.knowledge.source_roots import under_roots
from memhub.knowledge.wiki.ai_index import llm_describer
from memhub.knowledge.wiki.indexer import BuildFailed, BuildReport, build_generation, source_statuses
from memhub.knowledge.wiki.kind import WIKI
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.knowledge.wiki.snapshot_cache import SnapshotCache
from memhub.knowledge.wiki.sourcefiles import file_size, record_status, source_root
from memhub.knowledge.wiki.storage import WikiFiles
from memhub.llm.client import ChatClient
from memhub.meta.clock import now_iso
from memhub.meta.knowledge import register
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaWriter

log = logging.getLogger("memhub.wiki")

IndexMode = Literal["rules", "ai"]


@dataclass(frozen=True, slots=True)
class BuildJob:
    """One queued build: the wiki, the `build_seq` it was queued as, and how its index is written."""

    service_id: str
    wiki_id: str
    seq: int
    index_mode: IndexMode = "rules"

    @property
    def resource_id(self) -> str:
        """The wiki's id."""
        return self.wiki_id


def register_wiki(w: MetaWriter, row: Row, public_url: str) -> None:
    """Write the wiki's knowledge registry entry (agents reach it at `public_url`)."""
    register(
        w,
        {
            "knowledge_id": row["wiki_id"],
            "type": WIKI.name,
            "service_url": public_url,
            "name": row["name"],
            "summary": (row["summary"] if row["summary"] is not None else row["auto_summary"] or "")[:256] or None,
            "team_id": row["team_id"],
            "user_id": row["owner_user_id"],
        },
    )


@dataclass(kw_only=True)
class WikiBuilds(ResourceBuilds[BuildJob, BuildReport]):
    """The builds of every tenant's wikis, and the switch that makes a finished build current."""

    KIND = WIKI
    TIMEOUT_ADVICE = "ingest again, or split the sources"

    files: WikiFiles
    snapshots: SnapshotCache
    chat: ChatClient | None = None  # the LLM of `index: "ai"` builds
    # Where a wiki may read a local folder; a build checks again, as the roots may have changed since create.
    source_roots: tuple[Path, ...] = ()

    def queue(
        self, w: MetaWriter, row: Row, *, force: bool = False, index_mode: IndexMode = "rules"
    ) -> BuildJob | None:
        """Mark the wiki `pending` under a new `build_seq` (in the caller's transaction); the job to submit after it.

        None for a wiki never ingested, unless `force`: the user ingests when its sources are complete.
        """
        if not force and row["generation"] == 0 and row["status"] == "draft":
            return None
        return BuildJob(w.service_id, row["wiki_id"], mark_queued(w, MetaKind.WIKI, row), index_mode)

    def requeue(self, w: MetaWriter, row: Row) -> BuildJob | None:
        """At resume: queue the wiki's interrupted build again."""
        return self.queue(w, row, force=True)

    def run(self, job: BuildJob, deadline: Deadline) -> BuildReport | None:
        """Run one build; never raises (a failure is recorded on the wiki). Past its deadline its result is
        discarded (the generation is written whole first: the build cannot stop half-way)."""
        row = self._set(job, {"status": "processing", "internal_status": "ingesting"}, deadline)
        if row is None:
            return None
        target = self.files.generation_dir(job.service_id, job.wiki_id, job.seq)
        previous = (
            self.files.generation_dir(job.service_id, job.wiki_id, row["generation"]) if row["generation"] else None
        )
        client = self.chat if job.index_mode == "ai" else None
        try:
            if row["source_path"] and not under_roots(Path(row["source_path"]), self.source_roots):
                raise BuildFailed(
                    "source_path: no longer under an allowed source root (MEMHUB_WIKI_SOURCE_ROOTS changed)"
                )
            describe = llm_describer(client) if client else None
            report = build_generation(source_root(self.files, job.service_id, row), target, previous, describe=describe)
            snapshot = WikiSnapshot(job.seq, target)  # loaded before the switch, so the first query is fast
        except BuildFailed as exc:
            self._fail(job, exc.reason, deadline)
            return None
        except Exception as exc:  # a bug or a disk error must end as `failed`, not as a wiki stuck in processing
            log.exception("wiki build %s/%s failed", job.service_id, job.wiki_id)
            self._fail(job, f"build failed: {type(exc).__name__}: {exc}", deadline)
            return None
        if not self._commit(job, report, snapshot, deadline):
            self._discard(job)
            return None
        self.files.prune_generations(job.service_id, job.wiki_id, keep=job.seq)
        return report

    def _commit(self, job: BuildJob, report: BuildReport, snapshot: WikiSnapshot, deadline: Deadline) -> bool:
        """The blue/green switch: one transaction points the wiki at the new generation and registers it."""
        now = now_iso()
        statuses = source_statuses(report)
        with self.store.writing(job.service_id) as w:
            row = w.get(MetaKind.WIKI, job.wiki_id)
            if row is None or row["build_seq"] != job.seq or deadline.stopped.is_set():
                return False  # deleted, superseded by a newer build, or past the time limit, meanwhile
            root = source_root(self.files, job.service_id, row)
            for name, (status, reason) in statuses.items():
                record_status(w, job.wiki_id, name, status, reason, report.hashes.get(name), file_size(root, name), now)
            # Files gone from a local folder leave the list with their pages (uploads leave it at raw/rm).
            if report.removed:
                w.delete(MetaKind.WIKI_SOURCE, {"wiki_id": job.wiki_id, "filename": report.removed})
            for index_file in w.find(MetaKind.WIKI_SOURCE, {"wiki_id": job.wiki_id, "status": "uploaded"}):
                if PurePosixPath(index_file["filename"]).name == "index.json":
                    used = report.index == "authored"
                    reason = None if used else "not used: there is no index.json at the root, so the index is generated"
                    record_status(
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
            register_wiki(w, stored, self.public_url)
        self.snapshots.put(job.service_id, job.wiki_id, snapshot)
        return True


def _auto_summary(pages: int, themes: Sequence[str]) -> str:
    """The summary a wiki shows until its owner writes one: page count and first themes."""
    about = ", ".join(themes[:8]) + (", …" if len(themes) > 8 else "")
    return f"{pages} page{'s' if pages != 1 else ''}" + (f" on {about}" if about else "")
