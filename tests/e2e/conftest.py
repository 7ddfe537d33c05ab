"""End-to-end fixtures: `memhub serve` as a real subprocess on a free loopback port.

Every server is started with `sys.executable -m memhub.cli`, so the suite runs in whatever
virtualenv runs pytest. Output goes to files (never pipes that could fill up), every wait has
a deadline, and every server a test started is SIGKILLed in teardown.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

HOST = "127.0.0.1"
GATEWAY_KEY = "mh-gw-e2e-configured-key-0123456789abcdef"
SERVICE = "svc-e2e"
SCOPE = {"team_id": "team-e2e", "agent_id": "agent-e2e", "user_id": "user-e2e"}
KEY_PATTERN = re.compile(r"mh-gw-[A-Za-z0-9_\-]+")

# Failure bounds only (a healthy run takes a fraction): generous, so a busy 2-core machine is not a failure.
START_TIMEOUT = 120.0  # seconds until /health answers
HTTP_TIMEOUT = 10.0  # per request
STOP_TIMEOUT = 10.0
CLI_TIMEOUT = 60.0  # `memhub init` and other one-shot commands

# Names a developer's shell may carry that would change how a server under test behaves.
_SETTING_PREFIXES = ("MEMHUB_", "TDAI_", "V3_STRICT_ISOLATION", "MEMORY_MAX_BODY_BYTES", "MEMORY_TENCENTDB_ROOT")

PORT_PLACEHOLDER = "{port}"
SAME_KEY = object()  # Server.api(): use the server's own key


def free_port(host: str = HOST) -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def other_loopback() -> str:
    """127.0.0.2 where the OS routes all of 127/8 to loopback (Linux), else 127.0.0.1."""
    try:
        free_port("127.0.0.2")
    except OSError:
        return HOST
    return "127.0.0.2"


def memhub_command(*args: str) -> list[str]:
    """`memhub …` through the interpreter that runs the tests."""
    return [sys.executable, "-m", "memhub.cli", *args]


def serve_args(data_dir: Path, *extra: str) -> list[str]:
    """`serve` on a placeholder port (see Launcher.start) over `data_dir`."""
    return ["serve", "--host", HOST, "--port", PORT_PLACEHOLDER, "--data-dir", str(data_dir), *extra]


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without memhub/TDAI settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTING_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a one-shot `memhub` command to completion (bounded by CLI_TIMEOUT)."""
    return subprocess.run(
        memhub_command(*args),
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )


def keys_in(text: str) -> list[str]:
    """Every gateway-key-looking token in a piece of output."""
    return KEY_PATTERN.findall(text)


class ApiError(AssertionError):
    """A call that was expected to succeed returned an error envelope."""


