"""examples/: the agent loop run exactly as a user runs it, and its fake LLM over real HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from examples.fake_llm import MEMORY_TOOL, FakeLLMServer, keywords, start_fake_llm

from tests.e2e.conftest import free_port, server_env

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DEMO_DEADLINE = 170.0  # seconds for the whole demo (it takes about 5; a failure bound)
# A developer's shell may point the example at a real model; the test runs the offline demo.
_LLM_SETTINGS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")

MEMORY_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": MEMORY_TOOL,
            "description": "Search memories.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
]
MEMORIES = (
    "<relevant-memories>\n\n"
    "- [persona] User prefers green tea, never coffee after 2 pm.\n"
    "- [episodic] User booked flights to Lisbon for the company offsite on 14 March.\n\n"
    "</relevant-memories>"
)


def _run_example(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """`python examples/agent_loop.py …` in a clean environment, its whole process group killed at the deadline."""
    env = server_env({"TMPDIR": str(tmp)})  # the demo's gateway data dir lands under pytest's tmp
    for name in _LLM_SETTINGS:
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "agent_loop.py"), *args],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # so a hung demo's gateway (a grandchild) goes with it
    )
    try:
        out, err = proc.communicate(timeout=DEMO_DEADLINE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the demo did not finish in {DEMO_DEADLINE} s\n--- stdout\n{out}\n--- stderr\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One full offline run of the demo, shared by the assertions below."""
    # Recall may take long on a busy machine; a turn that gave up on it would show no memories.
    result = _run_example("--recall-deadline", "60", tmp=tmp_path_factory.mktemp("demo"))
    assert result.returncode == 0, f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    return result


def _split(stdout: str) -> tuple[str, str]:
    """The output before and after the gateway was stopped."""
    before, marker, after = stdout.partition("\n[stop] ")
    assert marker, f"no [stop] line in the output:\n{stdout}"
    return before, after


def _lines(text: str, prefix: str) -> list[str]:
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def test_demo_recalls_a_memory_and_answers_from_it(demo: subprocess.CompletedProcess[str]) -> None:
    healthy, _ = _split(demo.stdout)
    counts = [int(m) for m in re.findall(r"^\[recall\] (\d+) memor", healthy, re.MULTILINE)]
    assert len(counts) == 3 and all(n >= 1 for n in counts), healthy
    # Turn 1 is answered from the injected memories alone: no tool before its answer.
    turn1 = healthy.split("== turn 2 ==")[0]
    assert "[tool]" not in turn1
    assert "green tea" in _lines(turn1, "[assistant] ")[0]


def test_demo_dispatches_a_memory_tool_call(demo: subprocess.CompletedProcess[str]) -> None:
    healthy, _ = _split(demo.stdout)
    calls = _lines(healthy, "[tool] tdai_memory_search(")
    assert len(calls) == 1
    assert calls[0].endswith(")") and json.loads(calls[0][:-1])["query"]
    results = _lines(healthy, "[tool] -> ")
    assert len(results) == 1 and results[0].startswith("Found "), results
    assert not results[0].startswith("memory unavailable")
    turn2 = healthy.split("== turn 2 ==")[1].split("== turn 3 ==")[0]
    assert "deploy" in _lines(turn2, "[assistant] ")[0]


def test_demo_captures_every_turn(demo: subprocess.CompletedProcess[str]) -> None:
    healthy, after = _split(demo.stdout)
    assert [int(n) for n in _lines(healthy, "[capture] queued ")] == [2, 2, 2]
    assert "[capture] flushed: 6 messages in L0 (all sent: True)" in healthy
    # After the stop the turns are still queued, to be sent when the gateway is back.
    assert [int(n) for n in _lines(after, "[capture] queued ")] == [2, 2]
    stats = json.loads(_lines(after, "[stats] ")[0])
    assert stats["capture"]["sent"] == 3 and stats["capture"]["pending"] >= 1
    assert stats["capture"]["dropped"] == 0 and stats["capture"]["rejected"] == 0


