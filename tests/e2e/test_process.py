"""`memhub serve` / `memhub init` as real processes: keys, settings, crashes and concurrency."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import (
    GATEWAY_KEY,
    PORT_PLACEHOLDER,
    SCOPE,
    SERVICE,
    START_TIMEOUT,
    Api,
    Launcher,
    Server,
    keys_in,
    memhub_command,
    other_loopback,
    page_all,
    run_cli,
    serve_args,
    server_env,
)

pytestmark = pytest.mark.timeout(300)

WRITER_SCRIPT = Path(__file__).with_name("writer_client.py")


def _one_message(text: str = "hello from e2e") -> dict[str, Any]:
    return {**SCOPE, "session_id": "s1", "messages": [{"role": "user", "content": text}]}


def _files_bytes(directory: Path) -> dict[str, bytes]:
    """Every file of the data dir (db, -wal, -shm, anything else) by name."""
    return {p.name: p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _assert_key_absent(directory: Path, key: str, *, written: str | None = None) -> None:
    """No byte sequence of the data dir (db, -wal, -shm …) is the clear key.

    `written`, a text stored through the API, is the positive control: the scan must find it,
    or it would not be looking where the data is.
    """
    files = _files_bytes(directory)
    assert any(name.endswith(".db") for name in files), files.keys()
    for name, content in files.items():
        assert key.encode() not in content, f"clear gateway key found in {name}"
    if written is not None:
        assert any(written.encode() in content for content in files.values()), "the scan missed stored data"


# -- keys: first start, second start, init, insecure -----------------------------------------


def test_first_start_prints_key_once_and_stores_only_its_hash(launcher: Launcher, data_dir: Path) -> None:
    first = launcher.serve(data_dir, key=None)
    printed = keys_in(first.stdout)
    assert len(printed) == 1, first.stdout
    key = printed[0]
    assert len(key) >= len("mh-gw-") + 40  # 32 random bytes, url-safe base64
    assert key not in first.stderr, "the key must not reach the logs"

    with first.api(key) as api:
        added = api.ok("/v3/conversation/add", _one_message())
        assert len(added["accepted_ids"]) == 1
        wrong = api.post("/v3/conversation/count", SCOPE, headers={"authorization": "Bearer mh-gw-not-the-key"})
        assert wrong.status_code == 401
        assert wrong.json()["message"] == "Unauthorized: invalid token"
    # While it runs (WAL not checkpointed) and after a hard kill: the clear key is nowhere.
    _assert_key_absent(data_dir, key, written="hello from e2e")
    first.kill()
    _assert_key_absent(data_dir, key, written="hello from e2e")

    second = launcher.start(serve_args(data_dir), data_dir=data_dir, key=key)
    assert keys_in(second.stdout) == [], second.stdout
    assert keys_in(second.stderr) == []
    with second.api() as api:
        assert api.ok("/v3/conversation/count", SCOPE)["total"] == 1
    with second.api("mh-gw-guess") as api:
        assert api.post("/v3/conversation/count", SCOPE).status_code == 401
    with second.api(None) as api:
        missing = api.post("/v3/conversation/count", SCOPE)
        assert missing.status_code == 401
        assert missing.json()["message"] == "Unauthorized: missing Bearer token"
    _assert_key_absent(data_dir, key, written="hello from e2e")


def test_init_creates_the_data_dir_once_and_serve_uses_its_key(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "fresh"
    first = run_cli("init", "--data-dir", str(data_dir))
    assert first.returncode == 0, first.stderr
    assert data_dir.is_dir()
    printed = keys_in(first.stdout)
    assert len(printed) == 1, first.stdout
    key = printed[0]
    _assert_key_absent(data_dir, key)

    again = run_cli("init", "--data-dir", str(data_dir))
    assert again.returncode == 0, again.stderr
    assert "already initialised" in again.stdout.lower()
    assert keys_in(again.stdout + again.stderr) == []

    server = launcher.start(serve_args(data_dir), data_dir=data_dir, key=key)
    assert keys_in(server.stdout) == []
    with server.api() as api:
        api.ok("/v3/conversation/add", _one_message("after init"))
        assert api.ok("/v3/conversation/count", SCOPE)["total"] == 1
    _assert_key_absent(data_dir, key, written="after init")


@pytest.mark.parametrize("name", ["MEMHUB_DATA_DIR", "TDAI_DATA_DIR", "MEMORY_TENCENTDB_ROOT"])
def test_init_takes_the_data_dir_from_the_environment(tmp_path: Path, name: str) -> None:
    data_dir = tmp_path / "from-env"
    result = run_cli("init", env={name: str(data_dir)})
    assert result.returncode == 0, result.stderr
    assert (data_dir / "memhub.db").is_file()
    assert len(keys_in(result.stdout)) == 1


def test_init_rotate_key_replaces_the_key(launcher: Launcher, data_dir: Path) -> None:
    (old,) = keys_in(run_cli("init", "--data-dir", str(data_dir)).stdout)
    rotated = run_cli("init", "--data-dir", str(data_dir), "--rotate-key")
    assert rotated.returncode == 0, rotated.stderr
    (new,) = keys_in(rotated.stdout)
    assert new != old
    server = launcher.start(serve_args(data_dir), data_dir=data_dir, key=new)
    assert keys_in(server.stdout) == []
    with server.api() as api:
        api.ok("/v3/conversation/count", SCOPE)
    with server.api(old) as api:
        assert api.post("/v3/conversation/count", SCOPE).status_code == 401
    _assert_key_absent(data_dir, new)
    for name, content in _files_bytes(data_dir).items():
        assert old.encode() not in content, name


def test_insecure_no_auth_accepts_any_bearer(launcher: Launcher, data_dir: Path) -> None:
    server = launcher.serve(data_dir, key=None, extra_args=["--insecure-no-auth"])
    assert keys_in(server.stdout + server.stderr) == []
    for token in ("anything", "mh-gw-made-up", "x"):
        with server.api(token) as api:
            api.ok("/v3/conversation/add", _one_message(f"written with {token}"))
    with server.api("whatever") as api:
        assert api.ok("/v3/conversation/count", SCOPE)["total"] == 3
        no_service = api.post("/v3/conversation/count", SCOPE, headers={"x-tdai-service-id": ""})
        assert no_service.status_code == 401
    with server.api(None) as api:  # layer 2 still wants some Bearer
        assert api.post("/v3/conversation/count", SCOPE).status_code == 401
    health = httpx.get(f"{server.url}/health", timeout=5).json()
    assert health["auth"] == "disabled"


# -- settings from the environment -----------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "strict_value"),
    [
        (
            {
                "host": "TDAI_GATEWAY_HOST",
                "port": "TDAI_GATEWAY_PORT",
                "data": "TDAI_DATA_DIR",
                "key": "TDAI_GATEWAY_API_KEY",
                "strict": "V3_STRICT_ISOLATION",
                "body": "MEMORY_MAX_BODY_BYTES",
            },
            "on",
        ),
        (
            {
                "host": "MEMHUB_HOST",
                "port": "MEMHUB_PORT",
                "data": "MEMHUB_DATA_DIR",
                "key": "MEMHUB_GATEWAY_API_KEY",
                "strict": "MEMHUB_STRICT_ISOLATION",
                "body": "MEMHUB_MAX_BODY_BYTES",
            },
            "true",
        ),
    ],
    ids=["tdai-names", "memhub-names"],
)
def test_environment_names_are_honoured(
    launcher: Launcher, tmp_path: Path, names: dict[str, str], strict_value: str
) -> None:
    data_dir = tmp_path / "env-data"
    host = other_loopback()  # not the default, so binding there shows the host setting is read
    env = {
        names["host"]: host,
        names["port"]: PORT_PLACEHOLDER,
        names["data"]: str(data_dir),
        names["key"]: GATEWAY_KEY,
        names["strict"]: strict_value,
        names["body"]: "4096",
    }
    server = launcher.start(["serve"], env=env, data_dir=data_dir, key=GATEWAY_KEY, host=host)
    assert (data_dir / "memhub.db").is_file()  # the data dir came from the environment
    assert keys_in(server.stdout) == []  # a configured key is never generated or printed

    with server.api() as api:
        api.ok("/v3/conversation/add", _one_message())
        strict = api.post("/v3/conversation/add", {"session_id": "s1", "messages": [{"role": "user", "content": "x"}]})
        assert strict.status_code == 422, strict.text
        envelope = strict.json()
        assert envelope["code"] == 422
        assert "team_id" in envelope["message"] and "user_id" in envelope["message"]
        partial = api.post("/v3/conversation/count", {"team_id": "t"})
        assert partial.status_code == 422
        # /v2 stays lax whatever the strict setting.
        api.ok("/v2/conversation/add", {"session_id": "s1", "messages": [{"role": "user", "content": "lax"}]})
        # The body limit came from the environment too.
        big = api.post("/v3/conversation/add", _one_message("y" * 6000))
        assert big.status_code == 413, big.text
    with server.api("not-the-key") as api:
        assert api.post("/v3/conversation/count", SCOPE).status_code == 401


def test_strict_isolation_is_off_unless_a_truthy_value(launcher: Launcher, data_dir: Path) -> None:
    server = launcher.serve(data_dir, env={"V3_STRICT_ISOLATION": "off"})
    with server.api() as api:
        api.ok("/v3/conversation/add", {"messages": [{"role": "user", "content": "no ids at all"}]})
        assert api.ok("/v3/conversation/count", {})["total"] == 1


# -- durability: SIGKILL while a writer is sending -------------------------------------------


@dataclass
class Acked:
    """Everything the server acknowledged to the writer (and nothing it did not)."""

    messages: list[str] = field(default_factory=list)
    atomics: list[str] = field(default_factory=list)
    scenes: list[str] = field(default_factory=list)
    core_revision: int = -1
    requests: int = 0
    error: BaseException | None = None

    def kinds(self) -> tuple[int, int, int, int]:
        return len(self.messages), len(self.atomics), len(self.scenes), self.core_revision + 1


MESSAGE_BATCH = 8


def _write_until_failure(api: Api, acked: Acked, round_no: int, stop: threading.Event) -> None:
    """Cycle through the four write kinds until the server goes away (or `stop` is set)."""
    i = 0
    try:
        while not stop.is_set():
            kind = i % 4
            if kind == 0:
                batch = [
                    {"role": "user", "content": f"round {round_no} batch {i} message {n} 记忆 durability"}
                    for n in range(MESSAGE_BATCH)
                ]
                data = api.ok("/v3/conversation/add", {**SCOPE, "session_id": f"s{i % 3}", "messages": batch})
                acked.messages.extend(data["accepted_ids"])
            elif kind == 1:
                data = api.ok("/v3/atomic/add", {**SCOPE, "type": "work_fact", "content": f"fact {round_no}-{i}"})
                acked.atomics.append(data["id"])
            elif kind == 2:
                path = f"dur/r{round_no}/scene-{i}.md"
                api.ok("/v3/scenario/create", {**SCOPE, "path": path, "content": f"scene {i}", "summary": f"s{i}"})
                acked.scenes.append(path)
            else:
                revision = round_no * 100_000 + i
                api.ok("/v3/core/write", {**SCOPE, "content": f"persona revision {revision}"})
                acked.core_revision = revision
            acked.requests += 1
            i += 1
    except (httpx.HTTPError, OSError) as exc:  # the server was killed under us
        acked.error = exc


def _ids(api: Api, path: str, list_key: str) -> list[str]:
    return [row["id"] for row in page_all(api, path, SCOPE, list_key)]


def test_sigkill_mid_write_loses_no_acknowledged_write(launcher: Launcher, data_dir: Path) -> None:
    rounds: list[Acked] = []
    server = launcher.serve(data_dir)
    for round_no in range(2):
        acked = Acked()
        stop = threading.Event()
        with server.api() as api:
            writer = threading.Thread(target=_write_until_failure, args=(api, acked, round_no, stop), daemon=True)
            writer.start()
            deadline = time.monotonic() + 120
            while (acked.requests < 60 or min(acked.kinds()) == 0) and time.monotonic() < deadline:
                assert writer.is_alive(), acked.error
                time.sleep(0.01)
            assert writer.is_alive(), "the writer must still be sending when the server is killed"
            server.kill()
            writer.join(timeout=15)
            stop.set()
            assert not writer.is_alive()
        assert acked.error is not None, "the writer should have been cut off by the kill"
        assert min(acked.kinds()) > 0, acked.kinds()
        rounds.append(acked)
        server = launcher.serve(data_dir)  # same data dir, new port

    with server.api() as api:
        stored_messages = _ids(api, "/v3/conversation/query", "messages")
        stored_atomics = _ids(api, "/v3/atomic/query", "items")
        stored_scenes = {e["path"] for e in api.ok("/v3/scenario/ls", SCOPE)["entries"]}
        persona = api.ok("/v3/core/read", SCOPE)["content"]
        count_messages = api.ok("/v3/conversation/count", SCOPE)["total"]
        count_atomics = api.ok("/v3/atomic/count", SCOPE)["total"]

    acked_messages = [m for r in rounds for m in r.messages]
    acked_atomics = [a for r in rounds for a in r.atomics]
    acked_scenes = [s for r in rounds for s in r.scenes]
    assert len(set(stored_messages)) == len(stored_messages) == count_messages
    assert set(acked_messages) <= set(stored_messages), "an acknowledged message was lost"
    # Only a request in flight at the kill may have committed without an acknowledgement.
    assert count_messages - len(acked_messages) <= len(rounds) * MESSAGE_BATCH
    assert len(set(stored_atomics)) == len(stored_atomics) == count_atomics
    assert set(acked_atomics) <= set(stored_atomics), "an acknowledged memory was lost"
    assert count_atomics - len(acked_atomics) <= len(rounds)
    assert set(acked_scenes) <= stored_scenes, "an acknowledged scene was lost"
    # Core writes are sequential: what is stored is the last acknowledged revision or a later one.
    assert persona is not None
    stored_revision = re.fullmatch(r"persona revision (\d+)", persona)  # the persona as stored
    assert stored_revision is not None, persona[:200]
    assert int(stored_revision.group(1)) >= rounds[-1].core_revision


# -- concurrency -----------------------------------------------------------------------------


def _assert_exact(api: Api, messages: list[str], atomics: list[str], sessions: dict[str, int]) -> None:
    assert len(set(messages)) == len(messages), "the server acknowledged a message id twice"
    assert len(set(atomics)) == len(atomics), "the server acknowledged a memory id twice"
    assert api.ok("/v3/conversation/count", SCOPE)["total"] == len(messages)
    assert api.ok("/v3/atomic/count", SCOPE)["total"] == len(atomics)
    stored = _ids(api, "/v3/conversation/query", "messages")
    assert len(stored) == len(set(stored)) == len(messages)
    assert set(stored) == set(messages)
    stored_atomics = _ids(api, "/v3/atomic/query", "items")
    assert sorted(stored_atomics) == sorted(atomics)
    for session, expected in sessions.items():
        assert api.ok("/v3/conversation/count", {**SCOPE, "session_id": session})["total"] == expected


def test_parallel_threads_write_exactly(server: Server) -> None:
    threads, requests, batch, atomics_each = 8, 8, 25, 5

    def work(worker: int) -> tuple[list[str], list[str]]:
        messages: list[str] = []
        atomics: list[str] = []
        with server.api() as api:
            for i in range(requests):
                body = {
                    **SCOPE,
                    "session_id": f"thread-{worker}",
                    "messages": [{"role": "user", "content": f"t{worker} r{i} m{n} 并发写入"} for n in range(batch)],
                }
                messages += api.ok("/v3/conversation/add", body)["accepted_ids"]
                if i < atomics_each:
                    fact = {**SCOPE, "type": "episodic", "content": f"t{worker}"}
                    atomics.append(api.ok("/v3/atomic/add", fact)["id"])
        return messages, atomics

    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(work, range(threads), timeout=60))
    messages = [m for ms, _ in results for m in ms]
    atomics = [a for _, ats in results for a in ats]
    assert len(messages) == threads * requests * batch
    assert len(atomics) == threads * atomics_each
    with server.api() as api:
        _assert_exact(api, messages, atomics, {f"thread-{w}": requests * batch for w in range(threads)})
        hits = api.ok("/v3/conversation/search", {**SCOPE, "query": "并发写入", "limit": 100})["messages"]
        assert len(hits) == 100


def _spawn_writers(urls: list[str], key: str, workers: int, requests: int, batch: int, atomics: int) -> list[dict]:
    procs = []
    for worker in range(workers):
        job = {
            "url": urls[worker % len(urls)],
            "key": key,
            "service": SERVICE,
            "scope": SCOPE,
            "worker": worker,
            "requests": requests,
            "batch": batch,
            "atomics": atomics,
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WRITER_SCRIPT), json.dumps(job)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=server_env(),
            )
        )
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            results.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    return results


def test_parallel_client_processes_write_exactly(server: Server) -> None:
    workers, requests, batch, atomics = 4, 10, 20, 5
    results = _spawn_writers([server.url], GATEWAY_KEY, workers, requests, batch, atomics)
    messages = [m for r in results for m in r["messages"]]
    atomic_ids = [a for r in results for a in r["atomics"]]
    assert len(messages) == workers * requests * batch
    with server.api() as api:
        _assert_exact(api, messages, atomic_ids, {f"proc-{w}": requests * batch for w in range(workers)})


def test_two_servers_on_one_data_dir(launcher: Launcher, data_dir: Path) -> None:
    """Replicas started together on a fresh data dir agree on one key, printed once, and share writes."""
    args = serve_args(data_dir)
    a = launcher.start(args, data_dir=data_dir, key=None, wait=False)
    b = launcher.start(args, data_dir=data_dir, key=None, wait=False)
    deadline = time.monotonic() + START_TIMEOUT
    for srv in (a, b):
        while True:
            assert srv.alive(), srv.stderr
            try:
                if httpx.get(f"{srv.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "replica did not start"
            time.sleep(0.05)
    printed = keys_in(a.stdout) + keys_in(b.stdout)
    assert len(printed) == 1, (a.stdout, b.stdout)
    key = printed[0]
    results = _spawn_writers([a.url, b.url], key, 4, 6, 20, 3)
    messages = [m for r in results for m in r["messages"]]
    atomic_ids = [x for r in results for x in r["atomics"]]
    for srv in (a, b):
        with Api(srv.url, key) as api:
            _assert_exact(api, messages, atomic_ids, {f"proc-{w}": 6 * 20 for w in range(4)})


def test_sigterm_stops_the_server_and_keeps_the_data(launcher: Launcher, data_dir: Path) -> None:
    server = launcher.serve(data_dir)
    with server.api() as api:
        ids = api.ok("/v3/conversation/add", _one_message())["accepted_ids"]
    server.proc.terminate()
    # SIGTERM alone ends it (however long a busy machine takes); a server that ignored it would be killed by
    # the launcher at the end and never pass here.
    assert server.proc.wait(timeout=120) in (0, -signal.SIGTERM)  # uvicorn shuts down, then re-raises it
    again = launcher.serve(data_dir)
    with again.api() as api:
        assert [m["id"] for m in api.ok("/v3/conversation/query", SCOPE)["messages"]] == ids


@pytest.mark.parametrize("entry", ["module", "console-script"])
def test_cli_entry_points(entry: str) -> None:
    """`python -m memhub.cli` (what these tests run) and the `memhub` script beside the interpreter."""
    if entry == "module":
        command = memhub_command("--help")
    else:
        script = Path(sys.executable).with_name("memhub")
        if not script.exists():
            pytest.skip("no memhub console script next to this interpreter")
        command = [str(script), "--help"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=server_env(), check=False)
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout and "init" in result.stdout
