#!/usr/bin/env python3
"""LoCoMo retrieval benchmark: judge-free recall of evidence turns through the real HTTP API.

Reads LoCoMo-10 from ../shared/eval-data/locomo/locomo10.json (CC BY-NC: read in place, never
copied). For each of the 10 conversations, in its own scope (user_id = the sample id):

1. ingest every turn with `/v3/conversation/add`: content "<speaker>: <text>", the session's date
   as timestamp, the turn's `dia_id` in metadata, one session per `session_id`;
2. wait until /health reports `embedding_backlog` 0;
3. for each question of categories 1–4, call `/v3/conversation/search` with limit 50 and score the
   returned `metadata.dia_id`s against the question's evidence.

Metrics: recall@1/5/10/20 (the share of a question's evidence turns in the top k), hit@10 (at least
one), NDCG@10 and MRR, per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) and
overall, plus search latency p50/p95 and ingest time. Evidence ids are normalised ("D1:3; D1:4"
is two ids); ids that name no turn are dropped, and questions left without evidence are skipped.

    python bench/locomo.py                            # default configuration (local e5 + BM25)
    python bench/locomo.py --provider none            # BM25 only
    python bench/locomo.py --model use-m3             # the other local model
    python bench/locomo.py --conversations 2          # a quick partial run
    python bench/locomo.py --data-dir /tmp/mh-locomo  # keep the ingested, embedded data and reuse it next time
    python bench/locomo.py --wrap 300                 # each question at the end of a 300-word prompt

`--wrap N` asks every question as an agent would pass its user's whole message: N words of another
conversation's turns (pasted context, off-topic for this one) with the question at the end (or, with
`--wrap-position start`, at the start). It measures what query focusing keeps of a question that is
only part of the query. `--env KEY=VALUE` passes a setting to the server (for ablations).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import HERE, Latency, client, git_rev, running_server

DATA = HERE.parent.parent / "shared" / "eval-data" / "locomo" / "locomo10.json"
DEFAULT_OUT = HERE / "results" / "locomo.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10, 20)
SEARCH_LIMIT = 50
BATCH = 100
MUST = {"all": 0.70, 1: 0.45}
MAX_QUERY_CHARS = 2_048  # the gateway's limit on a query


def session_date(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an ISO instant (UTC)."""
    parsed = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return parsed.isoformat().replace("+00:00", "Z")


def evidence_ids(raw: list[str]) -> list[str]:
    """Evidence as a flat list of dia ids ("D1:3; D1:4" → two ids)."""
    return [part.strip() for item in raw for part in re.split(r"[;,]", item) if part.strip()]


def sessions(conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """(number, ISO date, turns) of every session, in order."""
    numbers = sorted(int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k))
    return [(n, session_date(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"]) for n in numbers]


def turn_messages(conversation: dict[str, Any], date: str, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One session's turns as `conversation/add` messages: speaker A as the user, B as the assistant."""
    first_speaker = conversation["speaker_a"]
    return [
        {
            "role": "user" if turn["speaker"] == first_speaker else "assistant",
            "content": f"{turn['speaker']}: {turn['text']}",
            "timestamp": date,
            "metadata": {"dia_id": turn["dia_id"]},
        }
        for turn in turns
    ]


def ingest(http: Any, sample: dict[str, Any]) -> int:
    """Add every turn of one conversation; returns the number of turns."""
    conversation = sample["conversation"]
    count = 0
    for number, date, turns in sessions(conversation):
        messages = turn_messages(conversation, date, turns)
        for start in range(0, len(messages), BATCH):
            body = {"user_id": sample["sample_id"], "session_id": f"session_{number}"}
            response = http.post("/v3/conversation/add", json={**body, "messages": messages[start : start + BATCH]})
            response.raise_for_status()
            count += len(messages[start : start + BATCH])
    return count


def wait_for_backlog(http: Any, timeout_s: float) -> tuple[float, dict[str, Any]]:
    """Poll /health until the embedding backlog is 0 (or embeddings are off); returns seconds waited."""
    start = time.monotonic()
    while True:
        health = http.get("/health").json()
        if health["embedding_backlog"] == 0 or health["embedding"]["provider"] == "none":
            return time.monotonic() - start, health
        if health["embedding"].get("state") == "error":
            raise RuntimeError(f"embedding failed: {health['embedding']}")
        if time.monotonic() - start > timeout_s:
            raise RuntimeError(f"embedding backlog still {health['embedding_backlog']} after {timeout_s:.0f} s")
        time.sleep(1.0)


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    """Recall@k, hit@10, NDCG@10 and reciprocal rank of one ranking."""
    metrics = {f"R@{k}": len(evidence & set(ranked[:k])) / len(evidence) for k in KS}
    metrics["hit@10"] = float(bool(evidence & set(ranked[:10])))
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in evidence)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(evidence), 10)))
    metrics["NDCG@10"] = dcg / ideal
    metrics["MRR"] = next((1 / (i + 1) for i, d in enumerate(ranked) if d in evidence), 0.0)
    return metrics


