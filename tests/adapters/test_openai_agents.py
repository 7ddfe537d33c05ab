"""`MemhubSession` with the real OpenAI Agents SDK against a real gateway; the model is a fake OpenAI-compatible
server on a local socket (the only fake: the provider)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import Session, SessionSettings
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from memhub.adapters.openai_agents import MemhubSession
from memhub.sdk import TransportError
from memhub.sdk.connection import Connection
from memhub.sdk.memory import MemoryClient
from tests.adapters.conftest import Served, closed_port
from tests.proxy.fake_upstream import FakeUpstream, Reply


@pytest.fixture
def connection(served: Served) -> Connection:
    return served.connection()


@pytest.fixture
def session(connection: Connection) -> Iterator[MemhubSession]:
    s = MemhubSession("chat-1", connection)
    yield s
    s.close()


@pytest.fixture
def model() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    fake.start()
    yield fake
    fake.stop()


def l0(connection: Connection, session_id: str = "chat-1") -> list[dict[str, Any]]:
    c = connection
    with MemoryClient(c.url, c.key or "", c.service_id, team_id=c.team_id or "", agent_id=c.agent_id or "",
                      user_id=c.user_id or "") as client:  # fmt: skip
        return client.query_conversation(session_id=session_id, limit=100)["messages"]


LONG = "".join(f"line {i}: the quick brown fox\n" for i in range(900))  # ~26k characters, four messages
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "Hi, I'm Ada"},
    {"role": "system", "content": "  be brief  "},
    {"role": "user", "content": [{"type": "input_text", "text": "part one"}, {"type": "input_text", "text": ""}]},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Hello Ada!", "annotations": []}]},
    {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\": \"tea\"}", "id": "fc_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": LONG},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "Zm9v" * 2000},
    {"role": "assistant", "content": ""},
]  # fmt: skip


def test_items_come_back_exactly_as_added(session: MemhubSession) -> None:
    async def go() -> list[Any]:
        await session.add_items(ITEMS[:4])
        await session.add_items(ITEMS[4:])
        return await session.get_items()

    assert asyncio.run(go()) == ITEMS


def test_the_conversation_is_readable_text_in_l0(session: MemhubSession, connection: Connection) -> None:
    asyncio.run(session.add_items(ITEMS[:6]))
    rows = l0(connection)
    texts = [(r["role"], r["content"]) for r in rows]
    assert texts[:5] == [
        ("user", "Hi, I'm Ada"),
        ("user", "  be brief  "),
        ("user", "part one\n\n"),
        ("assistant", "Hello Ada!"),
        ("assistant", '{"q": "tea"}'),
    ]
    assert "".join(content for role, content in texts[5:]) == LONG
    assert {role for role, _ in texts[5:]} == {"user"} and len(texts) == 9


def test_limit_pop_and_clear(session: MemhubSession, connection: Connection) -> None:
    async def go() -> None:
        await session.add_items(ITEMS)
        assert await session.get_items(limit=2) == ITEMS[-2:]
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=100) == ITEMS
        assert await session.pop_item() == ITEMS[-1]
        assert await session.pop_item() == ITEMS[-2]
        assert await session.pop_item() == ITEMS[-3]  # four messages, all removed
        assert await session.get_items() == ITEMS[:-3]
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None

    asyncio.run(go())
    assert l0(connection) == []


def test_the_settings_limit_applies(connection: Connection) -> None:
    s = MemhubSession("chat-lim", connection, session_settings=SessionSettings(limit=1))
    try:
        asyncio.run(s.add_items(ITEMS[:3]))
        assert asyncio.run(s.get_items()) == ITEMS[2:3]
    finally:
        s.close()


def test_other_writers_turns_are_plain_items(session: MemhubSession, connection: Connection) -> None:
    c = connection
    with MemoryClient(c.url, c.key or "", c.service_id, team_id=c.team_id or "", agent_id=c.agent_id or "",
                      user_id=c.user_id or "") as client:  # fmt: skip
        client.add_conversation([{"role": "user", "content": "captured by a hook"}], session_id="chat-1")
    asyncio.run(session.add_items(ITEMS[:1]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "captured by a hook"}, ITEMS[0]]


def test_sessions_and_users_are_apart(session: MemhubSession, connection: Connection) -> None:
    other_user = MemhubSession("chat-1", replace(connection, user_id="user-other"))
    other_session = MemhubSession("chat-2", connection)
    try:
        asyncio.run(session.add_items(ITEMS[:1]))
        assert asyncio.run(other_user.get_items()) == []
        assert asyncio.run(other_session.get_items()) == []
        asyncio.run(other_session.clear_session())
        assert asyncio.run(session.get_items()) == ITEMS[:1]
    finally:
        other_user.close()
        other_session.close()


def test_gateway_down_raises(connection: Connection) -> None:
    down = MemhubSession("s", replace(connection, url=f"http://127.0.0.1:{closed_port()}", timeout=5.0))
    try:
        with pytest.raises(TransportError):
            asyncio.run(down.add_items(ITEMS[:1]))
    finally:
        down.close()


def test_is_an_agents_sdk_session(session: MemhubSession) -> None:
    assert isinstance(session, Session)


def test_runner_keeps_the_conversation_across_runs(
    connection: Connection, model: FakeUpstream, session: MemhubSession
) -> None:
    @function_tool
    def lookup(q: str) -> str:
        """Look a preference up."""
        return f"Ada likes {q}"

    def agent() -> Agent[Any]:
        # A client per run: each run has an event loop of its own, and an OpenAI client belongs to one loop.
        client = AsyncOpenAI(base_url=model.base_url, api_key="sk-fake", max_retries=0)
        return Agent(name="helper", instructions="Be brief.", tools=[lookup],
                     model=OpenAIResponsesModel(model="fake-model", openai_client=client))  # fmt: skip

    config = RunConfig(tracing_disabled=True)

    model.script(Reply(text="Nice to meet you, Ada."))
    first = Runner.run_sync(agent(), "My name is Ada.", session=session, run_config=config)
    assert first.final_output == "Nice to meet you, Ada."

    # The second run, in a session object of its own (as a new process would have), calls the tool first.
    again = MemhubSession("chat-1", connection)
    try:
        model.script(Reply(text="", tool_calls=[("call_7", "lookup", {"q": "tea"})]), Reply(text="You like tea."))
        second = asyncio.run(Runner.run(agent(), "What do I like?", session=again, run_config=config))
        assert second.final_output == "You like tea."
        history = asyncio.run(again.get_items())
    finally:
        again.close()

    sent = [r.json for r in model.turns("/v1/responses")]
    assert len(sent) == 3
    second_input = json.dumps(sent[1]["input"])
    assert "My name is Ada." in second_input and "Nice to meet you, Ada." in second_input
    assert '"call_7"' in json.dumps(sent[2]["input"]) and "Ada likes tea" in json.dumps(sent[2]["input"])
    kinds = [item.get("type") or item.get("role") for item in history]
    assert kinds == ["user", "message", "user", "function_call", "function_call_output", "message"]
    assert history[4]["output"] == "Ada likes tea"
    texts = [r["content"] for r in l0(connection)]
    assert texts[:2] == ["My name is Ada.", "Nice to meet you, Ada."] and texts[-1] == "You like tea."


def test_without_the_agents_sdk_the_import_says_which_extra_to_install() -> None:
    code = "import sys; sys.modules['agents'] = None\nimport memhub.adapters.openai_agents"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "pip install 'memhub[openai-agents]'" in run.stderr
