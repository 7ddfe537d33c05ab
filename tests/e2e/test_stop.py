"""SIGTERM drains the requests in flight of a real `memhub serve` within its stop budget, and a bad budget is
refused at start.

A search is kept in flight by the fake embedding provider (a real local HTTP server) holding its query until the
test releases it: what happens to the request then depends on the test's next move, never on how fast the
machine is. The server's log tells where the stop is.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SCOPE, Launcher, Server, assert_in_order, run_cli
from tests.retrieval.fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(300)

WAIT_S = 60.0  # a failure bound only, far below the waits a stop must not make (below)
DIM = 16
QUERY = "when is the deploy"
SHUTTING_DOWN = "Shutting down"
FINISHED = "Finished server process"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_dim=DIM) as server:
        yield server


def provider_env(fake: FakeOpenAI, budget_s: int) -> dict[str, str]:
    return {
        "MEMHUB_EMBEDDING_PROVIDER": "openai",
        "MEMHUB_EMBEDDING_BASE_URL": fake.base_url,
        "MEMHUB_EMBEDDING_MODEL": "fake-embed",
        "MEMHUB_EMBEDDING_DIMENSIONS": str(DIM),
        "MEMHUB_EMBEDDING_QUERY_TIMEOUT_MS": "600000",  # a held query waits for the test, not for a timeout
        "MEMHUB_SHUTDOWN_TIMEOUT_SECONDS": str(budget_s),
    }


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_S} s"
        time.sleep(0.05)


def one_message_embedded(server: Server) -> str:
    """Adds a message and waits until it has its vector (the embedder is ready for queries then); its id."""
    body = {**SCOPE, "session_id": "s1", "messages": [{"role": "user", "content": "the deploy moved to Friday"}]}
    with server.api() as api:
        [accepted] = api.ok("/v3/conversation/add", body)["accepted_ids"]
    wait_until(lambda: httpx.get(f"{server.url}/health").json()["embedding_backlog"] == 0, "the embedding")
    return str(accepted)


class SearchInFlight:
    """A search sent from another thread, held at the provider's query call until the fake releases it."""

    def __init__(self, server: Server, fake: FakeOpenAI) -> None:
        self.response: httpx.Response | None = None
        self.error: httpx.HTTPError | None = None
        fake.mode = "held"
        body = {**SCOPE, "query": QUERY, "limit": 5}
        self._thread = threading.Thread(target=self._send, args=(server, body), daemon=True)
        self._thread.start()
        wait_until(lambda: any(QUERY in str(r.inputs) for r in list(fake.requests)), "the query at the provider")

    def _send(self, server: Server, body: dict[str, Any]) -> None:
        with server.api() as api:
            try:
                self.response = api.post("/v3/conversation/search", body)
            except httpx.HTTPError as exc:
                self.error = exc

    def result(self) -> httpx.Response | httpx.HTTPError | None:
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "the search never ended"
        return self.response if self.response is not None else self.error


def exited(server: Server, *, cancelled: bool = False) -> str:
    """The server, sent SIGTERM, must exit by itself. Its log, with no traceback but, if a request was
    `cancelled`, the one uvicorn logs for it."""
    assert server.proc.wait(timeout=WAIT_S) in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM
    log = server.stderr
    assert log.count("Traceback") == int(cancelled), log
    if cancelled:
        assert "CancelledError: Task cancelled, timeout graceful shutdown exceeded" in log, log
    return log


def test_a_request_in_flight_at_sigterm_is_answered(launcher: Launcher, data_dir: Path, fake: FakeOpenAI) -> None:
    # A budget of 120 s gives the request up to 60 s: it is released as soon as the stop has begun.
    server = launcher.serve(data_dir, env=provider_env(fake, 120))
    accepted = one_message_embedded(server)
    search = SearchInFlight(server, fake)
    server.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "Waiting for connections to close" in server.stderr, "the stop")
    fake.release()
    response = search.result()
    assert isinstance(response, httpx.Response) and response.status_code == 200, response
    assert [m["id"] for m in response.json()["data"]["messages"]] == [accepted]
    log = exited(server)
    assert_in_order(log, SHUTTING_DOWN, "stopped within the stop budget", FINISHED)
    assert "Cancel" not in log


def test_a_request_past_half_the_budget_does_not_hold_the_stop(
    launcher: Launcher, data_dir: Path, fake: FakeOpenAI
) -> None:
    # The provider holds the search's query until after the exit, and the server would wait 10 minutes for it:
    # an exit within WAIT_S shows the stop cancelled the request after half its 2 s budget. Its thread is still
    # in the call, so the store is left open under it; the message stored before is there after a restart.
    env = provider_env(fake, 2)
    server = launcher.serve(data_dir, env=env)
    accepted = one_message_embedded(server)
    search = SearchInFlight(server, fake)
    server.proc.send_signal(signal.SIGTERM)
    log = exited(server, cancelled=True)
    answer = search.result()  # uvicorn's own 500 for a cancelled request: never an acknowledgement
    assert isinstance(answer, httpx.Response) and answer.status_code == 500, answer
    left = "stopping with requests cancelled at the end of their drain not finished: left to the process's exit"
    assert_in_order(log, SHUTTING_DOWN, "Cancel 1 running task(s)", left, FINISHED)
    assert "stopped within the stop budget" not in log

    fake.mode = "ok"
    fake.release()
    again = launcher.serve(data_dir, env=env)
    with again.api() as api:
        assert [m["id"] for m in api.ok("/v3/conversation/query", SCOPE)["messages"]] == [accepted]


@pytest.mark.parametrize(("value", "rule"), [("0", "greater than 0"), ("601", "less than or equal to 600")])
def test_a_bad_stop_budget_is_refused_at_start(data_dir: Path, value: str, rule: str) -> None:
    done = run_cli("serve", "--data-dir", str(data_dir), env={"MEMHUB_SHUTDOWN_TIMEOUT_SECONDS": value})
    assert done.returncode != 0
    assert f"MEMHUB_SHUTDOWN_TIMEOUT_SECONDS\n  Input should be {rule}" in done.stderr, done.stderr
