"""The skill write and read routes through the real app: shapes, versions, CAS, files, export, publish."""

from __future__ import annotations

import base64
import io
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.skills.helpers import (
    IDS,
    SUMMARY_KEYS,
    binary_file,
    call,
    create,
    fails,
    service,
    skill_md,
    text_file,
)

DAY_MS = 86_400_000


def test_create_answers_the_summary_and_get_the_detail(gw: Gateway) -> None:
    made = create(gw, resources=[text_file("run.sh", "echo hi\n", is_executable=True)], metadata={"origin": "t"})
    assert set(made) == SUMMARY_KEYS | {"metadata"}
    assert made["skill_id"].startswith("skl-") and len(made["skill_id"]) == 16
    assert (made["name"], made["description"], made["version"], made["is_head"], made["status"]) == (
        "deploy-app",
        "Deploy the app",
        1,
        True,
        "active",
    )
    assert (made["owner_user_id"], made["owner_agent_id"], made["team_id"], made["task_id"]) == (
        "user-1",
        "agent-1",
        "team-1",
        None,
    )
    assert made["metadata"] == {"origin": "t"}
    got = call(gw, "get", {"skill_id": made["skill_id"]})
    assert got["content"] == skill_md() and len(got["content_hash"]) == 32
    assert got["manifest"] == [
        {"path": "run.sh", "size_bytes": 8, "mime_type": "text/x-shellscript", "is_executable": True}
    ]
    slim = call(gw, "get", {"skill_id": made["skill_id"], "include_content": False, "include_manifest": False})
    assert "content" not in slim and "manifest" not in slim and "content_hash" in slim


def test_ids_come_from_the_body_not_the_headers(gw: Gateway) -> None:
    headers = {"x-tdai-team-id": "team-h", "x-tdai-agent-id": "agent-h", "x-tdai-user-id": "user-h"}
    made = gw.ok("/v3/skill/create", {"name": "a1", "content": skill_md("a1")}, isolation={}, headers=headers)
    assert (made["team_id"], made["owner_agent_id"], made["owner_user_id"]) == (None, "default", None)


def test_create_refusals(gw: Gateway) -> None:
    create(gw)
    envelope = fails(gw, "create", {"name": "other", "content": skill_md("deploy-app")}, 40001)
    assert envelope["message"] == "INVALID_FRONTMATTER: front matter name 'deploy-app' != name 'other'"
    envelope = fails(gw, "create", {"name": "x1", "content": "no front matter"}, 42203)
    assert envelope["message"].startswith("SKILL_FRONTMATTER_INVALID: content: must start with")
    envelope = fails(gw, "create", {"name": "deploy-app", "content": skill_md()}, 42201)
    assert envelope["message"].startswith("SKILL_NAME_DUPLICATE: skill 'deploy-app' already exists for agent agent-1")
    # The same name is free for another agent of the team.
    assert create(gw, ids={**IDS, "agent_id": "agent-2"})["version"] == 1
    bad = fails(gw, "create", {"name": "x2", "content": skill_md("x2"), "resources": [text_file("../x", "")]}, 40001)
    assert bad["message"] == "INVALID_PATH: resources[0].path: must not contain a '..' segment"
    assert call(gw, "list", {})["total"] == 1  # nothing else was written


def test_update_appends_a_version_and_refuses_stale_and_renames(gw: Gateway) -> None:
    sid = create(gw)["skill_id"]
    new = skill_md(description="Deploy it better")
    updated = call(gw, "update", {"skill_id": sid, "expected_version": 1, "content": new})
    assert (updated["version"], updated["description"], updated["changed"]) == (2, "Deploy it better", True)
    stale = fails(gw, "update", {"skill_id": sid, "expected_version": 1, "content": skill_md()}, 40901)
    assert stale["message"] == "SKILL_VERSION_STALE: expected version 1, head is 2"
    assert stale["data"] == {"current_version": 2}
    renamed = fails(gw, "update", {"skill_id": sid, "expected_version": 2, "content": skill_md("other")}, 40001)
    assert renamed["message"] == "INVALID_FRONTMATTER: name change is not allowed across versions"
    fails(gw, "update", {"skill_id": sid, "expected_version": 2, "content": "---\nname: x\n"}, 42203)
    fails(gw, "update", {"skill_id": "skl-000000000000", "expected_version": 1, "content": new}, 40401)
    assert call(gw, "versions", {"skill_id": sid})["total"] == 2