def test_demo_keeps_answering_with_the_gateway_down(demo: subprocess.CompletedProcess[str]) -> None:
    _, after = _split(demo.stdout)
    degraded = _lines(after, "[degraded] recall: ")
    assert len(degraded) == 2 and all("memories" in d for d in degraded), after
    assert all(n == "0" for n in re.findall(r"^\[recall\] (\d+) memor", after, re.MULTILINE))
    results = _lines(after, "[tool] -> ")
    assert results and all(r.startswith("memory unavailable: ") for r in results), results
    answers = _lines(after, "[assistant] ")
    assert len(answers) == 2 and all(a.strip() for a in answers), after
    assert "[error]" not in demo.stdout and "Traceback" not in demo.stderr


def test_demo_endpoint_needs_a_key(tmp_path: Path) -> None:
    result = _run_example("--endpoint", "http://127.0.0.1:9", tmp=tmp_path)
    assert result.returncode == 2 and "--api-key" in result.stderr


# --------------------------------------------------------------------------- the fake LLM


@pytest.fixture
def fake() -> Iterator[tuple[FakeLLMServer, httpx.Client]]:
    server, base_url = start_fake_llm()
    client = httpx.Client(base_url=base_url, timeout=10.0)
    try:
        yield server, client
    finally:
        client.close()
        server.stop()


