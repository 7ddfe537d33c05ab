"""What a long prompt costs a search: six-word queries against 300-word prompts, next to the HTTP floor.

An agent's recall query is often its user's whole message. This benchmark loads one scope (default 8,000 L0
messages and 8,000 L1 memories, synthetic clustered vectors, as bench/search.py does) and runs `memhub serve` with
the local e5 model once per query-focus setting (MEMHUB_EMBEDDING_QUERY_FOCUS_TOKENS; 0 = the old behaviour, the
query's first 128 tokens embedded). Per setting, sequential requests from one client, every query distinct:

  - HTTP floor: `/v3/conversation/count` on the scope (no search, no embedding);
  - `conversation/search` and `/v3/recall` with a six-word question ("what did we say about <1-4 words>");
  - the same with a ~300-word prompt: generated chat sentences, then that question at the end.

It prints p50 / p95 and the ratios the aims are stated in: six-word search ÷ floor (aim ≤ 10×) and 300-word
prompt ÷ six-word (aim ≤ 1.5×), and writes JSON.

    python bench/prompt_length.py                     # 8k + 8k, focus 0 (old) and 24 (default), 200 queries each
    python bench/prompt_length.py --records 100000    # the /v3/recall at 100k rows
    python bench/prompt_length.py --focus 0 16 24 32 --query-threads 1 2 --data-dir /tmp/mh-prompts
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import HERE, Latency, Server, client, running_server, write_result
from gateway import TextGen
from memhub.store.sqlite.store import EXACT_VECTOR_LIMIT
from search import E5, DataSpec, GraphWatch, ScopeSpec, _scope_body, load

DEFAULT_OUT = HERE / "results" / "prompt_length.json"
PROMPT_WORDS = 300
MAX_QUERY_CHARS = 2_048  # the gateway's limit on a query


def questions(gen: TextGen, n: int) -> list[str]:
    """Distinct six-word-ish questions."""
    out: dict[str, None] = {}
    while len(out) < n:
        out[f"what did we say about {gen.query()}"] = None
    return list(out)


def prompt(gen: TextGen, question: str) -> str:
    """About PROMPT_WORDS words of chat sentences with the question at the end, within the query limit."""
    ending = f" So, {question}?"
    words: list[str] = []
    while len(words) < PROMPT_WORDS - len(ending.split()):
        words += gen._en_sentence(gen.rng.randint(8, 18)).split()
    body = " ".join(words[: PROMPT_WORDS - len(ending.split())])
    return body[: MAX_QUERY_CHARS - len(ending)] + ending


def timed(http: Any, path: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    response = http.post(path, json=body)
    elapsed = time.perf_counter() - started
    envelope = response.json()
    if response.status_code != 200 or envelope.get("code") != 0:
        raise RuntimeError(f"{path} failed: {response.status_code} {envelope}")
    return elapsed


def run_setting(server: Server, scope: str, records: int, short: list[str], long: list[str]) -> dict[str, Latency]:
    """The floor, then searches and recalls of both kinds; warm (HNSW graphs built above the exact limit)."""
    body = _scope_body(scope)
    out: dict[str, list[float]] = {
        k: [] for k in ("floor", "search short", "search long", "recall short", "recall long")
    }
    with client(server) as http:
        for _ in range(20):  # warm the connection, the model and the scope's index
            timed(http, "/v3/conversation/search", {**body, "query": "warm up", "limit": 5})
            timed(http, "/v3/atomic/search", {**body, "query": "warm up", "limit": 5})
        if records > EXACT_VECTOR_LIMIT and not GraphWatch(server).wait(2, timeout=900):
            raise RuntimeError("the scope's HNSW graphs were not built within 900 s")
        for _ in range(len(short)):
            out["floor"].append(timed(http, "/v3/conversation/count", body))
        half = len(short) // 2
        for q in short[:half]:
            out["search short"].append(timed(http, "/v3/conversation/search", {**body, "query": q, "limit": 5}))
        for q in long[:half]:
            out["search long"].append(timed(http, "/v3/conversation/search", {**body, "query": q, "limit": 5}))
        for q in short[half:]:
            out["recall short"].append(timed(http, "/v3/recall", {**body, "query": q}))
        for q in long[half:]:
            out["recall long"].append(timed(http, "/v3/recall", {**body, "query": q}))
    return {k: Latency.of(v) for k, v in out.items()}


def markdown(results: dict[str, dict[str, Latency]]) -> str:
    lines = [
        "| setting | floor | search 6-word | search 300-word | recall 6-word | recall 300-word "
        "| 6-word search ÷ floor (p95) | 300-word ÷ 6-word: search / recall (p95) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, r in results.items():
        kinds = ("floor", "search short", "search long", "recall short", "recall long")
        cells = [f"{r[k].p50_ms:.1f} / {r[k].p95_ms:.1f}" for k in kinds]
        ratio_floor = r["search short"].p95_ms / r["floor"].p95_ms
        ratio_search = r["search long"].p95_ms / r["search short"].p95_ms
        ratio_recall = r["recall long"].p95_ms / r["recall short"].p95_ms
        lines.append(
            f"| {label} | {' | '.join(cells)} | {ratio_floor:.1f}× | {ratio_search:.2f}× / {ratio_recall:.2f}× |"
        )
    return "\n".join(lines)


def setting_label(focus: int, threads: int) -> str:
    return f"focus {focus if focus else 'off (head 128)'}, query threads {threads}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=8_000, help="L0 messages and L1 memories in the scope")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind (half search, half recall)")
    parser.add_argument("--focus", type=int, nargs="+", default=[0, 24], help="query focus settings to compare")
    parser.add_argument("--query-threads", type=int, nargs="+", default=[1], help="query embedding threads to compare")
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--data-dir", type=Path, help="keep the loaded data here and reuse it when it matches")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    spec = DataSpec(
        f"1 scope × {args.records:,} L0 + {args.records:,} L1", (ScopeSpec("one", args.records, args.records),)
    )
    with tempfile.TemporaryDirectory(prefix="memhub-prompts-") as tmp:
        root = args.data_dir or Path(tmp)
        data_dir = root / "data"
        stats = load(data_dir, spec, args.seed)
        gen = TextGen(args.seed + 1)
        results: dict[str, dict[str, Latency]] = {}
        load_avg: dict[str, float] = {}
        for focus in args.focus:
            for threads in args.query_threads:
                label = setting_label(focus, threads)
                short = questions(gen, args.queries)
                long = [prompt(gen, q) for q in questions(gen, args.queries)]
                env = {
                    **E5,
                    "MEMHUB_LOG_LEVEL": "info",  # the "vector graph built" lines
                    "MEMHUB_EMBEDDING_QUERY_FOCUS_TOKENS": str(focus),
                    "MEMHUB_EMBEDDING_QUERY_THREADS": str(threads),
                }
                with running_server(data_dir, args.python, env) as server:
                    results[label] = run_setting(server, "one", args.records, short, long)
                load_avg[label] = round(os.getloadavg()[0], 2)
                print(f"{label}: done (load {load_avg[label]})", file=sys.stderr, flush=True)
    table = markdown(results)
    print(f"\n{spec.label}, e5 query embedding, limit 5, distinct queries; ms\n")
    print(table)
    write_result(
        args.out,
        {
            "benchmark": "prompt-length",
            "data": spec.describe(),
            "load": stats.__dict__ if hasattr(stats, "__dict__") else str(stats),
            "prompt_words": PROMPT_WORDS,
            "results": {label: {k: v.__dict__ for k, v in r.items()} for label, r in results.items()},
            "loadavg": load_avg,
            "markdown": table,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