@dataclass
class Api:
    """A small HTTP client for one gateway: Bearer + service id headers, envelope checks."""

    base_url: str
    key: str | None
    service: str = SERVICE
    timeout: float = HTTP_TIMEOUT
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.base_url, timeout=self.timeout)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        h = {"x-tdai-service-id": self.service, "content-type": "application/json"}
        if self.key is not None:
            h["authorization"] = f"Bearer {self.key}"
        h.update(extra or {})
        return h

    def post(self, path: str, body: Any = None, *, headers: Mapping[str, str] | None = None) -> httpx.Response:
        return self.http.post(path, json={} if body is None else body, headers=self.headers(headers))

    def ok(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        """POST and require a success envelope; returns `data`."""
        response = self.post(path, body, **kwargs)
        envelope = response.json()
        if response.status_code != 200 or envelope.get("code") != 0:
            raise ApiError(f"{path} -> HTTP {response.status_code}: {envelope}")
        return envelope.get("data")

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Server:
    """One running `memhub` process."""

    proc: subprocess.Popen[bytes]
    port: int
    data_dir: Path | None
    key: str | None
    stdout_path: Path
    stderr_path: Path
    host: str = HOST

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def api(self, key: str | object | None = SAME_KEY, service: str = SERVICE) -> Api:
        """A client using this server's key unless another key (or None: no Authorization) is given."""
        return Api(self.url, self.key if key is SAME_KEY else key, service)  # type: ignore[arg-type]

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flush, no checkpoint."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not go in time."""
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()


def _wait_ready(server: Server, deadline: float) -> str | None:
    """None once /health answers 200; else why it will not (the process exited)."""
    while time.monotonic() < deadline:
        if not server.alive():
            return server.stderr or f"exited with {server.proc.returncode}"
        try:
            if httpx.get(f"{server.url}/health", timeout=1.0).status_code == 200:
                return None
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return f"/health did not answer within {START_TIMEOUT}s"


class Launcher:
    """Starts servers for one test and kills every one of them afterwards."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.servers: list[Server] = []
        self._count = 0

    def start(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        data_dir: Path | None = None,
        key: str | None = GATEWAY_KEY,
        wait: bool = True,
        host: str = HOST,
        pipeline: bool = False,
    ) -> Server:
        """Run `memhub <args>` where "{port}" in args or env values becomes a fresh free port.

        `key` is what clients of this server send by default; `host` is where they reach it. A
        port lost to another process between picking and binding is retried with a new one.
        A `serve` runs without its memory pipeline unless `pipeline=True` (or the env sets it):
        a background worker extracting memories from the test's own messages would change what
        the test counts and reads at a moment the test does not control.
        """
        if args and args[0] == "serve" and not pipeline:
            env = {"MEMHUB_PIPELINE_ENABLED": "0", **(env or {})}
        failure = ""
        for _attempt in range(3):
            port = free_port(host)
            argv = [a.replace(PORT_PLACEHOLDER, str(port)) for a in args]
            full_env = server_env({k: v.replace(PORT_PLACEHOLDER, str(port)) for k, v in (env or {}).items()})
            self._count += 1
            out = self.workdir / f"server-{self._count}.out"
            err = self.workdir / f"server-{self._count}.err"
            with out.open("wb") as stdout, err.open("wb") as stderr:
                proc = subprocess.Popen(
                    memhub_command(*argv), env=full_env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL
                )
            server = Server(proc, port, data_dir, key, out, err, host)
            self.servers.append(server)
            if not wait:
                return server
            problem = _wait_ready(server, time.monotonic() + START_TIMEOUT)
            if problem is None:
                return server
            server.kill()
            failure = problem
            if "address already in use" not in problem.lower():
                break
        raise AssertionError(f"memhub {' '.join(args)} did not start: {failure}")

    def serve(
        self,
        data_dir: Path,
        *,
        key: str | None = GATEWAY_KEY,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        pipeline: bool = False,
    ) -> Server:
        """`memhub serve` on a free port over `data_dir`; `key` is configured via MEMHUB_GATEWAY_API_KEY."""
        full_env = dict(env or {})
        if key is not None:
            full_env["MEMHUB_GATEWAY_API_KEY"] = key
        args = serve_args(data_dir, *extra_args)
        return self.start(args, env=full_env, data_dir=data_dir, key=key, pipeline=pipeline)

    def close(self) -> None:
        for server in self.servers:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                server.kill()


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    """Start real server processes; all of them are killed when the test ends."""
    logs = tmp_path / "logs"
    logs.mkdir()
    launched = Launcher(logs)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data dir path that does not exist yet (the server creates it)."""
    return tmp_path / "data"


@pytest.fixture
def server(launcher: Launcher, data_dir: Path) -> Server:
    """One server with a configured key and lax isolation."""
    return launcher.serve(data_dir)


def assert_in_order(text: str, *lines: str) -> None:
    """Each of `lines` is in `text` (a server's log), after the one before it."""
    at = 0
    for line in lines:
        found = text.find(line, at)
        assert found >= 0, f"{line!r} not in the log after position {at}:\n{text}"
        at = found + len(line)


def page_all(api: Api, path: str, body: Mapping[str, Any], list_key: str, page: int = 100) -> list[dict[str, Any]]:
    """Every row of a paged query (`limit`/`offset`), in server order."""
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        data = api.ok(path, {**body, "limit": page, "offset": offset})
        batch = data[list_key]
        rows.extend(batch)
        offset += len(batch)
        if len(batch) < page or offset >= data["total"]:
            return rows
