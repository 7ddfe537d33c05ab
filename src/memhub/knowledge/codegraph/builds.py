"""Code-graph builds: fetching a graph's source (clone or fetch for a git source), indexing it into a new
generation database (memhub.knowledge.codegraph.indexer, starting from the previous generation's file so
only changed files are parsed again) and the blue/green switch that makes it current. While a build runs,
`internal_status` names its step: `cloning` or `fetching` for a git source, then `indexing`. The queue, the
`build_seq` guard and resume are memhub.knowledge.builds's, shared with every kind.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memhub.errors import MemhubError
from memhub.knowledge.build_queue import BuildStopped, Deadline
from memhub.knowledge.builds import ResourceBuilds
from memhub.knowledge.codegraph import git
from memhub.knowledge.codegraph.indexer import IndexReport, index_tree
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.codegraph.readers import GraphReaders
from memhub.knowledge.codegraph.remote import Remote, RemotePolicy, Unresolvable
from memhub.knowledge.codegraph.storage import CodeGraphFiles
from memhub.knowledge.lifecycle import mark_queued
from memhub.meta.clock import now_iso
from memhub.meta.knowledge import register
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaWriter

log = logging.getLogger("memhub.codegraph")

SUMMARY_MAX = 256
# A build report lists at most this many paths per kind of change (counts are always complete).
REPORT_PATHS_MAX = 100


class BuildFailed(Exception):
    """A build that cannot go on; the message becomes the graph's `sync_error`."""


@dataclass(frozen=True, slots=True)
class BuildJob:
    """One queued build: the graph and the `build_seq` it was queued as."""

    service_id: str
    code_graph_id: str
    seq: int

    @property
    def resource_id(self) -> str:
        """The graph's id."""
        return self.code_graph_id


def stats_of(row: Row) -> dict[str, Any] | None:
    """The graph's stored index stats, or None before its first build."""
    return json.loads(row["stats_json"]) if row.get("stats_json") else None


def summary_of(row: Row) -> str | None:
    """The owner's summary, else one made from the stats (the reference's template, in English)."""
    if row["summary"] is not None:
        return str(row["summary"])
    stats = stats_of(row)
    if stats is None:
        return None
    where = row["branch"] or "working tree"
    return f"{row['repo_name']} ({where}) - {stats['files']} files, {stats['nodes']} symbols"[:SUMMARY_MAX]


def register_code_graph(w: MetaWriter, row: Row, public_url: str) -> None:
    """Write the graph's knowledge registry entry; `repo_url` and `branch` give the block its `match` and `branch`."""
    register(
        w,
        {
            "knowledge_id": row["code_graph_id"],
            "type": CODE_GRAPH.name,
            "service_url": public_url,
            "name": row["repo_name"],
            "summary": summary_of(row),
            "team_id": row["team_id"],
            "user_id": row["owner_user_id"],
            # A local working tree is matched by its origin remote (credentials already removed).
            "repo_url": row["repo_url"] or row["remote_url"],
            "branch": row["branch"],
        },
    )


@dataclass(slots=True)
class BuildReport:
    """What one build did: the indexer's report and the commit it indexed."""

    index: IndexReport
    commit_hash: str | None

    def view(self) -> dict[str, Any]:
        """The report on the wire: counts always, paths up to REPORT_PATHS_MAX per kind."""
        r = self.index
        return {
            "commit_hash": self.commit_hash,
            "files": {
                "added": len(r.added),
                "changed": len(r.changed),
                "removed": len(r.removed),
                "unchanged": r.unchanged,
                "skipped": len(r.skipped),
            },
            "added": r.added[:REPORT_PATHS_MAX],
            "changed": r.changed[:REPORT_PATHS_MAX],
            "removed": r.removed[:REPORT_PATHS_MAX],
            "skipped": [{"path": s.path, "reason": s.reason} for s in r.skipped[:REPORT_PATHS_MAX]],
            "parse_errors": dict(list(r.parse_errors.items())[:REPORT_PATHS_MAX]),
            "truncated": max(len(r.added), len(r.changed), len(r.removed), len(r.skipped), len(r.parse_errors))
            > REPORT_PATHS_MAX,
            "lines_parsed": r.lines_parsed,
            "parse_seconds": round(r.parse_seconds, 3),
            "resolve_seconds": round(r.resolve_seconds, 3),
        }


def _stats(report: IndexReport) -> dict[str, Any]:
    counts = report.counts
    return {
        "files": counts.get("files", 0),
        "nodes": counts.get("symbols", 0),
        "edges": counts.get("edges", 0),
        "unresolved": counts.get("unresolved", 0),
        "parse_errors": counts.get("parse_errors", 0),
        "skipped": len(report.skipped),
    }