def _complete(client: httpx.Client, messages: list[dict[str, Any]], tools: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "any-model", "messages": messages}
    if tools is not None:
        body["tools"] = tools
    response = client.post("/chat/completions", json=body, headers={"authorization": "Bearer sk-whatever"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    data = response.json()
    _assert_completion(data)
    return data


def _assert_completion(data: dict[str, Any]) -> None:
    """The fields and types of an OpenAI `chat.completion` object."""
    assert re.fullmatch(r"chatcmpl-[A-Za-z0-9-]+", data["id"])
    assert data["object"] == "chat.completion"
    assert isinstance(data["created"], int) and abs(data["created"] - time.time()) < 60
    assert data["model"] == "any-model"
    (choice,) = data["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] in ("stop", "tool_calls")
    message = choice["message"]
    assert message["role"] == "assistant"
    if choice["finish_reason"] == "tool_calls":
        assert message["content"] is None and message["tool_calls"]
        for call in message["tool_calls"]:
            assert call["type"] == "function" and isinstance(call["id"], str) and call["id"]
            assert isinstance(call["function"]["name"], str)
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
    else:
        assert isinstance(message["content"], str) and message["content"] and "tool_calls" not in message
    usage = data["usage"]
    assert all(isinstance(usage[k], int) and usage[k] > 0 for k in ("prompt_tokens", "completion_tokens"))
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_fake_llm_lists_its_model(fake: tuple[FakeLLMServer, httpx.Client]) -> None:
    _, client = fake
    data = client.get("/models").json()
    assert data["object"] == "list"
    assert [m["object"] for m in data["data"]] == ["model"] and data["data"][0]["id"]


def test_fake_llm_answers_from_injected_memories(fake: tuple[FakeLLMServer, httpx.Client]) -> None:
    _, client = fake
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"{MEMORIES}\n\nWhich tea?"}]
    data = _complete(client, messages, MEMORY_TOOLS)
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["choices"][0]["message"]["content"] == (
        "From what I remember: [persona] User prefers green tea, never coffee after 2 pm."
    )


def test_fake_llm_calls_the_memory_tool_when_the_context_does_not_answer(
    fake: tuple[FakeLLMServer, httpx.Client],
) -> None:
    _, client = fake
    messages = [{"role": "user", "content": f"{MEMORIES}\n\nCan I go ahead deploying tomorrow?"}]
    data = _complete(client, messages, MEMORY_TOOLS)
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = data["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == MEMORY_TOOL
    assert json.loads(call["function"]["arguments"]) == {"query": "ahead deploying tomorrow", "limit": 3}
    # Scripted from the request: the same request gets the same call id.
    again = _complete(client, messages, MEMORY_TOOLS)
    assert again["choices"][0]["message"]["tool_calls"][0]["id"] == call["id"]
    assert again["id"] != data["id"]


def test_fake_llm_without_tools_or_context_does_not_know(fake: tuple[FakeLLMServer, httpx.Client]) -> None:
    _, client = fake
    data = _complete(client, [{"role": "user", "content": "Where is the offsite?"}])
    assert data["choices"][0]["message"]["content"] == "I don't know yet."
    statement = _complete(client, [{"role": "user", "content": "My desk is room 4.12."}], MEMORY_TOOLS)
    assert statement["choices"][0]["message"]["content"] == "Noted."


def test_fake_llm_answers_from_a_tool_result(fake: tuple[FakeLLMServer, httpx.Client]) -> None:
    server, client = fake
    call = {"id": "call_1", "type": "function", "function": {"name": MEMORY_TOOL, "arguments": '{"query": "x"}'}}
    history = [
        {"role": "user", "content": "Can I deploy on Friday?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    found = "Found 2 matching memories:\n- **[instruction]** (score: 0.863) No deploys on Fridays.\n- **[persona]** x"
    data = _complete(client, [*history, {"role": "tool", "tool_call_id": "call_1", "content": found}], MEMORY_TOOLS)
    assert data["choices"][0]["message"]["content"] == "I looked it up in memory: [instruction] No deploys on Fridays."

    down = "memory unavailable: gateway marked down, retrying in 30 s"
    data = _complete(client, [*history, {"role": "tool", "tool_call_id": "call_1", "content": down}], MEMORY_TOOLS)
    content = data["choices"][0]["message"]["content"]
    assert down in content and "don't know" in content

    nothing = {"role": "tool", "tool_call_id": "call_1", "content": "No matching memories found."}
    data = _complete(client, [*history, nothing])
    assert "found nothing" in data["choices"][0]["message"]["content"]
    # Every completion request was recorded, in order, as sent.
    assert [r["messages"][-1]["role"] for r in server.requests] == ["tool", "tool", "tool"]
    assert server.requests[-1]["messages"][-1] == nothing


def test_fake_llm_refuses_what_it_cannot_answer(fake: tuple[FakeLLMServer, httpx.Client]) -> None:
    server, client = fake
    cases = [
        (client.post("/chat/completions", content=b"{not json"), 400, None),
        (client.post("/chat/completions", json={"model": "m", "messages": []}), 400, "messages"),
        (
            client.post("/chat/completions", json={"messages": [{"role": "user", "content": "hi?"}], "stream": True}),
            400,
            "stream",
        ),
        (client.post("/completions", json={}), 404, None),
        (client.get("/nothing"), 404, None),
    ]
    for response, status, param in cases:
        assert response.status_code == status
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and error["message"] and error["param"] == param
    assert server.requests == []


def test_fake_llm_keywords_rule() -> None:
    assert keywords("Which tea do I prefer?") == ["tea", "prefer"]
    assert keywords("Can I go ahead deploying the billing service, the BILLING one?") == [
        "ahead",
        "deploying",
        "billing",
        "service",
        "one",
    ]


def test_fake_llm_runs_as_a_script(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "fake.out"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "fake_llm.py"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 120  # a failure bound: a busy machine may take a while
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1.0).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the fake LLM did not answer in 120 s"
            time.sleep(0.05)
        body = {"model": "m", "messages": [{"role": "user", "content": "Where is the offsite?"}], "tools": MEMORY_TOOLS}
        data = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=10.0).json()
        assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == MEMORY_TOOL
        assert f"listening on http://127.0.0.1:{port}/v1" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(10)
