"""Test helpers: a live HTTP server for a gateway, and a replica of the Python SDK's MetadataClient.

`MetadataClient` builds exactly the request bodies of the TencentDB Agent Memory Python SDK
(`tencentdb_agent_memory/v3/metadata_client.py`, digest §6): 54 `/v3/meta/*` methods and 5
`/v3/knowledge/*` methods, all POST, None-stripped where the SDK strips (`_body`), fixed bodies
passed as built. It sends Bearer + `x-tdai-service-id` + `x-tdai-user-key` and returns the
envelope's `data`, raising `TDAMError` when `code` ≠ 0 — as the SDK's transport does.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from tests.conftest import Gateway


# -- a live server -----------------------------------------------------------------------------
@contextmanager
def serve(gw: Gateway) -> Iterator[Gateway]:
    """The gateway's app on a real socket (uvicorn in a thread); yields the gateway talking HTTP to it.

    The yielded Gateway shares the store; its `client` is an `httpx.Client` with a base URL, so
    Org, table_snapshot and the tests work unchanged, over a real TCP connection.
    """
    app = gw.client.app
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        assert thread.is_alive(), "server thread died"
        time.sleep(0.005)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        yield dataclasses.replace(gw, client=client)  # type: ignore[arg-type]
    finally:
        client.close()
        server.should_exit = True
        thread.join(10)
        sock.close()


# -- the SDK's errors ----------------------------------------------------------------------------
class ParamError(Exception):
    """A request the SDK refuses to send."""


class TDAMError(Exception):
    """An error envelope (code ≠ 0) or an HTTP error, as the SDK raises it."""

    def __init__(self, code: int, message: str, request_id: str = "", details: Any = None) -> None:
        super().__init__(f"<TDAMError: (code={code}, message={message}, request_id={request_id})>")
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = details


def _strip_none(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def _body(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ParamError("request payload must be a dict")
    return _strip_none(payload)


def _require_any(payload: Mapping[str, Any], fields: tuple[str, ...], op: str) -> None:
    if not any(isinstance(payload.get(f), str) and payload[f].strip() for f in fields):
        raise ParamError(f"{op} requires one of {', '.join(fields)}")


def _paged(key: str, value: str, pagination: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return _body({key: value, **extra, **dict(pagination or {})})


class MetadataClient:
    """The SDK's MetadataClient over any client with `.post(path, json=, headers=)`.

    `sent` records every (path, body) exactly as posted, so tests can assert the request shapes.
    """

    def __init__(self, http: Any, api_key: str, service_id: str | None, *, user_key: str | None = None) -> None:
        if not service_id:
            raise ParamError("service_id must be provided")
        if not api_key:
            raise ParamError("api_key must be provided")
        self._http = http
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "x-tdai-service-id": service_id,
            "Content-Type": "application/json",
        }
        if user_key:
            self._headers["x-tdai-user-key"] = user_key
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        self.sent.append((path, body))
        response = self._http.post(path, json=body, headers=self._headers)
        try:
            envelope = response.json()
        except ValueError:
            raise TDAMError(response.status_code or -1, response.text) from None
        request_id = envelope.get("request_id") or response.headers.get("x-qcloud-transaction-id", "")
        if response.status_code >= 400 or envelope.get("code") != 0:
            code = envelope.get("code") or response.status_code
            raise TDAMError(code, envelope.get("message", ""), request_id, envelope.get("data"))
        return envelope.get("data")

    # -- users -----------------------------------------------------------------------------
    def create_user(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/user/create", _body(p))

    def get_user(self, query: str | dict[str, Any]) -> Any:
        body = {"user_id": query} if isinstance(query, str) else _body(query)
        return self._post("/v3/meta/user/get", body)

    def delete_users(self, user_ids: list[str]) -> Any:
        return self._post("/v3/meta/user/delete", {"user_ids": user_ids})

    def list_users(self, team_id_or_request: str | dict[str, Any] | None = None, *, pagination: Any = None) -> Any:
        if isinstance(team_id_or_request, str):
            return self._post("/v3/meta/user/list", _paged("team_id", team_id_or_request, pagination))
        return self._post("/v3/meta/user/list", _body(team_id_or_request or {}))

    def create_user_key(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/user-key/create", _body(p))

    def list_user_keys(self, user_id_or_request: str | dict[str, Any] | None = None, *, pagination: Any = None) -> Any:
        if isinstance(user_id_or_request, str):
            return self._post("/v3/meta/user-key/list", _paged("user_id", user_id_or_request, pagination))
        return self._post("/v3/meta/user-key/list", _body(user_id_or_request or {}))

    def get_user_key(self, key_id: str) -> Any:
        return self._post("/v3/meta/user-key/get", {"key_id": key_id})

    def revoke_user_key(self, key_id: str) -> Any:
        return self._post("/v3/meta/user-key/revoke", {"key_id": key_id})

    def update_user_key(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/user-key/update", _body(p))

    # -- teams -----------------------------------------------------------------------------
    def create_team(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/team/create", _body(p))

    def get_team(self, team_id: str) -> Any:
        return self._post("/v3/meta/team/get", {"team_id": team_id})

    def update_team(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/team/update", _body(p))

    def delete_teams(self, team_ids: list[str]) -> Any:
        return self._post("/v3/meta/team/delete", {"team_ids": team_ids})

    def list_teams(self, user_id_or_request: str | dict[str, Any] | None = None, *, pagination: Any = None) -> Any:
        if isinstance(user_id_or_request, str):
            body = _paged("user_id", user_id_or_request, pagination)
        else:
            body = _body(user_id_or_request or {})
        _require_any(body, ("user_id", "user_key"), "list_teams")
        return self._post("/v3/meta/team/list", body)

    def add_team_member(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/team-member/add", _body(p))

    def remove_team_member(self, team_id: str, user_id: str) -> Any:
        return self._post("/v3/meta/team-member/remove", {"team_id": team_id, "user_id": user_id})

    def list_team_members(self, team_id: str, *, pagination: Any = None) -> Any:
        return self._post("/v3/meta/team-member/list", _paged("team_id", team_id, pagination))

    def get_team_member(self, team_id: str, user_id: str) -> Any:
        return self._post("/v3/meta/team-member/get", {"team_id": team_id, "user_id": user_id})

    # -- agents ----------------------------------------------------------------------------
    def create_agent(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/agent/create", _body(p))

    def get_agent(self, agent_id: str) -> Any:
        return self._post("/v3/meta/agent/get", {"agent_id": agent_id})

    def update_agent(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/agent/update", _body(p))

    def delete_agents(self, agent_ids: list[str]) -> Any:
        return self._post("/v3/meta/agent/delete", {"agent_ids": agent_ids})

    def list_agents(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/agent/list", _body(p))

    def archive_agent(self, agent_id: str) -> Any:
        return self._post("/v3/meta/agent/archive", {"agent_id": agent_id})

    # -- tasks -----------------------------------------------------------------------------
    def create_task(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/task/create", _body(p))

    def get_task(self, task_id: str) -> Any:
        return self._post("/v3/meta/task/get", {"task_id": task_id})

    def update_task(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/task/update", _body(p))

    def delete_tasks(self, task_ids: list[str]) -> Any:
        return self._post("/v3/meta/task/delete", {"task_ids": task_ids})

    def list_tasks(
        self,
        team_id_or_request: str | dict[str, Any] | None = None,
        *,
        status: str | None = None,
        pagination: Any = None,
    ) -> Any:
        if isinstance(team_id_or_request, str):
            body = _paged("team_id", team_id_or_request, pagination, status=status)
        else:
            body = _body(team_id_or_request or {})
        _require_any(body, ("team_id", "creator_user_id", "creator_user_key"), "list_tasks")
        return self._post("/v3/meta/task/list", body)

    def archive_task(self, task_id: str) -> Any:
        return self._post("/v3/meta/task/archive", {"task_id": task_id})

    def link_task_agent(self, task_id: str, agent_id: str, role_in_task: str | None = None) -> Any:
        body = _body({"task_id": task_id, "agent_id": agent_id, "role_in_task": role_in_task})
        return self._post("/v3/meta/task-agent/link", body)

    def unlink_task_agent(self, task_id: str, agent_id: str) -> Any:
        return self._post("/v3/meta/task-agent/unlink", {"task_id": task_id, "agent_id": agent_id})

    def list_task_agents(self, task_id: str, *, pagination: Any = None) -> Any:
        return self._post("/v3/meta/task-agent/list", _paged("task_id", task_id, pagination))

    def append_participation_log(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/participation-log/append", _body(p))

    def list_participation_logs(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/participation-log/list", _body(p))

    # -- assets ----------------------------------------------------------------------------
    def create_asset(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/asset/create", _body(p))

    def get_asset(self, asset_id: str) -> Any:
        return self._post("/v3/meta/asset/get", {"asset_id": asset_id})

    def update_asset(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/asset/update", _body(p))

    def delete_assets(self, asset_ids: list[str]) -> Any:
        return self._post("/v3/meta/asset/delete", {"asset_ids": asset_ids})

    def list_assets(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/asset/list", _body(p))

    def list_accessible_assets(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/asset/list-accessible", _body(p))

    def touch_asset_usage(self, asset_id: str) -> Any:
        return self._post("/v3/meta/asset/touch-usage", {"asset_id": asset_id})

    def set_agent_fixed_assets(self, agent_id: str, bindings: list[dict[str, Any]]) -> Any:
        # Not None-stripped: the SDK passes the bindings as given.
        return self._post("/v3/meta/agent-fixed-asset/set", {"agent_id": agent_id, "bindings": bindings})

    def list_agent_fixed_assets(self, agent_id: str, *, pagination: Any = None) -> Any:
        return self._post("/v3/meta/agent-fixed-asset/list", _paged("agent_id", agent_id, pagination))

    def list_agent_fixed_assets_with_detail(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/agent-fixed-asset/list-with-detail", _body(p))

    def summarize_agent_fixed_assets_by_agents(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/agent-fixed-asset/summary-by-agents", _body(p))

    # -- ACL -------------------------------------------------------------------------------
    def grant_acl(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/acl/grant", _body(p))

    def revoke_acl(self, acl_id: str) -> Any:
        return self._post("/v3/meta/acl/revoke", {"id": acl_id})

    def list_acl(self, asset_id: str, *, pagination: Any = None) -> Any:
        return self._post("/v3/meta/acl/list", _paged("asset_id", asset_id, pagination))

    def check_acl(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/acl/check", _body(p))

    # -- auth and config -------------------------------------------------------------------
    def verify_auth(self, user_key: str) -> Any:
        return self._post("/v3/meta/auth/verify", {"user_key": user_key})

    def get_instance_quota(self) -> Any:
        return self._post("/v3/meta/instance-quota/get", {})

    def get_user_config(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/config/user/get", _body(p))

    def set_user_config(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/meta/config/user/set", _body(p))

    # -- knowledge -------------------------------------------------------------------------
    def create_knowledge(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/knowledge/create", _body(p))

    def get_knowledge(self, knowledge_id: str, team_id: str | None = None) -> Any:
        return self._post("/v3/knowledge/get", _body({"knowledge_id": knowledge_id, "team_id": team_id}))

    def update_knowledge(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/knowledge/update", _body(p))

    def delete_knowledge(self, knowledge_ids: list[str], team_id: str | None = None) -> Any:
        return self._post("/v3/knowledge/delete", _body({"knowledge_ids": knowledge_ids, "team_id": team_id}))

    def list_knowledge(self, p: dict[str, Any]) -> Any:
        return self._post("/v3/knowledge/list", _body(p))


META_METHODS = [
    "create_user",
    "get_user",
    "delete_users",
    "list_users",
    "create_user_key",
    "list_user_keys",
    "get_user_key",
    "revoke_user_key",
    "update_user_key",
    "create_team",
    "get_team",
    "update_team",
    "delete_teams",
    "list_teams",
    "add_team_member",
    "remove_team_member",
    "list_team_members",
    "get_team_member",
    "create_agent",
    "get_agent",
    "update_agent",
    "delete_agents",
    "list_agents",
    "archive_agent",
    "create_task",
    "get_task",
    "update_task",
    "delete_tasks",
    "list_tasks",
    "archive_task",
    "link_task_agent",
    "unlink_task_agent",
    "list_task_agents",
    "append_participation_log",
    "list_participation_logs",
    "create_asset",
    "get_asset",
    "update_asset",
    "delete_assets",
    "list_assets",
    "list_accessible_assets",
    "touch_asset_usage",
    "set_agent_fixed_assets",
    "list_agent_fixed_assets",
    "list_agent_fixed_assets_with_detail",
    "summarize_agent_fixed_assets_by_agents",
    "grant_acl",
    "revoke_acl",
    "list_acl",
    "check_acl",
    "verify_auth",
    "get_instance_quota",
    "get_user_config",
    "set_user_config",
]
KNOWLEDGE_METHODS = ["create_knowledge", "get_knowledge", "update_knowledge", "delete_knowledge", "list_knowledge"]
assert len(META_METHODS) == 54 and len(KNOWLEDGE_METHODS) == 5
