"""The code-graph service through the real HTTP app: `/v3/code-graph/*`, `/v3/tools/*` for `cg-` ids, and the
`<knowledge_tools>` block.

Each test gets its own gateway over a temporary data dir whose allowed source root holds a copy of the
pyproj fixture (tests/knowledge/codegraph/fixtures/pyproj) or a real bare git repository made from it
(`file://`). Builds run on the service's pool: tests build with `wait: true`, or wait for the pool. The
exact answers of the query tools belong to test_queries.py; here the shape, `stale`, and a few known
answers of the fixture (the callers of `shop.util.log`) are checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import memhub.knowledge.codegraph.builds as code_graph_builds
from memhub.api import create_app
from memhub.gateway_key import ensure_gateway_key
from memhub.model.meta import MetaKind
from memhub.runtime import build_hub, open_store
from memhub.settings import Settings
from tests.conftest import GATEWAY_KEY
from tests.knowledge.codegraph.code_graph_http_kit import (
    CODE_GRAPH_ID,
    CODE_GRAPH_TOOLS,
    DETAIL_FIELDS,
    OTHER_SERVICE,
    PYPROJ_FILES,
    SERVICE,
    TEAM,
    CodeGraphHttp,
    GitRepo,
    copy_pyproj,
    locations,
    run_git,
)
from tests.knowledge.tools_kit import knowledge_tags
from tests.knowledge.wiki_http_kit import BuildGate
from tests.meta.org import Org

ROOTS_403 = "source_path: not under an allowed source root (set MEMHUB_CODE_SOURCE_ROOTS to allow local folders)"
# Every call site of shop.util.log in the fixture, as `caller@file:line`.
LOG_CALLERS = {
    "shop.client.Session.send@shop/client.py:12",
    "shop.payments.base.Provider.validate@shop/payments/base.py:13",
    "shop.payments.service.checkout.audit@shop/payments/service.py:22",
    "shop.util.timed.wrapper@shop/util.py:18",
}


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[BuildGate]:
    """Builds hold before indexing until `gate.release` is set (set again at teardown)."""
    held = BuildGate(code_graph_builds.index_tree)
    monkeypatch.setattr(code_graph_builds, "index_tree", held)
    yield held
    held.release.set()


# -- create ---------------------------------------------------------------------------------------------------


def test_create_from_a_local_path_builds_a_ready_graph(cg: CodeGraphHttp, project: Path) -> None:
    detail = cg.create(source_path=str(project))
    report = detail.pop("report")
    assert set(detail) == DETAIL_FIELDS
    assert re.match(CODE_GRAPH_ID, detail["code_graph_id"])
    assert (detail["status"], detail["internal_status"], detail["sync_error"]) == ("ready", None, None)
    assert (detail["version"], detail["stale"]) == ("1", False)  # version is a string, as in the reference
    assert (detail["repo_name"], detail["repo_url"], detail["branch"]) == ("pyproj", None, None)
    assert detail["source_path"] == str(project.resolve())
    assert detail["commit_hash"] is None  # not a git working tree
    assert detail["stats"]["files"] == len(PYPROJ_FILES)
    assert detail["stats"]["nodes"] > 0 and detail["stats"]["edges"] > 0
    assert (detail["parse_errors"], detail["unresolved"]) == (0, 1)
    assert detail["service_url"].endswith("/v3") and detail["last_sync_at"] is not None
    assert detail["summary"] == f"pyproj (working tree) - {len(PYPROJ_FILES)} files, {detail['stats']['nodes']} symbols"
    assert sorted(report["added"]) == PYPROJ_FILES
    assert report["files"] == {"added": 6, "changed": 0, "removed": 0, "unchanged": 0, "skipped": 0}
    assert cg.get(detail["code_graph_id"]) == detail
    graph_db = cg.code_graphs.files.generation_db(SERVICE, detail["code_graph_id"], 1)
    assert graph_db.is_file()


def test_create_without_wait_answers_201_pending_then_builds_in_the_background(
    cg: CodeGraphHttp, project: Path
) -> None:
    detail = cg.create(source_path=str(project), wait=False)
    assert detail["status"] in ("pending", "processing", "ready") and "report" not in detail
    cg.wait()
    built = cg.get(detail["code_graph_id"])
    assert (built["status"], built["version"], built["stats"]["files"]) == ("ready", "1", 6)


def test_create_is_idempotent_per_source(cg: CodeGraphHttp, project: Path, repo: GitRepo) -> None:
    first = cg.create(source_path=str(project))
    first.pop("report")
    assert cg.create(source_path=str(project) + "/", status=200, summary="ignored") == first
    in_other_team = cg.ok("code-graph/create", {"team_id": "team-2", "source_path": str(project)}, status=201)
    assert in_other_team["code_graph_id"] != first["code_graph_id"]
    on_main = cg.create(repo_url=repo.url)
    assert cg.create(repo_url=repo.url + "/", branch="main", status=200)["code_graph_id"] == on_main["code_graph_id"]
    listed = cg.ok("code-graph/list", {"team_id": TEAM})
    assert listed["total"] == 2
    assert [x["code_graph_id"] for x in listed["items"]] == [on_main["code_graph_id"], first["code_graph_id"]]
    assert cg.ok("code-graph/list", {"team_id": TEAM, "status": "failed"}) == {"items": [], "total": 0}


def test_create_from_a_file_url_clones_the_branch(cg: CodeGraphHttp, repo: GitRepo) -> None:
    detail = cg.create(repo_url=repo.url)
    assert (detail["status"], detail["repo_name"], detail["branch"]) == ("ready", "shop", "main")
    assert (detail["repo_url"], detail["source_path"]) == (repo.url, None)
    assert detail["commit_hash"] == repo.head()[:12]
    assert detail["report"]["commit_hash"] == detail["commit_hash"]
    checkout = cg.code_graphs.files.checkout_dir(SERVICE, detail["code_graph_id"])
    assert (checkout / "shop" / "util.py").is_file()
    assert sorted(detail["report"]["added"]) == PYPROJ_FILES


def test_refused_sources(cg: CodeGraphHttp, tmp_path: Path, project: Path) -> None:
    outside = copy_pyproj(tmp_path, "outside")
    cg.fails("code-graph/create", {"team_id": TEAM, "source_path": str(outside)}, 403, ROOTS_403)
    cg.fails(
        "code-graph/create", {"team_id": TEAM, "source_path": "pyproj"}, 400, "source_path: must be an absolute path"
    )
    cg.fails("code-graph/create", {"team_id": TEAM, "source_path": str(project / "nope")}, 400, "source_path: not a …")
    cg.fails(
        "code-graph/create",
        {"team_id": TEAM, "repo_url": "https://bot:ghp_TOKEN123@github.com/acme/shop.git"},
        400,
        "repo_url: must not carry credentials …",
    )
    cg.fails(
        "code-graph/create",
        {"team_id": TEAM, "repo_url": "https://ghp_TOKEN@github.com/a/b"},
        400,
        "repo_url: must not carry …",
    )
    cg.fails(
        "code-graph/create",
        {"team_id": TEAM, "repo_url": "ext::sh -c touch% /tmp/x"},
        400,
        "repo_url: must be a git URL …",
    )
    cg.fails(
        "code-graph/create", {"team_id": TEAM, "repo_url": "ftp://host/r.git"}, 400, "repo_url: unsupported scheme …"
    )
    cg.fails(
        "code-graph/create", {"team_id": TEAM, "repo_url": "--upload-pack=x"}, 400, "repo_url: must not start with '-'"
    )
    cg.fails(
        "code-graph/create",
        {"team_id": TEAM, "repo_url": (tmp_path / "outside").as_uri()},
        403,
        "repo_url: a file:// repository must be under an allowed source root (set MEMHUB_CODE_SOURCE_ROOTS)",
    )
    cg.fails("code-graph/create", {"team_id": TEAM, "repo_url": "https://h/a/b", "branch": "-x"}, 400, "branch: …")
    cg.fails("code-graph/create", {"team_id": TEAM}, 400, "repo_url: give exactly one of …")
    both = {"team_id": TEAM, "repo_url": "https://h/a/b", "source_path": str(project)}
    cg.fails("code-graph/create", both, 400, "repo_url: give exactly one of …")
    cg.fails(
        "code-graph/create", {"team_id": TEAM, "source_path": str(project), "branch": "dev"}, 400, "branch: only …"
    )
    assert cg.ok("code-graph/list", {"team_id": TEAM})["total"] == 0  # nothing written
    assert not (cg.gw.data_dir / "knowledge").exists()


def test_without_source_roots_local_sources_are_403_naming_the_setting(
    make_cg: Callable[..., CodeGraphHttp], project: Path
) -> None:
    cg = make_cg(code_source_roots=[])
    cg.fails("code-graph/create", {"team_id": TEAM, "source_path": str(project)}, 403, ROOTS_403)


def test_a_branch_that_does_not_exist_fails_the_build_with_the_git_error(cg: CodeGraphHttp, repo: GitRepo) -> None:
    detail = cg.create(repo_url=repo.url, branch="nope")
    assert (detail["status"], detail["version"], detail["stats"], detail["report"]) == ("failed", "0", None, None)
    assert detail["sync_error"] == "git clone failed: the repository could not be fetched (branch not found)"
    assert not cg.code_graphs.files.checkout_dir(SERVICE, detail["code_graph_id"]).exists()
    answer = cg.tool(detail["code_graph_id"], "callers", {"symbol": "log"})
    assert answer["isError"] is True and answer["status"] == "failed"
    assert answer["text"].startswith(f"code graph {detail['code_graph_id']} has no index: the last build failed: git")
    envelope = cg.fails("code-graph/callers", {"code_graph_id": detail["code_graph_id"], "symbol": "log"}, 409)
    assert envelope["data"] == {"status": "failed", "step": None}
    # Nothing was registered: a graph that never built is not offered to agents.
    assert cg.ok("knowledge/tools-block", {"team_id": TEAM})["resources"] == []


# -- sync -----------------------------------------------------------------------------------------------------


def test_sync_of_a_local_path_reparses_only_the_edited_file(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    util = project / "shop" / "util.py"
    util.write_text(util.read_text() + "\n\ndef shout(text):\n    log(text.upper())\n")
    synced = cg.sync(code_graph_id)
    report = synced["report"]
    assert (report["changed"], report["added"], report["removed"]) == (["shop/util.py"], [], [])
    assert report["files"]["unchanged"] == len(PYPROJ_FILES) - 1
    assert (synced["status"], synced["version"], synced["stale"]) == ("ready", "2", False)
    callers = cg.tool(code_graph_id, "callers", {"symbol": "shop.util.log"})
    assert "shop.util.shout" in {i["qname"] for i in callers["items"]}
    # Only the current generation is kept.
    gens = cg.code_graphs.files.generation_db(SERVICE, code_graph_id, 2).parent.parent
    assert sorted(p.name for p in gens.iterdir()) == ["2"]


def test_sync_of_a_git_source_fetches_the_new_commit(cg: CodeGraphHttp, repo: GitRepo) -> None:
    first = cg.create(repo_url=repo.url)
    repo.commit_and_push(
        {"shop/util.py": (repo.work / "shop" / "util.py").read_text() + "\n\ndef extra():\n    pass\n"}
    )
    synced = cg.sync(first["code_graph_id"])
    assert synced["commit_hash"] == repo.head()[:12] != first["commit_hash"]
    assert synced["report"]["changed"] == ["shop/util.py"] and synced["report"]["added"] == []
    assert (synced["version"], synced["stats"]["nodes"]) == ("2", first["stats"]["nodes"] + 1)
    found = cg.tool(first["code_graph_id"], "search", {"query": "extra"})
    assert [(i["qname"], i["file"]) for i in found["items"]] == [("shop.util.extra", "shop/util.py")]


def test_sync_while_a_build_runs_is_409_busy_and_queries_answer_stale(
    cg: CodeGraphHttp, project: Path, gate: BuildGate
) -> None:
    gate.release.set()
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    gate.release.clear()
    gate.entered.clear()
    assert cg.ok("code-graph/sync", {"code_graph_id": code_graph_id}, status=202) == {
        "code_graph_id": code_graph_id,
        "status": "pending",
    }
    assert gate.entered.wait(120)
    envelope = cg.fails("code-graph/sync", {"code_graph_id": code_graph_id}, 409, "busy")
    assert envelope["data"] == {"status": "processing", "step": "indexing"}
    during = cg.get(code_graph_id)
    assert (during["status"], during["stale"], during["version"]) == ("processing", True, "1")
    answer = cg.tool(code_graph_id, "callers", {"symbol": "shop.util.log"})
    assert (answer["stale"], answer["isError"]) == (True, False)
    assert locations(answer["items"]) == LOG_CALLERS
    gate.release.set()
    cg.wait()
    after = cg.get(code_graph_id)
    assert (after["status"], after["stale"], after["version"]) == ("ready", False, "2")


def test_a_failed_sync_keeps_serving_the_last_good_graph_as_stale(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    moved = project.rename(project.with_name("moved"))
    failed = cg.sync(code_graph_id)
    assert (failed["status"], failed["stale"], failed["version"], failed["report"]) == ("failed", True, "1", None)
    assert failed["sync_error"] == f"source_path: {project.resolve()} is not a directory any more"
    answer = cg.ok("code-graph/callers", {"code_graph_id": code_graph_id, "symbol": "shop.util.log"})
    assert answer["stale"] is True and locations(answer["items"]) == LOG_CALLERS
    moved.rename(project)
    fixed = cg.sync(code_graph_id)
    assert (fixed["status"], fixed["stale"], fixed["version"], fixed["sync_error"]) == ("ready", False, "2", None)
    assert fixed["report"]["files"]["unchanged"] == len(PYPROJ_FILES)


def test_resume_rebuilds_a_graph_left_processing(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    with cg.gw.store.meta.writing(SERVICE) as w:  # as a process killed mid-build leaves it
        w.update(MetaKind.CODE_GRAPH, code_graph_id, {"status": "processing"})
    assert cg.code_graphs.resume() == 1
    cg.wait()
    assert (cg.get(code_graph_id)["status"], cg.get(code_graph_id)["version"]) == ("ready", "2")


# -- update, delete, isolation ----------------------------------------------------------------------------------


def test_update_meta_renames_and_the_registry_follows(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    body = {"code_graph_id": code_graph_id, "repo_name": "Shop", "summary": "the shop service"}
    updated = cg.ok("code-graph/update-meta", body)
    assert (updated["repo_name"], updated["summary"]) == ("Shop", "the shop service")
    entry = cg.ok("knowledge/get", {"knowledge_id": code_graph_id})
    assert (entry["type"], entry["name"], entry["summary"]) == ("code-graph", "Shop", "the shop service")
    cleared = cg.ok("code-graph/update-meta", {"code_graph_id": code_graph_id, "summary": None})
    assert cleared["summary"].startswith("Shop (working tree) - 6 files")


def test_delete_removes_the_graph_its_files_and_its_registration(cg: CodeGraphHttp, repo: GitRepo) -> None:
    code_graph_id = cg.create(repo_url=repo.url)["code_graph_id"]
    assert cg.tool(code_graph_id, "status")["isError"] is False  # a reader is open
    graph_dir = cg.code_graphs.files.graph_dir(SERVICE, code_graph_id)
    assert graph_dir.is_dir()
    result = cg.ok("code-graph/delete", {"code_graph_ids": [code_graph_id, "cg-zzzzzzzz", "wiki-abcdefgh"]})
    assert result == {
        "deleted_ids": [code_graph_id],
        "failed": [{"id": "cg-zzzzzzzz", "reason": "not found"}, {"id": "wiki-abcdefgh", "reason": "invalid id"}],
    }
    assert not graph_dir.exists()
    cg.fails("code-graph/get", {"code_graph_id": code_graph_id}, 404, f"code graph not found: {code_graph_id}")
    cg.fails("knowledge/get", {"knowledge_id": code_graph_id}, 404, "Knowledge not found")
    cg.fails("tools/list", {"knowledge_id": code_graph_id}, 404, "knowledge resource not found")
    cg.fails("code-graph/get", {"code_graph_id": "cg-ABC"}, 400, "code_graph_id: invalid code_graph_id format …")


def test_another_tenant_sees_no_graph(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    ref = {"code_graph_id": code_graph_id}
    cg.fails("code-graph/get", ref, 404, f"code graph not found: {code_graph_id}", service=OTHER_SERVICE)
    cg.fails("code-graph/callers", {**ref, "symbol": "log"}, 404, service=OTHER_SERVICE)
    cg.fails("code-graph/sync", ref, 404, service=OTHER_SERVICE)
    call = {"knowledge_id": code_graph_id, "tool_name": "get_info", "params": {}}
    cg.fails("tools/call", call, 404, "knowledge resource not found", service=OTHER_SERVICE)
    deleted = cg.ok("code-graph/delete", {"code_graph_ids": [code_graph_id]}, service=OTHER_SERVICE)
    assert deleted == {"deleted_ids": [], "failed": [{"id": code_graph_id, "reason": "not found"}]}
    assert cg.get(code_graph_id)["status"] == "ready"


def test_with_a_user_key_only_active_team_members_see_a_graph(cg: CodeGraphHttp, project: Path) -> None:
    org = Org(cg.gw, service=SERVICE)
    owner, member, outsider = org.users("owner", "member", "outsider")
    team = org.staffed_team(owner, "eng", (member, "member"))
    created = org.call(owner, "/v3/code-graph/create", {"team_id": team, "source_path": str(project), "wait": True})
    assert created.status_code == 201, created.json()
    detail = created.json()["data"]
    code_graph_id = detail["code_graph_id"]
    assert detail["owner_user_id"] == owner.user_id
    assert org.ok(member, "/v3/code-graph/get", {"code_graph_id": code_graph_id})["status"] == "ready"
    call = {"knowledge_id": code_graph_id, "tool_name": "callers", "params": {"symbol": "shop.util.log"}}
    assert locations(org.ok(member, "/v3/tools/call", call)["items"]) == LOG_CALLERS
    for route, body in (
        ("/v3/code-graph/get", {"code_graph_id": code_graph_id}),
        ("/v3/code-graph/sync", {"code_graph_id": code_graph_id}),
        ("/v3/code-graph/search", {"code_graph_id": code_graph_id, "query": "log"}),
        ("/v3/tools/list", {"knowledge_id": code_graph_id}),
        ("/v3/tools/call", call),
    ):
        org.fails(outsider, route, body, 404)
    org.fails(outsider, "/v3/code-graph/list", {"team_id": team}, 403)
    org.fails(outsider, "/v3/code-graph/create", {"team_id": team, "source_path": str(project)}, 403)
    # A member may not delete another member's graph; the owner may.
    refused = org.ok(member, "/v3/code-graph/delete", {"code_graph_ids": [code_graph_id]})
    assert refused["failed"] == [{"id": code_graph_id, "reason": "forbidden"}]
    assert org.ok(owner, "/v3/code-graph/delete", {"code_graph_ids": [code_graph_id]})["deleted_ids"] == [code_graph_id]


# -- the <knowledge_tools> block, tools/list and tools/call -----------------------------------------------------


def test_the_block_offers_ready_graphs_with_match_and_branch(cg: CodeGraphHttp, project: Path, repo: GitRepo) -> None:
    from_url = cg.create(repo_url=repo.url)["code_graph_id"]
    # A local working tree is matched by its origin remote, with the credentials of that remote left out.
    run_git(project, "init", "--quiet", "-b", "develop")
    run_git(project, "remote", "add", "origin", "https://bot:s3cret@github.com/acme/shop.git")
    run_git(project, "add", "-A")
    run_git(project, "commit", "--quiet", "-m", "shop")
    local = cg.create(source_path=str(project))
    assert (local["branch"], local["commit_hash"]) == ("develop", run_git(project, "rev-parse", "HEAD")[:12])
    block = cg.ok("knowledge/tools-block", {"team_id": TEAM})
    assert "s3cret" not in json.dumps(block)
    tags = {t["id"]: t for t in knowledge_tags(block["text"])}
    assert set(tags) == {from_url, local["code_graph_id"]}
    assert tags[from_url]["type"] == "code-graph" and tags[from_url]["branch"] == "main"
    assert tags[from_url]["match"].endswith("/shop") and tags[from_url]["name"] == "shop"
    assert (tags[local["code_graph_id"]]["match"], tags[local["code_graph_id"]]["branch"]) == ("acme/shop", "develop")
    assert all(t["url"] == local["service_url"] and "about" not in t for t in tags.values())


def test_tools_list_shows_the_code_graph_catalogue(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    listed = cg.ok("tools/list", {"knowledge_id": code_graph_id})
    assert {k: listed[k] for k in ("knowledge_id", "type", "name", "status", "stale")} == {
        "knowledge_id": code_graph_id,
        "type": "code-graph",
        "name": "pyproj",
        "status": "ready",
        "stale": False,
    }
    tools = {t["name"]: t for t in listed["tools"]}
    assert list(tools) == CODE_GRAPH_TOOLS
    assert tools["call_hierarchy"]["params"]["direction"] == {
        "type": "string",
        "description": "Which way to walk.",
        "default": "callers",
        "enum": ["callers", "callees"],
    }
    assert tools["path"]["params"]["from"]["required"] is True
    zh = cg.ok("tools/list", {"knowledge_id": code_graph_id, "language": "zh"})
    assert all(re.search(r"[\u4e00-\u9fff]", t["description"]) for t in zh["tools"])


def test_tools_call_answers_with_file_and_line(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    info = cg.tool(code_graph_id, "get_info")
    assert (info["version"], info["service_id"], info["code_graph_id"], info["status"]) == (
        1,
        SERVICE,
        code_graph_id,
        "ready",
    )
    callers = cg.tool(code_graph_id, "callers", {"symbol": "shop.util.log"})
    assert (callers["isError"], callers["stale"], callers["total"], callers["truncated"]) == (False, False, 4, False)
    assert locations(callers["items"]) == LOG_CALLERS
    assert "shop/client.py:12" in callers["text"]
    impact = cg.tool(code_graph_id, "impact", {"symbol": "shop.util.normalise"})
    assert impact["stale"] is False and impact["total"] == len(impact["items"]) > 0
    assert {(i["qname"], i["depth"]) for i in impact["items"]} >= {
        ("shop.util.slugify", 1),
        ("shop.client.Session.send", 2),
    }
    assert all(re.match(r"^shop/.+\.py$", i["file"]) and i["line"] >= 1 for i in impact["items"])
    found = cg.tool(code_graph_id, "search", {"query": "normalise"})
    top = found["items"][0]
    assert (top["qname"], top["file"], top["line"]) == ("shop.util.normalise", "shop/util.py", 8)
    hierarchy = cg.tool(code_graph_id, "class_hierarchy", {"symbol": "CardProvider"})
    assert [b["qname"] for b in hierarchy["bases"]] == ["shop.payments.base.Provider"]
    unknown = cg.tool(code_graph_id, "callers", {"symbol": "no_such_function"})
    assert unknown["isError"] is True and unknown["text"].startswith("no symbol named 'no_such_function'")


def test_tools_call_checks_the_tool_and_its_params(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]

    def call(tool_name: str, params: Any) -> dict[str, Any]:
        return {"knowledge_id": code_graph_id, "tool_name": tool_name, "params": params}

    cg.fails(
        "tools/call",
        call("read_page", {}),
        403,
        f"unknown tool: 'read_page' for code-graph resource '{code_graph_id}'…",
    )
    cg.fails("tools/call", call("callers", {}), 400, "invalid params: symbol: required")
    cg.fails("tools/call", call("callers", {"symbol": "f", "depth": 2}), 400, "invalid params: depth: unknown param")
    cg.fails(
        "tools/call", call("call_hierarchy", {"symbol": "f", "depth": 6}), 400, "invalid params: depth: must be <= 5"
    )
    cg.fails("tools/call", call("file_deps", {"file": "a.py", "direction": "up"}), 400, "invalid params: direction: …")
    cg.fails("tools/call", {"knowledge_id": "cg-zzzzzzzz", "tool_name": "callers", "params": {}}, 404)


def test_a_graph_still_building_answers_is_error_with_what_to_do(
    cg: CodeGraphHttp, project: Path, gate: BuildGate
) -> None:
    code_graph_id = cg.create(source_path=str(project), wait=False)["code_graph_id"]
    assert gate.entered.wait(120)
    answer = cg.tool(code_graph_id, "callers", {"symbol": "log"})
    assert answer == {
        "text": f"code graph {code_graph_id} is building its first index (status processing, step indexing); "
        "retry shortly",
        "isError": True,
        "status": "processing",
    }
    assert cg.tool(code_graph_id, "get_info")["status"] == "processing"  # get_info works without an index
    gate.release.set()


# -- the direct query routes ----------------------------------------------------------------------------------


def test_direct_query_routes_check_params_like_the_reference(cg: CodeGraphHttp, project: Path) -> None:
    code_graph_id = cg.create(source_path=str(project))["code_graph_id"]
    ref = {"code_graph_id": code_graph_id}
    callers = cg.ok("code-graph/callers", {**ref, "symbol": "shop.util.log", "limit": 2})
    assert (callers["total"], len(callers["items"]), callers["truncated"]) == (4, 2, True)
    status = cg.ok("code-graph/status", ref)
    assert status["isError"] is False and status["stale"] is False
    listed = cg.ok("code-graph/files", {**ref, "format": "flat"})
    assert listed["isError"] is False
    cg.fails("code-graph/callers", {**ref, "symbol": "log", "team_id": TEAM}, 400, "unexpected field: team_id")
    cg.fails("code-graph/search", {**ref, "query": "log", "limit": 0}, 400, "limit: must be >= 1")
    cg.fails("code-graph/search", {**ref, "query": "log", "kind": "module"}, 400, "kind: must be one of …")
    cg.fails("code-graph/impact", ref, 400, "symbol: required")
    cg.fails("code-graph/node", {**ref, "symbol": "log", "line": "3"}, 400, "line: expected integer")
    cg.fails("code-graph/status", {}, 400, "code_graph_id: is required")


# -- wiring ---------------------------------------------------------------------------------------------------


def test_knowledge_only_mounts_the_routes_and_resumes_builds_at_start(tmp_path: Path, project: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", gateway_api_key=GATEWAY_KEY, code_source_roots=[project.parent])
    store = open_store(settings)
    key = ensure_gateway_key(store, settings.gateway_api_key).key
    app = create_app(build_hub(settings, store, knowledge_only=True), key, run_pipeline=False)
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SERVICE}
    with TestClient(app) as client:  # runs the lifespan: resume at start, close at shutdown
        paths = client.get("/openapi.json").json()["paths"]
        expected = {"create", "list", "get", "update-meta", "delete", "sync", "search", "explore", "callers"}
        expected |= {"callees", "impact", "node", "status", "files"}
        assert {p.removeprefix("/v3/code-graph/") for p in paths if p.startswith("/v3/code-graph/")} == expected
        body = {"team_id": TEAM, "source_path": str(project), "wait": False}
        created = client.post("/v3/code-graph/create", json=body, headers=headers)
        assert created.status_code == 201, created.json()
        code_graph_id = created.json()["data"]["code_graph_id"]
        app.state.knowledge.code_graphs.wait_idle(30)
        with store.meta.writing(SERVICE) as w:  # as a process killed mid-build leaves it
            w.update(MetaKind.CODE_GRAPH, code_graph_id, {"status": "pending"})
    store = open_store(settings)
    app = create_app(build_hub(settings, store, knowledge_only=True), key, run_pipeline=False)
    with TestClient(app) as client:
        app.state.knowledge.code_graphs.wait_idle(30)
        detail = client.post("/v3/code-graph/get", json={"code_graph_id": code_graph_id}, headers=headers).json()
        assert (detail["data"]["status"], detail["data"]["version"]) == ("ready", "2")
