"""The code-graph knowledge service: a team's indexed repositories, their builds, and queries through readers.

A code graph indexes one source: a git repository (`repo_url` + `branch`, cloned shallow into the
graph's directory) or a local directory or git working tree (`source_path`, under
MEMHUB_CODE_SOURCE_ROOTS). Lifecycle: `pending` (a build is queued) → `processing` (cloning or
fetching, then indexing) → `ready` | `failed`. Builds run in the background and switch generations
blue/green (memhub.knowledge.codegraph.builds); while a sync runs, and after a failed one, queries keep
answering from the last good generation and say `stale: true`. A graph that never built has nothing to
answer with, and says so, instead of answering with an empty success.

Authorization is every kind's (memhub.knowledge.access): the gateway key acts for the whole tenant; a user
key must belong to an active member of the graph's team (to anyone else the graph does not exist). Deleting
needs the graph's owner, a team admin or a system admin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memhub.errors import BadRequest, Conflict, FieldError, Forbidden, NotFound
from memhub.knowledge.access import gated
from memhub.knowledge.codegraph import git, queries
from memhub.knowledge.codegraph.builds import (
    CodeGraphBuilds,
    register_code_graph,
    stats_of,
    summary_of,
)
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.codegraph.readers import GraphReaders
from memhub.knowledge.codegraph.remote import Remote, RemotePolicy
from memhub.knowledge.codegraph.storage import CodeGraphFiles
from memhub.knowledge.lifecycle import BUSY_STATUSES, busy, stale
from memhub.knowledge.service import ResourceConfig, ResourceService
from memhub.knowledge.source_roots import under_roots
from memhub.knowledge.tools import ToolParamError, UnknownTool, tool_error, validate_params
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.model.meta import MetaKind, Row

CODE_GRAPH_ID_RE = CODE_GRAPH.id_re
DEFAULT_BRANCH = "main"
REPO_NAME_MAX = 256
ROOTS_SETTING = "MEMHUB_CODE_SOURCE_ROOTS"


def not_built_message(row: Row) -> str:
    """Why a graph that never built cannot answer, and what to do about it."""
    code_graph_id = row["code_graph_id"]
    if row["status"] in BUSY_STATUSES:
        step = f", step {row['internal_status']}" if row["internal_status"] else ""
        return f"code graph {code_graph_id} is building its first index (status {row['status']}{step}); retry shortly"
    return (
        f"code graph {code_graph_id} has no index: the last build failed: {row['sync_error']}; "
        "fix the source and call code-graph/sync"
    )


def query_params(tool_name: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The params of a direct `/v3/code-graph/<tool>` route, checked like the reference's QUERY_SPECS.

    An unknown field is `unexpected field: x` (the reference's words); other rules name the field.
    """
    spec = CODE_GRAPH.tools_by_name.get(tool_name)
    if spec is None:
        raise UnknownTool(tool_name, CODE_GRAPH.name, CODE_GRAPH.name)
    for key in fields:
        if key not in spec.params:
            raise BadRequest(f"unexpected field: {key}", data={"errors": [{"field": key, "rule": "unexpected field"}]})
    try:
        return validate_params(spec, fields)
    except ToolParamError as exc:
        raise FieldError(exc.field, exc.rule) from None


def _repo_name(url: str) -> str:
    """`https://host/org/shop.git` → `shop`; `git@host:org/shop.git` → `shop`."""
    tail = re.split(r"[/:]", url.rstrip("/"))[-1]
    return (tail.removesuffix(".git") or url)[:REPO_NAME_MAX]


@dataclass(frozen=True, slots=True)
class CodeGraphConfig(ResourceConfig):
    """Service settings: where graphs live, the URL agents reach them at, allowed local source roots, the build
    queue, how long one git command may run and which remotes may be fetched."""

    git_timeout: float = 600.0
    remotes: RemotePolicy = field(default_factory=RemotePolicy)


