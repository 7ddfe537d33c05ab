"""KnowledgeClient / AsyncKnowledgeClient: `/v3/tools/list` and `/v3/tools/call`, client side and against a
real gateway with a built wiki (uvicorn on a socket; nothing mocked on the server side).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from memhub.sdk import AsyncKnowledgeClient, KnowledgeClient, ParamError, TDAMError
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.knowledge.tools_kit import CJK, WIKI_TOOLS, WikiApi, text_file
from tests.meta.metadata_client import Recorder, serve
from tests.meta.org import Member, Org

ENDPOINT = "http://127.0.0.1:8420"
Client = KnowledgeClient | AsyncKnowledgeClient


def invoke(result: Any) -> Any:
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


class Wire(httpx.MockTransport):
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json={"code": 0, "message": "ok", "request_id": "req-1", "data": {"ok": True}})


@pytest.fixture(params=[KnowledgeClient, AsyncKnowledgeClient], ids=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> type[Client]:
    return request.param  # type: ignore[no-any-return]


# -- client side ---------------------------------------------------------------------------------------
def test_requests_and_headers(kind: type[Client]) -> None:
    wire = Wire()
    client = kind(
        ENDPOINT, "sk-gw", "svc-1", user_key="sk-mem-u", team_id="t-1", agent_id="agt-1", user_id="u-1", transport=wire
    )
    assert invoke(client.tools_list("wiki-abcdefgh")) == {"ok": True}
    assert invoke(client.tools_list("wiki-abcdefgh", language="zh")) == {"ok": True}
    assert invoke(client.tools_call("wiki-abcdefgh", "search", {"query": "q"})) == {"ok": True}
    assert invoke(client.tools_call("wiki-abcdefgh", "list_pages")) == {"ok": True}
    assert invoke(client.tools_block("t-1", agent_id="agt-1")) == {"ok": True}
    sent = [(r.url.path, json.loads(r.content)) for r in wire.requests]
    assert sent == [
        ("/v3/tools/list", {"knowledge_id": "wiki-abcdefgh"}),
        ("/v3/tools/list", {"knowledge_id": "wiki-abcdefgh", "language": "zh"}),
        ("/v3/tools/call", {"knowledge_id": "wiki-abcdefgh", "tool_name": "search", "params": {"query": "q"}}),
        ("/v3/tools/call", {"knowledge_id": "wiki-abcdefgh", "tool_name": "list_pages", "params": {}}),
        ("/v3/knowledge/tools-block", {"team_id": "t-1", "agent_id": "agt-1"}),
    ]
    headers = wire.requests[-1].headers
    assert headers["authorization"] == "Bearer sk-gw" and headers["x-tdai-service-id"] == "svc-1"
    assert headers["x-tdai-user-key"] == "sk-mem-u" and headers["content-type"] == "application/json"
    assert (headers["x-tdai-team-id"], headers["x-tdai-agent-id"], headers["x-tdai-user-id"]) == ("t-1", "agt-1", "u-1")
    invoke(client.close())

    bare = kind(ENDPOINT, "sk-gw", "svc-1", user_key="sk-mem-u", transport=wire)
    invoke(bare.tools_list("wiki-abcdefgh"))
    assert not {"x-tdai-team-id", "x-tdai-agent-id", "x-tdai-user-id"} & set(wire.requests[-1].headers)
    invoke(bare.close())


def test_guards(kind: type[Client]) -> None:
    wire = Wire()
    for user_key in (None, "", "  "):
        with pytest.raises(ParamError, match="user_key must be provided"):
            kind(ENDPOINT, "sk-gw", "svc-1", user_key=user_key, transport=wire)
    with pytest.raises(ParamError, match="service_id must be provided"):
        kind(ENDPOINT, "sk-gw", "", user_key="sk-mem-u")
    client = kind(ENDPOINT, "sk-gw", "svc-1", user_key="sk-mem-u", transport=wire)
    with pytest.raises(ParamError, match="params must be a dict"):
        invoke(client.tools_call("wiki-abcdefgh", "search", ["query"]))  # type: ignore[arg-type]
    assert wire.requests == []
    invoke(client.close())


def test_async_client_mirrors_the_sync_one() -> None:
    for name in ("tools_list", "tools_call", "tools_block"):
        sync, async_ = getattr(KnowledgeClient, name), getattr(AsyncKnowledgeClient, name)
        assert inspect.signature(sync).parameters == inspect.signature(async_).parameters
        assert inspect.iscoroutinefunction(async_) and not inspect.iscoroutinefunction(sync)


# -- against the real gateway ------------------------------------------------------------------------------
@dataclass
class Wiki:
    gw: Gateway
    org: Org
    alice: Member
    bob: Member
    team: str
    wiki_id: str

    @property
    def endpoint(self) -> str:
        return str(self.gw.client.base_url)


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wiki]:
    """A gateway on a socket with one built wiki of alice's team; bob is not a member."""
    built = build_gateway(tmp_path_factory.mktemp("sdk-knowledge"))
    with serve(built) as gw:
        org = Org(gw)
        alice, bob = org.users("alice", "bob")
        team = org.team(alice, "docs")
        files = [text_file("relay.md", "# Relay\n\nThe relay exists because of the zephyr constraint.\n")]
        wiki_id = WikiApi(gw.client, org.headers(alice)).make(team, "relay docs", files)
        yield Wiki(gw, org, alice, bob, team, wiki_id)
    built.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    built.close()


