"""The wiki management routes `/v3/wiki/*` through the real HTTP app (the reference's routes and shapes).

Each test gets its own gateway over a temporary data dir (builds run on the service's background
pool, so every async build is waited for before asserting and again at teardown). Read-only tests
share one module gateway holding the fixture wiki (tests/knowledge/fixtures/wiki, uploaded through
raw/write with its relative paths, so its authored index.json files apply) and a small linked wiki.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import memhub.knowledge.wiki.builds as wiki_builds
from tests.conftest import build_gateway
from tests.knowledge.wiki_http_kit import (
    DETAIL_FIELDS,
    FIXTURE_PAGES,
    OTHER_SERVICE,
    OTHER_TEAM,
    RAW_ITEM_FIELDS,
    REPORT_FIELDS,
    SERVICE,
    TEAM,
    WIKI_ID,
    BuildGate,
    WikiHttp,
    docx,
    entry,
    fixture_files,
    ids_of,
    ops_guide,
    pdf,
)
from tests.meta.org import Member, Org

MB = 1024 * 1024
NO_INDEX_YET = "has no index yet: upload sources with raw/write, then call ingest"
LOCAL_FOLDER = "reads its sources from a local folder; edit the files there"

# A small wiki with links: alpha → beta ([[wikilink]] by title), alpha → gamma (Markdown link), beta → alpha.
LINKED = {
    "notes/alpha.md": "# Alpha\n\nAlpha links to [[Beta page]] and to [gamma](gamma.md).\n",
    "notes/beta.md": "# Beta page\n\nBeta talks about the xylophone and links back to [[alpha]].\n",
    "notes/gamma.md": "# Gamma\n\nGamma is a leaf page about quartz.\n",
    "solo.md": "# Solo\n\nNobody links here.\n",
}


# -- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture
def make_wk(tmp_path: Path) -> Iterator[Callable[..., WikiHttp]]:
    """`make_wk(**settings)`: a gateway of its own; builds are waited for before it closes."""
    made: list[WikiHttp] = []

    def make(**settings: Any) -> WikiHttp:
        api = WikiHttp(build_gateway(tmp_path / f"data{len(made)}", **settings))
        made.append(api)
        return api

    yield make
    for api in made:
        api.wait()
        api.gw.close()


@pytest.fixture
def wk(make_wk: Callable[..., WikiHttp]) -> WikiHttp:
    """The default gateway: gateway key, service svc-a, no local source roots."""
    return make_wk()


@pytest.fixture
def gate(wk: WikiHttp, monkeypatch: pytest.MonkeyPatch) -> Iterator[BuildGate]:
    """Builds of `wk` hold at their start until `gate.release` is set (set again at teardown)."""
    held = BuildGate(wiki_builds.build_generation)
    monkeypatch.setattr(wiki_builds, "build_generation", held)
    yield held
    held.release.set()


@dataclass(frozen=True)
class Shared:
    """The module gateway: the fixture wiki and the linked wiki, both built once."""

    api: WikiHttp
    handbook: str
    linked: str


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("MEMHUB_", "TDAI_")):
                mp.delenv(name)
        gw = build_gateway(tmp_path_factory.mktemp("wiki-http") / "data")
    api = WikiHttp(gw)
    handbook = api.built("handbook", fixture_files())
    linked = api.built("linked", LINKED)
    yield Shared(api, handbook, linked)
    api.wait()
    gw.close()


def org_of(wk: WikiHttp) -> tuple[Org, Member, Member, Member, Member, str]:
    """Instance svc-a with a team: its owner (a team admin), a member, a second member, and an outsider."""
    org = Org(wk.gw, service=SERVICE)
    owner, member, member2, outsider = org.users("owner", "member", "member2", "outsider")
    team = org.staffed_team(owner, "eng", (member, "member"), (member2, "member"))
    return org, owner, member, member2, outsider, team


def user_ok(org: Org, who: Member, route: str, body: dict[str, Any], status: int = 200) -> Any:
    response = org.call(who, f"/v3/wiki/{route}", body)
    envelope = response.json()
    assert response.status_code == status and envelope["code"] == 0, envelope
    return envelope["data"]


def user_fails(org: Org, who: Member, route: str, body: dict[str, Any], code: int, message: str) -> None:
    response = org.call(who, f"/v3/wiki/{route}", body)
    envelope = response.json()
    assert response.status_code == code and envelope["code"] == code, envelope
    assert envelope["message"] == message, envelope


# -- 1. create ------------------------------------------------------------------------------------------------


def test_create_answers_201_with_a_draft_wiki_detail(wk: WikiHttp) -> None:
    detail = wk.ok("wiki/create", {"team_id": TEAM, "name": "Handbook", "summary": "How we work"}, status=201)
    assert set(detail) >= DETAIL_FIELDS
    assert re.match(WIKI_ID, detail["wiki_id"])
    assert detail["team_id"] == TEAM and detail["name"] == "Handbook"
    assert detail["summary"] == "How we work"
    assert detail["status"] == "draft"
    assert detail["version"] == "0"  # a string, as in the reference
    assert detail["service_url"].endswith("/v3")
    assert detail["internal_status"] is None and detail["sync_error"] is None
    assert detail["page_count"] == 0 and detail["last_sync_at"] is None
    assert detail["owner_user_id"] is None  # the gateway key acts for the tenant, not a user
    assert detail["stale"] is False and detail["source_path"] is None
    assert detail["created_at"] == detail["updated_at"]
    assert wk.get(detail["wiki_id"]) == detail


def test_create_is_idempotent_on_team_and_name(wk: WikiHttp) -> None:
    first = wk.ok("wiki/create", {"team_id": TEAM, "name": "Docs"}, status=201)
    again = wk.ok("wiki/create", {"team_id": TEAM, "name": "Docs", "summary": "ignored"}, status=200)
    assert again == first  # the existing wiki, unchanged
    other_team = wk.ok("wiki/create", {"team_id": OTHER_TEAM, "name": "Docs"}, status=201)
    assert other_team["wiki_id"] != first["wiki_id"]
    assert wk.ok("wiki/list", {"team_id": TEAM})["total"] == 1


def test_create_for_a_user_records_the_owner(wk: WikiHttp) -> None:
    detail = wk.ok("wiki/create", {"team_id": TEAM, "name": "Mine", "user_id": "user-7"}, status=201)
    assert detail["owner_user_id"] == "user-7"


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"name": "w"}, "team_id", "is required"),
        ({"team_id": TEAM}, "name", "is required"),
        ({"team_id": 7, "name": "w"}, "team_id", "must be a string"),
        ({"team_id": TEAM, "name": ["w"]}, "name", "must be a string"),
        ({"team_id": TEAM, "name": "w", "summary": "s" * 257}, "summary", None),
    ],
    ids=["no-team", "no-name", "team-int", "name-list", "summary-too-long"],
)
def test_create_validation_names_the_field(wk: WikiHttp, body: dict[str, Any], field: str, rule: str | None) -> None:
    envelope = wk.fails("wiki/create", body, 400, f"{field}: …")
    assert envelope["data"]["errors"][0]["field"] == field
    if rule is not None:
        assert envelope["message"] == f"{field}: {rule}"
    assert wk.ok("wiki/list", {"team_id": TEAM})["total"] == 0


def test_source_path_outside_the_allowed_roots_is_403_and_relative_is_400(wk: WikiHttp, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    wk.fails(
        "wiki/create",
        {"team_id": TEAM, "name": "local", "source_path": str(folder)},
        403,
        "source_path: not under an allowed source root (set MEMHUB_WIKI_SOURCE_ROOTS to allow local folders)",
    )
    wk.fails(
        "wiki/create",
        {"team_id": TEAM, "name": "local", "source_path": "docs"},
        400,
        "source_path: must be an absolute path",
    )
    assert wk.ok("wiki/list", {"team_id": TEAM})["total"] == 0


def _local_tree(root: Path) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "alpha.md").write_text("# Alpha\n\nAlpha text about orbits.\n", encoding="utf-8")
    (root / "beta.md").write_text("# Beta\n\nBeta text.\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "notes.md").write_text("# Hidden\n", encoding="utf-8")


def test_a_wiki_reads_a_local_folder_under_an_allowed_root(make_wk: Callable[..., WikiHttp], tmp_path: Path) -> None:
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    created = wk.ok("wiki/create", {"team_id": TEAM, "name": "local", "source_path": str(root)}, status=201)
    assert created["source_path"] == str(root.resolve())
    wiki_id = created["wiki_id"]
    detail = wk.ingest(wiki_id)
    assert detail["status"] == "ready" and detail["version"] == "1"
    assert detail["report"]["added"] == ["beta.md", "docs/alpha.md"]  # hidden folders are not sources
    assert sorted(wk.page_ids(wiki_id)) == ["beta", "docs/alpha"]
    (item,) = wk.ok("wiki/raw/read", {"wiki_id": wiki_id, "filenames": ["docs/alpha.md"]})["items"]
    assert item == {"filename": "docs/alpha.md", "content": "# Alpha\n\nAlpha text about orbits.\n"}
    assert not (wk.wiki_dir(wiki_id) / "raw").exists()  # nothing is copied into the data dir


def test_a_build_refuses_a_local_folder_no_longer_under_the_allowed_roots(
    make_wk: Callable[..., WikiHttp], tmp_path: Path
) -> None:
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    wiki_id = wk.create("local", source_path=str(root))
    assert wk.ingest(wiki_id)["version"] == "1"
    wk.wikis.builds.source_roots = ()  # the operator took the folder off MEMHUB_WIKI_SOURCE_ROOTS
    (root / "gamma.md").write_text("# Gamma\n\nGamma text.\n", encoding="utf-8")
    failed = wk.ingest(wiki_id)
    assert failed["status"] == "failed" and failed["version"] == "1"
    assert failed["sync_error"] == (
        "source_path: no longer under an allowed source root (MEMHUB_WIKI_SOURCE_ROOTS changed)"
    )
    assert "gamma" not in wk.page_ids(wiki_id)  # the last good build still serves; nothing new was read


@pytest.mark.parametrize(
    ("route", "extra"),
    [
        ("wiki/raw/write", {"files": [{"filename": "c.md", "content": "# C\n"}]}),
        ("wiki/raw/rm", {"filenames": ["beta.md"]}),
        ("wiki/page/write", {"pages": [{"ref": "c", "content": "# C\n"}]}),
    ],
)
def test_a_local_folder_wiki_refuses_edits_through_the_api(
    make_wk: Callable[..., WikiHttp], tmp_path: Path, route: str, extra: dict[str, Any]
) -> None:
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    wiki_id = wk.create("local", source_path=str(root))
    wk.fails(route, {"team_id": TEAM, "wiki_id": wiki_id, **extra}, 400, f"wiki_id: {wiki_id} {LOCAL_FOLDER}")
    assert sorted(p.name for p in root.rglob("*.md")) == ["alpha.md", "beta.md", "notes.md"]
    assert wk.get(wiki_id)["status"] == "draft"


@pytest.mark.parametrize(
    ("relative", "code", "message"),
    [
        ("missing", 400, "source_path: not a directory"),
        ("../elsewhere", 403, "source_path: not under an allowed source root…"),
    ],
)
def test_local_source_path_must_be_an_existing_folder_inside_the_root(
    make_wk: Callable[..., WikiHttp], tmp_path: Path, relative: str, code: int, message: str
) -> None:
    root = tmp_path / "sources"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    wk = make_wk(wiki_source_roots=[root])
    wk.fails("wiki/create", {"team_id": TEAM, "name": "local", "source_path": f"{root}/{relative}"}, code, message)


def test_local_folder_reingest_reports_added_changed_and_removed(
    make_wk: Callable[..., WikiHttp], tmp_path: Path
) -> None:
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    wiki_id = wk.create("local", source_path=str(root))
    wk.ingest(wiki_id)
    (root / "beta.md").unlink()
    (root / "docs" / "alpha.md").write_text("# Alpha\n\nAlpha text, revised.\n", encoding="utf-8")
    (root / "gamma.md").write_text("# Gamma\n\nNew.\n", encoding="utf-8")
    detail = wk.ingest(wiki_id)
    report = detail["report"]
    assert (report["added"], report["changed"], report["removed"], report["unchanged"]) == (
        ["gamma.md"],
        ["docs/alpha.md"],
        ["beta.md"],
        0,
    )
    assert detail["version"] == "2"
    assert sorted(wk.page_ids(wiki_id)) == ["docs/alpha", "gamma"]


def test_local_folder_raw_ls_shows_each_files_size(make_wk: Callable[..., WikiHttp], tmp_path: Path) -> None:
    # Bug (wiki-bugs-http.md #4): files of a local folder are listed with size 0.
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    wiki_id = wk.create("local", source_path=str(root))
    wk.ingest(wiki_id)
    listed = wk.raw_ls(wiki_id)
    assert {n: i["status"] for n, i in listed.items()} == {"beta.md": "ingested", "docs/alpha.md": "ingested"}
    assert {n: i["size"] for n, i in listed.items()} == {
        "beta.md": (root / "beta.md").stat().st_size,
        "docs/alpha.md": (root / "docs" / "alpha.md").stat().st_size,
    }


def test_local_folder_raw_ls_drops_a_file_deleted_from_the_folder(
    make_wk: Callable[..., WikiHttp], tmp_path: Path
) -> None:
    # Bug (wiki-bugs-http.md #3): a file deleted from the folder stays listed as `ingested` after the
    # rebuild that removed its page.
    root = tmp_path / "sources"
    _local_tree(root)
    wk = make_wk(wiki_source_roots=[root])
    wiki_id = wk.create("local", source_path=str(root))
    wk.ingest(wiki_id)
    (root / "beta.md").unlink()
    assert wk.ingest(wiki_id)["report"]["removed"] == ["beta.md"]
    assert wk.page_ids(wiki_id) == ["docs/alpha"]
    assert sorted(wk.raw_ls(wiki_id)) == ["docs/alpha.md"]


# -- 2. list, get, update-meta, delete ---------------------------------------------------------------------


def test_list_filters_by_team(wk: WikiHttp) -> None:
    mine = {wk.create("a"), wk.create("b")}
    theirs = wk.create("c", team=OTHER_TEAM)
    listed = wk.ok("wiki/list", {"team_id": TEAM})
    assert listed["total"] == 2
    assert set(ids_of(listed["items"], "wiki_id")) == mine
    assert all(set(item) >= DETAIL_FIELDS and item["team_id"] == TEAM for item in listed["items"])
    assert ids_of(wk.ok("wiki/list", {"team_id": OTHER_TEAM})["items"], "wiki_id") == [theirs]
    assert wk.ok("wiki/list", {"team_id": "team-empty"}) == {"items": [], "total": 0}


def test_list_filters_by_status(wk: WikiHttp) -> None:
    ready = wk.built("ready", {"a.md": "# A\n\nalpha\n"})
    draft = wk.create("draft")
    assert ids_of(wk.ok("wiki/list", {"team_id": TEAM, "status": "ready"})["items"], "wiki_id") == [ready]
    assert ids_of(wk.ok("wiki/list", {"team_id": TEAM, "status": "draft"})["items"], "wiki_id") == [draft]
    assert wk.ok("wiki/list", {"team_id": TEAM, "status": "failed"}) == {"items": [], "total": 0}


def test_list_pages_with_limit_and_offset_newest_first(wk: WikiHttp) -> None:
    created = {wk.create(f"w{i}") for i in range(5)}
    pages = [wk.ok("wiki/list", {"team_id": TEAM, "limit": 2, "offset": offset}) for offset in (0, 2, 4, 6)]
    assert [len(p["items"]) for p in pages] == [2, 2, 1, 0]
    assert all(p["total"] == 5 for p in pages)
    seen = [item["wiki_id"] for p in pages for item in p["items"]]
    assert len(seen) == 5 and set(seen) == created
    stamps = [item["created_at"] for p in pages for item in p["items"]]
    assert stamps == sorted(stamps, reverse=True)
    assert len(wk.ok("wiki/list", {"team_id": TEAM})["items"]) == 5  # default limit 20


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"limit": 0}, "limit: must be >= 1"),
        ({"limit": 101}, "limit: must be <= 100"),
        ({"offset": -1}, "offset: must be >= 0"),
        ({"status": "archived"}, "status: must be one of 'draft', 'pending', 'processing', 'ready' or 'failed'"),
    ],
)
def test_list_validation(wk: WikiHttp, extra: dict[str, Any], message: str) -> None:
    wk.fails("wiki/list", {"team_id": TEAM, **extra}, 400, message)


def test_rename_and_a_name_clash(wk: WikiHttp) -> None:
    wiki_id = wk.create("old")
    taken = wk.create("taken")
    renamed = wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "name": "new"})
    assert renamed["name"] == "new" and wk.get(wiki_id)["name"] == "new"
    assert renamed["updated_at"] >= renamed["created_at"]
    wk.fails(
        "wiki/update-meta",
        {"wiki_id": wiki_id, "name": "taken"},
        409,
        "name: a wiki named 'taken' already exists in this team",
    )
    assert wk.get(wiki_id)["name"] == "new" and wk.get(taken)["name"] == "taken"
    assert wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "name": "new"})["name"] == "new"  # its own name
    # The old name is free again.
    assert wk.ok("wiki/create", {"team_id": TEAM, "name": "old"}, status=201)["wiki_id"] != wiki_id


def test_summary_shows_in_the_detail_and_in_the_registry_once_ready(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    assert wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "summary": "Team docs"})["summary"] == "Team docs"
    wk.fails("knowledge/get", {"knowledge_id": wiki_id}, 404)  # not registered before it is ready
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    assert wk.ingest(wiki_id)["summary"] == "Team docs"
    entry_ = wk.ok("knowledge/get", {"knowledge_id": wiki_id})
    assert (entry_["type"], entry_["name"], entry_["summary"], entry_["team_id"]) == ("wiki", "docs", "Team docs", TEAM)
    assert entry_["service_url"].endswith("/v3")
    wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "summary": "Revised", "name": "docs2"})
    entry_ = wk.ok("knowledge/get", {"knowledge_id": wiki_id})
    assert (entry_["name"], entry_["summary"]) == ("docs2", "Revised")


def test_clearing_the_summary_falls_back_to_the_generated_one(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n"})
    auto = wk.get(wiki_id)["summary"]
    assert auto == "1 page"
    wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "summary": "Mine"})
    assert wk.ok("wiki/update-meta", {"wiki_id": wiki_id, "summary": None})["summary"] == auto
    assert wk.ok("knowledge/get", {"knowledge_id": wiki_id})["summary"] == auto


def test_update_meta_with_a_null_name_is_refused(wk: WikiHttp) -> None:
    # Bug (wiki-bugs-http.md #1): an explicit `name: null` reaches the database and answers 500.
    wiki_id = wk.create("docs")
    envelope = wk.fails("wiki/update-meta", {"wiki_id": wiki_id, "name": None}, 400)
    assert envelope["message"].startswith("name:")
    assert wk.get(wiki_id)["name"] == "docs"


def test_delete_removes_the_wiki_its_files_and_its_registry_entry(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n", "m.pdf": pdf("page one")})
    keep = wk.built("keep", {"k.md": "# K\n"})
    assert (wk.wiki_dir(wiki_id) / "raw" / "a.md").is_file()
    assert wk.ok("knowledge/get", {"knowledge_id": wiki_id})["knowledge_id"] == wiki_id
    assert wk.ok("wiki/delete", {"wiki_ids": [wiki_id]}) == {"deleted_ids": [wiki_id], "failed": []}
    assert not wk.wiki_dir(wiki_id).exists()
    wk.fails("wiki/get", {"wiki_id": wiki_id}, 404, f"wiki not found: {wiki_id}")
    wk.fails("wiki/raw/ls", {"wiki_id": wiki_id}, 404)
    wk.fails("knowledge/get", {"knowledge_id": wiki_id}, 404)
    assert ids_of(wk.ok("wiki/list", {"team_id": TEAM})["items"], "wiki_id") == [keep]
    assert wk.wiki_dir(keep).is_dir() and wk.page_ids(keep) == ["k"]


def test_delete_reports_each_failure_with_its_reason(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    result = wk.ok("wiki/delete", {"wiki_ids": [wiki_id, "not-a-wiki", "wiki-00000000", wiki_id]})
    assert result == {
        "deleted_ids": [wiki_id],
        "failed": [{"id": "not-a-wiki", "reason": "invalid id"}, {"id": "wiki-00000000", "reason": "not found"}],
    }
    assert wk.ok("wiki/delete", {"wiki_ids": [wiki_id]}) == {
        "deleted_ids": [],
        "failed": [{"id": wiki_id, "reason": "not found"}],
    }


def test_delete_takes_1_to_100_ids(wk: WikiHttp) -> None:
    wk.fails("wiki/delete", {"wiki_ids": []}, 400, "wiki_ids: must contain at least 1 items")
    ids = [f"wiki-{i:08d}" for i in range(101)]
    wk.fails("wiki/delete", {"wiki_ids": ids}, 400, "wiki_ids: must contain at most 100 items")
    result = wk.ok("wiki/delete", {"wiki_ids": ids[:100]})
    assert result["deleted_ids"] == [] and len(result["failed"]) == 100
    assert {f["reason"] for f in result["failed"]} == {"not found"}


def test_delete_during_a_build_leaves_nothing_behind(wk: WikiHttp, gate: BuildGate) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    assert wk.ok("wiki/ingest", {"wiki_id": wiki_id}, status=202) == {"wiki_id": wiki_id, "status": "pending"}
    assert gate.entered.wait(120)
    assert wk.ok("wiki/delete", {"wiki_ids": [wiki_id]})["deleted_ids"] == [wiki_id]
    gate.release.set()
    wk.wait()
    assert not wk.wiki_dir(wiki_id).exists()
    wk.fails("knowledge/get", {"knowledge_id": wiki_id}, 404)


# -- 3. ids and tenants ------------------------------------------------------------------------------------

ID_ROUTES: list[tuple[str, dict[str, Any]]] = [
    ("wiki/get", {}),
    ("wiki/update-meta", {"name": "x"}),
    ("wiki/ingest", {}),
    ("wiki/raw/ls", {}),
    ("wiki/raw/read", {"filenames": ["a.md"]}),
    ("wiki/raw/write", {"team_id": TEAM, "files": [{"filename": "a.md", "content": "x"}]}),
    ("wiki/raw/rm", {"team_id": TEAM, "filenames": ["a.md"]}),
    ("wiki/page/ls", {}),
    ("wiki/page/read", {"refs": ["a"]}),
    ("wiki/page/write", {"team_id": TEAM, "pages": [{"ref": "a", "content": "x"}]}),
    ("wiki/page/rm", {"team_id": TEAM, "refs": ["a"]}),
    ("wiki/graph", {}),
    ("wiki/search", {"query": "alpha"}),
    ("wiki/retrieve", {"question": "alpha?"}),
]


def refused_everywhere(
    api: WikiHttp, wiki_id: str, code: int, message: str, service: str | None = None
) -> dict[str, dict[str, Any]]:
    """Each ID_ROUTES route with this wiki id: the envelopes that did not answer `code` with `message`."""
    wrong: dict[str, dict[str, Any]] = {}
    for route, extra in ID_ROUTES:
        response = api.call(route, {"wiki_id": wiki_id, **extra}, service=service)
        envelope = response.json()
        if (response.status_code, envelope["code"], envelope["message"]) != (code, code, message):
            wrong[route] = envelope
    return wrong


def test_a_malformed_wiki_id_is_400_on_every_route(shared: Shared) -> None:
    message = "wiki_id: invalid wiki_id format (expected wiki- and 8 characters of [0-9a-z])"
    assert refused_everywhere(shared.api, "WIKI-ABCDEFGH", 400, message) == {}
    for bad in ("wiki-abc", "wiki-abcdefghi", "cg-abcdefgh", "wiki_abcdefgh", "wiki-abcd efg"):
        shared.api.fails("wiki/get", {"wiki_id": bad}, 400, message)


def test_an_unknown_wiki_is_404_on_every_route(shared: Shared) -> None:
    assert refused_everywhere(shared.api, "wiki-00000000", 404, "wiki not found: wiki-00000000") == {}


def test_another_tenants_wiki_is_404_on_every_route(shared: Shared) -> None:
    wiki_id = shared.handbook
    assert refused_everywhere(shared.api, wiki_id, 404, f"wiki not found: {wiki_id}", OTHER_SERVICE) == {}
    assert shared.api.get(wiki_id)["status"] == "ready"  # and nothing changed for its own tenant


def test_another_tenant_sees_no_wikis_and_cannot_delete(shared: Shared) -> None:
    api = shared.api
    assert api.ok("wiki/list", {"team_id": TEAM}, service=OTHER_SERVICE) == {"items": [], "total": 0}
    result = api.ok("wiki/delete", {"wiki_ids": [shared.handbook]}, service=OTHER_SERVICE)
    assert result == {"deleted_ids": [], "failed": [{"id": shared.handbook, "reason": "not found"}]}
    assert api.get(shared.handbook)["status"] == "ready"


def test_a_service_id_never_names_a_folder_outside_the_knowledge_root(wk: WikiHttp) -> None:
    service = "../../escape"
    wiki_id = wk.ok("wiki/create", {"team_id": TEAM, "name": "w"}, status=201, service=service)["wiki_id"]
    entries = [entry("a.md", "# A\n")]
    wk.ok("wiki/raw/write", {"team_id": TEAM, "wiki_id": wiki_id, "files": entries}, service=service)
    written = [p for p in wk.gw.data_dir.parent.rglob("a.md")]
    assert len(written) == 1
    assert wk.knowledge_root in written[0].parents
    assert written[0] == wk.wiki_dir(wiki_id, service) / "raw" / "a.md"


# -- 4. raw/write, raw/ls, raw/read --------------------------------------------------------------------------


def test_raw_write_stores_markdown_pdf_and_docx(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    manual, guide = pdf("Valve opens at 42 bar", "Appendix"), docx(ops_guide)
    result = wk.write(wiki_id, {"notes/a.md": "# A\n\nalpha\n", "manual.pdf": manual, "guide.docx": guide})
    assert result == {
        "items": [
            {"filename": "notes/a.md", "size": 11},
            {"filename": "manual.pdf", "size": len(manual)},
            {"filename": "guide.docx", "size": len(guide)},
        ]
    }
    assert wk.raw_files(wiki_id) == {"guide.docx": guide, "manual.pdf": manual, "notes/a.md": b"# A\n\nalpha\n"}
    listed = wk.raw_ls(wiki_id)
    assert sorted(listed) == ["guide.docx", "manual.pdf", "notes/a.md"]  # sorted by filename
    for name, item in listed.items():
        assert set(item) == RAW_ITEM_FIELDS
        assert item["status"] == "uploaded" and item["error"] is None and item["ingested_at"] is None
        assert item["last_modified_by"] == "gateway-key" and item["uploaded_at"] is not None
        assert item["size"] == len(wk.raw_files(wiki_id)[name])
    assert wk.get(wiki_id)["status"] == "draft"  # uploading never builds by itself


def test_raw_read_returns_text_with_locators_for_pdf_and_docx(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(
        wiki_id,
        {"a.md": "# A\n\nalpha\n", "m.pdf": pdf("alpha beta", "gamma"), "g.docx": docx(ops_guide), "t.txt": "plain"},
    )
    items = wk.ok(
        "wiki/raw/read", {"wiki_id": wiki_id, "filenames": ["a.md", "m.pdf", "g.docx", "t.txt", "nope.md", "../a.md"]}
    )["items"]
    assert items == [
        {"filename": "a.md", "content": "# A\n\nalpha\n"},
        {"filename": "m.pdf", "content": "[page 1]\nalpha beta\n\n[page 2]\ngamma"},
        {
            "filename": "g.docx",
            "content": "[paragraph 1]\nOperations Guide\n\n[paragraph 2]\nRotate the API keys every 90 days.",
        },
        {"filename": "t.txt", "content": "plain"},
        {"filename": "nope.md", "not_found": True},
        {"filename": "../a.md", "not_found": True},
    ]


@pytest.mark.parametrize(
    ("filename", "rule"),
    [
        ("/etc/a.md", "must be a relative path"),
        ("notes/../a.md", "must not contain empty, '.' or '..' path segments"),
        ("notes//a.md", "must not contain empty, '.' or '..' path segments"),
        (".hidden/a.md", "must not contain hidden path segments (starting with '.')"),
        ("notes/.draft.md", "must not contain hidden path segments (starting with '.')"),
        ("notes\\a.md", "must not contain control characters or backslashes"),
        ("tool.exe", "unsupported file type '.exe'; expected .docx, .markdown, .md, .pdf, .text, .txt or index.json"),
        ("README", "unsupported file type '(none)'; expected .docx, .markdown, .md, .pdf, .text, .txt or index.json"),
    ],
    ids=["absolute", "dotdot", "empty-segment", "hidden-dir", "hidden-file", "backslash", "exe", "no-extension"],
)
def test_raw_write_filename_rules(wk: WikiHttp, filename: str, rule: str) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"keep.md": "# Keep\n"})
    before = wk.state(wiki_id)
    files = [entry("ok.md", "# Ok\n"), entry(filename, "x")]
    body = {"team_id": TEAM, "wiki_id": wiki_id, "files": files}
    wk.fails("wiki/raw/write", body, 400, f"files[1].filename: {rule}")
    assert wk.state(wiki_id) == before  # not even the valid file was written


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ({"filename": "m.pdf", "content": "%PDF-1.4 as text"}, "files: m.pdf: pdf files must be sent base64-encoded…"),
        ({"filename": "g.docx", "content": "text"}, "files: g.docx: docx files must be sent base64-encoded…"),
        (
            {"filename": "m.pdf", "content": "not base64!", "encoding": "base64"},
            "files: m.pdf: content is not valid base64",
        ),
        ({"filename": "a.md", "content": "x", "encoding": "latin-1"}, "files[0].encoding: must be one of…"),
    ],
    ids=["pdf-as-text", "docx-as-text", "bad-base64", "bad-encoding"],
)
def test_raw_write_content_encoding_rules(wk: WikiHttp, file: dict[str, str], message: str) -> None:
    wiki_id = wk.create("docs")
    wk.fails("wiki/raw/write", {"team_id": TEAM, "wiki_id": wiki_id, "files": [file]}, 400, message)
    assert wk.state(wiki_id) == ({}, {})


def test_raw_write_takes_1_to_10_files(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    eleven = [entry(f"f{i}.md", "x") for i in range(11)]
    wk.fails(
        "wiki/raw/write",
        {"team_id": TEAM, "wiki_id": wiki_id, "files": eleven},
        400,
        "files: must contain at most 10 items",
    )
    wk.fails(
        "wiki/raw/write",
        {"team_id": TEAM, "wiki_id": wiki_id, "files": []},
        400,
        "files: must contain at least 1 items",
    )
    assert wk.state(wiki_id) == ({}, {})
    wk.ok("wiki/raw/write", {"team_id": TEAM, "wiki_id": wiki_id, "files": eleven[:10]})
    assert len(wk.raw_ls(wiki_id)) == 10


def test_a_text_file_over_512_kb_is_413(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    limit = 512 * 1024
    body = {"team_id": TEAM, "wiki_id": wiki_id, "files": [entry("ok.md", "x"), entry("big.md", "a" * (limit + 1))]}
    wk.fails("wiki/raw/write", body, 413, f"files[1]: big.md is {limit + 1} bytes; the limit is {limit} bytes")
    assert wk.state(wiki_id) == ({}, {})
    assert wk.write(wiki_id, {"edge.md": "a" * limit})["items"] == [{"filename": "edge.md", "size": limit}]


def test_more_than_5_mb_in_one_call_is_413(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"keep.md": "# Keep\n"})
    before = wk.state(wiki_id)
    files = [entry("big.pdf", b"%PDF" + b"0" * (5 * MB - 4)), entry("a.md", "x")]
    body = {"team_id": TEAM, "wiki_id": wiki_id, "files": files}
    wk.fails("wiki/raw/write", body, 413, f"files: {5 * MB + 1} bytes in all; the limit is {5 * MB} bytes per call")
    assert wk.state(wiki_id) == before


def test_a_pdf_over_5_mb_is_413(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    body = {"team_id": TEAM, "wiki_id": wiki_id, "files": [entry("big.pdf", b"0" * (5 * MB + 1))]}
    wk.fails("wiki/raw/write", body, 413, f"files[0]: big.pdf is {5 * MB + 1} bytes; the limit is {5 * MB} bytes")
    assert wk.state(wiki_id) == ({}, {})


def test_raw_write_refuses_a_duplicate_filename(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    files = [entry("a.md", "one"), entry("b.md", "two"), entry("a.md", "three")]
    wk.fails(
        "wiki/raw/write",
        {"team_id": TEAM, "wiki_id": wiki_id, "files": files},
        400,
        "files: the same filename appears twice",
    )
    assert wk.state(wiki_id) == ({}, {})


def test_raw_write_to_the_wrong_team_is_404(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    body = {"team_id": OTHER_TEAM, "wiki_id": wiki_id, "files": [entry("a.md", "x")]}
    wk.fails("wiki/raw/write", body, 404, f"wiki not found: {wiki_id}")
    assert wk.state(wiki_id) == ({}, {})


def test_raw_ls_statuses_follow_uploads_and_ingests(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    listed = wk.raw_ls(wiki_id)
    assert {n: i["status"] for n, i in listed.items()} == {"a.md": "ingested", "b.md": "ingested"}
    assert all(i["ingested_at"] is not None and i["error"] is None for i in listed.values())
    wk.write(wiki_id, {"a.md": "# A\n\nalpha, longer now\n"})
    listed = wk.raw_ls(wiki_id)
    assert (listed["a.md"]["status"], listed["a.md"]["size"]) == ("uploaded", 23)
    assert listed["b.md"]["status"] == "ingested"


def test_an_applied_index_json_is_listed_as_ingested(wk: WikiHttp) -> None:
    # Bug (wiki-bugs-http.md #5): the authored index.json a build applied stays `uploaded` forever.
    index = {"schema_version": 1, "themes": [], "documents": [{"id": "a", "title": "A", "file": "a.md"}]}
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n", "index.json": json.dumps(index)})
    assert wk.ingest(wiki_id)["report"]["index"] == "authored"
    assert {n: i["status"] for n, i in wk.raw_ls(wiki_id).items()} == {"a.md": "ingested", "index.json": "ingested"}


# -- 5. ingest -------------------------------------------------------------------------------------------------


def test_ingest_is_accepted_with_202_then_ready(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    assert wk.ok("wiki/ingest", {"wiki_id": wiki_id}, status=202) == {"wiki_id": wiki_id, "status": "pending"}
    wk.wait()
    detail = wk.get(wiki_id)
    assert (detail["status"], detail["version"], detail["page_count"]) == ("ready", "1", 2)
    assert detail["internal_status"] is None and detail["sync_error"] is None and detail["stale"] is False
    assert detail["last_sync_at"] is not None
    assert detail["summary"] == "2 pages"
    assert wk.ok("knowledge/get", {"knowledge_id": wiki_id})["summary"] == "2 pages"


def test_ingest_with_wait_answers_200_with_the_report(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"b.md": "# B\n\nbeta\n", "a.md": "# A\n\nalpha\n"})
    response = wk.call("wiki/ingest", {"wiki_id": wiki_id, "wait": True})
    assert response.status_code == 200
    detail = response.json()["data"]
    assert set(detail) >= DETAIL_FIELDS and detail["status"] == "ready" and detail["version"] == "1"
    report = detail["report"]
    assert set(report) >= REPORT_FIELDS
    assert report["added"] == ["a.md", "b.md"]
    assert (report["changed"], report["unchanged"], report["removed"], report["errors"]) == ([], 0, [], [])
    assert (report["pages"], report["index"]) == (2, "generated")
    assert {k: v for k, v in detail.items() if k != "report"} == wk.get(wiki_id)


def test_ingesting_an_empty_wiki_is_400(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    message = f"wiki_id: {wiki_id} has no source files; upload some with raw/write first"
    wk.fails("wiki/ingest", {"wiki_id": wiki_id}, 400, message)
    wk.fails("wiki/ingest", {"wiki_id": wiki_id, "wait": True}, 400, message)
    assert wk.get(wiki_id)["status"] == "draft"


def test_ingest_while_a_build_runs_or_waits_is_409_busy(wk: WikiHttp, gate: BuildGate) -> None:
    running, queued = wk.create("running"), wk.create("queued")
    for wiki_id in (running, queued):
        wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    wk.ok("wiki/ingest", {"wiki_id": running}, status=202)
    assert gate.entered.wait(120)
    wk.ok("wiki/ingest", {"wiki_id": queued}, status=202)  # one build worker: this one waits its turn
    for wiki_id, status, step in ((running, "processing", "ingesting"), (queued, "pending", None)):
        envelope = wk.fails("wiki/ingest", {"wiki_id": wiki_id}, 409)
        assert {k: envelope[k] for k in ("code", "message", "data")} == {
            "code": 409,
            "message": "busy",
            "data": {"status": status, "step": step},
        }
        wk.fails("wiki/ingest", {"wiki_id": wiki_id, "wait": True}, 409, "busy")
        assert (wk.get(wiki_id)["status"], wk.get(wiki_id)["internal_status"]) == (status, step)
    gate.release.set()
    wk.wait()
    assert [wk.get(w)["status"] for w in (running, queued)] == ["ready", "ready"]
    assert wk.ok("wiki/ingest", {"wiki_id": running}, status=202)["status"] == "pending"


@pytest.mark.parametrize(
    ("route", "extra"),
    [
        ("wiki/raw/write", {"files": [{"filename": "b.md", "content": "# B\n"}]}),
        ("wiki/raw/rm", {"filenames": ["a.md"]}),
        ("wiki/page/write", {"pages": [{"ref": "b", "content": "# B\n"}]}),
        ("wiki/page/rm", {"refs": ["a"]}),
    ],
)
def test_edits_during_a_build_are_409_busy_and_change_nothing(
    wk: WikiHttp, gate: BuildGate, route: str, extra: dict[str, Any]
) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    wk.ok("wiki/ingest", {"wiki_id": wiki_id}, status=202)
    assert gate.entered.wait(120)
    before = wk.state(wiki_id)
    envelope = wk.fails(route, {"team_id": TEAM, "wiki_id": wiki_id, **extra}, 409, "busy")
    assert envelope["data"] == {"status": "processing", "step": "ingesting"}
    assert wk.state(wiki_id) == before
    gate.release.set()
    wk.wait()
    assert wk.page_ids(wiki_id) == ["a"]


def test_reads_of_a_wiki_building_its_first_index_say_so(wk: WikiHttp, gate: BuildGate) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    wk.ok("wiki/ingest", {"wiki_id": wiki_id}, status=202)
    assert gate.entered.wait(120)
    envelope = wk.fails(
        "wiki/page/ls",
        {"wiki_id": wiki_id},
        409,
        f"wiki {wiki_id} is building its first index (status processing); retry shortly",
    )
    assert envelope["data"] == {"status": "processing", "step": "ingesting"}
    assert wk.raw_ls(wiki_id)["a.md"]["status"] == "uploaded"  # raw/ls answers whatever the status
    gate.release.set()
    wk.wait()
    assert wk.page_ids(wiki_id) == ["a"]


def test_version_counts_successful_builds_only(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    assert [wk.ingest(wiki_id)["version"] for _ in range(3)] == ["1", "2", "3"]
    wk.write(wiki_id, {"index.json": '{"schema_version": 1, "themes": [], "colour": "red"}'})
    failed = wk.ingest(wiki_id)
    assert (failed["status"], failed["version"]) == ("failed", "3")
    wk.ok("wiki/raw/rm", {"team_id": TEAM, "wiki_id": wiki_id, "filenames": ["index.json"]})
    wk.wait()
    assert (wk.get(wiki_id)["status"], wk.get(wiki_id)["version"]) == ("ready", "4")


def test_incremental_reingest_reports_unchanged_changed_and_added(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n", "c.md": "# C\n\ngamma\n"})
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta, revised\n", "d.md": "# D\n\ndelta\n"})
    report = wk.ingest(wiki_id)["report"]
    assert (report["added"], report["changed"], report["unchanged"], report["removed"]) == (["d.md"], ["b.md"], 2, [])
    assert report["pages"] == 4
    assert "beta, revised" in wk.read_page(wiki_id, "b")["content"]
    again = wk.ingest(wiki_id)["report"]
    assert (again["added"], again["changed"], again["unchanged"], again["removed"]) == ([], [], 4, [])


def test_removing_a_source_rebuilds_without_its_page(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    result = wk.ok("wiki/raw/rm", {"team_id": TEAM, "wiki_id": wiki_id, "filenames": ["b.md", "zzz.md", "../a.md"]})
    assert result == {"deleted_files": ["b.md"], "deleted_pages": ["b"], "rewritten_pages": []}
    assert sorted(wk.raw_files(wiki_id)) == ["a.md"]
    wk.wait()
    detail = wk.get(wiki_id)
    assert (detail["status"], detail["version"], detail["page_count"]) == ("ready", "2", 1)
    assert wk.page_ids(wiki_id) == ["a"] and wk.read_page(wiki_id, "b") == {"ref": "b", "not_found": True}
    assert sorted(wk.raw_ls(wiki_id)) == ["a.md"]
    assert wk.ingest(wiki_id)["report"]["unchanged"] == 1


def test_raw_rm_on_a_never_built_wiki_queues_no_build(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n", "b.md": "# B\n", "index.json": "{}"})
    result = wk.ok("wiki/raw/rm", {"team_id": TEAM, "wiki_id": wiki_id, "filenames": ["a.md", "index.json"]})
    assert result == {"deleted_files": ["a.md", "index.json"], "deleted_pages": ["a"], "rewritten_pages": []}
    wk.wait()
    assert wk.get(wiki_id)["status"] == "draft"
    assert sorted(wk.raw_ls(wiki_id)) == ["b.md"] and sorted(wk.raw_files(wiki_id)) == ["b.md"]


# -- 6. failures ------------------------------------------------------------------------------------------------


def test_bad_files_are_reported_while_the_others_ingest(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.write(
        wiki_id,
        {
            "a.md": "# A\n\nalpha\n",
            "x.pdf": random.Random(7).randbytes(2048),  # random bytes, the same every run
            "empty.docx": docx(),
            "good.pdf": pdf("Valve opens at 42 bar"),
            "g.docx": docx(ops_guide),
        },
    )
    detail = wk.ingest(wiki_id)
    assert detail["status"] == "ready" and detail["page_count"] == 3
    errors = {e["filename"]: e for e in detail["report"]["errors"]}
    assert sorted(errors) == ["empty.docx", "x.pdf"]
    assert errors["x.pdf"]["kind"] == "error" and errors["x.pdf"]["reason"].startswith("PDF could not be parsed")
    assert errors["empty.docx"] == {"filename": "empty.docx", "reason": "DOCX has no text", "kind": "skip"}
    listed = wk.raw_ls(wiki_id)
    assert (listed["x.pdf"]["status"], listed["x.pdf"]["error"]) == ("failed", errors["x.pdf"]["reason"])
    assert (listed["empty.docx"]["status"], listed["empty.docx"]["error"]) == ("skipped", "DOCX has no text")
    assert all(listed[n]["status"] == "ingested" for n in ("a.md", "good.pdf", "g.docx"))
    assert listed["x.pdf"]["ingested_at"] is None
    assert sorted(wk.page_ids(wiki_id)) == ["a", "g.docx", "good.pdf"]


BAD_INDEXES = [
    (
        {"schema_version": 1, "themes": [], "documents": [], "colour": "red"},
        "invalid index: index.json: colour: unknown key",
    ),
    (
        {
            "schema_version": 1,
            "themes": [],
            "documents": [{"id": "a", "title": "A", "file": "a.md", "paths": ["src/["]}],
        },
        "invalid index: index.json: documents[0].paths[0]: glob has an unclosed '['",
    ),
    (
        {"schema_version": 1, "themes": [], "documents": [{"id": "m", "title": "M", "file": "missing.md"}]},
        "invalid index: index.json: documents[0].file: file not found: missing.md",
    ),
    ("{not json", "index.json: not valid JSON…"),
]


@pytest.mark.parametrize(("index", "error"), BAD_INDEXES, ids=["unknown-key", "bad-glob", "missing-file", "not-json"])
def test_an_invalid_authored_index_fails_the_first_build(wk: WikiHttp, index: Any, error: str) -> None:
    wiki_id = wk.create("docs")
    text = index if isinstance(index, str) else json.dumps(index)
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n", "index.json": text})
    detail = wk.ingest(wiki_id)
    assert (detail["status"], detail["version"], detail["stale"], detail["page_count"]) == ("failed", "0", False, 0)
    if error.endswith("…"):
        assert detail["sync_error"].startswith(error[:-1])
    else:
        assert detail["sync_error"] == error
    envelope = wk.fails("wiki/page/ls", {"wiki_id": wiki_id}, 409)
    assert envelope["message"] == f"wiki {wiki_id} has no index: the last build failed: {detail['sync_error']}"
    assert envelope["data"] == {"status": "failed", "step": None}
    wk.fails("knowledge/get", {"knowledge_id": wiki_id}, 404)


def test_a_failed_rebuild_keeps_serving_the_last_good_build_as_stale(wk: WikiHttp) -> None:
    index = {"schema_version": 1, "themes": [], "documents": [{"id": "a", "title": "Apples", "file": "a.md"}]}
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha apple orchard\n", "index.json": json.dumps(index)})
    wk.write(wiki_id, {"index.json": json.dumps({**index, "colour": "red"}), "b.md": "# B\n\nbanana\n"})
    detail = wk.ingest(wiki_id)
    assert (detail["status"], detail["stale"], detail["version"]) == ("failed", True, "1")
    assert detail["sync_error"] == "invalid index: index.json: colour: unknown key"
    pages = wk.ok("wiki/page/ls", {"wiki_id": wiki_id})
    assert (ids_of(pages["items"]), pages["stale"]) == (["a"], True)
    found = wk.ok("wiki/search", {"wiki_id": wiki_id, "query": "orchard"})
    assert (ids_of(found["results"]), found["stale"]) == (["a"], True)
    assert wk.ok("wiki/graph", {"wiki_id": wiki_id})["stale"] is True
    assert wk.ok("wiki/page/read", {"wiki_id": wiki_id, "refs": ["a"]})["stale"] is True
    assert wk.ok("wiki/retrieve", {"wiki_id": wiki_id, "question": "apples?"})["stale"] is True
    assert wk.ok("knowledge/get", {"knowledge_id": wiki_id})["knowledge_id"] == wiki_id  # still offered
    # Fixing the index makes it current again.
    wk.write(wiki_id, {"index.json": json.dumps(index)})
    fixed = wk.ingest(wiki_id)
    assert (fixed["status"], fixed["stale"], fixed["version"], fixed["sync_error"]) == ("ready", False, "2", None)
    assert sorted(wk.page_ids(wiki_id)) == ["a", "b"]


@pytest.mark.parametrize(
    ("route", "extra"),
    [
        ("wiki/page/ls", {}),
        ("wiki/page/read", {"refs": ["a"]}),
        ("wiki/search", {"query": "alpha"}),
        ("wiki/graph", {}),
        ("wiki/retrieve", {"question": "what is alpha?"}),
    ],
)
def test_a_wiki_that_never_built_has_no_index_yet(wk: WikiHttp, route: str, extra: dict[str, Any]) -> None:
    wiki_id = wk.create("docs")
    wk.write(wiki_id, {"a.md": "# A\n\nalpha\n"})
    envelope = wk.fails(route, {"wiki_id": wiki_id, **extra}, 409, f"wiki {wiki_id} {NO_INDEX_YET}")
    assert envelope["data"] == {"status": "draft", "step": None}


# -- 7. pages, graph, search, retrieve ---------------------------------------------------------------------


def test_page_ls_lists_every_fixture_page(shared: Shared) -> None:
    listed = shared.api.ok("wiki/page/ls", {"wiki_id": shared.handbook})
    assert listed["stale"] is False
    items = {item["id"]: item for item in listed["items"]}
    assert sorted(items) == FIXTURE_PAGES
    for pid, item in items.items():
        assert set(item) >= {"id", "title", "type", "path", "description"}
        assert item["path"] == f"wiki/{pid}.md"
    # Titles and descriptions come from the authored index (English and Chinese).
    assert (items["hr/leave-policy"]["title"], items["hr/leave-policy"]["description"]) == (
        "请假制度",
        "年假、病假、事假的天数与申请流程。",
    )
    assert items["payments/refunds"]["title"] == "Refund policy"
    assert items["standards/security-baseline"]["type"] == "standard"


def test_page_read_accepts_refs_with_or_without_md_and_the_wiki_prefix(shared: Shared) -> None:
    refs = ["hr/leave-policy", "hr/leave-policy.md", "wiki/hr/leave-policy.md", "./hr/leave-policy", "hr/nope"]
    data = shared.api.ok("wiki/page/read", {"wiki_id": shared.handbook, "refs": refs})
    assert data["stale"] is False
    expected = (Path(__file__).parent / "fixtures" / "wiki" / "hr" / "leave-policy.md").read_text(encoding="utf-8")
    assert data["items"] == [
        *({"ref": ref, "content": expected} for ref in refs[:4]),
        {"ref": "hr/nope", "not_found": True},
    ]


@pytest.mark.parametrize(
    ("refs", "message"),
    [([], "refs: must contain at least 1 items"), (["a"] * 21, "refs: must contain at most 20 items")],
)
def test_page_read_takes_1_to_20_refs(shared: Shared, refs: list[str], message: str) -> None:
    shared.api.fails("wiki/page/read", {"wiki_id": shared.handbook, "refs": refs}, 400, message)


def test_page_write_stores_a_locked_page_and_rebuilds(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n"})
    pages = [
        {"ref": "notes/meeting", "content": "# Meeting\n\nWe chose nebula.\n"},
        {"ref": "wiki/notes/titled.md", "content": "---\ntitle: Titled\nlocked: false\n---\n# Titled\n\nBody.\n"},
    ]
    result = wk.ok("wiki/page/write", {"team_id": TEAM, "wiki_id": wiki_id, "pages": pages}, status=202)
    meeting = "---\nlocked: true\n---\n# Meeting\n\nWe chose nebula.\n"
    titled = "---\ntitle: Titled\nlocked: true\n---\n# Titled\n\nBody.\n"
    assert result == {
        "items": [{"ref": "notes/meeting", "size": len(meeting)}, {"ref": "notes/titled", "size": len(titled)}],
        "status": "pending",
    }
    wk.wait()
    assert wk.get(wiki_id)["version"] == "2"
    assert wk.read_page(wiki_id, "notes/meeting") == {"ref": "notes/meeting", "content": meeting}
    assert wk.read_page(wiki_id, "notes/titled")["content"] == titled
    assert wk.raw_files(wiki_id)["notes/meeting.md"] == meeting.encode()
    assert wk.raw_ls(wiki_id)["notes/meeting.md"]["status"] == "ingested"
    found = wk.ok("wiki/search", {"wiki_id": wiki_id, "query": "nebula"})["results"]
    assert ids_of(found) == ["notes/meeting"]


def test_page_write_on_a_draft_wiki_builds_it(wk: WikiHttp) -> None:
    wiki_id = wk.create("docs")
    wk.ok(
        "wiki/page/write",
        {"team_id": TEAM, "wiki_id": wiki_id, "pages": [{"ref": "p", "content": "# P\n"}]},
        status=202,
    )
    wk.wait()
    assert (wk.get(wiki_id)["status"], wk.get(wiki_id)["version"]) == ("ready", "1")
    assert wk.page_ids(wiki_id) == ["p"]


@pytest.mark.parametrize(
    ("ref", "name"),
    [
        ("index", "index"),
        ("wiki/index.md", "index"),
        ("Overview", "Overview"),
        ("schema.md", "schema"),
        ("purpose", "purpose"),
        ("docs/log.md", "log"),
    ],
)
def test_page_write_refuses_reserved_structure_files(wk: WikiHttp, ref: str, name: str) -> None:
    wiki_id = wk.create("docs")
    body = {"team_id": TEAM, "wiki_id": wiki_id, "pages": [{"ref": "ok", "content": "x"}, {"ref": ref, "content": "x"}]}
    wk.fails("wiki/page/write", body, 400, f"pages[1].ref: {name}.md is a reserved structure file")
    assert wk.state(wiki_id) == ({}, {})
    assert wk.get(wiki_id)["status"] == "draft"


@pytest.mark.parametrize(
    ("page", "code", "message"),
    [
        ({"ref": "notes/../x", "content": "x"}, 400, "pages[0].ref: must not contain empty, '.' or '..' path segments"),
        ({"ref": "n", "content": "---\ntitle: [oops\n---\nbody"}, 400, "pages: content: invalid YAML front matter…"),
        ({"ref": "n", "content": "a" * (512 * 1024)}, 413, "pages[0].content: …"),
    ],
    ids=["dotdot", "bad-front-matter", "too-large"],
)
def test_page_write_validation(wk: WikiHttp, page: dict[str, str], code: int, message: str) -> None:
    wiki_id = wk.create("docs")
    wk.fails("wiki/page/write", {"team_id": TEAM, "wiki_id": wiki_id, "pages": [page]}, code, message)
    assert wk.state(wiki_id) == ({}, {})


def test_page_rm_deletes_the_page_after_the_rebuild(wk: WikiHttp) -> None:
    wiki_id = wk.built("docs", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n", "m.pdf": pdf("manual")})
    result = wk.ok("wiki/page/rm", {"team_id": TEAM, "wiki_id": wiki_id, "refs": ["wiki/b.md", "m.pdf"]})
    assert result == {"deleted_pages": ["b", "m.pdf"], "rewritten_files": []}
    assert sorted(wk.raw_files(wiki_id)) == ["a.md"]  # a PDF's page goes with the PDF
    wk.wait()
    assert wk.page_ids(wiki_id) == ["a"]
    assert wk.get(wiki_id)["version"] == "2"


def test_page_rm_deletes_a_markdown_page_whose_front_matter_names_a_source(wk: WikiHttp) -> None:
    # Bug (wiki-bugs-http.md #2): a Markdown page's own `source:` front matter is taken for its source file.
    notes = "---\nsource: Team meeting 2024-03-01\n---\n# Notes\n\nDecisions.\n"
    wiki_id = wk.built("docs", {"notes.md": notes, "a.md": "# A\n"})
    result = wk.ok("wiki/page/rm", {"team_id": TEAM, "wiki_id": wiki_id, "refs": ["notes"]})
    assert result == {"deleted_pages": ["notes"], "rewritten_files": []}
    wk.wait()
    assert wk.page_ids(wiki_id) == ["a"]


def test_page_rm_never_deletes_another_pages_source(wk: WikiHttp) -> None:
    # Bug (wiki-bugs-http.md #2): removing a page whose front matter says `source: m.pdf` deletes m.pdf
    # (another page, the manual) and keeps the page that was asked for.
    wiki_id = wk.built("docs", {"notes.md": "---\nsource: m.pdf\n---\n# Notes\n", "m.pdf": pdf("manual text")})
    result = wk.ok("wiki/page/rm", {"team_id": TEAM, "wiki_id": wiki_id, "refs": ["notes"]})
    assert result == {"deleted_pages": ["notes"], "rewritten_files": []}
    assert sorted(wk.raw_files(wiki_id)) == ["m.pdf"]
    wk.wait()
    assert wk.page_ids(wiki_id) == ["m.pdf"]


def test_graph_nodes_edges_and_communities(shared: Shared) -> None:
    graph = shared.api.ok("wiki/graph", {"wiki_id": shared.linked})
    assert graph["stale"] is False
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert sorted(nodes) == ["notes/alpha", "notes/beta", "notes/gamma", "solo"]
    assert nodes["notes/beta"] == {
        "id": "notes/beta",
        "label": "Beta page",
        "type": nodes["notes/beta"]["type"],
        "path": "wiki/notes/beta.md",
        "linkCount": 2,
        "community": nodes["notes/alpha"]["community"],
    }
    assert {n: nodes[n]["linkCount"] for n in nodes} == {"notes/alpha": 3, "notes/beta": 2, "notes/gamma": 1, "solo": 0}
    assert sorted((e["source"], e["target"], e["weight"]) for e in graph["edges"]) == [
        ("notes/alpha", "notes/beta", 1),
        ("notes/alpha", "notes/gamma", 1),
        ("notes/beta", "notes/alpha", 1),
    ]
    groups = sorted(sorted(c["nodes"]) for c in graph["communities"])
    assert groups == [["notes/alpha", "notes/beta", "notes/gamma"], ["solo"]]
    assert all(c["size"] == len(c["nodes"]) for c in graph["communities"])
    assert nodes["solo"]["community"] != nodes["notes/alpha"]["community"]


def test_search_results_carry_path_title_snippet_score_type_hop_and_related(shared: Shared) -> None:
    found = shared.api.ok("wiki/search", {"wiki_id": shared.handbook, "query": "refund approval"})
    assert found["stale"] is False and found["count"] == len(found["results"]) > 0
    top = found["results"][0]
    assert top["id"] == "payments/refunds"
    assert (top["path"], top["title"], top["type"], top["hop"]) == (
        "wiki/payments/refunds.md",
        "Refund policy",
        "guide",
        0,
    )
    assert "refund" in top["snippet"].lower() and isinstance(top["related"], list)
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert all("via" not in r for r in found["results"])
    limited = shared.api.ok("wiki/search", {"wiki_id": shared.handbook, "query": "refund approval", "limit": 1})
    assert ids_of(limited["results"]) == ["payments/refunds"] and limited["count"] == 1


def test_search_finds_chinese_pages(shared: Shared) -> None:
    found = shared.api.ok("wiki/search", {"wiki_id": shared.handbook, "query": "年假"})
    assert "hr/leave-policy" in ids_of(found["results"])[:2]


def test_search_hops_add_linked_pages_with_via(shared: Shared) -> None:
    api, wiki_id = shared.api, shared.linked
    plain = api.ok("wiki/search", {"wiki_id": wiki_id, "query": "quartz"})
    assert ids_of(plain["results"]) == ["notes/gamma"] and plain["links"] == []
    seed = plain["results"][0]
    assert seed["related"] == [
        {"title": "Alpha", "path": "wiki/notes/alpha.md", "type": seed["related"][0]["type"], "direction": "in"}
    ]
    one = api.ok("wiki/search", {"wiki_id": wiki_id, "query": "quartz", "hop": 1})
    assert [(r["id"], r["hop"], r.get("via")) for r in one["results"]] == [
        ("notes/gamma", 0, None),
        ("notes/alpha", 1, "wiki/notes/gamma.md"),
    ]
    assert one["results"][1]["score"] == round(seed["score"] * 0.5, 4)
    assert one["links"] == [{"source": "wiki/notes/alpha.md", "target": "wiki/notes/gamma.md", "weight": 1}]
    two = api.ok("wiki/search", {"wiki_id": wiki_id, "query": "quartz", "hop": 2})
    assert [(r["id"], r["hop"], r.get("via")) for r in two["results"]][2] == ("notes/beta", 2, "wiki/notes/alpha.md")
    assert "solo" not in ids_of(two["results"])
    strict = api.ok("wiki/search", {"wiki_id": wiki_id, "query": "quartz", "hop": 2, "minScore": 1000})
    assert ids_of(strict["results"]) == ["notes/gamma"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"query": ""}, "query: must not be empty"),
        ({"query": "x", "hop": 6}, "hop: must be <= 5"),
        ({"query": "x", "limit": 0}, "limit: must be >= 1"),
        ({"query": "x", "decay": 1.5}, "decay: must be <= 1.0"),
    ],
)
def test_search_validation(shared: Shared, extra: dict[str, Any], message: str) -> None:
    shared.api.fails("wiki/search", {"wiki_id": shared.handbook, **extra}, 400, message)


def test_retrieve_answers_themes_documents_and_a_capped_block(shared: Shared) -> None:
    question = "How do refunds work and who approves them?"
    data = shared.api.ok("wiki/retrieve", {"wiki_id": shared.handbook, "question": question})
    assert (data["skipped"], data["stale"], data["cap"]) == (None, False, 6000)
    assert [t["id"] for t in data["themes"]] == ["payments"]
    assert [d["id"] for d in data["documents"]] == ["payments/refunds", "handbook"]
    assert data["documents"][0]["file"] == "payments/refunds.md" and data["documents"][0]["status"] == "current"
    assert {p["doc_id"] for p in data["passages"]} <= {"payments/refunds", "handbook"}
    assert data["text"].startswith("[source: payments/refunds.md — Refund policy]")
    assert "finance lead" in data["text"]
    assert data["chars"] == len(data["text"]) <= 6000 and data["truncated"] is False


def test_retrieve_in_chinese(shared: Shared) -> None:
    data = shared.api.ok("wiki/retrieve", {"wiki_id": shared.handbook, "question": "退款需要谁审批？"})
    assert [d["id"] for d in data["documents"]] == ["payments/refunds-zh"]
    assert "[source: payments/refunds-zh.md" in data["text"]


def test_retrieve_reads_archived_documents_only_for_questions_about_the_past(shared: Shared) -> None:
    api, wiki_id = shared.api, shared.handbook
    current = api.ok("wiki/retrieve", {"wiki_id": wiki_id, "question": "refund policy notice"})
    assert "payments/refund-policy-2022" not in [d["id"] for d in current["documents"]]
    past = api.ok("wiki/retrieve", {"wiki_id": wiki_id, "question": "What was the old refund policy before 2023?"})
    assert past["documents"][0] == {
        "id": "payments/refund-policy-2022",
        "title": "Refund policy (2022 notice)",
        "file": "payments/refund-policy-2022.md",
        "theme": "payments",
        "score": past["documents"][0]["score"],
        "status": "archived",
    }
    assert "Until 2023 every refund needed a finance lead" in past["text"]


def test_retrieve_uses_paths_to_pick_path_scoped_documents(shared: Shared) -> None:
    body = {"wiki_id": shared.handbook, "question": "payments code conventions idempotency"}
    without = shared.api.ok("wiki/retrieve", body)
    assert "payments/payments-code-style" not in [d["id"] for d in without["documents"]]
    scoped = shared.api.ok("wiki/retrieve", {**body, "paths": ["/home/me/repo/src/payments/ledger.py"]})
    assert scoped["documents"][0]["id"] == "payments/payments-code-style"


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("How many orders did we ship last month in the sales database?", "data_question"),
        ("上个月订单总数是多少？查一下数据库", "data_question"),
        ("What did we discuss yesterday?", "conversation_recall"),
        ("我们刚才聊了什么？", "conversation_recall"),
    ],
)
def test_retrieve_skips_data_and_conversation_questions(shared: Shared, question: str, reason: str) -> None:
    data = shared.api.ok("wiki/retrieve", {"wiki_id": shared.handbook, "question": question})
    assert {k: data[k] for k in ("skipped", "themes", "documents", "text", "cap", "stale")} == {
        "skipped": reason,
        "themes": [],
        "documents": [],
        "text": "",
        "cap": 6000,
        "stale": False,
    }


def test_retrieve_caps_the_block_by_conversation_kind(wk: WikiHttp) -> None:
    rules = "\n\n".join(
        f"Refund rule {i}: a refund asked for within {i} days is approved by the support lead after a check."
        for i in range(200)
    )
    front = "---\ntitle: Refund handbook\nsummary: Refund rules.\ntags: [refund, approval]\n---\n"
    page = f"{front}# Refund handbook\n\n{rules}\n"
    wiki_id = wk.built("big", {"refunds/handbook.md": page})
    for conversation, cap in (("workspace", 6000), ("agent", 8000)):
        body = {"wiki_id": wiki_id, "question": "Who approves a refund?", "conversation": conversation}
        data = wk.ok("wiki/retrieve", body)
        assert data["cap"] == cap and data["truncated"] is True
        assert cap - 1200 < data["chars"] == len(data["text"]) <= cap
        assert data["passages"][-1]["truncated"] is True
    wk.fails("wiki/retrieve", {"wiki_id": wiki_id, "question": "x", "conversation": "boss"}, 400, "conversation: …")


# -- 8. authorization with user keys ---------------------------------------------------------------------------


def test_a_team_member_manages_the_teams_wikis(wk: WikiHttp) -> None:
    org, _, member, _, _, team = org_of(wk)
    detail = user_ok(org, member, "create", {"team_id": team, "name": "docs"}, status=201)
    wiki_id = detail["wiki_id"]
    assert detail["owner_user_id"] == member.user_id
    assert ids_of(user_ok(org, member, "list", {"team_id": team})["items"], "wiki_id") == [wiki_id]
    assert user_ok(org, member, "get", {"wiki_id": wiki_id})["name"] == "docs"
    files = [entry("a.md", "# A\n\nalpha\n")]
    user_ok(org, member, "raw/write", {"team_id": team, "wiki_id": wiki_id, "files": files})
    assert user_ok(org, member, "raw/ls", {"wiki_id": wiki_id})["items"][0]["last_modified_by"] == member.user_id
    assert user_ok(org, member, "ingest", {"wiki_id": wiki_id}, status=202)["status"] == "pending"
    wk.wait()
    assert ids_of(user_ok(org, member, "page/ls", {"wiki_id": wiki_id})["items"]) == ["a"]


def test_a_user_key_as_the_bearer_token_works(wk: WikiHttp) -> None:
    _, _, member, _, _, team = org_of(wk)
    headers = {"authorization": f"Bearer {member.key}", "x-tdai-service-id": SERVICE}
    response = wk.gw.client.post("/v3/wiki/create", json={"team_id": team, "name": "docs"}, headers=headers)
    assert response.status_code == 201 and response.json()["data"]["owner_user_id"] == member.user_id


def test_a_non_member_cannot_create_or_list_in_the_team(wk: WikiHttp) -> None:
    org, _, member, _, outsider, team = org_of(wk)
    user_ok(org, member, "create", {"team_id": team, "name": "docs"}, status=201)
    user_fails(org, outsider, "create", {"team_id": team, "name": "x"}, 403, f"not a member of team {team}")
    user_fails(org, outsider, "list", {"team_id": team}, 403, f"not a member of team {team}")
    assert (
        wk.ok(
            "wiki/list",
            {"team_id": team},
        )["total"]
        == 1
    )


def test_a_member_cannot_create_for_another_user(wk: WikiHttp) -> None:
    org, owner, member, _, _, team = org_of(wk)
    body = {"team_id": team, "name": "docs", "user_id": owner.user_id}
    user_fails(org, member, "create", body, 403, "user_id: does not match the caller")


def test_to_a_non_member_the_wiki_does_not_exist(wk: WikiHttp) -> None:
    org, _, member, _, outsider, team = org_of(wk)
    wiki_id = user_ok(org, member, "create", {"team_id": team, "name": "docs"}, status=201)["wiki_id"]
    user_ok(org, member, "raw/write", {"team_id": team, "wiki_id": wiki_id, "files": [entry("a.md", "# A\n")]})
    missing = f"wiki not found: {wiki_id}"
    for route, extra in (
        ("get", {}),
        ("ingest", {}),
        ("raw/ls", {}),
        ("raw/read", {"filenames": ["a.md"]}),
        ("raw/write", {"team_id": team, "files": [entry("b.md", "# B\n")]}),
        ("raw/rm", {"team_id": team, "filenames": ["a.md"]}),
        ("update-meta", {"name": "mine"}),
        ("page/ls", {}),
        ("search", {"query": "a"}),
    ):
        user_fails(org, outsider, route, {"wiki_id": wiki_id, **extra}, 404, missing)
    assert sorted(wk.raw_files(wiki_id)) == ["a.md"]
    assert wk.get(wiki_id)["status"] == "draft" and wk.get(wiki_id)["name"] == "docs"


def test_delete_needs_the_owner_or_a_team_admin(wk: WikiHttp) -> None:
    org, owner, member, member2, outsider, team = org_of(wk)
    first = user_ok(org, member, "create", {"team_id": team, "name": "first"}, status=201)["wiki_id"]
    second = user_ok(org, member, "create", {"team_id": team, "name": "second"}, status=201)["wiki_id"]
    assert user_ok(org, member2, "delete", {"wiki_ids": [first]}) == {
        "deleted_ids": [],
        "failed": [{"id": first, "reason": "forbidden"}],
    }
    assert user_ok(org, outsider, "delete", {"wiki_ids": [first]}) == {
        "deleted_ids": [],
        "failed": [{"id": first, "reason": "not found"}],
    }
    assert wk.get(first)["wiki_id"] == first
    assert user_ok(org, member, "delete", {"wiki_ids": [first]}) == {"deleted_ids": [first], "failed": []}
    # The team's owner is a team admin: it may delete a member's wiki.
    assert user_ok(org, owner, "delete", {"wiki_ids": [second]}) == {"deleted_ids": [second], "failed": []}
    assert wk.ok("wiki/list", {"team_id": team})["total"] == 0


def test_a_promoted_team_admin_and_the_system_admin_may_delete(wk: WikiHttp) -> None:
    org, owner, member, member2, _, team = org_of(wk)
    first = user_ok(org, member, "create", {"team_id": team, "name": "first"}, status=201)["wiki_id"]
    second = user_ok(org, member, "create", {"team_id": team, "name": "second"}, status=201)["wiki_id"]
    admin = org.user("admin2")
    org.join(team, owner, admin, "admin")
    assert user_ok(org, admin, "delete", {"wiki_ids": [first]})["deleted_ids"] == [first]
    assert user_ok(org, member2, "delete", {"wiki_ids": [second]})["failed"] == [{"id": second, "reason": "forbidden"}]
    assert user_ok(org, org.admin, "delete", {"wiki_ids": [second]})["deleted_ids"] == [second]


def test_the_gateway_key_acts_for_the_whole_tenant(wk: WikiHttp) -> None:
    org, _, member, _, _, team = org_of(wk)
    wiki_id = user_ok(org, member, "create", {"team_id": team, "name": "docs"}, status=201)["wiki_id"]
    assert wk.get(wiki_id)["owner_user_id"] == member.user_id
    assert wk.ok("wiki/delete", {"wiki_ids": [wiki_id]})["deleted_ids"] == [wiki_id]