def test_a_write_that_changes_nothing_says_so_and_appends_nothing(gw: Gateway) -> None:
    sid = create(gw, resources=[text_file("a.txt", "one")])["skill_id"]
    same = call(gw, "update", {"skill_id": sid, "expected_version": 1, "content": skill_md()})
    assert (same["version"], same["changed"]) == (1, False)
    same = call(gw, "files/write", {"skill_id": sid, "expected_version": 1, "files": [text_file("a.txt", "one")]})
    assert (same["version"], same["changed"]) == (1, False)
    same = call(gw, "patch", {"skill_id": sid, "expected_version": 1, "old_string": "run it", "new_string": "run it"})
    assert (same["version"], same["changed"]) == (1, False)
    assert call(gw, "versions", {"skill_id": sid})["total"] == 1


def test_patch(gw: Gateway) -> None:
    sid = create(gw, content=skill_md(body="step one\nstep two\n"))["skill_id"]
    head = {"skill_id": sid, "expected_version": 1}
    missing = fails(gw, "patch", {**head, "old_string": "nope", "new_string": ""}, 42202)
    assert missing["message"] == "SKILL_PATCH_NOT_UNIQUE: old_string not found"
    twice = fails(gw, "patch", {**head, "old_string": "step", "new_string": "s"}, 42202)
    assert twice["message"] == "SKILL_PATCH_NOT_UNIQUE: old_string occurs 2 times; pass replace_all=true to replace all"
    body = {"skill_id": sid, "expected_version": 1, "old_string": "step", "new_string": "stage", "replace_all": True}
    assert call(gw, "patch", body)["version"] == 2
    assert call(gw, "get", {"skill_id": sid})["content"].endswith("stage one\nstage two\n")
    rename = {"skill_id": sid, "expected_version": 2, "old_string": "name: deploy-app", "new_string": "name: other"}
    assert fails(gw, "patch", rename, 40001)["message"] == "INVALID_FRONTMATTER: patch attempted to rename skill"
    broken = {"skill_id": sid, "expected_version": 2, "old_string": "name: deploy-app\n", "new_string": ""}
    fails(gw, "patch", broken, 42203)
    assert fails(gw, "patch", {**body, "expected_version": 1}, 40901)["data"] == {"current_version": 2}


def test_owner_agent_and_team_rules_of_the_gateway_key(gw: Gateway) -> None:
    sid = create(gw)["skill_id"]
    other_agent = {**IDS, "agent_id": "agent-2"}
    envelope = fails(gw, "update", {"skill_id": sid, "expected_version": 1, "content": skill_md()}, 40301, other_agent)
    assert envelope["message"] == "SKILL_NOT_OWNER: agent agent-2 is not the owner (owner=agent-1)"
    fails(gw, "delete", {"skill_id": sid, "expected_version": 1}, 40301, other_agent)
    other_team = {"team_id": "team-2"}
    fails(gw, "get", {"skill_id": sid}, 40401, other_team)
    fails(gw, "delete", {"skill_id": sid, "expected_version": 1}, 40401, other_team)
    # Without ids the gateway key acts for the whole tenant, as the original.
    assert call(gw, "get", {"skill_id": sid}, {})["version"] == 1


def test_delete_removes_every_version(gw: Gateway) -> None:
    sid = create(gw)["skill_id"]
    call(gw, "update", {"skill_id": sid, "expected_version": 1, "content": skill_md(description="v2")})
    assert fails(gw, "delete", {"skill_id": sid, "expected_version": 1}, 40901)["data"] == {"current_version": 2}
    assert call(gw, "delete", {"skill_id": sid, "expected_version": 2}) == {"skill_id": sid, "archived": True}
    fails(gw, "get", {"skill_id": sid}, 40401)
    assert fails(gw, "versions", {"skill_id": sid}, 40401)["message"] == "SKILL_NOT_FOUND: skill not found"
    fails(gw, "delete", {"skill_id": sid, "expected_version": 2}, 40401)
    assert create(gw)["version"] == 1  # the name is free again


def test_get_by_name(gw: Gateway) -> None:
    sid = create(gw)["skill_id"]
    create(gw, "deploy-app-extra")
    got = call(gw, "get-by-name", {"skill_name": "deploy-app"})
    assert (got["skill_id"], got["content"]) == (sid, skill_md())
    missing = fails(gw, "get-by-name", {"skill_name": "deploy"}, 40401)
    assert missing["message"] == 'SKILL_NOT_FOUND: no skill named "deploy" for agent agent-1'
    fails(gw, "get-by-name", {"skill_name": "deploy-app"}, 40001, {"team_id": "team-1"})