@dataclass
class CodeGraphService(ResourceService):
    """Code graphs of every tenant of one data dir."""

    KIND = CODE_GRAPH
    ROOTS_SETTING = ROOTS_SETTING

    config: CodeGraphConfig
    files: CodeGraphFiles = field(init=False)
    readers: GraphReaders = field(init=False)
    builds: CodeGraphBuilds = field(init=False)

    def __post_init__(self) -> None:
        self.files = CodeGraphFiles(self.config.files_root)
        self.readers = GraphReaders(self.files, self.store)
        self.builds = CodeGraphBuilds(
            store=self.store,
            files=self.files,
            public_url=self.config.public_url,
            limits=self.config.builds,
            readers=self.readers,
            source_allowed=self._allowed,
            git_timeout=self.config.git_timeout,
            remotes=self.config.remotes,
        )

    # -- rows, views and access ------------------------------------------------------------------

    def detail(self, row: Row) -> Row:
        """CodeGraphDetail on the wire (`version` a string, as in the reference), plus memhub's fields."""
        stats = stats_of(row)
        return {
            "code_graph_id": row["code_graph_id"],
            "team_id": row["team_id"],
            "repo_name": row["repo_name"],
            "repo_url": row["repo_url"],
            "branch": row["branch"],
            "commit_hash": row["commit_hash"],
            "service_url": self.config.public_url,
            "summary": summary_of(row),
            "status": row["status"],
            "internal_status": row["internal_status"],
            "sync_error": row["sync_error"],
            "version": str(row["version"]),
            "owner_user_id": row["owner_user_id"],
            "stats": {k: stats[k] for k in ("files", "nodes", "edges")} if stats else None,
            "parse_errors": stats["parse_errors"] if stats else None,
            "unresolved": stats["unresolved"] if stats else None,
            "source_path": row["source_path"],
            "stale": stale(row),
            "last_sync_at": row["last_sync_at"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }

    def _allowed(self, path: Path) -> bool:
        return under_roots(path, self.config.source_roots)

    def _git_source(self, repo_url: str) -> Remote:
        """The URL read and its transport checked (no lookup yet: `check_host` resolves it)."""
        remote = self.config.remotes.parse(repo_url)
        # A file:// URL reads this server's disk: the same roots as a source_path apply.
        if remote.local_path is not None and not self._allowed(remote.local_path):
            raise Forbidden(
                f"repo_url: a file:// repository must be under an allowed source root (set {ROOTS_SETTING})"
            )
        return remote

    def source_root(self, service_id: str, row: Row) -> Path:
        """The tree the graph was indexed from (source excerpts are read from it)."""
        if row["source_path"]:
            return Path(row["source_path"])
        return self.files.checkout_dir(service_id, row["code_graph_id"])

    # -- management ------------------------------------------------------------------------------------

    def create(self, caller: Caller, fields: Mapping[str, Any], *, wait: bool = False) -> tuple[Row, bool]:
        """code-graph/create: idempotent per source; (detail, True) when new (its first build queued, or run
        now with `wait`), (existing detail, False) otherwise."""
        team_id = fields["team_id"]
        user_id = fields.get("user_id")
        if gated(caller) and user_id is not None and user_id != caller.user_id:
            raise Forbidden("user_id: does not match the caller")
        repo_url, source_path = fields.get("repo_url"), fields.get("source_path")
        if (repo_url is None) == (source_path is None):
            raise BadRequest("repo_url: give exactly one of repo_url (a git URL) and source_path (a local directory)")
        if source_path is not None:
            if fields.get("branch") is not None:
                raise BadRequest("branch: only with repo_url; a source_path is indexed as it is checked out")
            path, url, branch = self._local_source(source_path), None, None
            same: dict[str, Any] = {"team_id": team_id, "source_path": path}
        else:
            remote = self._git_source(repo_url)
            branch = git.check_branch(fields.get("branch") or DEFAULT_BRANCH)
            if remote.local_path is None:
                self.config.remotes.check(repo_url)  # resolved last: every cheaper rule is checked first
            path, url = None, remote.url
            same = {"team_id": team_id, "repo_url": url, "branch": branch}
        name = fields.get("repo_name") or (_repo_name(url) if url else PurePosixPath(str(path)).name or str(path))
        with ExitStack() as stack:
            with self.store.writing(caller.service_id) as w:
                self._team_guard(w, caller, team_id)
                if w.get(MetaKind.TEAM, team_id) is None and caller.user_id is not None:
                    raise NotFound(f"team not found: {team_id}")
                existing = w.find(MetaKind.CODE_GRAPH, same, limit=1)
                if existing:
                    return self.detail(existing[0]), False
                place = stack.enter_context(self.builds.reserve(caller.service_id))  # 429 here writes nothing
                now = now_iso()
                code_graph_id = self._new_id(w)
                row = {
                    "code_graph_id": code_graph_id,
                    "team_id": team_id,
                    "repo_name": name[:REPO_NAME_MAX],
                    "repo_url": url,
                    "source_path": path,
                    "remote_url": None,
                    "branch": branch,
                    "commit_hash": None,
                    "summary": fields.get("summary"),
                    "status": "pending",
                    "internal_status": None,
                    "sync_error": None,
                    "version": 0,
                    "generation": 0,
                    "build_seq": 0,
                    "owner_user_id": caller.user_id or user_id,
                    "agent_id": fields.get("agent_id"),
                    "task_id": fields.get("task_id"),
                    "stats_json": None,
                    "last_sync_at": None,
                    "created_at": now,
                    "updated_at": now,
                }
                w.insert(MetaKind.CODE_GRAPH, row)
                audit.record(
                    w, caller, "code-graph/create", [code_graph_id], {"team_id": team_id, "repo_url": url, "path": path}
                )
                job = self.builds.queue(w, row)
            # The directory marks the tenant as having knowledge files, which is how `resume` finds builds.
            self.files.graph_dir(caller.service_id, code_graph_id).mkdir(parents=True, exist_ok=True)
            built = self.builds.submit(job, place)
        if not wait:
            return self.get(caller, code_graph_id), True
        report = built.result()
        return {**self.get(caller, code_graph_id), "report": report.view() if report else None}, True

    def update_meta(self, caller: Caller, code_graph_id: str, changes: Mapping[str, Any]) -> Row:
        """code-graph/update-meta: repo_name and/or summary (the registry entry follows)."""
        with self.store.writing(caller.service_id) as w:
            self._row(w, caller, code_graph_id)
            patch = {k: v for k, v in changes.items() if k in ("repo_name", "summary")}
            if "repo_name" in patch and patch["repo_name"] is None:
                raise BadRequest("repo_name: must be a non-empty string, not null (send summary: null to clear it)")
            row = audit.changed(w, caller, MetaKind.CODE_GRAPH, code_graph_id, patch, "code-graph/update-meta")
            if w.get(MetaKind.KNOWLEDGE, code_graph_id) is not None:
                register_code_graph(w, row, self.config.public_url)
        return self.detail(row)

    def _forget(self, service_id: str, resource_id: str) -> None:
        self.readers.forget(service_id, resource_id)

    # -- builds -------------------------------------------------------------------------------------------

    def sync(self, caller: Caller, code_graph_id: str, *, wait: bool = False) -> tuple[Row, bool]:
        """Fetch the source again and re-index what changed (or run it now with `wait`); (result, finished).
        409 busy while a build is queued or running."""
        with ExitStack() as stack:
            with self.store.writing(caller.service_id) as w:
                row = self._row(w, caller, code_graph_id)
                if row["status"] in BUSY_STATUSES:
                    raise busy(row)
                place = stack.enter_context(self.builds.reserve(caller.service_id))  # 429 here writes nothing
                job = self.builds.queue(w, row)
                audit.record(w, caller, "code-graph/sync", [code_graph_id], {"seq": job.seq})
            built = self.builds.submit(job, place)
        if not wait:
            return {"code_graph_id": code_graph_id, "status": "pending"}, False
        report = built.result()
        return {**self.get(caller, code_graph_id), "report": report.view() if report else None}, True

    # -- queries ---------------------------------------------------------------------------------------

    def run_query(self, service_id: str, row: Row, tool_name: str, params: dict[str, Any]) -> Row | None:
        """One query tool (params already checked) over the current generation, with `stale`; None when the
        graph never built."""
        with self.readers.lease(service_id, row) as graph:
            if graph is None:
                return None
            data = queries.run_tool(graph, tool_name, params, source_root=self.source_root(service_id, row))
        return {**data, "stale": stale(row)}

    def query(self, caller: Caller, code_graph_id: str, tool_name: str, fields: Mapping[str, Any]) -> Row:
        """A direct `/v3/code-graph/<tool>` query: params checked (400), 409 naming the status when never built."""
        row = self.row(caller, code_graph_id)
        params = query_params(tool_name, fields)
        data = self.run_query(caller.service_id, row, tool_name, params)
        if data is None:
            raise Conflict(not_built_message(row), data={"status": row["status"], "step": row["internal_status"]})
        return data

    # -- tools ---------------------------------------------------------------------------------------------

    def tool_view(self, row: Row) -> Row:
        """The graph as tools/list shows it; its name is the reference's `repo_name || repo_url`."""
        detail = self.detail(row)
        return {
            "name": detail["repo_name"] or detail["repo_url"],
            **{k: detail[k] for k in ("summary", "status", "stale")},
        }

    def call_tool(self, caller: Caller, row: Row, tool_name: str, params: dict[str, Any]) -> Row:
        """One code-graph tool (params already checked); a graph that never built answers with a tool error
        naming its status."""
        if tool_name == "get_info":
            # The reference answers with its raw row (integer version, service id); memhub with the detail.
            return {**self.detail(row), "service_id": caller.service_id, "version": row["version"]}
        data = self.run_query(caller.service_id, row, tool_name, params)
        if data is None:
            return tool_error(not_built_message(row), status=row["status"])
        return data


__all__ = [
    "CodeGraphConfig",
    "CodeGraphService",
    "not_built_message",
    "query_params",
    "stale",
]
