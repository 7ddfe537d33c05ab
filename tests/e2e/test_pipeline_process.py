"""The memory pipeline inside `memhub serve` processes: a job survives `kill -9`, and offline mode needs no LLM.

The LLM is a FakeChat (a real OpenAI-compatible HTTP server) in this test process, scripted by the
ScriptedModel of tests/pipeline/test_llm_flow.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import SCOPE, Api, Launcher, Server
from tests.pipeline.fake_llm import FakeChat, Reply
from tests.pipeline.test_llm_flow import ScriptedModel

pytestmark = pytest.mark.timeout(180)

LEASE_SECONDS = 1.0
# The fake holds the first extraction request until it stops (the test's end): the job is in flight when the
# server is killed however slowly the test gets there, never answered by a hold that ran out first.
HOLD_SECONDS = 600.0
FAST = {
    "MEMHUB_EMBEDDING_PROVIDER": "none",  # BM25 only: nothing to load at start
    "MEMHUB_PIPELINE_POLL_MS": "50",
    "MEMHUB_PIPELINE_IDLE_SECONDS": "3600",  # warm-up alone makes the first user round due
    "MEMHUB_PIPELINE_L2_DELAY_SECONDS": "0",
    "MEMHUB_PIPELINE_L2_MIN_INTERVAL_SECONDS": "0",
    "MEMHUB_PIPELINE_PERSONA_EVERY": "1",
    "MEMHUB_PIPELINE_LEASE_SECONDS": str(LEASE_SECONDS),
}
TALK = [
    {"role": "user", "content": "I'm vegetarian and I live in Berlin."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "Please always answer me in German."},
]


@pytest.fixture
def fake() -> Iterator[FakeChat]:
    with FakeChat() as running:
        yield running


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.05) -> Any:
    """Poll until `check()` is truthy; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def all_memories(api: Api) -> list[dict[str, Any]]:
    return api.ok("/v3/atomic/query", {**SCOPE, "limit": 100})["items"]


def idle(api: Api) -> dict[str, Any] | None:
    status = api.ok("/v2/pipeline/status", SCOPE)
    quiet = status["waiting_sessions"] == 0 and all(status[s]["idle"] for s in ("l1", "l2", "l3"))
    return status if quiet else None


def test_a_job_in_flight_when_the_server_is_killed_completes_once_after_restart(
    launcher: Launcher, data_dir: Path, fake: FakeChat
) -> None:
    model = ScriptedModel()
    fake.script = model

    def held(body: dict[str, Any]) -> Reply:  # a correct answer, but only after the server is dead
        answer = model.answer("extract", body)
        answer.delay = HOLD_SECONDS
        return answer

    model.fail("extract", held, times=1)
    env = {**FAST, "MEMHUB_LLM_BASE_URL": fake.base_url, "MEMHUB_LLM_MODEL": "fake-chat"}
    env["MEMHUB_LLM_TIMEOUT_MS"] = "20000"
    first = launcher.serve(data_dir, env=env, pipeline=True)
    with first.api() as api:
        ids = api.ok("/v3/conversation/add", {**SCOPE, "session_id": "s1", "messages": TALK})["accepted_ids"]
        wait_for("the extraction request", lambda: model.calls("extract"))
        running = api.ok("/v2/pipeline/status", SCOPE)["l1"]
        assert running["running"] == 1, running
    first.kill()  # SIGKILL while the fake still holds the request
    assert len(model.calls("extract")) == 1 and all_calls_held(model)

    second = launcher.serve(data_dir, env=env, pipeline=True)
    with second.api() as api:
        # The lease of the dead worker expires; this server's worker takes the job over and finishes it.
        status = wait_for("the pipeline to go idle", lambda: idle(api) if len(model.calls("persona")) else None)
        items = all_memories(api)
        jobs = api.ok("/v2/pipeline/jobs", {**SCOPE, "states": ["pending", "running", "done", "dead"]})["items"]
    contents = sorted(m["content"] for m in items)
    assert contents == sorted(f"The user said: {m['content']}" for m in TALK if m["role"] == "user")  # once each
    assert sorted(s for m in items for s in m["source_message_ids"]) == sorted([ids[0], ids[2]])
    batches = model.batches()
    assert batches == [tuple(ids), tuple(ids)]  # the fake saw the batch again, and only once more
    (l1,) = [j for j in jobs if j["kind"] == "l1"]
    assert l1["state"] == "done" and l1["attempts"] == 2  # the same job, taken over, completed once
    assert status["l1"]["dead"] == 0 and status["worker"]["running"] and status["worker"]["generator"] == "fake-chat"
    assert second.alive()


def all_calls_held(model: ScriptedModel) -> bool:
    return all(s.faulted for s in model.calls("extract"))


def test_without_an_llm_serve_turns_a_conversation_into_memories_scenes_and_a_persona(
    launcher: Launcher, data_dir: Path
) -> None:
    server: Server = launcher.serve(data_dir, env=FAST, pipeline=True)
    talk = [
        {"role": "user", "content": "I prefer green tea over coffee."},
        {"role": "assistant", "content": "Good to know!"},
        {"role": "user", "content": "My name is Alice and I work at Acme as a data engineer."},
        {"role": "user", "content": "Always answer me in English."},
        {"role": "user", "content": "我喜欢在周末去爬山。"},
    ]
    with server.api() as api:
        ids = api.ok("/v3/conversation/add", {**SCOPE, "session_id": "s1", "messages": talk})["accepted_ids"]

        def persona() -> str | None:
            if api.ok("/v3/core/count", SCOPE)["total"] == 0:
                return None
            return api.ok("/v3/core/read", SCOPE)["content"]

        text = wait_for("the persona", persona)
        status = wait_for("the pipeline to go idle", lambda: idle(api))
        items = all_memories(api)
        scenes = api.ok("/v3/scenario/ls", SCOPE)["entries"]
    assert status["worker"]["running"] and status["worker"]["generator"] == "offline"
    assert status["worker"]["jobs_failed"] == 0
    joined = " ".join(m["content"] for m in items)
    assert "tea" in joined and "English" in joined and "爬山" in joined, joined
    assert {m["type"] for m in items} >= {"persona", "instruction"}
    assert all(m["metadata"]["generated_by"] == "offline" for m in items)
    assert {s for m in items for s in m["source_message_ids"]} <= set(ids)
    assert [e for e in scenes if not e["path"].endswith("/")], "no scene file was written"
    assert "tea" in text
