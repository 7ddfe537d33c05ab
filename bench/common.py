"""Shared parts of the benchmarks: a real `memhub serve` subprocess, HTTP clients, latency stats."""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"
KEY = "mh-gw-bench-0123456789abcdefghijklmnopqrstuvwxyz"
SERVICE = "bench-svc"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    log: Path


@contextmanager
def running_server(data_dir: Path, python: str, env_extra: Mapping[str, str] | None = None) -> Iterator[Server]:
    """`memhub serve` on a free port with a configured key; always killed on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "TDAI_", "V3_", "MEMORY_"))}
    env.update({"MEMHUB_GATEWAY_API_KEY": KEY, "MEMHUB_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"})
    env.update(env_extra or {})
    port = free_port()
    log = data_dir.parent / f"{data_dir.name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [python, "-m", "memhub.cli", "serve", "--host", HOST, "--port", str(port), "--data-dir", str(data_dir)],
            env=env,
            # From the repository's root: started from bench/, `-m` would find bench/mcp.py before the mcp package.
            cwd=Path(__file__).resolve().parents[1],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = Server(proc, f"http://{HOST}:{port}", data_dir, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"memhub serve exited: {log.read_text(errors='replace')}")
            try:
                if httpx.get(f"{server.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("memhub serve did not become healthy within 60 s")
            time.sleep(0.05)
        yield server
    except BaseException:
        if proc.poll() is not None:
            print(f"memhub serve exited with {proc.returncode}", file=sys.stderr)
        tail = log.read_text(errors="replace").splitlines()[-30:]
        print("server log (tail):\n" + "\n".join(tail), file=sys.stderr)
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


def client(server: Server) -> httpx.Client:
    headers = {"authorization": f"Bearer {KEY}", "x-tdai-service-id": SERVICE, "content-type": "application/json"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=120)


def ok_data(http: Any, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """POST and return the envelope's `data`; any answer but a 2xx with code 0 stops the benchmark."""
    response = http.post(path, json=body, headers=headers or {})
    envelope = response.json()
    if not 200 <= response.status_code < 300 or envelope.get("code") != 0:
        raise RuntimeError(f"{path}: HTTP {response.status_code} {envelope}")
    return envelope.get("data")


# -- measurements ---------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


@dataclass
class Latency:
    n: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = sorted(s * 1000 for s in seconds)
        return cls(
            n=len(ms),
            mean_ms=round(statistics.fmean(ms), 3),
            p50_ms=round(percentile(ms, 0.50), 3),
            p95_ms=round(percentile(ms, 0.95), 3),
            p99_ms=round(percentile(ms, 0.99), 3),
            max_ms=round(ms[-1], 3),
        )


def git_rev() -> str | None:
    try:
        command = ["git", "describe", "--always", "--dirty"]
        out = subprocess.run(command, cwd=HERE, capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip() or None
    except OSError:
        return None


def seed_admin(http: Any, notes: Iterable[str]) -> dict[str, str]:
    """An instance admin (init-admin) with a persona and one L1 memory per note; their ids and user key."""
    admin = ok_data(http, "/v3/internal/meta/user/init-admin", {"username": "bench"})
    ids = {"team_id": admin["team_id"], "agent_id": admin["agent_id"], "user_id": admin["user_id"]}
    ok_data(http, "/v3/core/write", {**ids, "content": "## Who\nA release engineer who prefers small changes.\n" * 10})
    for content in notes:
        ok_data(http, "/v3/atomic/add", {**ids, "type": "work_fact", "content": content})
    return {**ids, "key": admin["user_key"]}


def write_result(out: Path, payload: dict[str, Any]) -> None:
    """Write a benchmark's JSON with the revision and the machine it ran on, so numbers stay comparable."""
    machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"git": git_rev(), "machine": machine, **payload}, indent=2, default=str), "utf-8")
    print(f"\nJSON: {out}")
