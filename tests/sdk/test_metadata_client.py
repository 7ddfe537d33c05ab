"""MetadataClient / AsyncMetadataClient: every one of the 59 calls' route and body, client side; the async
client against the real server.

The route table is tests/meta/test_sdk_shapes.ROUTES (the original SDK's routes); the sync client's
live round trip of all 59 calls is tests/meta/test_sdk_shapes.py.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memhub.sdk import AsyncMetadataClient, MetadataClient, ParamError, TDAMError
from tests.conftest import Gateway, build_gateway
from tests.meta.metadata_client import Recorder, serve
from tests.meta.test_sdk_shapes import ROUTES

ENDPOINT = "http://127.0.0.1:8420"
PAGE = {"limit": 5, "offset": 10}
Client = MetadataClient | AsyncMetadataClient


class Wire(httpx.MockTransport):
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json={"code": 0, "message": "ok", "request_id": "req-1", "data": {"ok": True}})

    @property
    def last(self) -> tuple[str, Any]:
        return self.requests[-1].url.path, json.loads(self.requests[-1].content)


def invoke(result: Any) -> Any:
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


@pytest.fixture(params=[MetadataClient, AsyncMetadataClient], ids=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> type[Client]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def client(kind: type[Client], wire: Wire) -> Iterator[Client]:
    made = kind(ENDPOINT, "sk-gw", "svc-1", user_key="sk-mem-admin", transport=wire)
    yield made
    invoke(made.close())


# (method, args, kwargs, body): request dicts lose their None values, fixed bodies are sent as built.
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], dict[str, Any]]] = [
    ("create_user", ({"username": "alice", "email": None},), {}, {"username": "alice"}),
    ("get_user", ("u-1",), {}, {"user_id": "u-1"}),
    ("get_user", ({"user_key": "sk-mem-x", "user_id": None},), {}, {"user_key": "sk-mem-x"}),
    ("delete_users", (["u-1", "u-2"],), {}, {"user_ids": ["u-1", "u-2"]}),
    ("list_users", (), {}, {}),
    ("list_users", ("team-1",), {"pagination": PAGE}, {"team_id": "team-1", **PAGE}),
    ("list_users", ({"team_id": "team-1", "limit": None},), {}, {"team_id": "team-1"}),
    ("create_user_key", ({"name": "laptop", "expires_at": None},), {}, {"name": "laptop"}),
    ("list_user_keys", ("u-1",), {"pagination": {"limit": 5}}, {"user_id": "u-1", "limit": 5}),
    ("list_user_keys", (), {}, {}),
    ("get_user_key", ("k-1",), {}, {"key_id": "k-1"}),
    ("revoke_user_key", ("k-1",), {}, {"key_id": "k-1"}),
    ("update_user_key", ({"key_id": "k-1", "name": "desk"},), {}, {"key_id": "k-1", "name": "desk"}),
    ("create_team", ({"name": "core", "description": None},), {}, {"name": "core"}),
    ("get_team", ("team-1",), {}, {"team_id": "team-1"}),
    ("update_team", ({"team_id": "team-1", "status": None},), {}, {"team_id": "team-1"}),
    ("delete_teams", (["team-1"],), {}, {"team_ids": ["team-1"]}),
    ("list_teams", ("u-1",), {"pagination": {"limit": 5}}, {"user_id": "u-1", "limit": 5}),
    ("list_teams", ({"user_key": "sk-mem-x", "name": "core"},), {}, {"user_key": "sk-mem-x", "name": "core"}),
    ("add_team_member", ({"team_id": "t", "user_id": "u", "role": None},), {}, {"team_id": "t", "user_id": "u"}),
    ("remove_team_member", ("t", "u"), {}, {"team_id": "t", "user_id": "u"}),
    ("list_team_members", ("t",), {"pagination": PAGE}, {"team_id": "t", **PAGE}),
    ("list_team_members", ("t",), {}, {"team_id": "t"}),
    ("get_team_member", ("t", "u"), {}, {"team_id": "t", "user_id": "u"}),
    ("create_agent", ({"team_id": "t", "name": "coder", "prompt": None},), {}, {"team_id": "t", "name": "coder"}),
    ("get_agent", ("agt-1",), {}, {"agent_id": "agt-1"}),
    ("update_agent", ({"agent_id": "agt-1", "prompt": "terse"},), {}, {"agent_id": "agt-1", "prompt": "terse"}),
    ("delete_agents", (["agt-1"],), {}, {"agent_ids": ["agt-1"]}),
    ("list_agents", ({"team_id": "t", "status": None},), {}, {"team_id": "t"}),
    ("archive_agent", ("agt-1",), {}, {"agent_id": "agt-1"}),
    ("create_task", ({"team_id": "t", "title": "ship", "risk_level": None},), {}, {"team_id": "t", "title": "ship"}),
    ("get_task", ("task-1",), {}, {"task_id": "task-1"}),
    ("update_task", ({"task_id": "task-1", "source_url": None},), {}, {"task_id": "task-1"}),
    ("delete_tasks", (["task-1"],), {}, {"task_ids": ["task-1"]}),
    ("list_tasks", ("t",), {"status": "running", "pagination": PAGE}, {"team_id": "t", "status": "running", **PAGE}),
    ("list_tasks", ("t",), {}, {"team_id": "t"}),
    ("list_tasks", ({"creator_user_id": "u-1"},), {}, {"creator_user_id": "u-1"}),
    ("archive_task", ("task-1",), {}, {"task_id": "task-1"}),
    ("link_task_agent", ("task-1", "agt-1"), {}, {"task_id": "task-1", "agent_id": "agt-1"}),
    (
        "link_task_agent",
        ("task-1", "agt-1", "lead"),
        {},
        {"task_id": "task-1", "agent_id": "agt-1", "role_in_task": "lead"},
    ),
    ("unlink_task_agent", ("task-1", "agt-1"), {}, {"task_id": "task-1", "agent_id": "agt-1"}),
    ("list_task_agents", ("task-1",), {"pagination": {"offset": 2}}, {"task_id": "task-1", "offset": 2}),
    ("append_participation_log", ({"task_id": "task-1", "created_at": None},), {}, {"task_id": "task-1"}),
    ("list_participation_logs", ({"team_id": "t", "dedupe": True},), {}, {"team_id": "t", "dedupe": True}),
    ("create_asset", ({"asset_id": "a-1", "description": None},), {}, {"asset_id": "a-1"}),
    ("get_asset", ("a-1",), {}, {"asset_id": "a-1"}),
    ("update_asset", ({"asset_id": "a-1", "confidence": None},), {}, {"asset_id": "a-1"}),
    ("delete_assets", (["a-1"],), {}, {"asset_ids": ["a-1"]}),
    ("list_assets", ({"team_id": "t", "asset_type": None},), {}, {"team_id": "t"}),
    (
        "list_accessible_assets",
        ({"user_id": "u", "visibility": ["team"]},),
        {},
        {"user_id": "u", "visibility": ["team"]},
    ),
    ("touch_asset_usage", ("a-1",), {}, {"asset_id": "a-1"}),
    (
        "set_agent_fixed_assets",
        ("agt-1", [{"asset_id": "a-1", "priority": None}]),
        {},
        {"agent_id": "agt-1", "bindings": [{"asset_id": "a-1", "priority": None}]},
    ),
    ("list_agent_fixed_assets", ("agt-1",), {"pagination": {"limit": 10}}, {"agent_id": "agt-1", "limit": 10}),
    (
        "list_agent_fixed_assets_with_detail",
        ({"agent_id": "agt-1", "touch_usage": False, "asset_types": None},),
        {},
        {"agent_id": "agt-1", "touch_usage": False},
    ),
    (
        "summarize_agent_fixed_assets_by_agents",
        ({"agent_ids": ["agt-1"], "asset_id": None},),
        {},
        {"agent_ids": ["agt-1"]},
    ),
    ("grant_acl", ({"asset_id": "a-1", "effect": None},), {}, {"asset_id": "a-1"}),
    ("revoke_acl", ("acl-1",), {}, {"id": "acl-1"}),
    ("list_acl", ("a-1",), {"pagination": {"limit": 10}}, {"asset_id": "a-1", "limit": 10}),
    ("check_acl", ({"asset_id": "a-1", "agent_id": None},), {}, {"asset_id": "a-1"}),
    ("verify_auth", ("sk-mem-x",), {}, {"user_key": "sk-mem-x"}),
    ("get_instance_quota", (), {}, {}),
    ("get_user_config", ({"user_id": "u", "param_name": None},), {}, {"user_id": "u"}),
    ("set_user_config", ({"user_id": "u", "params": {"a": "1"}},), {}, {"user_id": "u", "params": {"a": "1"}}),
    ("create_knowledge", ({"knowledge_id": "wiki-1", "summary": None},), {}, {"knowledge_id": "wiki-1"}),
    ("get_knowledge", ("wiki-1",), {}, {"knowledge_id": "wiki-1"}),
    ("get_knowledge", ("wiki-1", "t"), {}, {"knowledge_id": "wiki-1", "team_id": "t"}),
    ("update_knowledge", ({"knowledge_id": "wiki-1", "name": "n"},), {}, {"knowledge_id": "wiki-1", "name": "n"}),
    ("delete_knowledge", (["wiki-1"],), {}, {"knowledge_ids": ["wiki-1"]}),
    ("delete_knowledge", (["wiki-1"], "t"), {}, {"knowledge_ids": ["wiki-1"], "team_id": "t"}),
    ("list_knowledge", ({"team_id": "t", "type": None},), {}, {"team_id": "t"}),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "body"), CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_route_and_body(
    client: Client, wire: Wire, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], body: dict[str, Any]
) -> None:
    assert invoke(getattr(client, method)(*args, **kwargs)) == {"ok": True}
    assert wire.last == (ROUTES[method], body)
    request = wire.requests[-1]
    assert request.headers["Authorization"] == "Bearer sk-gw"
    assert request.headers["x-tdai-service-id"] == "svc-1"
    assert request.headers["x-tdai-user-key"] == "sk-mem-admin"


def test_every_method_is_in_the_table() -> None:
    assert {c[0] for c in CALLS} == set(ROUTES)


def test_guards_send_nothing(client: Client, wire: Wire) -> None:
    with pytest.raises(ParamError, match="request payload must be a dict"):
        invoke(client.create_user("alice"))  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="list_teams requires one of user_id, user_key"):
        invoke(client.list_teams({"name": "x"}))
    with pytest.raises(ParamError, match="list_teams requires one of user_id, user_key"):
        invoke(client.list_teams())
    with pytest.raises(ParamError, match="list_tasks requires one of team_id, creator_user_id, creator_user_key"):
        invoke(client.list_tasks({"creator_user_id": "  "}))
    with pytest.raises(ParamError, match="list_tasks requires one of"):
        invoke(client.list_tasks("  "))
    assert wire.requests == []


def test_construction_guards(kind: type[Client]) -> None:
    with pytest.raises(ParamError, match="service_id must be provided"):
        kind(ENDPOINT, "k", None)
    with pytest.raises(ParamError, match="api_key must be provided"):
        kind(ENDPOINT, "", "svc")
    with pytest.raises(ParamError, match="endpoint must be provided"):
        kind("", "k", "svc")
    with pytest.raises(ParamError, match="valid HTTP"):
        kind("127.0.0.1:8420", "k", "svc")
    with pytest.raises(ParamError, match="timeout"):
        kind(ENDPOINT, "k", "svc", timeout=0)


def test_no_user_key_header_without_a_user_key(kind: type[Client], wire: Wire) -> None:
    made = kind(ENDPOINT, "k", "svc", transport=wire)
    invoke(made.verify_auth("sk-mem-x"))
    assert "x-tdai-user-key" not in wire.requests[-1].headers
    invoke(made.close())


def test_async_client_mirrors_the_sync_one() -> None:
    for name in ROUTES:
        sync, async_ = getattr(MetadataClient, name), getattr(AsyncMetadataClient, name)
        assert inspect.signature(sync).parameters == inspect.signature(async_).parameters, name
        assert inspect.iscoroutinefunction(async_) and not inspect.iscoroutinefunction(sync), name
        assert sync.__doc__ and sync.__doc__ == async_.__doc__, name


# -- the async client against the real server ---------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """memhub's app served over a real socket (uvicorn in a thread)."""
    built = build_gateway(tmp_path_factory.mktemp("sdk-meta"))
    with serve(built) as gateway:
        yield gateway
    built.close()


