"""The management-plane (`/v3/meta/*`) and knowledge CRUD (`/v3/knowledge/*`) calls, each written once as the request
it sends.

`MetadataCalls` builds each call's request and hands it to `_send`; the SDK's `MetadataClient` and
`AsyncMetadataClient` (memhub.sdk.metadata) send with httpx; `MetadataRequests` only builds them, for
`Connection.resolution` (memhub.sdk.connection) to hand to whoever sends. Nothing here needs an HTTP library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic

from memhub.sdk._errors import ParamError
from memhub.sdk._isolation import strip_none
from memhub.sdk._request import Request, ResultT

Payload = Mapping[str, Any]


def _body(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, Mapping):
        raise ParamError("request payload must be a dict")
    return strip_none(payload)


def _paged(key: str, value: str, pagination: Payload | None, **extra: Any) -> dict[str, Any]:
    """A list body keyed by one id, with `pagination` (`limit`, `offset` …) merged in."""
    return _body({key: value, **extra, **dict(pagination or {})})


def _require_any(body: Payload, fields: tuple[str, ...], operation: str) -> None:
    # The gateway would list everything of the instance without one of these; refuse instead.
    if not any(isinstance(body.get(f), str) and body[f].strip() for f in fields):
        raise ParamError(f"{operation} requires one of {', '.join(fields)}")


class MetadataCalls(Generic[ResultT]):
    """The management calls, each written once; the client's `_send` makes them sync or async."""

    def _send(self, request: Request) -> ResultT:
        raise NotImplementedError

    def _post(self, path: str, body: dict[str, Any]) -> ResultT:
        return self._send(Request(path, body))

    # -- users ---------------------------------------------------------------------------------------
    def create_user(self, p: Payload) -> ResultT:
        """`POST /v3/meta/user/create` (system admin): a user and its default key."""
        return self._post("/v3/meta/user/create", _body(p))

    def get_user(self, query: str | Payload) -> ResultT:
        """`POST /v3/meta/user/get`: by user id (a str) or by `{user_id | user_key}`."""
        return self._post("/v3/meta/user/get", _body({"user_id": query} if isinstance(query, str) else query))

    def delete_users(self, user_ids: list[str]) -> ResultT:
        """`POST /v3/meta/user/delete` (system admin): `{deleted_ids, failed}`."""
        return self._post("/v3/meta/user/delete", {"user_ids": user_ids})

    def list_users(
        self, team_id_or_request: str | Payload | None = None, *, pagination: Payload | None = None
    ) -> ResultT:
        """`POST /v3/meta/user/list`: a team's users (a str) or by request dict."""
        if isinstance(team_id_or_request, str):
            return self._post("/v3/meta/user/list", _paged("team_id", team_id_or_request, pagination))
        return self._post("/v3/meta/user/list", _body(team_id_or_request or {}))

    # -- user keys -----------------------------------------------------------------------------------
    def create_user_key(self, p: Payload) -> ResultT:
        """`POST /v3/meta/user-key/create`: a new key (its value is returned only now)."""
        return self._post("/v3/meta/user-key/create", _body(p))

    def list_user_keys(
        self, user_id_or_request: str | Payload | None = None, *, pagination: Payload | None = None
    ) -> ResultT:
        """`POST /v3/meta/user-key/list`: a user's keys (a str) or by request dict."""
        if isinstance(user_id_or_request, str):
            return self._post("/v3/meta/user-key/list", _paged("user_id", user_id_or_request, pagination))
        return self._post("/v3/meta/user-key/list", _body(user_id_or_request or {}))

    def get_user_key(self, key_id: str) -> ResultT:
        """`POST /v3/meta/user-key/get`."""
        return self._post("/v3/meta/user-key/get", {"key_id": key_id})

    def revoke_user_key(self, key_id: str) -> ResultT:
        """`POST /v3/meta/user-key/revoke`."""
        return self._post("/v3/meta/user-key/revoke", {"key_id": key_id})

    def update_user_key(self, p: Payload) -> ResultT:
        """`POST /v3/meta/user-key/update`: rename or change the expiry."""
        return self._post("/v3/meta/user-key/update", _body(p))

    # -- teams and members ---------------------------------------------------------------------------
    def create_team(self, p: Payload) -> ResultT:
        """`POST /v3/meta/team/create`."""
        return self._post("/v3/meta/team/create", _body(p))

    def get_team(self, team_id: str) -> ResultT:
        """`POST /v3/meta/team/get`."""
        return self._post("/v3/meta/team/get", {"team_id": team_id})

    def update_team(self, p: Payload) -> ResultT:
        """`POST /v3/meta/team/update`."""
        return self._post("/v3/meta/team/update", _body(p))

    def delete_teams(self, team_ids: list[str]) -> ResultT:
        """`POST /v3/meta/team/delete`: `{deleted_ids, failed}`."""
        return self._post("/v3/meta/team/delete", {"team_ids": team_ids})

    def list_teams(
        self, user_id_or_request: str | Payload | None = None, *, pagination: Payload | None = None
    ) -> ResultT:
        """`POST /v3/meta/team/list`: a user's teams (a str) or by request dict with `user_id` or `user_key`."""
        if isinstance(user_id_or_request, str):
            body = _paged("user_id", user_id_or_request, pagination)
        else:
            body = _body(user_id_or_request or {})
        _require_any(body, ("user_id", "user_key"), "list_teams")
        return self._post("/v3/meta/team/list", body)

    def add_team_member(self, p: Payload) -> ResultT:
        """`POST /v3/meta/team-member/add`."""
        return self._post("/v3/meta/team-member/add", _body(p))

    def remove_team_member(self, team_id: str, user_id: str) -> ResultT:
        """`POST /v3/meta/team-member/remove`."""
        return self._post("/v3/meta/team-member/remove", {"team_id": team_id, "user_id": user_id})

    def list_team_members(self, team_id: str, *, pagination: Payload | None = None) -> ResultT:
        """`POST /v3/meta/team-member/list`."""
        return self._post("/v3/meta/team-member/list", _paged("team_id", team_id, pagination))

    def get_team_member(self, team_id: str, user_id: str) -> ResultT:
        """`POST /v3/meta/team-member/get`."""
        return self._post("/v3/meta/team-member/get", {"team_id": team_id, "user_id": user_id})

    # -- agents --------------------------------------------------------------------------------------
    def create_agent(self, p: Payload) -> ResultT:
        """`POST /v3/meta/agent/create`: an agent and its chat-memory asset."""
        return self._post("/v3/meta/agent/create", _body(p))

    def get_agent(self, agent_id: str) -> ResultT:
        """`POST /v3/meta/agent/get`."""
        return self._post("/v3/meta/agent/get", {"agent_id": agent_id})

    def update_agent(self, p: Payload) -> ResultT:
        """`POST /v3/meta/agent/update`."""
        return self._post("/v3/meta/agent/update", _body(p))

    def delete_agents(self, agent_ids: list[str]) -> ResultT:
        """`POST /v3/meta/agent/delete`: `{deleted_ids, failed}`."""
        return self._post("/v3/meta/agent/delete", {"agent_ids": agent_ids})

    def list_agents(self, p: Payload) -> ResultT:
        """`POST /v3/meta/agent/list`."""
        return self._post("/v3/meta/agent/list", _body(p))

    def archive_agent(self, agent_id: str) -> ResultT:
        """`POST /v3/meta/agent/archive`: inactive, its chat-memory asset withdrawn."""
        return self._post("/v3/meta/agent/archive", {"agent_id": agent_id})

    # -- tasks ---------------------------------------------------------------------------------------
    def create_task(self, p: Payload) -> ResultT:
        """`POST /v3/meta/task/create`."""
        return self._post("/v3/meta/task/create", _body(p))

    def get_task(self, task_id: str) -> ResultT:
        """`POST /v3/meta/task/get`."""
        return self._post("/v3/meta/task/get", {"task_id": task_id})

    def update_task(self, p: Payload) -> ResultT:
        """`POST /v3/meta/task/update`."""
        return self._post("/v3/meta/task/update", _body(p))

    def delete_tasks(self, task_ids: list[str]) -> ResultT:
        """`POST /v3/meta/task/delete`: `{deleted_ids, failed}`."""
        return self._post("/v3/meta/task/delete", {"task_ids": task_ids})

    def list_tasks(
        self,
        team_id_or_request: str | Payload | None = None,
        *,
        status: str | None = None,
        pagination: Payload | None = None,
    ) -> ResultT:
        """`POST /v3/meta/task/list`: a team's tasks (a str) or by request dict with a team or creator."""
        if isinstance(team_id_or_request, str):
            body = _paged("team_id", team_id_or_request, pagination, status=status)
        else:
            body = _body(team_id_or_request or {})
        _require_any(body, ("team_id", "creator_user_id", "creator_user_key"), "list_tasks")
        return self._post("/v3/meta/task/list", body)

    def archive_task(self, task_id: str) -> ResultT:
        """`POST /v3/meta/task/archive`: the task completed."""
        return self._post("/v3/meta/task/archive", {"task_id": task_id})

    def link_task_agent(self, task_id: str, agent_id: str, role_in_task: str | None = None) -> ResultT:
        """`POST /v3/meta/task-agent/link`."""
        body = _body({"task_id": task_id, "agent_id": agent_id, "role_in_task": role_in_task})
        return self._post("/v3/meta/task-agent/link", body)

    def unlink_task_agent(self, task_id: str, agent_id: str) -> ResultT:
        """`POST /v3/meta/task-agent/unlink`."""
        return self._post("/v3/meta/task-agent/unlink", {"task_id": task_id, "agent_id": agent_id})

    def list_task_agents(self, task_id: str, *, pagination: Payload | None = None) -> ResultT:
        """`POST /v3/meta/task-agent/list`."""
        return self._post("/v3/meta/task-agent/list", _paged("task_id", task_id, pagination))

    def append_participation_log(self, p: Payload) -> ResultT:
        """`POST /v3/meta/participation-log/append`."""
        return self._post("/v3/meta/participation-log/append", _body(p))

    def list_participation_logs(self, p: Payload) -> ResultT:
        """`POST /v3/meta/participation-log/list`."""
        return self._post("/v3/meta/participation-log/list", _body(p))

    # -- assets, bindings, ACL -------------------------------------------------------------------------
    def create_asset(self, p: Payload) -> ResultT:
        """`POST /v3/meta/asset/create`."""
        return self._post("/v3/meta/asset/create", _body(p))

    def get_asset(self, asset_id: str) -> ResultT:
        """`POST /v3/meta/asset/get`."""
        return self._post("/v3/meta/asset/get", {"asset_id": asset_id})

    def update_asset(self, p: Payload) -> ResultT:
        """`POST /v3/meta/asset/update`."""
        return self._post("/v3/meta/asset/update", _body(p))

    def delete_assets(self, asset_ids: list[str]) -> ResultT:
        """`POST /v3/meta/asset/delete`: `{deleted_ids, failed}`."""
        return self._post("/v3/meta/asset/delete", {"asset_ids": asset_ids})

    def list_assets(self, p: Payload) -> ResultT:
        """`POST /v3/meta/asset/list`."""
        return self._post("/v3/meta/asset/list", _body(p))

    def list_accessible_assets(self, p: Payload) -> ResultT:
        """`POST /v3/meta/asset/list-accessible`: the assets a user may use."""
        return self._post("/v3/meta/asset/list-accessible", _body(p))

    def touch_asset_usage(self, asset_id: str) -> ResultT:
        """`POST /v3/meta/asset/touch-usage`."""
        return self._post("/v3/meta/asset/touch-usage", {"asset_id": asset_id})

    def set_agent_fixed_assets(self, agent_id: str, bindings: list[dict[str, Any]]) -> ResultT:
        """`POST /v3/meta/agent-fixed-asset/set`: replace an agent's bindings."""
        # Sent as given, None values included, like the original.
        return self._post("/v3/meta/agent-fixed-asset/set", {"agent_id": agent_id, "bindings": bindings})

    def list_agent_fixed_assets(self, agent_id: str, *, pagination: Payload | None = None) -> ResultT:
        """`POST /v3/meta/agent-fixed-asset/list`."""
        return self._post("/v3/meta/agent-fixed-asset/list", _paged("agent_id", agent_id, pagination))

    def list_agent_fixed_assets_with_detail(self, p: Payload) -> ResultT:
        """`POST /v3/meta/agent-fixed-asset/list-with-detail`: bindings with their assets."""
        return self._post("/v3/meta/agent-fixed-asset/list-with-detail", _body(p))

    def summarize_agent_fixed_assets_by_agents(self, p: Payload) -> ResultT:
        """`POST /v3/meta/agent-fixed-asset/summary-by-agents`: binding counts per agent and asset type."""
        return self._post("/v3/meta/agent-fixed-asset/summary-by-agents", _body(p))

    def grant_acl(self, p: Payload) -> ResultT:
        """`POST /v3/meta/acl/grant`."""
        return self._post("/v3/meta/acl/grant", _body(p))

    def revoke_acl(self, acl_id: str) -> ResultT:
        """`POST /v3/meta/acl/revoke`: by the entry's id (sent as `id`)."""
        return self._post("/v3/meta/acl/revoke", {"id": acl_id})

    def list_acl(self, asset_id: str, *, pagination: Payload | None = None) -> ResultT:
        """`POST /v3/meta/acl/list`: an asset's entries."""
        return self._post("/v3/meta/acl/list", _paged("asset_id", asset_id, pagination))

    def check_acl(self, p: Payload) -> ResultT:
        """`POST /v3/meta/acl/check`: `{allowed, reason}`."""
        return self._post("/v3/meta/acl/check", _body(p))

    # -- auth and config -------------------------------------------------------------------------------
    def verify_auth(self, user_key: str) -> ResultT:
        """`POST /v3/meta/auth/verify`: `{valid, user}` for a user key."""
        return self._post("/v3/meta/auth/verify", {"user_key": user_key})

    def get_instance_quota(self) -> ResultT:
        """`POST /v3/meta/instance-quota/get`."""
        return self._post("/v3/meta/instance-quota/get", {})

    def get_user_config(self, p: Payload) -> ResultT:
        """`POST /v3/meta/config/user/get`."""
        return self._post("/v3/meta/config/user/get", _body(p))

    def set_user_config(self, p: Payload) -> ResultT:
        """`POST /v3/meta/config/user/set`."""
        return self._post("/v3/meta/config/user/set", _body(p))

    # -- knowledge registry ----------------------------------------------------------------------------
    def create_knowledge(self, p: Payload) -> ResultT:
        """`POST /v3/knowledge/create`: register (upsert) a wiki or code-graph entry."""
        return self._post("/v3/knowledge/create", _body(p))

    def get_knowledge(self, knowledge_id: str, team_id: str | None = None) -> ResultT:
        """`POST /v3/knowledge/get`."""
        return self._post("/v3/knowledge/get", _body({"knowledge_id": knowledge_id, "team_id": team_id}))

    def update_knowledge(self, p: Payload) -> ResultT:
        """`POST /v3/knowledge/update`."""
        return self._post("/v3/knowledge/update", _body(p))

    def delete_knowledge(self, knowledge_ids: list[str], team_id: str | None = None) -> ResultT:
        """`POST /v3/knowledge/delete`: `{deleted_ids, failed}`."""
        return self._post("/v3/knowledge/delete", _body({"knowledge_ids": knowledge_ids, "team_id": team_id}))

    def list_knowledge(self, p: Payload) -> ResultT:
        """`POST /v3/knowledge/list`."""
        return self._post("/v3/knowledge/list", _body(p))


class MetadataRequests(MetadataCalls[Request]):
    """The management calls as the requests they would send, not sent (`Connection.resolution` yields them)."""

    def _send(self, request: Request) -> Request:
        return request
