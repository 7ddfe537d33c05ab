"""`Connection`: the client-side settings of `memhub mcp`, `memhub hooks` and the adapters — flags over the
environment, what is missing named with its flag and variable, and the ids a user key implies read from a real
gateway over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from memhub.sdk import ParamError, TDAMError
from memhub.sdk.connection import DEFAULT_URL, Connection
from tests.conftest import Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.meta.org import Org

SERVICE = "svc-a"


def test_flags_win_over_the_environment_and_blanks_count_as_not_given() -> None:
    env = {"MEMHUB_URL": "http://env:1", "MEMHUB_API_KEY": "k-env", "MEMHUB_TEAM_ID": "t-env", "MEMHUB_USER_ID": " "}
    conn = Connection.from_env(env, url="http://flag:2", team_id=None, agent_id="  ")
    assert conn.url == "http://flag:2"
    assert conn.key == "k-env"
    assert conn.team_id == "t-env"
    assert conn.agent_id is None and conn.user_id is None
    assert Connection.from_env({}).url == DEFAULT_URL


def test_require_names_each_missing_flag_with_its_variable() -> None:
    conn = Connection.from_env({}, key="k", service_id="s", team_id="t")
    with pytest.raises(ParamError) as caught:
        conn.require()
    message = str(caught.value)
    assert "--agent-id (or MEMHUB_AGENT_ID)" in message and "--user-id (or MEMHUB_USER_ID)" in message
    assert "--team-id" not in message and "--key" not in message
    with pytest.raises(ParamError):
        conn.memory_client()


def test_environment_round_trips_through_from_env() -> None:
    conn = Connection(url="http://h:1", key="k", service_id="s", team_id="t", agent_id="a", user_id="u")
    assert Connection.from_env(conn.environment()) == conn
    assert "MEMHUB_USER_KEY" not in conn.environment()


def test_a_user_key_is_the_personal_key_and_the_gateway_key_needs_one_beside_it() -> None:
    assert Connection(key="sk-mem-abc").personal_key == "sk-mem-abc"
    assert Connection(key="gateway-secret").personal_key is None
    assert Connection(key="gateway-secret").knowledge_client() is None
    assert Connection(key="gateway-secret", user_key="sk-mem-u").personal_key == "sk-mem-u"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    built = build_gateway(tmp_path_factory.mktemp("conn"))
    with serve(built) as gateway:
        yield gateway
    built.close()


def url_of(gw: Gateway) -> str:
    return str(gw.client.base_url).rstrip("/")  # type: ignore[attr-defined]


def test_resolve_fills_the_user_its_only_team_and_that_teams_only_agent(live: Gateway) -> None:
    org = Org(live, service=SERVICE)
    conn = Connection(url=url_of(live), key=org.admin.key, service_id=SERVICE)
    resolved = asyncio.run(conn.resolve())
    assert (resolved.user_id, resolved.team_id, resolved.agent_id) == (
        org.admin.user_id,
        org.team_id,
        org.admin_agent_id,
    )
    assert resolved.missing() == []

    async def recall() -> object:
        client = resolved.memory_client(session_id="s-1")
        try:
            return await client.recall("anything")
        finally:
            await client.close()

    assert isinstance(asyncio.run(recall()), dict)  # the resolved ids are ones the key may act as


def test_resolve_keeps_given_ids_and_leaves_an_ambiguous_team_unset(live: Gateway) -> None:
    org = Org(live, service="svc-b")
    org.team(org.admin, "second")
    conn = Connection(url=url_of(live), key=org.admin.key, service_id="svc-b", agent_id="given-agent")
    resolved = asyncio.run(conn.resolve())
    assert resolved.user_id == org.admin.user_id
    assert resolved.team_id is None  # two teams: which one is the caller's to say
    assert resolved.agent_id == "given-agent"
    assert resolved.missing() == ["--team-id"]


def test_resolve_refuses_a_key_the_gateway_does_not_know(live: Gateway) -> None:
    Org(live, service="svc-c")
    conn = Connection(url=url_of(live), key="sk-mem-not-a-real-key", service_id="svc-c")
    with pytest.raises(TDAMError):
        asyncio.run(conn.resolve())


def test_resolve_with_the_gateway_key_asks_nothing(live: Gateway) -> None:
    conn = Connection(url="http://127.0.0.1:9", key="gateway-secret", service_id="s")  # nothing listens on 9
    assert asyncio.run(conn.resolve()) == conn
