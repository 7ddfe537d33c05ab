"""The wiki build queue through the real app: the same queue as code graphs (memhub.knowledge.build_queue), so a
tenant's line is bounded (429 naming the limit, nothing written), builds take turns across tenants, and a build
past its time limit fails while the next one runs.

Builds are held by stand-ins (at their first step, or at `build_generation`) until the test lets them go, so
every outcome is decided by the queue, never by timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import memhub.knowledge.wiki.builds as wiki_builds
from tests.conftest import build_gateway
from tests.knowledge.build_holds import hold_first_run
from tests.knowledge.wiki_http_kit import OTHER_SERVICE, TEAM, BuildGate, WikiHttp

DOC = {"a.md": "# A\n\nalpha\n"}


@pytest.fixture
def gateways(tmp_path: Path) -> Iterator[list[WikiHttp]]:
    made: list[WikiHttp] = []
    yield made
    for api in made:
        api.wait()
        api.gw.close()


def _wikis(gateways: list[WikiHttp], tmp_path: Path, **settings: Any) -> WikiHttp:
    api = WikiHttp(build_gateway(tmp_path / f"data{len(gateways)}", **settings))
    gateways.append(api)
    return api


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[BuildGate]:
    held = BuildGate(wiki_builds.build_generation)
    monkeypatch.setattr(wiki_builds, "build_generation", held)
    yield held
    held.release.set()


def test_a_tenant_with_a_full_line_gets_429_naming_the_limit_and_nothing_is_written(
    gateways: list[WikiHttp], tmp_path: Path, gate: BuildGate
) -> None:
    wk = _wikis(gateways, tmp_path, knowledge_build_queue_per_tenant=1)
    running, waiting, refused = (wk.create(name) for name in ("running", "waiting", "refused"))
    for wiki_id in (running, waiting, refused):
        wk.write(wiki_id, DOC)
    wk.ok("wiki/ingest", {"wiki_id": running}, status=202)
    assert gate.entered.wait(30)  # running, not waiting: the line holds one more
    wk.ok("wiki/ingest", {"wiki_id": waiting}, status=202)
    before = wk.state(refused)
    message = (
        "wiki builds: 1 builds of this service are already waiting (limit MEMHUB_KNOWLEDGE_BUILD_QUEUE_PER_TENANT=1); "
        "retry when some have finished"
    )
    envelope = wk.fails("wiki/ingest", {"wiki_id": refused}, 429, message)
    assert envelope["data"] == {"waiting": 1, "limit": 1, "retryable": True}
    pages = [{"ref": "b", "content": "# B\n"}]
    wk.fails("wiki/page/write", {"team_id": TEAM, "wiki_id": refused, "pages": pages}, 429, message)
    wk.fails("wiki/raw/rm", {"team_id": TEAM, "wiki_id": refused, "filenames": ["a.md"]}, 429, message)
    assert wk.state(refused) == before and wk.get(refused)["status"] == "draft"
    gate.release.set()
    wk.wait()
    assert wk.ingest(refused)["status"] == "ready"


def test_one_tenants_backlog_does_not_starve_another_tenant(
    gateways: list[WikiHttp], tmp_path: Path, gate: BuildGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    wk = _wikis(gateways, tmp_path)
    other = WikiHttp(wk.gw, service=OTHER_SERVICE)
    mine = [wk.create(f"a{i}") for i in range(1, 5)]
    theirs = other.create("b1")
    for api, wiki_id in [*((wk, w) for w in mine), (other, theirs)]:
        api.write(wiki_id, DOC)
    order: list[str] = []
    run = wk.wikis.builds.run
    monkeypatch.setattr(wk.wikis.builds, "run", lambda job, deadline: order.append(job.wiki_id) or run(job, deadline))
    wk.ok("wiki/ingest", {"wiki_id": mine[0]}, status=202)
    assert gate.entered.wait(30)
    for wiki_id in mine[1:]:
        wk.ok("wiki/ingest", {"wiki_id": wiki_id}, status=202)
    other.ok("wiki/ingest", {"wiki_id": theirs}, status=202)
    gate.release.set()
    wk.wait()
    assert order == [mine[0], mine[1], theirs, mine[2], mine[3]]


def test_a_build_past_its_time_limit_fails_and_the_next_build_runs(
    gateways: list[WikiHttp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wk = _wikis(gateways, tmp_path)
    stuck, after = wk.create("stuck"), wk.create("after")
    for wiki_id in (stuck, after):
        wk.write(wiki_id, DOC)
    builds = wk.wikis.builds
    release = hold_first_run(builds, monkeypatch)  # it can only end by its limit
    generous = builds.pool.limits
    builds.pool.limits = replace(generous, time_limit=0.01)
    failed = wk.ingest(stuck)
    assert (failed["status"], failed["report"]) == ("failed", None)
    assert failed["sync_error"] == (
        "build timed out after 0.01 s (limit MEMHUB_WIKI_BUILD_TIMEOUT_SECONDS); ingest again, or split the sources"
    )
    builds.pool.limits = generous
    assert wk.ingest(after)["status"] == "ready" and not release.is_set()
    release.set()
    wk.wait()
    again = wk.get(stuck)
    assert (again["status"], again["version"]) == ("failed", "0")
    assert not wk.wikis.files.generation_dir(wk.service, stuck, 1).exists()  # the stuck build's, never made