@dataclass(kw_only=True)
class CodeGraphBuilds(ResourceBuilds[BuildJob, BuildReport]):
    """The builds of every tenant's code graphs, and the switch that makes a finished build current."""

    KIND = CODE_GRAPH
    TIMEOUT_ADVICE = "sync again, or index a smaller tree"

    files: CodeGraphFiles
    readers: GraphReaders
    # Whether a local path lies under the allowed source roots; a build checks again, as they may have changed.
    source_allowed: Callable[[Path], bool]
    git_timeout: float = 600.0
    remotes: RemotePolicy = field(default_factory=RemotePolicy)

    def queue(self, w: MetaWriter, row: Row) -> BuildJob:
        """Mark the graph `pending` under a new `build_seq` (in the caller's transaction); the job to submit."""
        return BuildJob(w.service_id, row["code_graph_id"], mark_queued(w, MetaKind.CODE_GRAPH, row))

    def requeue(self, w: MetaWriter, row: Row) -> BuildJob:
        """At resume: queue the graph's interrupted build again."""
        return self.queue(w, row)

    def run(self, job: BuildJob, deadline: Deadline) -> BuildReport | None:
        """Run one build; never raises (a failure is recorded on the graph). Past its deadline it stops at the
        next step, and what it made is discarded."""
        row = self._set(job, {"status": "processing", "internal_status": None}, deadline)
        if row is None:
            return None
        try:
            tree, commit, local = self._source_tree(job, row, deadline)
            if self._set(job, {"internal_status": "indexing"}, deadline) is None:
                self._discard(job)  # deleted or superseded while fetching: the index would be thrown away
                return None
            target = self.files.generation_db(job.service_id, job.code_graph_id, job.seq)
            self.files.remove_generation(job.service_id, job.code_graph_id, job.seq)  # a leftover of a crash
            previous = (
                self.files.generation_db(job.service_id, job.code_graph_id, row["generation"])
                if row["generation"]
                else None
            )
            meta = {"commit": commit, "branch": local.branch if local else row["branch"]}
            previous = previous if previous and previous.is_file() else None
            report = index_tree(tree, target, previous, meta=meta, stop=deadline.stopped)
        except (BuildFailed, git.GitFailed) as exc:
            self._fail(job, str(exc), deadline)
            return None
        except BuildStopped:
            self._discard(job)  # the time limit passed: the failure is already recorded
            return None
        except Exception as exc:  # a bug or a disk error must end as `failed`, not as a graph stuck in processing
            log.exception("code graph build %s/%s failed", job.service_id, job.code_graph_id)
            self._fail(job, f"build failed: {type(exc).__name__}: {exc}", deadline)
            return None
        built = BuildReport(report, commit)
        if not self._commit(job, built, local, deadline):
            self._discard(job)
            return None
        self.files.prune_generations(job.service_id, job.code_graph_id, keep=job.seq)
        return built

    def _source_tree(
        self, job: BuildJob, row: Row, deadline: Deadline
    ) -> tuple[Path, str | None, git.WorkingTree | None]:
        """The tree to index (cloned or fetched first for a git source), its commit, and a local tree's git facts."""
        if row["source_path"]:
            tree = Path(row["source_path"])
            if not self.source_allowed(tree):
                raise BuildFailed(
                    "source_path: no longer under an allowed source root (MEMHUB_CODE_SOURCE_ROOTS changed)"
                )
            if not tree.is_dir():
                raise BuildFailed(f"source_path: {tree} is not a directory any more")
            local = git.working_tree(tree, timeout=self.git_timeout)
            return tree, local.commit, local
        checkout = self.files.checkout_dir(job.service_id, job.code_graph_id)
        fetching = git.is_clone(checkout)
        remote = self._remote(row["repo_url"], "fetch" if fetching else "clone")
        allow_ssh = self.remotes.allow_ssh
        # A git command ends at its own timeout or at the build's deadline, whichever comes first.
        timeout = max(min(self.git_timeout, deadline.remaining()), 0.001)
        if fetching:
            self._set(job, {"internal_status": "fetching"}, deadline)
            git.update(checkout, remote, row["branch"], timeout=timeout, allow_ssh=allow_ssh)
        else:
            self._set(job, {"internal_status": "cloning"}, deadline)
            git.clone(remote, row["branch"], checkout, timeout=timeout, allow_ssh=allow_ssh)
        deadline.check()
        return checkout, git.head_commit(checkout, timeout=self.git_timeout), None

    def _remote(self, repo_url: str, action: str) -> Remote:
        """The URL checked again, as at create (the settings or the host's addresses may have changed since);
        its addresses are the ones git connects to."""
        failed = f"git {action} failed: the repository could not be fetched"
        try:
            remote = self.remotes.check(repo_url)
        except Unresolvable:
            raise BuildFailed(f"{failed} (unreachable)") from None
        except MemhubError as exc:
            raise BuildFailed(f"{failed} (refused by policy: {exc.message})") from None
        if remote.local_path is not None and not self.source_allowed(remote.local_path):
            raise BuildFailed("repo_url: no longer under an allowed source root (MEMHUB_CODE_SOURCE_ROOTS changed)")
        return remote

    def _commit(self, job: BuildJob, built: BuildReport, local: git.WorkingTree | None, deadline: Deadline) -> bool:
        """The blue/green switch: one transaction points the graph at the new generation and registers it."""
        now = now_iso()
        with self.store.writing(job.service_id) as w:
            row = w.get(MetaKind.CODE_GRAPH, job.code_graph_id)
            if row is None or row["build_seq"] != job.seq or deadline.stopped.is_set():
                return False  # deleted, superseded by a newer build, or past the time limit, meanwhile
            changes: Row = {
                "status": "ready",
                "internal_status": None,
                "sync_error": None,
                "generation": job.seq,
                "version": row["version"] + 1,
                "commit_hash": built.commit_hash,
                "stats_json": json.dumps(_stats(built.index)),
                "last_sync_at": now,
                "updated_at": now,
            }
            if local is not None:  # a working tree may have changed branch or remote since the last build
                changes.update(branch=local.branch, remote_url=local.remote)
            w.update(MetaKind.CODE_GRAPH, job.code_graph_id, changes)
            stored = w.get(MetaKind.CODE_GRAPH, job.code_graph_id)
            assert stored is not None
            register_code_graph(w, stored, self.public_url)
        # Queries from now on open the new generation; the old reader closes when its last query ends.
        self.readers.forget(job.service_id, job.code_graph_id)
        return True

    def close(self) -> None:
        """Finish the running builds (queued ones stay `pending` and resume at the next start); close readers."""
        super().close()
        self.readers.close()
