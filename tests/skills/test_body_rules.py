"""Every body rule of the skill routes: 40001 with HTTP 200, the field and the rule named, nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Gateway
from tests.skills.helpers import call, skill_md, text_file

SID = "skl-000000000000"
MD = skill_md()
WRITE = {"skill_id": SID, "expected_version": 1}
AGENT_NEEDS_TEAM = "agent_id: agent_id requires team_id — agent is scoped under a team"

CASES: list[tuple[str, dict[str, Any], str]] = [
    # The isolation rule, on every route that takes the ids.
    ("create", {"agent_id": "a1", "name": "a1", "content": MD}, AGENT_NEEDS_TEAM),
    ("update", {"agent_id": "a1", **WRITE, "content": MD}, AGENT_NEEDS_TEAM),
    ("patch", {"agent_id": "a1", **WRITE, "old_string": "a", "new_string": "b"}, AGENT_NEEDS_TEAM),
    ("delete", {"agent_id": "a1", **WRITE}, AGENT_NEEDS_TEAM),
    ("publish", {"agent_id": "a1", **WRITE}, AGENT_NEEDS_TEAM),
    ("get", {"agent_id": "a1", "skill_id": SID}, AGENT_NEEDS_TEAM),
    ("list", {"agent_id": "a1"}, AGENT_NEEDS_TEAM),
    ("versions", {"agent_id": "a1", "skill_id": SID}, AGENT_NEEDS_TEAM),
    ("files/write", {"agent_id": "a1", **WRITE, "files": [text_file("a", "")]}, AGENT_NEEDS_TEAM),
    ("files/remove", {"agent_id": "a1", **WRITE, "paths": ["a"]}, AGENT_NEEDS_TEAM),
    ("files/read", {"agent_id": "a1", "skill_id": SID, "path": "a"}, AGENT_NEEDS_TEAM),
    ("export", {"agent_id": "a1", "skill_id": SID}, AGENT_NEEDS_TEAM),
    # Ids.
    ("list", {"team_id": ""}, "team_id: must not be empty"),
    ("list", {"user_id": 5}, "user_id: must be a string"),
    ("list", {"task_id": "t\n1"}, "task_id: must not contain control characters"),
    ("list", {"team_id": "t" * 257}, "team_id: must be at most 256 characters"),
    # create
    ("create", {"content": MD}, "name: is required"),
    ("create", {"name": "", "content": MD}, "name: must not be empty"),
    ("create", {"name": "a" * 65, "content": MD}, "name: must be at most 64 characters"),
    ("create", {"name": "a1", "content": ""}, "content: must not be empty"),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [text_file("a", "")] * 101},
        "resources: must contain at most 100 items",
    ),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [{"path": "a", "content": ""}]},
        "resources[0].encoding: is required",
    ),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [text_file("a", "", encoding="utf8")]},
        "resources[0].encoding: must be one of 'utf-8' or 'base64'",
    ),
    ("create", {"name": "a1", "content": MD, "resources": [text_file("", "")]}, "resources[0].path: must not be empty"),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [text_file("p" * 513, "")]},
        "resources[0].path: must be at most 512 characters",
    ),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [text_file("a", "", mime_type="m" * 129)]},
        "resources[0].mime_type: must be at most 128 characters",
    ),
    (
        "create",
        {"name": "a1", "content": MD, "resources": [text_file("a", "", is_executable="yes")]},
        "resources[0].is_executable: must be a boolean",
    ),
    ("create", {"name": "a1", "content": MD, "metadata": []}, "metadata: must be an object"),
    # update / patch / delete / publish
    ("update", {"skill_id": SID, "content": MD}, "expected_version: is required"),
    ("update", {**WRITE, "expected_version": 0, "content": MD}, "expected_version: must be >= 1"),
    ("update", {**WRITE, "expected_version": 1.5, "content": MD}, "expected_version: must be an integer"),
    ("update", {**WRITE, "expected_version": "1", "content": MD}, "expected_version: must be an integer"),
    ("update", {"expected_version": 1, "content": MD}, "skill_id: is required"),
    ("update", {**WRITE, "skill_id": "", "content": MD}, "skill_id: must not be empty"),
    ("update", {**WRITE}, "content: is required"),
    ("patch", {**WRITE, "old_string": "", "new_string": "b"}, "old_string: must not be empty"),
    ("patch", {**WRITE, "old_string": "a"}, "new_string: is required"),
    ("patch", {**WRITE, "old_string": "a", "new_string": "b", "replace_all": 1}, "replace_all: must be a boolean"),
    ("delete", {"skill_id": SID}, "expected_version: is required"),
    ("publish", {"skill_id": SID, "expected_version": -1}, "expected_version: must be >= 1"),
    # get / get-by-name / list / versions
    ("get", {}, "skill_id: is required"),
    ("get", {"skill_id": SID, "version": 0}, "version: must be >= 1"),
    ("get", {"skill_id": SID, "include_content": "no"}, "include_content: must be a boolean"),
    ("get-by-name", {"team_id": "t1", "skill_name": "a"}, "agent_id: is required"),
    ("get-by-name", {"agent_id": "a1", "skill_name": "a"}, "team_id: is required"),
    (
        "get-by-name",
        {"team_id": "t1", "agent_id": "a1", "skill_name": "a" * 65},
        "skill_name: must be at most 64 characters",
    ),
    (
        "list",
        {"filters": {"status": ["deleted"]}},
        "filters.status[0]: must be one of 'active', 'archived' or 'candidate'",
    ),
    ("list", {"filters": {"name_prefix": ""}}, "filters.name_prefix: must not be empty"),
    ("list", {"filters": {"owner_agent_id": ""}}, "filters.owner_agent_id: must not be empty"),
    ("list", {"pagination": {"limit": 1001}}, "pagination.limit: must be <= 1000"),
    ("list", {"pagination": {"limit": 0}}, "pagination.limit: must be >= 1"),
    ("list", {"pagination": {"offset": -1}}, "pagination.offset: must be >= 0"),
    ("versions", {"skill_id": SID, "pagination": {"limit": 1001}}, "pagination.limit: must be <= 1000"),
    # files
    ("files/write", {**WRITE, "files": []}, "files: must contain at least 1 items"),
    ("files/write", {**WRITE, "files": [text_file("a", "")] * 101}, "files: must contain at most 100 items"),
    ("files/write", {**WRITE}, "files: is required"),
    ("files/remove", {**WRITE, "paths": []}, "paths: must contain at least 1 items"),
    ("files/remove", {**WRITE, "paths": [""]}, "paths[0]: must not be empty"),
    ("files/remove", {**WRITE, "paths": ["a"] * 101}, "paths: must contain at most 100 items"),
    ("files/read", {"skill_id": SID}, "path: is required"),
    (
        "files/read",
        {"skill_id": SID, "path": "a", "encoding": "latin-1"},
        "encoding: must be one of 'utf-8' or 'base64'",
    ),
    ("export", {"skill_id": SID, "format": "tar"}, "format: must be one of 'zip'"),
]


@pytest.mark.parametrize(("route", "body", "message"), CASES)
def test_body_rules(gw: Gateway, route: str, body: dict[str, Any], message: str) -> None:
    envelope = gw.fails(f"/v3/skill/{route}", body, 40001, isolation={})
    assert envelope["message"] == message, envelope
    field, rule = message.split(": ", 1)
    assert {"field": field, "rule": rule} in envelope["data"]["errors"]
    assert call(gw, "list", {}, {})["total"] == 0
