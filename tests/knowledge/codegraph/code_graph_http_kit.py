"""Helpers for the `/v3/code-graph/*` HTTP tests (tests/knowledge/codegraph/test_code_graph_http.py).

Everything goes through the real app (tests/conftest.py `build_gateway`): `CodeGraphHttp` sends a route's
body with the gateway key and a service id and checks the envelope; `GitRepo` is a real git working copy
pushing to a real bare repository (`file://` URL), driven by the git command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub.knowledge.codegraph.service import CodeGraphService
from tests.knowledge.knowledge_http import KnowledgeHttp

SERVICE = "svc-a"
OTHER_SERVICE = "svc-b"
TEAM = "team-code"
PYPROJ = Path(__file__).parent / "fixtures" / "pyproj"
PYPROJ_FILES = sorted(p.relative_to(PYPROJ).as_posix() for p in PYPROJ.rglob("*.py"))
CODE_GRAPH_ID = r"^cg-[0-9a-z]{8}$"
# The reference's CodeGraphDetail plus memhub's additions.
DETAIL_FIELDS = {
    "code_graph_id",
    "team_id",
    "repo_name",
    "repo_url",
    "branch",
    "commit_hash",
    "service_url",
    "summary",
    "status",
    "internal_status",
    "sync_error",
    "version",
    "owner_user_id",
    "stats",
    "parse_errors",
    "unresolved",
    "source_path",
    "stale",
    "last_sync_at",
    "created_at",
    "updated_at",
}
CODE_GRAPH_TOOLS = [
    "get_info",
    "search",
    "explore",
    "callers",
    "callees",
    "impact",
    "node",
    "status",
    "files",
    "definition",
    "call_hierarchy",
    "file_deps",
    "refactor_scope",
    "path",
    "class_hierarchy",
]


@dataclass
class CodeGraphHttp(KnowledgeHttp):
    """`/v3/code-graph/*` and `/v3/tools/*` over the gateway key, for one service id and team by default."""

    service: str = SERVICE
    team: str = TEAM

    @property
    def code_graphs(self) -> CodeGraphService:
        """The app's code-graph service (to wait for background builds)."""
        return self.gw.client.app.state.knowledge.code_graphs  # type: ignore[attr-defined,no-any-return]

    def wait(self) -> None:
        """Block until every queued build has finished."""
        self.code_graphs.wait_idle(timeout=120)

    def create(self, *, status: int = 201, wait: bool = True, **fields: Any) -> dict[str, Any]:
        """code-graph/create in the default team (built now unless `wait=False`); the detail."""
        body = {"team_id": self.team, "wait": wait, **fields}
        return dict(self.ok("code-graph/create", body, status=status))

    def get(self, code_graph_id: str, *, service: str | None = None) -> dict[str, Any]:
        """The graph's detail."""
        return dict(self.ok("code-graph/get", {"code_graph_id": code_graph_id}, service=service))

    def sync(self, code_graph_id: str) -> dict[str, Any]:
        """Sync now (`wait: true`); the detail with its build `report`."""
        return dict(self.ok("code-graph/sync", {"code_graph_id": code_graph_id, "wait": True}))

    def tool(self, code_graph_id: str, tool_name: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """tools/call of one code-graph tool; `data`."""
        body = {"knowledge_id": code_graph_id, "tool_name": tool_name, "params": dict(params or {})}
        return dict(self.ok("tools/call", body))


def copy_pyproj(root: Path, name: str = "pyproj") -> Path:
    """A fresh copy of the pyproj fixture under `root`."""
    target = root / name
    shutil.copytree(PYPROJ, target)
    return target


def run_git(cwd: Path, *args: str) -> str:
    """Run git (a fixed identity, no global config); its stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=30)
    return done.stdout


@dataclass
class GitRepo:
    """A working copy of the pyproj fixture pushing to a bare repository reachable at `url` (file://)."""

    work: Path
    bare: Path

    @classmethod
    def make(cls, root: Path, branch: str = "main") -> GitRepo:
        """The fixture committed on `branch` and pushed to `<root>/shop.git`."""
        work = copy_pyproj(root, "work")
        bare = root / "shop.git"
        run_git(root, "init", "--quiet", "--bare", "-b", branch, str(bare))
        run_git(work, "init", "--quiet", "-b", branch)
        run_git(work, "add", "-A")
        run_git(work, "commit", "--quiet", "-m", "shop")
        run_git(work, "remote", "add", "origin", bare.as_uri())
        run_git(work, "push", "--quiet", "origin", branch)
        return cls(work, bare)

    @property
    def url(self) -> str:
        """The bare repository's file:// URL."""
        return self.bare.as_uri()

    def head(self) -> str:
        """The working copy's HEAD commit (40 hex)."""
        return run_git(self.work, "rev-parse", "HEAD").strip()

    def commit_and_push(self, files: Mapping[str, str], message: str = "change") -> None:
        """Write these files, commit them and push the branch."""
        for name, text in files.items():
            (self.work / name).write_text(text, encoding="utf-8")
        run_git(self.work, "add", "-A")
        run_git(self.work, "commit", "--quiet", "-m", message)
        run_git(self.work, "push", "--quiet", "origin", "HEAD")


def locations(items: list[dict[str, Any]]) -> set[str]:
    """`qname@file:line` of each item."""
    return {f"{i['qname']}@{i['file']}:{i['line']}" for i in items}
