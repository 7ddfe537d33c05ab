#!/usr/bin/env python3
"""Load and crash benchmark: many clients on one gateway, then kill -9, restart and account for every write.

Starts `memhub serve` as a subprocess (default configuration: pipeline and embedding workers on) over a
temporary data dir, then:

  1. load: --clients threads for --seconds mix `conversation/add` (each with an idempotency key; one add in five
     is sent a second time, as a client retrying after a lost reply would), `conversation/search` and
     `conversation/query` over 8 users × 2 agents. Every non-2xx answer and every transport error is an error.
  2. crash: the clients go on adding while the server is killed with SIGKILL mid-burst. Adds that got a reply are
     acknowledged; adds cut off by the kill are in doubt.
  3. restart: the same data dir is served again; every in-doubt add and a sample of acknowledged ones are retried
     with their idempotency keys. A retry of an acknowledged add must return the first call's ids.
  4. audit: every session is read back page by page. Every acknowledged message must be there with its content,
     and no content (each is unique) may appear twice.

Prints Markdown tables and writes JSON to bench/results/load.json. Exits non-zero when any error, lost write or
duplicate is found.

    python bench/load.py                  # 32 clients, 60 s
    python bench/load.py --quick          # 8 clients, 5 s
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from common import HERE, Latency, Server, client, running_server, write_result

DEFAULT_OUT = HERE / "results" / "load.json"
USERS = [f"load-user-{i}" for i in range(8)]
AGENTS = ["load-agent-a", "load-agent-b"]
TEAM = "load-team"
RETRY_SHARE = 0.2  # of adds sent twice with the same idempotency key
RETRY_AFTER_RESTART = 200  # acknowledged adds re-sent after the restart
WORDS = [
    "coffee",
    "tea",
    "hiking",
    "museum",
    "adoption",
    "painting",
    "kids",
    "guitar",
    "budget",
    "deadline",
    "release",
    "incident",
    "database",
    "backup",
    "migration",
    "python",
    "rust",
    "garden",
    "marathon",
    "flight",
    "hotel",
    "dinner",
    "birthday",
    "sister",
    "manager",
    "promotion",
    "book",
    "concert",
    "camping",
    "recipe",
    "allergy",
    "doctor",
    "appointment",
    "invoice",
    "refund",
    "contract",
    "meeting",
]


@dataclass
class Add:
    """One conversation/add as sent: enough to resend it byte for byte and to find its messages again."""

    key: str
    body: dict[str, Any]
    contents: list[str]
    ids: list[str] | None = None  # set once a reply acknowledged it


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    retry_mismatches: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, op: str, seconds: float) -> None:
        with self.lock:
            self.latencies[op].append(seconds)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors[what] += 1


def _scope(worker: int) -> dict[str, str]:
    return {"team_id": TEAM, "user_id": USERS[worker % len(USERS)], "agent_id": AGENTS[(worker // 8) % 2]}


def _new_add(worker: int, n: int, rng: random.Random) -> Add:
    contents = []
    for j in range(rng.randint(1, 5)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        contents.append(f"w{worker} n{n} m{j} {uuid.uuid4().hex[:12]} {words}")
    key = f"load-{worker}-{n}-{uuid.uuid4().hex[:8]}"
    body = {
        **_scope(worker),
        "session_id": f"load-session-{worker}",
        "idempotency_key": key,
        "messages": [{"role": "user" if j % 2 == 0 else "assistant", "content": c} for j, c in enumerate(contents)],
    }
    return Add(key, body, contents)


def _post(http: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(f"/v3/{path}", json=body)
    if response.status_code != 200:
        raise RuntimeError(f"{path}: HTTP {response.status_code}: {response.text[:200]}")
    return response.json()["data"]


class Worker(threading.Thread):
    """One client: its own connection, its own session, a fixed scope."""

    def __init__(self, index: int, server: Server, stop: threading.Event, tally: Tally, seed: int) -> None:
        super().__init__(daemon=True)
        self.index, self.server, self.stop, self.tally = index, server, stop, tally
        self.rng = random.Random(seed * 1000 + index)
        self.adds: list[Add] = []
        self.in_doubt: list[Add] = []
        self.adds_only = False
        self.crashing = False  # transport errors are expected once the server is killed
        self.n = 0

    def run(self) -> None:
        with client(self.server) as http:
            while not self.stop.is_set():
                op = "add" if self.adds_only else self.rng.choices(("add", "search", "query"), (4, 3, 3))[0]
                try:
                    getattr(self, f"_{op}")(http)
                except (httpx.TransportError, RuntimeError) as exc:
                    if self.crashing:
                        return  # the server is gone: this client's in-flight add is in doubt, and it stops
                    self.tally.error(f"{op}: {str(exc)[:120]}")

    def _add(self, http: httpx.Client) -> None:
        self.n += 1
        add = _new_add(self.index, self.n, self.rng)
        started = time.perf_counter()
        try:
            data = _post(http, "conversation/add", add.body)
        except (httpx.TransportError, RuntimeError):
            self.in_doubt.append(add)
            raise
        self.tally.ok("add", time.perf_counter() - started)
        add.ids = list(data["accepted_ids"])
        self.adds.append(add)
        if not self.crashing and self.rng.random() < RETRY_SHARE:
            started = time.perf_counter()
            again = _post(http, "conversation/add", add.body)
            self.tally.ok("add (retry)", time.perf_counter() - started)
            if list(again["accepted_ids"]) != add.ids:
                with self.tally.lock:
                    self.tally.retry_mismatches += 1

    def _search(self, http: httpx.Client) -> None:
        query = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 3)))
        started = time.perf_counter()
        _post(http, "conversation/search", {**_scope(self.index), "query": query, "limit": 10})
        self.tally.ok("search", time.perf_counter() - started)

    def _query(self, http: httpx.Client) -> None:
        started = time.perf_counter()
        body = {**_scope(self.index), "session_id": f"load-session-{self.index}", "limit": 20}
        _post(http, "conversation/query", body)
        self.tally.ok("query", time.perf_counter() - started)


def _read_session(http: httpx.Client, worker: int) -> list[tuple[str, str]]:
    """Every (id, content) of one worker's session, page by page."""
    out: list[tuple[str, str]] = []
    body = {**_scope(worker), "session_id": f"load-session-{worker}", "limit": 100, "offset": 0}
    while True:
        data = _post(http, "conversation/query", body)
        out.extend((m["id"], m["content"]) for m in data["messages"])
        body["offset"] += 100
        if body["offset"] >= data["total"]:
            return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="memhub-load-") as tmp:
        data_dir = Path(tmp) / "data"
        with running_server(data_dir, sys.executable) as server:
            stop = threading.Event()
            workers = [Worker(i, server, stop, tally, args.seed) for i in range(args.clients)]
            print(f"load: {args.clients} clients for {args.seconds:g} s …", file=sys.stderr)
            started = time.perf_counter()
            for w in workers:
                w.start()
            time.sleep(args.seconds)
            load_seconds = time.perf_counter() - started
            with tally.lock:
                load_counts = {op: len(v) for op, v in tally.latencies.items()}
            # Crash: adds only, then SIGKILL while they are in flight.
            for w in workers:
                w.adds_only = True
            time.sleep(args.burst_seconds / 2)
            for w in workers:
                w.crashing = True
            time.sleep(args.burst_seconds / 2)
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
            stop.set()
            for w in workers:
                w.join(timeout=130)
        acknowledged = [a for w in workers for a in w.adds]
        in_doubt = [a for w in workers for a in w.in_doubt]
        print(f"killed: {len(acknowledged)} adds acknowledged, {len(in_doubt)} in doubt; restarting …", file=sys.stderr)

        restart_mismatch = restart_errors = 0
        with running_server(data_dir, sys.executable) as server, client(server) as http:
            for add in in_doubt:
                try:
                    add.ids = list(_post(http, "conversation/add", add.body)["accepted_ids"])
                except RuntimeError:
                    restart_errors += 1
            sample = random.Random(args.seed).sample(acknowledged, min(RETRY_AFTER_RESTART, len(acknowledged)))
            for add in sample:
                try:
                    if list(_post(http, "conversation/add", add.body)["accepted_ids"]) != add.ids:
                        restart_mismatch += 1
                except RuntimeError:
                    restart_errors += 1
            stored: dict[str, str] = {}
            contents: Counter[str] = Counter()
            for worker in range(args.clients):
                for message_id, content in _read_session(http, worker):
                    stored[message_id] = content
                    contents[content] += 1
        missing = sum(
            1
            for add in acknowledged
            for message_id, content in zip(add.ids or [], add.contents, strict=True)
            if stored.get(message_id) != content
        )
        duplicates = sum(n - 1 for n in contents.values() if n > 1)
        expected = {c for a in acknowledged + in_doubt for c in a.contents}
        unknown = sum(1 for c in contents if c not in expected)

    ops = {op: asdict(Latency.of(v)) for op, v in sorted(tally.latencies.items()) if v}
    return {
        "clients": args.clients,
        "seconds": round(load_seconds, 1),
        "requests": sum(load_counts.values()),  # during the load phase, before the crash burst
        "requests_per_s": round(sum(load_counts.values()) / load_seconds, 1),
        "ops": ops,
        "errors": dict(tally.errors),
        "error_count": sum(tally.errors.values()),
        "retry_mismatches": tally.retry_mismatches,
        "acknowledged_adds": len(acknowledged),
        "acknowledged_messages": sum(len(a.contents) for a in acknowledged),
        "in_doubt_adds": len(in_doubt),
        "retried_after_restart": len(in_doubt) + min(RETRY_AFTER_RESTART, len(acknowledged)),
        "restart_retry_mismatches": restart_mismatch,
        "restart_errors": restart_errors,
        "stored_messages": len(stored),
        "missing_acknowledged": missing,
        "duplicates": duplicates,
        "unexpected_messages": unknown,
    }