def filler_words(samples: list[dict[str, Any]], index: int) -> list[str]:
    """The words of another conversation's turns (the next one round the list), as pasted context."""
    other = samples[(index + 1) % len(samples)]["conversation"] if len(samples) > 1 else {}
    return [w for _, _, turns in sessions(other) for t in turns for w in t["text"].split()]


def wrapped(question: str, filler: list[str], start: int, words: int, position: str) -> str:
    """The question with `words` words of filler before it (or after it), within the gateway's query limit."""
    context = " ".join(filler[start : start + words]) if filler else ""
    room = MAX_QUERY_CHARS - len(question) - 2
    context = context[:room]
    return f"{question} {context}" if position == "start" else f"{context} {question}"


def evaluate(
    http: Any,
    sample: dict[str, Any],
    per_category: dict[Any, list[dict[str, float]]],
    wrap: tuple[list[str], int, str] | None = None,
) -> list[float]:
    """Run every question of categories 1–4 (wrapped in a prompt if asked); returns the latencies in seconds."""
    turns = {t["dia_id"] for _, _, ts in sessions(sample["conversation"]) for t in ts}
    latencies: list[float] = []
    for question in sample["qa"]:
        if question["category"] not in CATEGORIES:
            continue
        evidence = {e for e in evidence_ids(question["evidence"]) if e in turns}
        if not evidence:
            continue
        query = question["question"]
        if wrap is not None:
            filler, words, position = wrap
            query = wrapped(query, filler, (len(latencies) * 37) % max(len(filler) - words, 1), words, position)
        body = {"user_id": sample["sample_id"], "query": query, "limit": SEARCH_LIMIT}
        started = time.perf_counter()
        response = http.post("/v3/conversation/search", json=body)
        latencies.append(time.perf_counter() - started)
        response.raise_for_status()
        data = response.json()["data"]
        per_category["strategy:" + data["strategy"]].append({})
        ranked = [(m.get("metadata") or {}).get("dia_id", "") for m in data["messages"]]
        metrics = score(ranked, evidence)
        per_category[question["category"]].append(metrics)
        per_category["all"].append(metrics)
    return latencies


