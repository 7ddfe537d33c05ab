"""Helpers for the skill route tests: SKILL.md documents and calls through the real app."""

from __future__ import annotations

import base64
from typing import Any

from memhub.knowledge.skill.service import SkillService
from tests.conftest import Gateway

IDS = {"team_id": "team-1", "agent_id": "agent-1", "user_id": "user-1"}
SUMMARY_KEYS = {
    "skill_id",
    "name",
    "description",
    "version",
    "is_head",
    "status",
    "owner_user_id",
    "owner_agent_id",
    "team_id",
    "task_id",
    "created_at_ms",
    "updated_at_ms",
}


def skill_md(name: str = "deploy-app", description: str = "Deploy the app", body: str = "# Steps\nrun it\n") -> str:
    """A valid SKILL.md."""
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def text_file(path: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"path": path, "content": content, "encoding": "utf-8", **extra}


def binary_file(path: str, data: bytes, **extra: Any) -> dict[str, Any]:
    return {"path": path, "content": base64.b64encode(data).decode(), "encoding": "base64", **extra}


def service(gw: Gateway) -> SkillService:
    """The app's skill service (to move its clock or fix its ids; everything else goes through HTTP)."""
    return gw.client.app.state.hub.skills  # type: ignore[attr-defined]


def create(gw: Gateway, name: str = "deploy-app", ids: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    """POST /v3/skill/create and return the summary."""
    payload = {"name": name, "content": body.pop("content", skill_md(name)), **body}
    return gw.ok("/v3/skill/create", payload, isolation=IDS if ids is None else ids)


def call(gw: Gateway, route: str, body: dict[str, Any], ids: dict[str, str] | None = None) -> Any:
    """POST /v3/skill/<route> with the test ids; returns `data` of a success."""
    return gw.ok(f"/v3/skill/{route}", body, isolation=IDS if ids is None else ids)


def fails(gw: Gateway, route: str, body: dict[str, Any], code: int, ids: dict[str, str] | None = None) -> Any:
    """POST /v3/skill/<route> and assert the business code (HTTP 200); returns the envelope."""
    return gw.fails(f"/v3/skill/{route}", body, code, isolation=IDS if ids is None else ids)