def test_list_filters_and_pages(gw: Gateway) -> None:
    for name in ("alpha-one", "alpha-two", "beta"):
        create(gw, name)
    create(gw, "gamma", ids={**IDS, "agent_id": "agent-2"})
    create(gw, "delta", ids={"team_id": "team-2", "agent_id": "agent-1"})
    assert call(gw, "list", {})["total"] == 3  # the request's agent
    assert call(gw, "list", {}, {"team_id": "team-1"})["total"] == 4
    assert call(gw, "list", {}, {})["total"] == 5
    named = call(gw, "list", {"filters": {"name_prefix": "alpha"}})
    assert sorted(i["name"] for i in named["items"]) == ["alpha-one", "alpha-two"]
    owned = call(gw, "list", {"filters": {"owner_agent_id": "agent-2"}}, {"team_id": "team-1"})
    assert [i["name"] for i in owned["items"]] == ["gamma"]
    page = call(gw, "list", {"pagination": {"limit": 2, "offset": 2}})
    assert (len(page["items"]), page["total"]) == (1, 3)
    assert all(set(i) == SUMMARY_KEYS for i in page["items"])


def test_versions_and_the_version_ttl(gw: Gateway) -> None:
    svc = service(gw)
    svc.config = type(svc.config)(version_ttl_days=1)
    now = [1_800_000_000_000]
    svc.clock = lambda: now[0]
    sid = create(gw)["skill_id"]
    now[0] += DAY_MS // 2
    call(gw, "update", {"skill_id": sid, "expected_version": 1, "content": skill_md(description="v2")})
    assert call(gw, "get", {"skill_id": sid, "version": 1})["description"] == "Deploy the app"
    now[0] += DAY_MS // 2 + 1  # version 1 is now older than a day, version 2 is not
    expired = fails(gw, "get", {"skill_id": sid, "version": 1}, 41002)
    assert expired["data"] == {"latest_version": 2}
    assert "version v1 has expired" in expired["message"] and "latest version v2" in expired["message"]
    fails(gw, "files/read", {"skill_id": sid, "version": 1, "path": "x"}, 41002)
    fails(gw, "export", {"skill_id": sid, "version": 1}, 41002)
    items = call(gw, "versions", {"skill_id": sid})["items"]
    assert [(i["version"], i["is_head"], i["is_expired"]) for i in items] == [(2, True, False), (1, False, True)]
    # The next write purges what expired.
    call(gw, "update", {"skill_id": sid, "expected_version": 2, "content": skill_md(description="v3")})
    assert [i["version"] for i in call(gw, "versions", {"skill_id": sid})["items"]] == [3, 2]
    fails(gw, "get", {"skill_id": sid, "version": 1}, 40401)
    fails(gw, "get", {"skill_id": sid, "version": 9}, 40401)


def test_files_write_remove_read(gw: Gateway) -> None:
    sid = create(gw, resources=[text_file("a.txt", "one")])["skill_id"]
    raw = bytes(range(256))
    files = [text_file("a.txt", "uno"), binary_file("bin/data.bin", raw, mime_type="application/x-test")]
    assert call(gw, "files/write", {"skill_id": sid, "expected_version": 1, "files": files})["version"] == 2
    manifest = call(gw, "get", {"skill_id": sid})["manifest"]
    assert [(m["path"], m["size_bytes"], m["mime_type"]) for m in manifest] == [
        ("a.txt", 3, "text/plain"),
        ("bin/data.bin", 256, "application/x-test"),
    ]
    text = call(gw, "files/read", {"skill_id": sid, "path": "a.txt"})
    assert text == {
        "path": "a.txt",
        "content": "uno",
        "encoding": "utf-8",
        "size_bytes": 3,
        "mime_type": "text/plain",
        "version": 2,
    }
    assert call(gw, "files/read", {"skill_id": sid, "path": "a.txt", "version": 1})["content"] == "one"
    read = call(gw, "files/read", {"skill_id": sid, "path": "bin/data.bin", "encoding": "base64"})
    assert base64.b64decode(read["content"]) == raw
    not_text = fails(gw, "files/read", {"skill_id": sid, "path": "bin/data.bin"}, 40001)
    assert not_text["message"] == "encoding: the file is not UTF-8 text; read it with encoding base64"
    gone = fails(gw, "files/read", {"skill_id": sid, "path": "nope.txt"}, 40401)
    assert gone["message"] == "SKILL_NOT_FOUND: path nope.txt not in manifest of v2"
    fails(gw, "files/read", {"skill_id": sid, "path": "bin/data.bin", "version": 1}, 40401)
    assert fails(gw, "files/read", {"skill_id": sid, "path": "a.txt", "version": 7}, 50301)["message"].startswith(
        "STORAGE_NOT_FOUND: version 7 not found"
    )
    fails(gw, "files/read", {"skill_id": sid, "path": "/etc/passwd"}, 40001)
    missing = fails(gw, "files/remove", {"skill_id": sid, "expected_version": 2, "paths": ["a.txt", "zz"]}, 40401)
    assert missing["message"] == "SKILL_NOT_FOUND: paths[1]: zz is not a file of version 2"
    fails(gw, "files/remove", {"skill_id": sid, "expected_version": 1, "paths": ["a.txt"]}, 40901)
    removed = call(gw, "files/remove", {"skill_id": sid, "expected_version": 2, "paths": ["a.txt"]})
    assert removed["version"] == 3
    assert [m["path"] for m in call(gw, "get", {"skill_id": sid})["manifest"]] == ["bin/data.bin"]
    # An old version keeps its files.
    assert call(gw, "files/read", {"skill_id": sid, "path": "a.txt", "version": 2})["content"] == "uno"