async def settle(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def round_trip(wiki: Wiki, kind: type[Client]) -> None:
    recorder = Recorder()
    member = kind(
        wiki.endpoint,
        wiki.gw.key or "",
        SERVICE,
        user_key=wiki.alice.key,
        team_id=wiki.team,
        user_id=wiki.alice.user_id,
        transport=recorder,
    )
    listing = await settle(member.tools_list(wiki.wiki_id))
    assert (listing["knowledge_id"], listing["type"], listing["name"]) == (wiki.wiki_id, "wiki", "relay docs")
    assert listing["status"] == "ready" and [t["name"] for t in listing["tools"]] == list(WIKI_TOOLS)
    assert listing["tools"][1]["params"]["query"]["required"] is True
    chinese = await settle(member.tools_list(wiki.wiki_id, language="zh"))
    assert all(CJK.search(t["description"]) for t in chinese["tools"])
    found = await settle(member.tools_call(wiki.wiki_id, "search", {"query": "zephyr"}))
    assert found["count"] == 1 and found["results"][0]["path"]
    info = await settle(member.tools_call(wiki.wiki_id, "get_info"))
    assert info["wiki_id"] == wiki.wiki_id and info["service_id"] == SERVICE
    assert recorder.sent[-1].headers["x-tdai-team-id"] == wiki.team
    assert recorder.sent[-1].headers["x-tdai-user-id"] == wiki.alice.user_id

    # A tool-level failure is data; protocol errors are TDAMError with the server's code and request id.
    with pytest.raises(TDAMError) as unknown:
        await settle(member.tools_call(wiki.wiki_id, "no_such_tool", {}))
    assert unknown.value.code == 403 and "unknown tool" in unknown.value.message
    assert unknown.value.request_id.startswith("req-")
    with pytest.raises(TDAMError) as bad_params:
        await settle(member.tools_call(wiki.wiki_id, "search", {}))
    assert bad_params.value.code == 400
    with pytest.raises(TDAMError) as bad_id:
        await settle(member.tools_list("not-a-knowledge-id"))
    assert bad_id.value.code == 400
    await settle(member.close())

    outsider = kind(wiki.endpoint, wiki.gw.key or "", SERVICE, user_key=wiki.bob.key)
    with pytest.raises(TDAMError) as hidden:
        await settle(outsider.tools_list(wiki.wiki_id))
    assert (hidden.value.code, hidden.value.message) == (404, "knowledge resource not found")
    await settle(outsider.close())
    forged = kind(wiki.endpoint, wiki.gw.key or "", SERVICE, user_key="sk-mem-not-a-key")
    with pytest.raises(TDAMError) as denied:
        await settle(forged.tools_call(wiki.wiki_id, "search", {"query": "zephyr"}))
    assert denied.value.code == 401
    await settle(forged.close())


def test_sync_client_against_a_live_gateway(wiki: Wiki) -> None:
    asyncio.run(round_trip(wiki, KnowledgeClient))


def test_async_client_against_a_live_gateway(wiki: Wiki) -> None:
    asyncio.run(round_trip(wiki, AsyncKnowledgeClient))
