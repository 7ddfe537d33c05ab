"""L2 scenario/* and L3 core/* routes: META blocks, versions, safe paths, (team, agent, user) scope, audit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ISO, SERVICE, Gateway

NAV_HEADING = "## 🗺️ Scene Navigation (Scene Index)"
AUDIT_COLUMNS = {
    "audit_id",
    "service_id",
    "record_id",
    "layer",
    "action",
    "team_id",
    "agent_id",
    "user_id",
    "task_id",
    "version",
    "updated_at_ms",
    "request_id",
}
PREFIXES = ["/v3", "/v2"]


def scene_text(created: str, updated: str, summary: str, heat: int, body: str) -> str:
    """A scene file exactly as the gateway renders it."""
    return (
        f"-----META-START-----\ncreated: {created}\nupdated: {updated}\nsummary: {summary}\n"
        f"heat: {heat}\n-----META-END-----\n\n{body}\n"
    )


def meta_of(content: str) -> dict[str, str]:
    head = content.split("-----META-END-----")[0].split("-----META-START-----\n")[1]
    return dict(line.split(": ", 1) for line in head.strip("\n").split("\n"))


def create(
    gw: Gateway, path: str, content: str, prefix: str = "/v3", summary: str | None = None, **kw: Any
) -> dict[str, Any]:
    body = {"path": path, "content": content} | ({} if summary is None else {"summary": summary})
    return gw.ok(f"{prefix}/scenario/create", body, **kw)


def read(gw: Gateway, path: str, prefix: str = "/v3", **kw: Any) -> dict[str, Any]:
    return gw.ok(f"{prefix}/scenario/read", {"path": path}, **kw)


def scene_count(gw: Gateway, **kw: Any) -> int:
    return gw.ok("/v3/scenario/count", {}, **kw)["total"]


# -- L2 create / read / write --------------------------------------------------------------
@pytest.mark.parametrize("prefix", PREFIXES)
def test_create_then_read_returns_meta_block_and_body(gateway: Gateway, prefix: str) -> None:
    made = create(gateway, "travel/japan.md", "Trip to Kyoto in spring.\n", prefix, summary="Japan trip")
    assert made["path"] == "travel/japan.md"
    assert made["version"] == 0
    assert (made["team_id"], made["agent_id"]) == ("team-1", "agent-1")

    got = read(gateway, "travel/japan.md", prefix)
    assert got["version"] == 0
    assert got["created_at"] == got["updated_at"] == made["updated_at"]
    assert got["content"] == scene_text(
        got["created_at"], got["updated_at"], "Japan trip", 1, "Trip to Kyoto in spring."
    )
    assert (got["team_id"], got["agent_id"], got["path"]) == ("team-1", "agent-1", "travel/japan.md")


def test_read_of_missing_path_is_200_with_null_content(gateway: Gateway) -> None:
    got = read(gateway, "nothing/here.md")
    assert got == {
        "path": "nothing/here.md",
        "content": None,
        "version": 0,
        "team_id": "team-1",
        "agent_id": "agent-1",
        "created_at": None,
        "updated_at": None,
    }


@pytest.mark.parametrize("prefix", PREFIXES)
def test_write_to_missing_path_is_404_and_creates_nothing(gateway: Gateway, prefix: str) -> None:
    env = gateway.fails(f"{prefix}/scenario/write", {"path": "ghost.md", "content": "boo"}, 404)
    assert env["message"] == "Scenario file not found: ghost.md"
    assert read(gateway, "ghost.md")["content"] is None
    assert scene_count(gateway) == 0
    assert gateway.store.list_audit(SERVICE) == []


def test_create_on_existing_path_is_409_and_keeps_the_original(gateway: Gateway) -> None:
    create(gateway, "a.md", "first", summary="one")
    env = gateway.fails("/v3/scenario/create", {"path": "a.md", "content": "second"}, 409)
    assert env["message"] == "path: scene file already exists: a.md"
    got = read(gateway, "a.md")
    assert got["content"].endswith("\n\nfirst\n")
    assert got["version"] == 0
    assert scene_count(gateway) == 1


def test_versions_move_only_when_content_changes(gateway: Gateway) -> None:
    assert create(gateway, "v.md", "body one", summary="s")["version"] == 0
    write = "/v3/scenario/write"
    assert gateway.ok(write, {"path": "v.md", "content": "body one"})["version"] == 0
    assert gateway.ok(write, {"path": "v.md", "content": "body two"})["version"] == 1
    assert gateway.ok(write, {"path": "v.md", "content": "body two"})["version"] == 1
    # Writing back exactly what read returned (META with timestamps included) changes nothing.
    current = read(gateway, "v.md")["content"]
    assert gateway.ok(write, {"path": "v.md", "content": current})["version"] == 1
    assert gateway.ok(write, {"path": "v.md", "content": "body three"})["version"] == 2
    assert gateway.ok(write, {"path": "v.md", "content": "body three", "summary": "new"})["version"] == 3
    assert read(gateway, "v.md")["version"] == 3


def test_write_preserves_and_rebuilds_meta(gateway: Gateway) -> None:
    create(gateway, "m.md", "v1 body", summary="Original summary")
    first = read(gateway, "m.md")
    created = first["created_at"]
    write = "/v3/scenario/write"

    # Plain body: created, summary and heat are kept.
    gateway.ok(write, {"path": "m.md", "content": "v2 body"})
    got = read(gateway, "m.md")
    assert got["created_at"] == created
    assert got["content"] == scene_text(created, got["updated_at"], "Original summary", 1, "v2 body")

    # A META block in the content supplies summary and heat; its `created` cannot rewrite history.
    meta = "-----META-START-----\ncreated: 1999-01-01T00:00:00.000Z\nsummary: From meta\nheat: 7\n-----META-END-----\n"
    gateway.ok(write, {"path": "m.md", "content": meta + "\nv3 body"})
    got = read(gateway, "m.md")
    assert got["content"] == scene_text(created, got["updated_at"], "From meta", 7, "v3 body")
    assert got["version"] == 2

    # The request's summary beats the META's; heat survives a write without META.
    gateway.ok(write, {"path": "m.md", "content": meta.replace("heat: 7\n", "") + "\nv4", "summary": "From request"})
    got = read(gateway, "m.md")
    assert meta_of(got["content"]) == {
        "created": created,
        "updated": got["updated_at"],
        "summary": "From request",
        "heat": "7",
    }
    ls = gateway.ok("/v3/scenario/ls", {})["entries"]
    assert [e.get("summary") for e in ls] == ["From request"]


def test_summary_is_folded_to_one_line(gateway: Gateway) -> None:
    create(gateway, "s.md", "x", summary="line one\n  line two\t end")
    assert meta_of(read(gateway, "s.md")["content"])["summary"] == "line one line two end"


# -- L2 ls / count / rm --------------------------------------------------------------------
FILES = ["a/b/c.md", "a/d.md", "b/x.md", "top.md"]


@pytest.fixture
def tree(gateway: Gateway) -> Gateway:
    for i, path in enumerate(FILES):
        create(gateway, path, f"body {i}", summary=f"sum {i}")
    return gateway


@pytest.mark.parametrize("prefix", PREFIXES)
def test_ls_lists_files_and_parent_directories_recursively(tree: Gateway, prefix: str) -> None:
    data = tree.ok(f"{prefix}/scenario/ls", {})
    paths = [e["path"] for e in data["entries"]]
    assert paths == ["a/", "a/b/", "a/b/c.md", "a/d.md", "b/", "b/x.md", "top.md"]
    assert data["total"] == 7
    for entry in data["entries"]:
        assert (entry["team_id"], entry["agent_id"]) == ("team-1", "agent-1")
        if entry["path"].endswith("/"):
            assert entry["version"] == 0
            assert "summary" not in entry
            assert entry["created_at"] is None
        else:
            assert entry["summary"] == f"sum {FILES.index(entry['path'])}"
            assert entry["created_at"] is not None


@pytest.mark.parametrize(
    ("path_prefix", "expected", "files"),
    [
        ("", ["a/", "a/b/", "a/b/c.md", "a/d.md", "b/", "b/x.md", "top.md"], 4),
        ("a/", ["a/", "a/b/", "a/b/c.md", "a/d.md"], 2),
        ("a/b", ["a/b/", "a/b/c.md"], 1),
        ("b/x.md", ["b/x.md"], 1),
        ("top", ["top.md"], 1),
        ("zzz/", [], 0),
    ],
)
def test_ls_and_count_filter_by_prefix(tree: Gateway, path_prefix: str, expected: list[str], files: int) -> None:
    data = tree.ok("/v3/scenario/ls", {"path_prefix": path_prefix})
    assert [e["path"] for e in data["entries"]] == expected
    assert data["total"] == len(expected)
    assert tree.ok("/v3/scenario/count", {"path_prefix": path_prefix}) == {"total": files}


def test_ls_reports_versions_of_files(tree: Gateway) -> None:
    tree.ok("/v3/scenario/write", {"path": "top.md", "content": "changed"})
    versions = {e["path"]: e["version"] for e in tree.ok("/v3/scenario/ls", {})["entries"]}
    assert versions["top.md"] == 1
    assert versions["a/d.md"] == 0


@pytest.mark.parametrize(
    ("body", "left"),
    [
        ({"path": "top.md"}, ["a/b/c.md", "a/d.md", "b/x.md"]),
        ({"paths": ["top.md", "a/d.md"]}, ["a/b/c.md", "b/x.md"]),
        ({"path": "b/x.md", "paths": ["b/x.md", "top.md"]}, ["a/b/c.md", "a/d.md"]),
        ({"path": "a/"}, ["b/x.md", "top.md"]),
        ({"paths": ["a/b/"]}, ["a/d.md", "b/x.md", "top.md"]),
        ({"path": "missing.md"}, FILES),
    ],
)
@pytest.mark.parametrize("prefix", PREFIXES)
def test_rm(tree: Gateway, prefix: str, body: dict[str, Any], left: list[str]) -> None:
    response = tree.post(f"{prefix}/scenario/rm", body)
    envelope = response.json()
    assert response.status_code == 200
    assert set(envelope) == {"code", "message", "request_id"}  # rm carries no `data`
    assert envelope["code"] == 0
    files = [e["path"] for e in tree.ok("/v3/scenario/ls", {})["entries"] if not e["path"].endswith("/")]
    assert files == left
    assert scene_count(tree) == len(left)
    for gone in set(FILES) - set(left):
        assert read(tree, gone)["content"] is None


def test_rm_needs_a_path(gateway: Gateway) -> None:
    env = gateway.fails("/v3/scenario/rm", {}, 400)
    assert env["message"] == "path: one of path or paths is required"


def test_removed_path_can_be_created_again_from_version_zero(gateway: Gateway) -> None:
    create(gateway, "r.md", "one")
    gateway.ok("/v3/scenario/write", {"path": "r.md", "content": "two"})
    gateway.ok("/v3/scenario/rm", {"path": "r.md"})
    assert create(gateway, "r.md", "three")["version"] == 0


def test_v2_has_no_count_routes(gateway: Gateway) -> None:
    for route in ("/v2/scenario/count", "/v2/core/count"):
        env = gateway.fails(route, {}, 404)
        assert env["message"] == f"Not found: POST {route}"


# -- safe paths ----------------------------------------------------------------------------
RELATIVE = "must be relative (no '..', no leading '/', no backslash/NUL)"
BAD_PATHS = [
    pytest.param("../escape.md", RELATIVE, id="dotdot"),
    pytest.param("a/../../escape.md", RELATIVE, id="inner-dotdot"),
    pytest.param("a/..", RELATIVE, id="trailing-dotdot"),
    pytest.param("/etc/passwd", RELATIVE, id="leading-slash"),
    pytest.param("a\\b.md", RELATIVE, id="backslash"),
    pytest.param("a\x00b.md", RELATIVE, id="nul"),
    pytest.param("a\x01b.md", "must not contain control characters", id="ctrl-01"),
    pytest.param("a\nb.md", "must not contain control characters", id="newline"),
    pytest.param("a\x7fb.md", "must not contain control characters", id="del"),
    pytest.param("a//b.md", "must not contain empty or '.' segments", id="empty-segment"),
    pytest.param("./a.md", "must not contain empty or '.' segments", id="dot-segment"),
    pytest.param("", "must not be empty", id="empty"),
    pytest.param("x" * 510 + ".md", "must be at most 512 characters", id="513-chars"),
]


@pytest.mark.parametrize(("path", "rule"), BAD_PATHS)
@pytest.mark.parametrize("route", ["create", "write", "read", "rm"])
def test_unsafe_paths_are_400_naming_path_and_write_nothing(gateway: Gateway, route: str, path: str, rule: str) -> None:
    body = {"path": path} if route in ("read", "rm") else {"path": path, "content": "payload"}
    env = gateway.fails(f"/v3/scenario/{route}", body, 400)
    assert env["message"] == f"path: {rule}"
    assert env["data"]["errors"][0] == {"field": "path", "rule": rule}
    assert scene_count(gateway) == 0
    assert gateway.store.list_audit(SERVICE) == []


@pytest.mark.parametrize("route", ["create", "write", "read"])
def test_file_routes_refuse_a_directory_path(gateway: Gateway, route: str) -> None:
    env = gateway.fails(f"/v3/scenario/{route}", {"path": "dir/", "content": "x"}, 400)
    assert env["message"] == "path: must name a file, not a directory"


def test_unsafe_entry_of_paths_list_is_named(gateway: Gateway) -> None:
    create(gateway, "keep.md", "x")
    env = gateway.fails("/v3/scenario/rm", {"paths": ["keep.md", "../x"]}, 400)
    assert env["message"] == f"paths[1]: {RELATIVE}"
    assert scene_count(gateway) == 1


def test_longest_allowed_path_is_512_chars(gateway: Gateway) -> None:
    path = "x" * 509 + ".md"
    create(gateway, path, "long")
    assert read(gateway, path)["content"].endswith("\nlong\n")


@pytest.mark.parametrize("prefix", ["../", "/abs", "a\\b", "a\x00"])
def test_ls_refuses_unsafe_prefix(gateway: Gateway, prefix: str) -> None:
    env = gateway.fails("/v3/scenario/ls", {"path_prefix": prefix}, 400)
    assert env["message"].startswith("path_prefix: ")


# -- (team, agent, user) scope -------------------------------------------------------------
SAME_PROFILE = [
    pytest.param({**ISO, "task_id": "task-9", "session_id": "s-9"}, id="other-task-session"),
]
OTHER_PROFILE = [
    # A profile is one user's: a teammate talking to the same agent never reads it (nor writes it).
    pytest.param({**ISO, "user_id": "user-2"}, {}, id="other-user"),
    pytest.param({**ISO, "agent_id": "agent-2"}, {}, id="other-agent"),
    pytest.param({**ISO, "team_id": "team-2"}, {}, id="other-team"),
    pytest.param(ISO, {"service": "svc-b"}, id="other-service"),
]


@pytest.mark.parametrize("who", SAME_PROFILE)
def test_profile_is_shared_by_the_tasks_and_sessions_of_one_user(gateway: Gateway, who: dict[str, str]) -> None:
    create(gateway, "shared.md", "team memory")
    gateway.ok("/v3/core/write", {"content": "shared persona"})
    assert read(gateway, "shared.md", isolation=who)["content"].endswith("team memory\n")
    assert gateway.ok("/v3/scenario/count", {}, isolation=who) == {"total": 1}
    assert gateway.ok("/v3/core/read", {}, isolation=who)["content"].startswith("shared persona")
    # … and may change it, which the other tasks then see.
    gateway.ok("/v3/scenario/write", {"path": "shared.md", "content": "edited"}, isolation=who)
    assert read(gateway, "shared.md")["version"] == 1


@pytest.mark.parametrize(("who", "extra"), OTHER_PROFILE)
def test_profile_is_invisible_to_other_users_agents_teams_and_services(
    gateway: Gateway, who: dict[str, str], extra: dict[str, str]
) -> None:
    create(gateway, "private.md", "secret")
    gateway.ok("/v3/core/write", {"content": "private persona"})
    assert read(gateway, "private.md", isolation=who, **extra)["content"] is None
    assert gateway.ok("/v3/scenario/ls", {}, isolation=who, **extra) == {"entries": [], "total": 0}
    assert gateway.ok("/v3/scenario/count", {}, isolation=who, **extra) == {"total": 0}
    assert gateway.ok("/v3/core/read", {}, isolation=who, **extra)["content"] is None
    assert gateway.ok("/v3/core/count", {}, isolation=who, **extra) == {"total": 0}
    gateway.fails("/v3/scenario/write", {"path": "private.md", "content": "x"}, 404, isolation=who, **extra)
    gateway.ok("/v3/scenario/rm", {"path": "private.md"}, isolation=who, **extra)
    gateway.ok("/v3/scenario/rm", {"paths": ["private.md"]}, isolation=who, **extra)
    # Their own create at the same path is a separate file, not a 409.
    create(gateway, "private.md", "theirs", isolation=who, **extra)
    gateway.ok("/v3/core/write", {"content": "their persona"}, isolation=who, **extra)
    mine = read(gateway, "private.md")
    assert mine["content"].endswith("\nsecret\n")
    assert mine["version"] == 0
    assert gateway.ok("/v3/core/read", {})["content"].startswith("private persona")


# -- L3 core -------------------------------------------------------------------------------
@pytest.mark.parametrize("prefix", PREFIXES)
def test_core_read_without_persona_is_null(gateway: Gateway, prefix: str) -> None:
    got = gateway.ok(f"{prefix}/core/read", {})
    assert got == {
        "content": None,
        "version": 0,
        "team_id": "team-1",
        "agent_id": "agent-1",
        "created_at": None,
        "updated_at": None,
    }


@pytest.mark.parametrize("prefix", PREFIXES)
def test_core_write_then_read_and_count(gateway: Gateway, prefix: str) -> None:
    assert gateway.ok("/v3/core/count", {}) == {"total": 0}
    wrote = gateway.ok(f"{prefix}/core/write", {"content": "  # Persona\nLikes tea.\n\n"})
    assert set(wrote) == {"updated_at", "version", "team_id", "agent_id", "removed_scene_navigation", "content_changed"}
    assert (wrote["version"], wrote["removed_scene_navigation"], wrote["content_changed"]) == (0, False, True)
    got = gateway.ok(f"{prefix}/core/read", {})
    assert got["content"] == "# Persona\nLikes tea."  # trimmed
    assert got["created_at"] == got["updated_at"] == wrote["updated_at"]
    assert gateway.ok("/v3/core/count", {}) == {"total": 1}


def test_core_version_is_md5_gated(gateway: Gateway) -> None:
    write = "/v3/core/write"
    assert gateway.ok(write, {"content": "alpha"})["version"] == 0
    assert gateway.ok(write, {"content": "alpha"})["version"] == 0
    assert gateway.ok(write, {"content": "\n alpha \n"})["version"] == 0  # same after trimming
    assert gateway.ok(write, {"content": "beta"})["version"] == 1
    assert gateway.ok(write, {"content": "gamma"})["version"] == 2
    assert gateway.ok(write, {"content": "alpha"})["version"] == 3
    got = gateway.ok("/v3/core/read", {})
    assert (got["version"], got["content"]) == (3, "alpha")
    assert got["created_at"] <= got["updated_at"]


def test_every_accepted_core_write_moves_updated_at(gateway: Gateway) -> None:
    """An identical write keeps the version (md5-gated) but is not silent: a fresh updated_at, stored and answered."""
    first = gateway.ok("/v3/core/write", {"content": "same text"})
    again = gateway.ok("/v3/core/write", {"content": "same text"})
    assert again["version"] == first["version"] == 0
    assert (first["content_changed"], again["content_changed"]) == (True, False)
    assert again["updated_at"] > first["updated_at"]  # strictly later, even within one millisecond
    got = gateway.ok("/v3/core/read", {})
    assert (got["updated_at"], got["created_at"], got["content"]) == (
        again["updated_at"],
        first["updated_at"],
        "same text",
    )
    third = gateway.ok("/v3/core/write", {"content": "same text"})
    assert third["updated_at"] > again["updated_at"] and third["version"] == 0


def test_every_accepted_scene_write_moves_updated_at(gateway: Gateway) -> None:
    """A scene rewrite with the same text keeps the version but is not silent: a fresh updated_at, stored."""
    created = gateway.ok("/v3/scenario/create", {"path": "same.md", "content": "same text", "summary": "s"})
    first = gateway.ok("/v3/scenario/write", {"path": "same.md", "content": "new text", "summary": "s"})
    again = gateway.ok("/v3/scenario/write", {"path": "same.md", "content": "new text", "summary": "s"})
    assert (created["version"], first["version"], again["version"]) == (0, 1, 1)
    assert (first["content_changed"], again["content_changed"]) == (True, False)
    assert created["updated_at"] < first["updated_at"] < again["updated_at"]  # strictly later, even in one ms
    got = gateway.ok("/v3/scenario/read", {"path": "same.md"})
    assert got["updated_at"] == again["updated_at"] and got["version"] == 1
    assert "new text" in got["content"]


# What an older gateway appended to the persona on core/read (two scenes, hottest first, then its footer).
NAV_BLOCK = (
    f"---\n{NAV_HEADING}\n\n"
    "### Path: topics/hot.md\n**热度**: 120 🔥🔥 | **更新**: 2026-01-01T00:00:00.000Z\nSummary: Hot scene\n\n"
    "### Path: cool.md\n**热度**: 1 | **更新**: 2026-01-01T00:00:00.000Z\nSummary:\n\n"
    "> Read a scene with `scenario/read` (or your read-file tool) using its path when the persona above is not enough."
)


@pytest.mark.parametrize(
    ("content", "stored", "removed"),
    [
        pytest.param("Persona body\n\n" + NAV_BLOCK + "\n", "Persona body", True, id="generated-block"),
        pytest.param(f"Persona body\n\n{NAV_HEADING}\n### Path: a.md\n", "Persona body", True, id="heading-only"),
        pytest.param(
            "Persona body\n\n" + NAV_BLOCK + "\nA line added after reading.\n\n## Habits\nTea at 4.",
            "Persona body\n\nA line added after reading.\n\n## Habits\nTea at 4.",
            True,
            id="text-after-the-block-kept",
        ),
        pytest.param(
            "Persona body\n<scene-navigation>\n### Path: a.md\n</scene-navigation>\nAfter",
            "Persona body\n\nAfter",
            True,
            id="tags",
        ),
        pytest.param("Intro\n\n---\n\nMore persona", "Intro\n\n---\n\nMore persona", False, id="plain-rule-kept"),
        pytest.param(
            "Intro\n\n## Scene Navigation\nHow I find my way around scenes.",
            "Intro\n\n## Scene Navigation\nHow I find my way around scenes.",
            False,
            id="own-heading-kept",
        ),
    ],
)
def test_core_write_removes_only_a_generated_scene_navigation_block(
    gateway: Gateway, content: str, stored: str, removed: bool
) -> None:
    wrote = gateway.ok("/v3/core/write", {"content": content})
    assert wrote["removed_scene_navigation"] is removed
    assert gateway.ok("/v3/core/read", {})["content"] == stored


def test_core_read_is_the_persona_as_stored_and_an_appended_line_survives(gateway: Gateway) -> None:
    """Read → append a line → write → read shows the line, with scenes present (they used to add a section)."""
    gateway.ok("/v3/core/write", {"content": "I am the persona."})
    create(gateway, "cool.md", "c", summary="Cool scene")
    create(gateway, "topics/hot.md", "-----META-START-----\nsummary: Hot scene\nheat: 120\n-----META-END-----\n\nh")
    got = gateway.ok("/v3/core/read", {})
    assert got["content"] == "I am the persona."  # no Scene Navigation: agents list scenes with scenario/ls
    wrote = gateway.ok("/v3/core/write", {"content": got["content"] + "\nLikes green tea."})
    assert (wrote["version"], wrote["removed_scene_navigation"], wrote["content_changed"]) == (1, False, True)
    assert wrote["updated_at"] > got["updated_at"]
    again = gateway.ok("/v3/core/read", {})
    assert again["content"] == "I am the persona.\nLikes green tea."
    assert (again["version"], again["updated_at"]) == (1, wrote["updated_at"])


def test_writing_back_an_older_gateway_s_read_keeps_the_appended_text_and_says_what_went(gateway: Gateway) -> None:
    gateway.ok("/v3/core/write", {"content": "I am the persona."})
    # What an older gateway answered on core/read, with a line the client appended below it.
    wrote = gateway.ok("/v3/core/write", {"content": "I am the persona.\n\n" + NAV_BLOCK + "\nLikes green tea."})
    assert (wrote["removed_scene_navigation"], wrote["content_changed"], wrote["version"]) == (True, True, 1)
    assert gateway.ok("/v3/core/read", {})["content"] == "I am the persona.\n\nLikes green tea."


def test_scenes_without_persona_leave_core_null(gateway: Gateway) -> None:
    create(gateway, "only.md", "scene")
    assert gateway.ok("/v3/core/read", {})["content"] is None
    assert gateway.ok("/v3/core/count", {}) == {"total": 0}


# -- audit ---------------------------------------------------------------------------------
def _request_id(gw: Gateway, path: str, body: dict[str, Any], **kw: Any) -> str:
    response = gw.post(path, body, **kw)
    assert response.json()["code"] == 0, response.json()
    return response.json()["request_id"]


def test_audit_rows_for_l1_l2_l3_changes(gateway: Gateway) -> None:
    who = {**ISO, "task_id": "task-7"}
    memory = gateway.ok("/v3/atomic/add", {"content": "likes green tea", "type": "persona"}, isolation=who)
    assert gateway.store.list_audit(SERVICE) == []  # adding is not audited, changing is

    expected = [
        (_request_id(gateway, "/v3/atomic/update", {"id": memory["id"], "content": "likes oolong"}, isolation=who),
         memory["id"], "L1", "update", 1),
        (_request_id(gateway, "/v3/scenario/create", {"path": "t.md", "content": "one"}, isolation=who),
         "t.md", "L2", "write", 0),
        (_request_id(gateway, "/v3/scenario/write", {"path": "t.md", "content": "two"}, isolation=who),
         "t.md", "L2", "write", 1),
        (_request_id(gateway, "/v3/core/write", {"content": "persona"}, isolation=who),
         "persona.md", "L3", "write", 0),
        (_request_id(gateway, "/v3/scenario/rm", {"path": "t.md"}, isolation=who),
         "t.md", "L2", "rm", 1),
        (_request_id(gateway, "/v3/atomic/delete", {"ids": [memory["id"]]}, isolation=who),
         memory["id"], "L1", "delete", 1),
    ]  # fmt: skip
    # An unchanged persona write is still a write (its updated_at moves): a row with the same version.
    expected.append(
        (_request_id(gateway, "/v3/core/write", {"content": "persona"}, isolation=who), "persona.md", "L3", "write", 0)
    )
    # Deletes of nothing leave no rows.
    _request_id(gateway, "/v3/atomic/delete", {"ids": [memory["id"]]}, isolation=who)

    rows = list(reversed(gateway.store.list_audit(SERVICE)))
    got = [(r["request_id"], r["record_id"], r["layer"], r["action"], r["version"]) for r in rows]
    assert got == expected
    for row in rows:
        assert set(row) == AUDIT_COLUMNS  # ids and versions only, never content
        assert row["audit_id"].startswith("audit-")
        assert len(row["audit_id"]) == len("audit-") + 16
        assert (row["service_id"], row["team_id"], row["agent_id"], row["user_id"], row["task_id"]) == (
            SERVICE,
            "team-1",
            "agent-1",
            "user-1",
            "task-7",
        )
        assert isinstance(row["updated_at_ms"], int)
        assert not any(isinstance(v, str) and ("oolong" in v or v == "persona") for v in row.values())
    assert gateway.store.list_audit("svc-b") == []


def test_directory_rm_audits_every_file(gateway: Gateway) -> None:
    for path in ("d/one.md", "d/two.md", "keep.md"):
        create(gateway, path, "x")
    rid = _request_id(gateway, "/v3/scenario/rm", {"path": "d/"})
    rm_rows = [r for r in gateway.store.list_audit(SERVICE) if r["action"] == "rm"]
    assert sorted(r["record_id"] for r in rm_rows) == ["d/one.md", "d/two.md"]
    assert {r["request_id"] for r in rm_rows} == {rid}


def test_profile_without_team_belongs_to_the_user(gateway: Gateway) -> None:
    """As in the original (`team:{team||user||default}`), users who send no team share no persona; with a team
    they share none either (a profile is one user's), and a user's team-less and team profiles are apart."""
    alice = {"agent_id": "agent-1", "user_id": "alice"}
    bob = {"agent_id": "agent-1", "user_id": "bob"}
    gateway.ok("/v3/core/write", {"content": "Alice likes tea"}, isolation=alice)
    assert gateway.ok("/v3/core/read", isolation=bob)["content"] is None
    assert gateway.ok("/v3/core/read", isolation=alice)["content"] == "Alice likes tea"
    gateway.ok("/v3/scenario/create", {"path": "a.md", "content": "x"}, isolation=alice)
    assert gateway.ok("/v3/scenario/count", isolation=bob)["total"] == 0
    team = {"team_id": "t-9", "agent_id": "agent-1"}
    gateway.ok("/v3/core/write", {"content": "Alice in t-9"}, isolation={**team, "user_id": "alice"})
    assert gateway.ok("/v3/core/read", isolation={**team, "user_id": "bob"})["content"] is None
    assert gateway.ok("/v3/core/read", isolation={**team, "user_id": "alice"})["content"] == "Alice in t-9"
    assert gateway.ok("/v3/core/read", isolation=alice)["content"].startswith("Alice likes tea")