def report(r: dict[str, Any]) -> None:
    print(f"\n## Load: {r['clients']} clients, {r['seconds']} s, {r['requests']} requests ({r['requests_per_s']}/s)\n")
    print("| operation | n | p50 ms | p95 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for op, s in r["ops"].items():
        print(f"| {op} | {s['n']} | {s['p50_ms']} | {s['p95_ms']} | {s['p99_ms']} | {s['max_ms']} |")
    print("\n## Crash (kill -9 mid-burst), restart, audit\n")
    print("| check | value |")
    print("|---|---:|")
    rows = [
        ("errors during load", r["error_count"]),
        ("retries answered with other ids (live)", r["retry_mismatches"]),
        ("adds acknowledged before the kill", r["acknowledged_adds"]),
        ("messages acknowledged", r["acknowledged_messages"]),
        ("adds in flight at the kill (retried after restart)", r["in_doubt_adds"]),
        ("retries after restart answered with other ids", r["restart_retry_mismatches"]),
        ("retries after restart that failed", r["restart_errors"]),
        ("messages stored after restart", r["stored_messages"]),
        ("acknowledged messages missing or changed", r["missing_acknowledged"]),
        ("duplicate messages", r["duplicates"]),
        ("messages nobody sent", r["unexpected_messages"]),
    ]
    for name, value in rows:
        print(f"| {name} | {value} |")
    for what, n in r["errors"].items():
        print(f"- error ×{n}: {what}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--burst-seconds", type=float, default=4.0, help="adds-only phase that ends in the kill")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="8 clients for 5 s")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds = 8, 5.0
    result = run(args)
    report(result)
    write_result(args.out, result)
    bad = ("error_count", "retry_mismatches", "restart_retry_mismatches", "restart_errors")
    bad += ("missing_acknowledged", "duplicates", "unexpected_messages")
    return 1 if any(result[k] for k in bad) else 0


if __name__ == "__main__":
    raise SystemExit(main())
