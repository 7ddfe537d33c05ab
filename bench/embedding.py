#!/usr/bin/env python3
"""Background embedding against the model's own speed, and how quickly `memhub serve` stops with a backlog.

Data: seeded chat messages (bench/gateway.py's `TextGen`: EN, ZH and mixed, 1-3 sentences), in sessions of 100.

  1. gateway: a real `memhub serve` (local e5, pipeline off so only the embedder works) is given `--records`
     messages through `/v3/conversation/add`, and timed from the first add until `/health` reports an empty
     embedding backlog. Its CPU time over that span is read from /proc, so a machine shared with other work
     shows as a lower wall rate but the same CPU rate. Then, with the backlog empty, searches are timed
     (the idle baseline for 3).
  2. raw: the same data dir afterwards, every record queued again (`reset_embeddings`), and the texts the
     gateway embedded read back from the queue (an L0 message is embedded with the message before it, so these
     are about twice as long as the messages alone); the provider the gateway builds (`embedding_runtime`, the
     same settings) embeds them in a plain loop of `embed_documents` calls of the gateway's batch size, on
     this thread. The bare messages are timed the same way, for reference.
  3. stop: `--stop-records` messages stored in-process and queued (the state right after an import); serve
     starts on them, searches are timed while the embedder works (request handling must not starve), then
     SIGTERM: the time until the process has exited. A restart on the same data: every message is counted and
     the backlog is still there (durable) and shrinking.

The ratio (gateway ÷ raw, wall and CPU) is the aim's measure: ≥ 0.9. Prints a Markdown table and writes JSON to
bench/results/embedding.json.

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
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import HERE, Latency, Server, client, ok_data, running_server, write_result
from gateway import TextGen
from memhub.runtime import embedding_runtime
from memhub.settings import Settings
from memhub.store.factory import open_store
from search import MODEL, DataSpec, ScopeSpec, _scope_body, load

DEFAULT_OUT = HERE / "results" / "embedding.json"
AIM_RATIO = 0.9
AIM_STOP_S = 5.0
SESSION = 100  # messages per conversation/add (the route's maximum)
SEARCHES = 30
# Only the embedder works in the background; INFO shows the shutdown's steps in the server log.
SERVE_ENV = {"MEMHUB_PIPELINE_ENABLED": "false", "MEMHUB_LOG_LEVEL": "info"}
TICKS = os.sysconf("SC_CLK_TCK")


def _log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {text}", file=sys.stderr, flush=True)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def health(http: Any) -> dict[str, Any]:
    return dict(http.get("/health").json())


def backlog(http: Any) -> int:
    return int(health(http)["embedding_backlog"])


def timed_searches(http: Any, gen: TextGen, n: int) -> Latency:
    seconds = []
    for _ in range(n):
        started = time.perf_counter()
        ok_data(http, "/v3/conversation/search", {**_scope_body("one"), "query": gen.query(), "limit": 5})
        seconds.append(time.perf_counter() - started)
    return Latency.of(seconds)


# -- 1. the gateway ------------------------------------------------------------------------------------


def gateway_speed(server: Server, messages: list[str], timeout: float) -> dict[str, Any]:
    """Messages per second from the first add to an empty backlog, by the wall clock and by the server's CPU."""
    with client(server) as http:
        cpu_start = process_cpu_s(server.proc.pid)
        started = time.perf_counter()
        for first in range(0, len(messages), SESSION):
            chunk = messages[first : first + SESSION]
            turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": m} for i, m in enumerate(chunk)]
            body = {**_scope_body("one"), "session_id": f"session-{first // SESSION}", "messages": turns}
            ok_data(http, "/v3/conversation/add", body)
        added_s = time.perf_counter() - started
        deadline = time.monotonic() + timeout
        while backlog(http):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the backlog was not drained in {timeout:.0f} s: {health(http)}")
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        cpu = process_cpu_s(server.proc.pid) - cpu_start
    n = len(messages)
    return {
        "texts": n,
        "add_s": round(added_s, 2),
        "seconds": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "per_s": round(n / elapsed, 2),
        "per_cpu_s": round(n / cpu, 2),
    }


# -- 2. the model on its own -------------------------------------------------------------------------


def raw_speed(data_dir: Path, texts: list[str] | None = None) -> dict[str, Any]:
    """The gateway's embedder in a plain loop over the texts the gateway embedded (or over `texts`)."""
    settings = Settings(data_dir=data_dir)
    store = open_store(data_dir)
    try:
        if texts is None:
            store.reset_embeddings(MODEL)  # every record queued again: the queue holds what the gateway embedded
            texts = [t.text for t in store.next_embedding_tasks(10_000_000)]
        runtime = embedding_runtime(settings, store)
        assert runtime.embedder is not None
        runtime.embedder.embed_documents(texts[:2])  # load the model outside the timing, as the gateway does
        batch = settings.embedding_batch_size
        cpu_start, started = time.thread_time(), time.perf_counter()
        for first in range(0, len(texts), batch):
            runtime.embedder.embed_documents(texts[first : first + batch])
        elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu_start
        runtime.close()
    finally:
        store.close()
    return {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "seconds": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "per_s": round(len(texts) / elapsed, 2),
        "per_cpu_s": round(len(texts) / cpu, 2),
    }


# -- 3. the stop ---------------------------------------------------------------------------------------


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


