#!/usr/bin/env python3
"""Ingest-to-hybrid: how fast the gateway embeds stored messages in the background, against the model's own speed,
and how quickly `memhub serve` stops on SIGTERM with a backlog (and that nothing is lost).

Data: seeded chat messages (bench/gateway.py's `TextGen`, EN/ZH, mixed lengths) written through the store's public
API into one scope, every one of them queued for embedding (the state right after an import).

  1. raw: the local e5 model the gateway uses (built from the same settings), `embed_documents` over the same
     texts in the gateway's batch size, in a plain loop in this process;
  2. gateway: a real `memhub serve` (pipeline off, so only the embedder works) on a copy of the data; its rate is
     taken from the backlog `/health` reports, from the first record embedded to the last (model load excluded,
     as it is in the raw loop);
  3. stop: another copy with `--stop-records` messages queued; once the embedder has started on them, SIGTERM;
     the time until the process has exited, then a restart on the same data: every message is counted and the
     backlog is still there (durable) and shrinking.

Prints a Markdown table and writes JSON to bench/results/embedding.json.

    python bench/embedding.py [--records 1000] [--stop-records 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import HERE, client, running_server, write_result
from memhub.runtime import embedding_runtime
from memhub.settings import Settings
from memhub.store.factory import open_store
from search import MODEL, DataSpec, ScopeSpec, _scope_body, load

DEFAULT_OUT = HERE / "results" / "embedding.json"
AIM_RATIO = 0.9
AIM_STOP_S = 5.0


def queued_copy(source: Path, target: Path) -> int:
    """A copy of the loaded data with every record queued for embedding again; the backlog."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    store = open_store(target)
    try:
        store.reset_embeddings(MODEL)
        return store.embedding_backlog()
    finally:
        store.close()


def raw_speed(data_dir: Path) -> dict[str, Any]:
    """Texts per second of the gateway's own embedder in a plain loop over the queued texts."""
    settings = Settings(data_dir=data_dir)
    store = open_store(data_dir)
    try:
        texts = [t.text for t in store.next_embedding_tasks(1_000_000)]
        runtime = embedding_runtime(settings, store)
        assert runtime.embedder is not None
        runtime.embedder.embed_documents(texts[:2])  # load the model outside the timing
        batch = settings.embedding_batch_size
        started = time.perf_counter()
        for first in range(0, len(texts), batch):
            runtime.embedder.embed_documents(texts[first : first + batch])
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    return {"texts": len(texts), "seconds": round(elapsed, 2), "per_s": round(len(texts) / elapsed, 2)}


def backlog(http: Any) -> int:
    return int(http.get("/health").json()["embedding_backlog"])


def gateway_speed(data_dir: Path, python: str, total: int, timeout: float) -> dict[str, Any]:
    """Texts per second the serving gateway embeds, from its first embedded record to an empty backlog."""
    env = {"MEMHUB_PIPELINE_ENABLED": "false"}
    with running_server(data_dir, python, env) as server, client(server) as http:
        deadline = time.monotonic() + timeout
        while (first := backlog(http)) >= total:
            if time.monotonic() > deadline:
                raise RuntimeError("the embedder never started")
            time.sleep(0.05)
        started = time.perf_counter()
        while backlog(http):
            if time.monotonic() > deadline:
                raise RuntimeError("the backlog was not drained in time")
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
    return {"texts": first, "seconds": round(elapsed, 2), "per_s": round(first / elapsed, 2)}


def stop_with_backlog(data_dir: Path, python: str, total: int) -> dict[str, Any]:
    """SIGTERM while the embedder works through `total` records; then restart and check nothing is lost."""
    env = {"MEMHUB_PIPELINE_ENABLED": "false"}
    with running_server(data_dir, python, env) as server:
        with client(server) as http:
            while (before := backlog(http)) >= total:
                time.sleep(0.05)
        started = time.perf_counter()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=120)
        stop_s = time.perf_counter() - started
        code = server.proc.returncode
    with running_server(data_dir, python, env) as server, client(server) as http:
        after = backlog(http)
        count = http.post("/v3/conversation/count", json=_scope_body("one")).json()["data"]["total"]
        deadline = time.monotonic() + 120  # the restarted embedder loads its model first
        while (later := backlog(http)) >= after and time.monotonic() < deadline:
            time.sleep(0.2)
    return {
        "records": total,
        "backlog_at_sigterm": before,
        "sigterm_to_exit_s": round(stop_s, 2),
        "exit_code": code,
        "messages_after_restart": count,
        "backlog_after_restart": after,
        "backlog_later": later,
        "all_present": count == total,
        "resumed": later < after,
    }


def markdown(raw: dict[str, Any], gateway: dict[str, Any], stop: dict[str, Any]) -> str:
    ratio = gateway["per_s"] / raw["per_s"]
    return "\n".join(
        [
            "| measure | result | aim |",
            "|---|---|---|",
            f"| raw batch speed (e5, plain loop, {raw['texts']:,} texts) | {raw['per_s']:.1f} texts/s | |",
            f"| background embedding in `memhub serve` | {gateway['per_s']:.1f} texts/s | |",
            f"| ratio | {ratio:.2f} | ≥ {AIM_RATIO} |",
            f"| SIGTERM to exit, {stop['backlog_at_sigterm']:,} records waiting | {stop['sigterm_to_exit_s']:.2f} s"
            f" | ≤ {AIM_STOP_S:.0f} s |",
            f"| messages readable after restart | {stop['messages_after_restart']:,} of {stop['records']:,}"
            f" (backlog {stop['backlog_after_restart']:,}, then {stop['backlog_later']:,})"
            " | all, backlog resumed |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1000, help="messages embedded for the speed comparison")
    parser.add_argument("--stop-records", type=int, default=10_000, help="messages waiting at SIGTERM")
    parser.add_argument("--timeout", type=float, default=1800, help="max seconds for the gateway to drain")
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--python", default=sys.executable, help="interpreter that has memhub installed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="memhub-embedding-"))
    try:
        small, large = root / "loaded-small", root / "loaded-large"
        load(small, DataSpec("speed", (ScopeSpec("one", args.records, 0),)), args.seed)
        load(large, DataSpec("stop", (ScopeSpec("one", args.stop_records, 0),)), args.seed + 1)
        queued_copy(small, root / "raw")
        raw = raw_speed(root / "raw")
        print(f"raw: {raw}", file=sys.stderr, flush=True)
        total = queued_copy(small, root / "gateway")
        gateway = gateway_speed(root / "gateway", args.python, total, args.timeout)
        print(f"gateway: {gateway}", file=sys.stderr, flush=True)
        stop_total = queued_copy(large, root / "stop")
        stop = stop_with_backlog(root / "stop", args.python, stop_total)
        print(f"stop: {stop}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table = markdown(raw, gateway, stop)
    result = {
        "benchmark": "memhub background embedding and stop",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "loadavg_end": round(os.getloadavg()[0], 2),
        "raw": raw,
        "gateway": gateway,
        "ratio": round(gateway["per_s"] / raw["per_s"], 3),
        "stop": stop,
        "markdown": table,
    }
    write_result(args.out, result)
    print(table)
    return 0 if stop["all_present"] and stop["resumed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
