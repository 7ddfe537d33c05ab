"""The code-graph build queue through the real app: builds take turns across tenants, a tenant's line is bounded
(429 naming the limit, nothing written), and a build past its time limit fails while the next one runs.

Builds are driven by a stand-in for the indexing step that records the order builds run in and holds the first
one until the test lets it go, so every outcome is decided by the queue, never by timing. The time-limit test
holds a build for good (until the test is done) under a tiny limit, so it can only end by timing out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import memhub.knowledge.codegraph.builds as code_graph_builds
from memhub.knowledge.build_queue import BuildStopped
from memhub.knowledge.codegraph.indexer import index_tree
from tests.knowledge.build_holds import hold_first_run
from tests.knowledge.codegraph.code_graph_http_kit import OTHER_SERVICE, SERVICE, TEAM, CodeGraphHttp, copy_pyproj
from tests.knowledge.tools_kit import knowledge_tags


class FirstBuildHeld:
    """Stands in for `index_tree`: records the source directory of each build in order; the first build waits
    for `release` (`entered` says it started)."""

    def __init__(self, index_tree: Callable[..., Any]) -> None:
        self._index_tree = index_tree
        self.order: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, tree: Path, *args: Any, **kwargs: Any) -> Any:
        self.order.append(Path(tree).name)
        if len(self.order) == 1:
            self.entered.set()
            self.release.wait(60)
        return self._index_tree(tree, *args, **kwargs)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[FirstBuildHeld]:
    stand_in = FirstBuildHeld(code_graph_builds.index_tree)
    monkeypatch.setattr(code_graph_builds, "index_tree", stand_in)
    yield stand_in
    stand_in.release.set()


def _sources(roots: Path, *names: str) -> dict[str, str]:
    return {name: str(copy_pyproj(roots, name)) for name in names}


def test_one_tenants_backlog_does_not_starve_another_tenant(
    cg: CodeGraphHttp, roots: Path, held: FirstBuildHeld
) -> None:
    sources = _sources(roots, "a1", "a2", "a3", "a4", "a5", "b1")
    other = CodeGraphHttp(cg.gw, service=OTHER_SERVICE)
    cg.create(source_path=sources["a1"], wait=False)
    assert held.entered.wait(30)  # a1 runs (one worker); everything below waits in line
    for name in ("a2", "a3", "a4", "a5"):
        cg.create(source_path=sources[name], wait=False)
    other.create(source_path=sources["b1"], wait=False)
    held.release.set()
    cg.wait()
    # Tenants take turns: b1 runs after one more of svc-a's builds, not after all four.
    assert held.order == ["a1", "a2", "b1", "a3", "a4", "a5"]
    for api in (cg, other):
        assert {g["status"] for g in api.ok("code-graph/list", {"team_id": TEAM})["items"]} == {"ready"}


def test_a_tenant_with_a_full_line_gets_429_naming_the_limit_and_nothing_is_written(
    make_cg: Callable[..., CodeGraphHttp], roots: Path, held: FirstBuildHeld
) -> None:
    cg = make_cg(knowledge_build_queue_per_tenant=2)
    sources = _sources(roots, "running", "waiting1", "waiting2", "refused", "other")
    cg.create(source_path=sources["running"], wait=False)
    assert held.entered.wait(30)  # running, not waiting: the line holds the next two
    cg.create(source_path=sources["waiting1"], wait=False)
    cg.create(source_path=sources["waiting2"], wait=False)
    envelope = cg.fails("code-graph/create", {"team_id": TEAM, "source_path": sources["refused"]}, 429)
    assert envelope["message"] == (
        "code-graph builds: 2 builds of this service are already waiting "
        "(limit MEMHUB_KNOWLEDGE_BUILD_QUEUE_PER_TENANT=2); retry when some have finished"
    )
    assert envelope["data"] == {"waiting": 2, "limit": 2, "retryable": True}
    assert cg.ok("code-graph/list", {"team_id": TEAM})["total"] == 3
    # Another tenant has a line of its own.
    CodeGraphHttp(cg.gw, service=OTHER_SERVICE).create(source_path=sources["other"], wait=False)
    held.release.set()
    cg.wait()
    # With the line empty again, the refused build is accepted, and so is a sync.
    detail = cg.create(source_path=sources["refused"])
    assert detail["status"] == "ready"
    assert cg.sync(detail["code_graph_id"])["status"] == "ready"


def test_a_build_past_its_time_limit_fails_and_the_next_build_runs(
    cg: CodeGraphHttp, roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = _sources(roots, "stuck", "next")
    builds = cg.code_graphs.builds
    release = hold_first_run(builds, monkeypatch)  # it can only end by its limit
    generous = builds.pool.limits
    builds.pool.limits = replace(generous, time_limit=0.01)
    stuck = cg.create(source_path=sources["stuck"])  # `wait`: answers when the build ended, here by its limit
    assert (stuck["status"], stuck["report"], stuck["version"]) == ("failed", None, "0")
    assert stuck["sync_error"] == (
        "build timed out after 0.01 s (limit MEMHUB_CODE_GRAPH_BUILD_TIMEOUT_SECONDS); sync again, or index a "
        "smaller tree"
    )
    builds.pool.limits = generous
    after = cg.create(source_path=sources["next"])  # the worker moved on while `stuck` is still held
    assert after["status"] == "ready" and not release.is_set()
    release.set()
    cg.wait()  # the stuck build goes on, sees it was given up at its first step, and leaves nothing
    again = cg.get(stuck["code_graph_id"])
    assert (again["status"], again["version"], again["stats"]) == ("failed", "0", None)
    graph_dir = cg.code_graphs.files.graph_dir(SERVICE, stuck["code_graph_id"])
    assert not any(p.suffix == ".db" for p in graph_dir.rglob("*"))
    block = cg.ok("knowledge/tools-block", {"team_id": TEAM})
    assert {tag["id"] for tag in knowledge_tags(block["text"])} == {after["code_graph_id"]}


def test_indexing_stops_between_files_once_the_build_is_given_up(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(BuildStopped):
        index_tree(copy_pyproj(tmp_path), tmp_path / "g.db", stop=stop)
