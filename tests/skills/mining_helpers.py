"""Shared helpers of the skill mining tests: the routes, what the store holds, tool-call messages."""

from __future__ import annotations

from typing import Any

from memhub.model.pipeline import Job
from memhub.model.skills import Archive, SessionKey
from tests.conftest import SERVICE, Gateway

IDS = {"team_id": "team-m", "agent_id": "agent-m", "user_id": "user-m"}
ADD = "/v3/skill/conversation/add"
FORCE = "/v3/skill/conversation/force-archive"
EXTRACT = "/v3/skill/extract"
JOB_STATES = ("pending", "running", "done", "dead")


def call(i: int, content: str = '{"command": "ls"}', tool: str = "bash") -> dict[str, Any]:
    return {"role": "tool_call", "content": content, "tool_name": tool, "tool_call_id": f"c{i}"}


def result(i: int, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool_result", "content": content, "tool_call_id": f"c{i}"}


def key(session: str = "s1") -> SessionKey:
    return SessionKey(SERVICE, IDS["team_id"], IDS["agent_id"], IDS["user_id"], session)


def add(gw: Gateway, messages: list[dict[str, Any]], session: str = "s1", **extra: Any) -> dict[str, Any]:
    """POST conversation/add; returns `data` of a success envelope."""
    return gw.ok(ADD, {"session_id": session, "messages": messages, **extra}, isolation=IDS)


def force(gw: Gateway, session: str = "s1", **extra: Any) -> dict[str, Any]:
    return gw.ok(FORCE, {"session_id": session, **extra}, isolation=IDS)


def archives(gw: Gateway) -> list[Archive]:
    """The agent's archives, newest first."""
    return gw.store.skills.recent_archives(SERVICE, IDS["team_id"], IDS["agent_id"], 100)


def jobs(gw: Gateway, *states: str) -> list[Job]:
    return gw.store.pipeline.jobs(SERVICE, list(states or JOB_STATES), 100)


def candidates(gw: Gateway) -> list[dict[str, Any]]:
    """The agent's candidate skills, through the list route."""
    body = {**IDS, "filters": {"status": ["candidate"]}}
    return gw.ok("/v3/skill/list", body, isolation={})["items"]


def active(gw: Gateway) -> list[dict[str, Any]]:
    return gw.ok("/v3/skill/list", dict(IDS), isolation={})["items"]