@pytest.mark.parametrize(
    ("files", "code", "message"),
    [
        ([text_file("a\\b", "")], 40001, "INVALID_PATH: files[0].path: must not contain a backslash (use '/')"),
        ([text_file("a\x00b", "")], 40001, "INVALID_PATH: files[0].path: must not contain NUL"),
        ([text_file("/abs", "")], 40001, "INVALID_PATH: files[0].path: must be relative"),
        ([{"path": "b", "content": "###", "encoding": "base64"}], 40001, "files[0].content: must be valid base64"),
        ([text_file("a", "1"), text_file("a", "2")], 40001, "files[1].path: is the same path as files[0].path"),
        ([text_file("big", "x" * 101)], 41301, "RESOURCE_TOO_LARGE: files[0] (big) is 101 bytes"),
        ([text_file("b1", "x" * 100), text_file("b2", "x" * 100)], 41301, "RESOURCE_TOO_LARGE: the skill's files"),
    ],
)
def test_file_refusals_write_nothing(
    make_gateway: Callable[..., Gateway], files: list[dict[str, Any]], code: int, message: str
) -> None:
    gw = make_gateway("limits", pipeline_enabled=False, skill_max_resource_bytes=100, skill_max_total_bytes=150)
    sid = create(gw)["skill_id"]
    envelope = fails(gw, "files/write", {"skill_id": sid, "expected_version": 1, "files": files}, code)
    assert envelope["message"].startswith(message), envelope
    assert call(gw, "versions", {"skill_id": sid})["total"] == 1


PATH_REFUSALS: list[tuple[list[dict[str, Any]], str]] = [
    ([text_file("SKILL.md", "x")], "INVALID_PATH: files[0].path: must not be SKILL.md in any case"),
    ([text_file("skill.md", "x")], "INVALID_PATH: files[0].path: must not be SKILL.md in any case"),
    ([text_file("a.txt", ""), text_file("Skill.MD", "x")], "INVALID_PATH: files[1].path: must not be SKILL.md"),
    ([text_file("notes\u202egpj.sh", "")], "INVALID_PATH: files[0].path: must not contain invisible formatting"),
    ([text_file("a\u200bb.txt", "")], "INVALID_PATH: files[0].path: must not contain invisible formatting"),
    ([text_file("\ufeffx.txt", "")], "INVALID_PATH: files[0].path: must not contain invisible formatting"),
    ([text_file("a\u2066b\u2069.txt", "")], "INVALID_PATH: files[0].path: must not contain invisible formatting"),
    (
        [text_file("a\u200db", "")],
        "INVALID_PATH: files[0].path: must not contain invisible formatting characters (bidi "
        "controls, zero-width characters), found U+200D",
    ),
    (
        [text_file("a.txt", ""), text_file("A.TXT", "")],
        "files[1].path: differs only in case or normalisation from files[0]",
    ),
    ([text_file("caf\u00e9.txt", ""), text_file("cafe\u0301.txt", "")], "files[1].path: differs only in case"),
    (
        [text_file("RUN.sh", "echo")],
        "files[0].path: differs only in case or normalisation from the skill's file run.sh",
    ),
]