def summarise(per_category: dict[Any, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of every metric per category (and overall), with the question count."""
    out: dict[str, dict[str, float]] = {}
    for category in ["all", *CATEGORIES]:
        rows = per_category.get(category, [])
        if not rows:
            continue
        name = "overall" if category == "all" else f"{category} {CATEGORIES[category]}"
        out[name] = {"questions": len(rows), **{m: round(statistics.fmean(r[m] for r in rows), 4) for m in rows[0]}}
    return out


def markdown(summary: dict[str, dict[str, float]]) -> str:
    columns = ["questions", "R@1", "R@5", "R@10", "R@20", "hit@10", "NDCG@10", "MRR"]
    lines = ["| category | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, row in summary.items():
        cells = [f"{int(row['questions'])}"] + [f"{row[c]:.3f}" for c in columns[1:]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="locomo10.json")
    parser.add_argument("--provider", default="local", help="embedding provider: local | none | openai")
    parser.add_argument("--model", default="", help="local model: e5-small (default where available) | use-m3")
    parser.add_argument("--threads", type=int, default=2, help="embedding threads of the server (ingest speed)")
    parser.add_argument("--conversations", type=int, default=10, help="how many conversations (quick runs)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the embedding backlog")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `memhub serve`")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--data-dir", type=Path, help="keep the ingested data here and reuse it when it matches")
    parser.add_argument("--wrap", type=int, default=0, help="ask each question inside a prompt of N more words")
    parser.add_argument("--wrap-position", choices=("end", "start"), default="end", help="where the question stands")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE setting for the server (repeatable)")
    args = parser.parse_args(argv)

    samples = json.loads(args.data.read_text())[: args.conversations]
    env = {"MEMHUB_EMBEDDING_PROVIDER": args.provider, "MEMHUB_EMBEDDING_THREADS": str(args.threads)}
    if args.model:
        env["MEMHUB_EMBEDDING_MODEL"] = args.model
    env.update(dict(item.split("=", 1) for item in args.env))
    per_category: dict[Any, list[dict[str, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="memhub-locomo-") as tmp:
        root = args.data_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        manifest = root / "locomo-manifest.json"
        wanted = {"conversations": len(samples), "provider": args.provider, "model": args.model}
        reuse = manifest.exists() and json.loads(manifest.read_text()) == wanted
        if not reuse:
            shutil.rmtree(root / "data", ignore_errors=True)
        with running_server(root / "data", args.python, env) as server, client(server) as http:
            started = time.monotonic()
            turns = 0 if reuse else sum(ingest(http, sample) for sample in samples)
            add_s = time.monotonic() - started
            wait_s, health = wait_for_backlog(http, args.timeout)
            manifest.write_text(json.dumps(wanted))
            if reuse:
                turns = sum(len(ts) for s in samples for _, _, ts in sessions(s["conversation"]))
                print(f"reusing the data in {root} ({turns} turns)")
            latencies: list[float] = []
            for index, sample in enumerate(samples):
                wrap = (filler_words(samples, index), args.wrap, args.wrap_position) if args.wrap else None
                latencies += evaluate(http, sample, per_category, wrap)

    summary = summarise(per_category)
    strategies = {k.split(":", 1)[1]: len(v) for k, v in per_category.items() if str(k).startswith("strategy:")}
    latency = Latency.of(latencies)
    print(f"\nLoCoMo-{len(samples)}: {turns} turns, provider={args.provider} model={health['embedding'].get('model')}")
    print(f"ingest: {add_s:.1f} s to add (all acknowledged), {wait_s:.1f} s more until embedding_backlog = 0")
    print(f"search: p50 {latency.p50_ms:.1f} ms, p95 {latency.p95_ms:.1f} ms over {latency.n} queries; {strategies}\n")
    print(markdown(summary))
    overall, multi = summary["overall"]["R@10"], summary.get("1 multi-hop", {}).get("R@10", float("nan"))
    verdict = "MET" if overall >= MUST["all"] and multi >= MUST[1] else "MISSED"
    bar = f"R@10 ≥ {MUST['all']} overall and ≥ {MUST[1]} multi-hop"
    print(f"\nmust reach: {bar} → {overall:.3f} / {multi:.3f} ({verdict})")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": "locomo-retrieval",
        "conversations": len(samples),
        "turns": turns,
        "provider": args.provider,
        "model": health["embedding"].get("model"),
        "wrap": {"words": args.wrap, "position": args.wrap_position} if args.wrap else None,
        "env": args.env,
        "search_limit": SEARCH_LIMIT,
        "ingest_add_s": round(add_s, 2),
        "ingest_embedding_wait_s": round(wait_s, 2),
        "search_latency": latency.__dict__,
        "strategies": strategies,
        "metrics": summary,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "git": git_rev(),
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