def stop_with_backlog(data_dir: Path, python: str, total: int, seed: int) -> dict[str, Any]:
    """Searches while the embedder works through `total` records, SIGTERM; then restart and count."""
    with running_server(data_dir, python, SERVE_ENV) as server:
        with client(server) as http:
            deadline = time.monotonic() + 120
            while backlog(http) >= total:  # the embedder has its model and is at work
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the embedder never started: {health(http)}")
                time.sleep(0.05)
            busy = asdict(timed_searches(http, TextGen(seed), SEARCHES))
            before = backlog(http)
        started = time.perf_counter()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=120)
        stop_s = time.perf_counter() - started
        code = server.proc.returncode
        # How the stop ended: every worker done and the store closed, or what was left to the exit.
        outcome = [line for line in server.log.read_text(errors="replace").splitlines() if "memhub.runtime" in line]
    with running_server(data_dir, python, SERVE_ENV) as server, client(server) as http:
        after = backlog(http)
        count = ok_data(http, "/v3/conversation/count", _scope_body("one"))["total"]
        deadline = time.monotonic() + 120  # the restarted embedder loads its model first
        while (later := backlog(http)) >= after and time.monotonic() < deadline:
            time.sleep(0.2)
    return {
        "records": total,
        "search_while_embedding": busy,
        "backlog_at_sigterm": before,
        "sigterm_to_exit_s": round(stop_s, 2),
        "exit_code": code,
        "stop_log": outcome,
        "clean_stop": any("stopped within the stop budget" in line for line in outcome),
        "messages_after_restart": count,
        "backlog_after_restart": after,
        "backlog_later": later,
        "all_present": count == total,
        "resumed": later < after,
    }


# -- report --------------------------------------------------------------------------------------------


def markdown(r: dict[str, Any]) -> str:
    raw, bare, gw, stop, idle = r["raw"], r["raw_bare"], r["gateway"], r["stop"], r["search_idle"]
    busy = stop["search_while_embedding"]
    return "\n".join(
        [
            "| measure | wall | CPU | aim |",
            "|---|---:|---:|---|",
            f"| raw: the gateway's e5 in a plain loop, bare messages ({bare['mean_chars']:.0f} chars) "
            f"| {bare['per_s']:.1f} texts/s | {bare['per_cpu_s']:.1f} texts/CPU-s | |",
            f"| raw: the same, the texts the gateway embeds ({raw['mean_chars']:.0f} chars: with the message "
            f"before) | {raw['per_s']:.1f} texts/s | {raw['per_cpu_s']:.1f} texts/CPU-s | |",
            f"| `memhub serve`, {gw['texts']:,} messages added over HTTP until the backlog is empty "
            f"| {gw['per_s']:.1f} msgs/s | {gw['per_cpu_s']:.1f} msgs/CPU-s | |",
            f"| ratio gateway ÷ raw (same texts) | {r['ratio']:.2f} | {r['ratio_cpu']:.2f} | ≥ {AIM_RATIO} |",
            f"| search p50 / p95, idle → while embedding | {idle['p50_ms']:.0f} / {idle['p95_ms']:.0f} → "
            f"{busy['p50_ms']:.0f} / {busy['p95_ms']:.0f} ms | | not starved |",
            f"| SIGTERM to exit, {stop['backlog_at_sigterm']:,} records waiting | {stop['sigterm_to_exit_s']:.2f} s"
            f" ({'workers stopped, store closed' if stop['clean_stop'] else 'work left to the exit'})"
            f" | | ≤ {AIM_STOP_S:.0f} s |",
            f"| messages readable after restart | {stop['messages_after_restart']:,} of {stop['records']:,}"
            f" (backlog {stop['backlog_after_restart']:,}, then {stop['backlog_later']:,}) | | all, resumed |",
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
    gen = TextGen(args.seed)
    messages = [gen.message() for _ in range(args.records)]
    root = Path(tempfile.mkdtemp(prefix="memhub-embedding-"))
    result: dict[str, Any] = {
        "benchmark": "memhub background embedding and stop",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_start": round(os.getloadavg()[0], 2),
    }
    try:
        _log(f"gateway: {args.records:,} messages over HTTP …")
        with running_server(root / "gateway", args.python, SERVE_ENV) as server:
            result["gateway"] = gateway_speed(server, messages, args.timeout)
            with client(server) as http:
                result["search_idle"] = asdict(timed_searches(http, TextGen(args.seed + 1), SEARCHES))
        _log(f"  {result['gateway']}")
        _log("raw: the same texts in a plain loop …")
        result["raw"] = raw_speed(root / "gateway")
        _log(f"  {result['raw']}")
        result["raw_bare"] = raw_speed(root / "gateway", messages)
        _log(f"  bare messages: {result['raw_bare']}")
        _log(f"stop: {args.stop_records:,} messages waiting …")
        load(root / "loaded", DataSpec("stop", (ScopeSpec("one", args.stop_records, 0),)), args.seed + 2)
        total = queued_copy(root / "loaded", root / "stop")
        result["stop"] = stop_with_backlog(root / "stop", args.python, total, args.seed + 3)
        _log(f"  {result['stop']}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["ratio"] = round(result["gateway"]["per_s"] / result["raw"]["per_s"], 3)
    result["ratio_cpu"] = round(result["gateway"]["per_cpu_s"] / result["raw"]["per_cpu_s"], 3)
    result["loadavg_end"] = round(os.getloadavg()[0], 2)
    table = markdown(result)
    result["markdown"] = table
    write_result(args.out, result)
    print(table)
    stop = result["stop"]
    return 0 if stop["all_present"] and stop["resumed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