def test_path_rules_refuse_a_second_skill_md_invisible_characters_and_case_twins(gw: Gateway) -> None:
    sid = create(gw, resources=[text_file("run.sh", "echo hi\n")])["skill_id"]
    for files, message in PATH_REFUSALS:
        envelope = fails(gw, "files/write", {"skill_id": sid, "expected_version": 1, "files": files}, 40001)
        assert envelope["message"].startswith(message), (files, envelope)
    assert call(gw, "versions", {"skill_id": sid})["total"] == 1  # nothing written by any of them
    refused = fails(
        gw, "create", {"name": "other", "content": skill_md("other"), "resources": [text_file("SKILL.md", "")]}, 40001
    )
    assert refused["message"].startswith("INVALID_PATH: resources[0].path: must not be SKILL.md")
    assert call(gw, "list", {})["total"] == 1
    # A SKILL.md deeper down is only a file, and replacing a file by its own path is no twin.
    nested = [text_file("docs/SKILL.md", "more"), text_file("run.sh", "echo bye\n")]
    assert call(gw, "files/write", {"skill_id": sid, "expected_version": 1, "files": nested})["version"] == 2


def test_export_zips_the_version_with_modes(gw: Gateway) -> None:
    files = [text_file("run.sh", "echo hi\n", is_executable=True), binary_file("data/x.bin", b"\x00\x01")]
    sid = create(gw, resources=files)["skill_id"]
    out = call(gw, "export", {"skill_id": sid, "format": "zip"})
    assert {k: out[k] for k in ("filename", "name", "version", "file_count", "warnings")} == {
        "filename": "deploy-app.zip",
        "name": "deploy-app",
        "version": 1,
        "file_count": 2,
        "warnings": [],
    }
    data = base64.b64decode(out["zip_base64"])
    assert out["total_bytes"] == len(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["deploy-app/SKILL.md", "deploy-app/data/x.bin", "deploy-app/run.sh"]
        assert archive.read("deploy-app/SKILL.md").decode() == skill_md()
        assert archive.read("deploy-app/data/x.bin") == b"\x00\x01"
        assert (archive.getinfo("deploy-app/run.sh").external_attr >> 16) & 0o777 == 0o755
        assert (archive.getinfo("deploy-app/data/x.bin").external_attr >> 16) & 0o777 == 0o644
    # One version exports to the same bytes every time.
    assert call(gw, "export", {"skill_id": sid})["zip_base64"] == out["zip_base64"]


def test_export_too_large(make_gateway: Callable[..., Gateway]) -> None:
    gw = make_gateway("export", pipeline_enabled=False, skill_max_total_bytes=300)
    sid = create(gw, resources=[binary_file("noise.bin", bytes(range(256))[:250])])["skill_id"]
    envelope = fails(gw, "export", {"skill_id": sid}, 41301)
    assert envelope["message"].startswith("SKILL_EXPORT_TOO_LARGE: exported zip ")


def test_publish_a_candidate(gw: Gateway) -> None:
    from memhub.knowledge.skill.access import SkillIds
    from memhub.meta.caller import Caller

    draft = service(gw).create(
        Caller("svc-a"), SkillIds("team-1", "agent-1"), "mined", skill_md("mined"), status="candidate"
    )
    sid = draft["skill_id"]
    assert draft["status"] == "candidate"
    assert call(gw, "list", {})["total"] == 0  # never listed to agents before it is published
    assert [i["skill_id"] for i in call(gw, "list", {"filters": {"status": ["candidate"]}})["items"]] == [sid]
    fails(gw, "publish", {"skill_id": sid, "expected_version": 2}, 40901)
    published = call(gw, "publish", {"skill_id": sid, "expected_version": 1})
    assert (published["status"], published["version"], published["changed"]) == ("active", 1, True)
    again = call(gw, "publish", {"skill_id": sid, "expected_version": 1})
    assert (again["status"], again["changed"]) == ("active", False)
    assert call(gw, "list", {})["total"] == 1


def test_id_collision_after_three_tries(gw: Gateway) -> None:
    service(gw).new_id = lambda: "skl-AAAAAAAAAAAA"
    assert create(gw)["skill_id"] == "skl-AAAAAAAAAAAA"
    envelope = fails(gw, "create", {"name": "b1", "content": skill_md("b1")}, 50304)
    assert envelope["message"] == "SKILL_ID_COLLISION: failed to generate a unique skill_id after 3 attempts"


def test_large_files_pass_the_skill_body_limit(gw: Gateway) -> None:
    big = binary_file("big.bin", b"\x07" * 2_000_000)  # 2.7 MB of JSON: over the data plane's 1 MiB
    sid = create(gw, resources=[big])["skill_id"]
    assert call(gw, "get", {"skill_id": sid})["manifest"][0]["size_bytes"] == 2_000_000
    response = gw.post("/v3/skill/update", {"skill_id": sid, "expected_version": 1, "content": "x" * 2_000_000})
    assert response.status_code == 413


def test_auth_stays_401(gw: Gateway) -> None:
    response = gw.client.post("/v3/skill/list", json={}, headers={"x-tdai-service-id": "svc-a"})
    assert response.status_code == 401
