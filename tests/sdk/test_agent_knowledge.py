"""The kit's knowledge tools against a real gateway with a built wiki: listed from /v3/tools/list, called through
/v3/tools/call, and only for a caller who may use the resource."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from memhub.sdk.agent import AgentConfig, MemoryAgent
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.knowledge.tools_kit import WIKI_TOOLS, WikiApi, text_file
from tests.meta.metadata_client import serve
from tests.meta.org import Member, Org


@dataclass
class Wiki:
    gw: Gateway
    alice: Member
    bob: Member
    team: str
    wiki_id: str


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wiki]:
    """A gateway on a socket with one built wiki of alice's team; bob is not a member."""
    built = build_gateway(tmp_path_factory.mktemp("kit-knowledge"))
    with serve(built) as gw:
        org = Org(gw)
        alice, bob = org.users("alice", "bob")
        team = org.team(alice, "docs")
        files = [text_file("relay.md", "# Relay\n\nThe relay exists because of the zephyr constraint.\n")]
        wiki_id = WikiApi(gw.client, org.headers(alice)).make(team, "relay docs", files)
        yield Wiki(gw, alice, bob, team, wiki_id)
    built.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    built.close()


def agent_for(wiki: Wiki, member: Member) -> MemoryAgent:
    return MemoryAgent.connect(
        str(wiki.gw.client.base_url),
        wiki.gw.key or "",
        SERVICE,
        team_id=wiki.team,
        agent_id="default",
        user_id=member.user_id,
        session_id="s-k",
        user_key=member.key,
        knowledge_ids=[wiki.wiki_id],
        config=AgentConfig(tool_timeout=5.0),
    )


def test_knowledge_tools_are_listed_and_called(wiki: Wiki) -> None:
    with agent_for(wiki, wiki.alice) as agent:
        openai = agent.tool_definitions("openai")
        names = [t["function"]["name"] for t in openai]
        suffix = "__" + wiki.wiki_id
        assert names[:3] == ["tdai_memory_search", "tdai_conversation_search", "tdai_read_file"]
        assert names[3:] == [f"{tool}{suffix}" for tool in WIKI_TOOLS]
        search = next(t for t in openai if t["function"]["name"] == f"search{suffix}")
        assert "query" in search["function"]["parameters"]["required"]
        anthropic = agent.tool_definitions("anthropic")
        assert [t["name"] for t in anthropic] == names
        answer = agent.dispatch(f"search{suffix}", {"query": "zephyr"})
        found = json.loads(answer)
        assert found["count"] == 1 and "relay" in found["results"][0]["path"]
        missing = agent.dispatch(f"search{suffix}", {})
        assert missing.startswith(f"invalid arguments for search{suffix}: ") and "query" in missing


def test_a_caller_who_may_not_use_the_wiki_gets_no_tools(wiki: Wiki) -> None:
    agent = MemoryAgent.connect(
        str(wiki.gw.client.base_url),
        wiki.gw.key or "",
        SERVICE,
        team_id="team-of-bob",
        agent_id="default",
        user_id=wiki.bob.user_id,
        session_id="s-b",
        user_key=wiki.bob.key,
        knowledge_ids=[wiki.wiki_id],
    )
    with agent:
        names = [t["function"]["name"] for t in agent.tool_definitions("openai")]
        assert names == ["tdai_memory_search", "tdai_conversation_search", "tdai_read_file"]
        assert agent.dispatch(f"search__{wiki.wiki_id}", {"query": "zephyr"}).startswith("unknown tool")
