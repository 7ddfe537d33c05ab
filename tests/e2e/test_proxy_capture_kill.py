"""`memhub serve` killed with SIGKILL while a proxied turn waits for a locked store: the turn is in the capture
spool, and the next server over the same data dir writes it to L0, once."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import openai

from memhub.proxy.capture import SPOOL_DIR
from memhub.store.sqlite.store import DB_FILENAME
from tests.e2e.conftest import GATEWAY_KEY, Launcher, page_all, run_cli
from tests.proxy.fake_upstream import FakeUpstream

SPACE = "svc-capture-e2e"
SESSION = "sess-kill-9"
TYPED = "Remember that the staging database is rebuilt every night."
WAIT = 600.0  # a failure bound for a busy machine, never a measure of speed


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def spooled(data_dir: Path) -> list[Path]:
    return sorted((data_dir / SPOOL_DIR).glob("run-*/*.json"))


def test_a_turn_spooled_before_a_kill_9_is_written_once_by_the_next_server(launcher: Launcher, data_dir: Path) -> None:
    env = {"MEMHUB_GATEWAY_API_KEY": GATEWAY_KEY}
    init = run_cli("init", "--data-dir", str(data_dir), "--service-id", SPACE, env=env)
    assert init.returncode == 0, init.stderr
    admin = dict(re.findall(r"(user_id|user_key|team_id|agent_id): +(\S+)", init.stdout))
    with FakeUpstream() as upstream:
        env |= {"MEMHUB_PROXY_OPENAI_BASE_URL": upstream.base_url, "MEMHUB_PROXY_OPENAI_API_KEY": "sk-up"}
        # Writers give up on the locked database quickly: the capture keeps retrying, the turn is not slowed.
        first = launcher.serve(data_dir, env={**env, "MEMHUB_DB_BUSY_TIMEOUT_MS": "100"})
        # Another writer holds the database: no capture write can land while it does.
        lock = sqlite3.connect(data_dir / DB_FILENAME, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        try:
            client = openai.OpenAI(
                api_key=admin["user_key"],
                base_url=f"{first.url}/proxy/{SPACE}/v1",
                default_headers={"x-session-id": SESSION},
                max_retries=0,
            )
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": TYPED}])
            assert reply.choices[0].message.content == "ok from upstream"  # the turn did not wait for the store
            wait_for(lambda: bool(spooled(data_dir)), "the turn never reached the capture spool")
            first.kill()
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        [left] = spooled(data_dir)
        second = launcher.serve(data_dir, env=env)
        wait_for(lambda: not spooled(data_dir), "the next server did not write the spooled turn")
        assert not left.exists()
        scope = {"team_id": admin["team_id"], "agent_id": admin["agent_id"], "user_id": admin["user_id"]}
        with second.api(service=SPACE) as api:
            messages = page_all(api, "/v3/conversation/query", {**scope, "session_id": SESSION}, "messages")
        assert [(m["role"], m["content"]) for m in messages] == [("user", TYPED), ("assistant", "ok from upstream")]
        second.stop()
        assert list((data_dir / SPOOL_DIR).iterdir()) == []  # nothing left for a third start
