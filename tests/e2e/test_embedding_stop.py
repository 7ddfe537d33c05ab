"""SIGTERM stops a real `memhub serve` that has an embedding backlog; nothing is lost and the backlog resumes.

The backlog is durable (stored records without a vector yet), so a stop need not wait for it. Each test checks
through /health that records are still waiting when SIGTERM arrives, follows the stop through the server's log
(the time it takes is measured in bench/embedding.py), restarts on the same data dir, reads every message back
and waits for the backlog to finish.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SCOPE, Api, Launcher, Server, assert_in_order, page_all
from tests.retrieval.fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(600)

EXIT_WAIT_S = 60.0  # a failure bound only: a server that waited for what it should not would never exit
DRAIN_WAIT_S = 300.0  # e5 embeds ~10 messages/s on one free core; a busy machine takes several times longer
SESSION = 100  # the most messages one conversation/add takes
BATCH = 32  # the embedder's batch (MEMHUB_EMBEDDING_BATCH_SIZE's default)
FAKE_DIM = 32
# What the server's log says, in order, as it stops (uvicorn's lines and memhub.runtime's).
SHUTTING_DOWN = "Shutting down"
STOPPED = "stopped within the stop budget: the workers are done and the store is closed"
LEFT_RUNNING = "not finished: left to the process's exit, the store open"
FINISHED = "Finished server process"


def add_messages(api: Api, count: int) -> list[str]:
    """`count` distinct messages in sessions of 100; their ids in order."""
    ids: list[str] = []
    for first in range(0, count, SESSION):
        turns = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: the deploy of build {i * 7}"}
            for i in range(first, min(first + SESSION, count))
        ]
        body = {**SCOPE, "session_id": f"s{first // SESSION}", "messages": turns}
        ids += api.ok("/v3/conversation/add", body)["accepted_ids"]
    return ids


def health(server: Server) -> dict[str, Any]:
    return dict(httpx.get(f"{server.url}/health", timeout=10).json())


def stop_with_backlog(server: Server, *, at_least: int = 1) -> str:
    """SIGTERM while at least `at_least` records wait for embedding; the process must exit by itself. Its log."""
    waiting = health(server)["embedding_backlog"]
    assert waiting >= at_least, f"{waiting} records waiting: the test would prove nothing"
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=EXIT_WAIT_S) in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM
    log = server.stderr
    assert "Traceback" not in log, log
    return log


def assert_all_readable_and_drained(server: Server, ids: list[str]) -> None:
    with server.api() as api:
        stored = page_all(api, "/v3/conversation/query", SCOPE, "messages")
    assert sorted(m["id"] for m in stored) == sorted(ids)
    deadline = time.monotonic() + DRAIN_WAIT_S
    while (state := health(server))["embedding_backlog"]:
        assert state["embedding"]["state"] != "error", state
        assert time.monotonic() < deadline, f"backlog not finished after restart: {state}"
        time.sleep(0.2)


def test_sigterm_stops_the_local_model_between_slices(launcher: Launcher, data_dir: Path) -> None:
    # e5 embeds a few hundred messages in tens of seconds: most are still waiting when SIGTERM follows the adds.
    # The budget is far above one slice (256 tokens, about a second) but below the whole backlog, so the log
    # saying the worker stopped in time, with records still queued after the restart, shows it stopped
    # between slices on any machine.
    env = {"MEMHUB_SHUTDOWN_TIMEOUT_SECONDS": "120"}
    server = launcher.serve(data_dir, env=env)
    with server.api() as api:
        ids = add_messages(api, 300)
    log = stop_with_backlog(server, at_least=4 * BATCH)
    assert_in_order(log, SHUTTING_DOWN, STOPPED, FINISHED)
    assert LEFT_RUNNING not in log

    again = launcher.serve(data_dir)
    state = health(again)
    assert state["embedding"]["model"] == "local:multilingual-e5-small-q4"
    assert state["embedding_backlog"] > 0  # the stop did not embed the backlog first
    assert_all_readable_and_drained(again, ids)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_dim=FAKE_DIM) as server:
        yield server


def test_sigterm_while_the_provider_holds_a_batch(launcher: Launcher, data_dir: Path, fake: FakeOpenAI) -> None:
    # The provider answers the batch in flight only after the server has exited: an exit at all shows the stop
    # waited neither for the call nor for its 10-minute timeout. The worker is left in the call, so the store
    # stays open under it, and the batch's records stay queued.
    env = {
        "MEMHUB_EMBEDDING_PROVIDER": "openai",
        "MEMHUB_EMBEDDING_BASE_URL": fake.base_url,
        "MEMHUB_EMBEDDING_MODEL": "fake-embed",
        "MEMHUB_EMBEDDING_DIMENSIONS": str(FAKE_DIM),
        "MEMHUB_EMBEDDING_TIMEOUT_MS": "600000",
    }
    server = launcher.serve(data_dir, env=env)
    fake.mode = "held"
    with server.api() as api:
        ids = add_messages(api, 150)
    deadline = time.monotonic() + EXIT_WAIT_S
    while not any(r.path.endswith("/embeddings") and r.mode == "held" for r in list(fake.requests)):
        assert time.monotonic() < deadline, "the embedder never called the provider"
        time.sleep(0.05)
    log = stop_with_backlog(server)
    left = "embedding worker still in a provider call: left behind, its batch stays queued"
    assert_in_order(log, SHUTTING_DOWN, left, f"stopping with an embedding provider call {LEFT_RUNNING}", FINISHED)
    assert STOPPED not in log

    again = launcher.serve(data_dir, env=env)  # its first call is held too, until the count below is read
    assert health(again)["embedding_backlog"] == len(ids)  # nothing was stored from the held batch
    fake.mode = "ok"
    fake.release()
    assert_all_readable_and_drained(again, ids)