def test_async_client_against_a_live_server(live: Gateway) -> None:
    service = "svc-sdk-async"
    endpoint = str(live.client.base_url)
    boot = live.client.post(
        "/v3/internal/meta/user/init-admin",
        json={"username": "root"},
        headers={"authorization": f"Bearer {live.key}", "x-tdai-service-id": service},
    ).json()["data"]

    async def run() -> None:
        recorder = Recorder()
        async with AsyncMetadataClient(
            endpoint, live.key or "", service, user_key=boot["user_key"], transport=recorder
        ) as admin:
            verified = await admin.verify_auth(boot["user_key"])
            assert verified["valid"] is True and verified["user"]["user_type"] == "system_admin"
            created = await admin.create_user({"username": "dora", "email": None})
            assert recorder.calls[-1] == ("/v3/meta/user/create", {"username": "dora"})
            assert created["default_user_key"].startswith("sk-mem-")
            got = await admin.get_user(created["user_id"])
            assert got["username"] == "dora"
            team = await admin.create_team({"name": "async-team", "owner_user_id": boot["user_id"]})
            added = await admin.add_team_member(
                {"team_id": team["team_id"], "user_id": created["user_id"], "role": None}
            )
            assert added["role"] == "member" and added["status"] == "active"
            members = await admin.list_team_members(team["team_id"], pagination={"limit": 10})
            assert {m["user_id"] for m in members["items"]} == {boot["user_id"], created["user_id"]}
            assert recorder.calls[-1] == ("/v3/meta/team-member/list", {"team_id": team["team_id"], "limit": 10})
            assert await admin.get_instance_quota() == {"max_users_per_instance": 500, "max_teams_per_instance": 100}
            with pytest.raises(TDAMError) as caught:
                await admin.get_team("team-nope")
            assert caught.value.code == 404 and caught.value.request_id.startswith("req-")
            assert caught.value.message == "team_not_found: not found: team-nope"
        async with AsyncMetadataClient(endpoint, live.key or "", service, user_key="sk-mem-nope") as stranger:
            with pytest.raises(TDAMError) as denied:
                await stranger.get_team(team["team_id"])
            assert denied.value.code == 401

    asyncio.run(run())
