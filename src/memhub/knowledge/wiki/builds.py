"""Wiki builds: the queue that runs them in the background, and the blue/green switch that ends each.

A build is queued in the transaction that asks for it (the wiki becomes `pending` with a new
`build_seq`), runs from the shared build queue (`memhub.knowledge.build_queue`: fair across tenants,
bounded per tenant, each build time-limited) as `processing`, and writes a new generation directory.
Then one transaction points the wiki at it, marks it `ready` and registers it in the knowledge
registry, so a ready wiki is always offered to agents. Until then, and after a failed build, reads
keep using the last good generation. A build only touches the wiki while its `build_seq` is still
the wiki's: a newer build, a delete or the build's time limit supersedes it, and its files are discarded.

Queued builds are not kept anywhere but in the rows: a process that stops leaves them `pending` or
`processing`, and `resume` queues them again at the next start.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from memhub.knowledge.build_queue import BuildQueue, Deadline, QueueLimits, Reservation
from memhub.knowledge.lifecycle import BUSY_STATUSES, SYNC_ERROR_MAX, fail_if_busy, mark_queued, set_if_current
from memhub.knowledge.source_roots import under_roots
from memhub.knowledge.wiki.ai_index import llm_describer
from memhub.knowledge.wiki.build import BuildFailed, BuildReport, build_generation, source_statuses
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.knowledge.wiki.snapshot_cache import SnapshotCache
from memhub.knowledge.wiki.sourcefiles import file_size, record_status, source_root
from memhub.knowledge.wiki.storage import WikiFiles
from memhub.llm.client import ChatClient, LLMConfig
from memhub.meta.clock import now_iso
from memhub.meta.knowledge import register
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaStore, MetaWriter

log = logging.getLogger("memhub.wiki")

IndexMode = Literal["rules", "ai"]


@dataclass(frozen=True, slots=True)
class BuildJob:
    """One queued build: the wiki, the `build_seq` it was queued as, and how its index is written."""

    service_id: str
    wiki_id: str
    seq: int
    index_mode: IndexMode = "rules"


def register_wiki(w: MetaWriter, row: Row, public_url: str) -> None:
    """Write the wiki's knowledge registry entry (agents reach it at `public_url`)."""
    register(
        w,
        {
            "knowledge_id": row["wiki_id"],
            "type": "wiki",
            "service_url": public_url,
            "name": row["name"],
            "summary": (row["summary"] if row["summary"] is not None else row["auto_summary"] or "")[:256] or None,
            "team_id": row["team_id"],
            "user_id": row["owner_user_id"],
        },
    )


@dataclass
class WikiBuilds:
    """The build queue of every tenant's wikis, and the switch that makes a finished build current."""

    store: MetaStore
    files: WikiFiles
    snapshots: SnapshotCache
    public_url: str
    limits: QueueLimits = field(default_factory=QueueLimits)
    llm: LLMConfig | None = None  # for `index: "ai"` builds
    # Where a wiki may read a local folder; a build checks again, as the roots may have changed since create.
    source_roots: tuple[Path, ...] = ()
    pool: BuildQueue = field(init=False)

    def __post_init__(self) -> None:
        self.pool = BuildQueue("wiki builds", self.limits)

    def reserve(self, service_id: str) -> AbstractContextManager[Reservation]:
        """A place in the tenant's build line, taken before anything is written (429 when its line is full)."""
        return self.pool.reserve(service_id)

    def queue(
        self, w: MetaWriter, row: Row, *, force: bool = False, index_mode: IndexMode = "rules"
    ) -> BuildJob | None:
        """Mark the wiki `pending` under a new `build_seq` (in the caller's transaction); the job to submit after it.

        None for a wiki never ingested, unless `force`: the user ingests when its sources are complete.
        """
        if not force and row["generation"] == 0 and row["status"] == "draft":
            return None
        return BuildJob(w.service_id, row["wiki_id"], mark_queued(w, MetaKind.WIKI, row), index_mode)

    def submit(self, job: BuildJob, place: Reservation | None = None) -> Future[BuildReport | None]:
        """Run the build in the background, in its `reserve`d place (call it after the transaction that queued
        it commits); the future of its report (None when it failed)."""

        def run(deadline: Deadline) -> BuildReport | None:
            return self.run(job, deadline)

        def timed_out(limit: float) -> None:
            reason = (
                f"build timed out after {limit:g} s (limit {self.limits.time_setting}); "
                "ingest again, or split the sources"
            )
            fail_if_busy(self.store, MetaKind.WIKI, job.service_id, job.wiki_id, job.seq, reason)

        if place is None:
            return self.pool.submit(job.service_id, run, timed_out)
        return place.submit(run, timed_out)

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
        client = ChatClient(self.llm) if job.index_mode == "ai" and self.llm else None
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
        finally:
            if client is not None:
                client.close()
        if not self._commit(job, report, snapshot, deadline):
            self._discard(job)
            return None
        self.files.prune_generations(job.service_id, job.wiki_id, keep=job.seq)
        return report

    def _set(self, job: BuildJob, changes: Row, deadline: Deadline) -> Row | None:
        """Update the wiki if it still exists, no newer build was queued and this one was not stopped at its
        time limit; the row after, or None."""
        if deadline.stopped.is_set():
            return None
        return set_if_current(self.store, MetaKind.WIKI, job.service_id, job.wiki_id, job.seq, changes)

    def _fail(self, job: BuildJob, reason: str, deadline: Deadline) -> None:
        self._set(job, {"status": "failed", "internal_status": None, "sync_error": reason[:SYNC_ERROR_MAX]}, deadline)
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

    def resume(self) -> int:
        """At start: queue again the builds a previous process left pending or running (how many are
        returned), and point registrations of this server's wikis at its current public URL."""
        count = 0
        for service_id in self.files.tenants():
            with self.store.writing(service_id) as w:
                rows = w.find(MetaKind.WIKI, {"status": list(BUSY_STATUSES)})
                jobs = [self.queue(w, row, force=True) for row in rows]
                # Registrations follow this server's public URL (it may have moved since they were written).
                moved = w.find(MetaKind.KNOWLEDGE, {"type": "wiki", "service_url !=": self.public_url})
                ours = {x["wiki_id"] for x in w.find(MetaKind.WIKI, {"wiki_id": [m["knowledge_id"] for m in moved]})}
                for entry in moved:
                    if entry["knowledge_id"] in ours:
                        w.update(MetaKind.KNOWLEDGE, entry["knowledge_id"], {"service_url": self.public_url})
            for job in jobs:
                if job:
                    self.submit(job)
                    count += 1
        return count

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done (tests, shutdown)."""
        self.pool.wait_idle(timeout)

    def close(self) -> None:
        """Finish the running build; queued ones stay `pending` and resume at the next start."""
        self.pool.close()


def _auto_summary(pages: int, themes: Sequence[str]) -> str:
    """The summary a wiki shows until its owner writes one: page count and first themes."""
    about = ", ".join(themes[:8]) + (", …" if len(themes) > 8 else "")
    return f"{pages} page{'s' if pages != 1 else ''}" + (f" on {about}" if about else "")
