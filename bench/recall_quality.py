#!/usr/bin/env python3
"""Recall quality: how much of the evidence a question needs reaches the agent, L0 vs L1 vs `/v3/recall`.

Reads LoCoMo-10 from ../shared/eval-data/locomo/locomo10.json (CC BY-NC: read in place, never
copied). Everything goes through the HTTP API of a real `memhub serve` (default configuration unless
--env says otherwise: local e5 embeddings, offline pipeline). Per conversation, in its own scope
(user_id = the sample id):

1. every turn is added with `/v3/conversation/add` (content "<speaker>: <text>", the session's date as
   timestamp, the turn's `dia_id` in metadata), one session per LoCoMo session; the returned message
   ids map back to the turns; after each session `/v3/pipeline/flush` asks for its extraction;
2. the run waits until the pipeline is idle and the embedding backlog is 0;
3. for each question of categories 1–4, four answers are scored against the question's evidence turns:
   - L0 only: `conversation/search` top 10;
   - L1 only: `atomic/search` top 5 (what the agent kit injected before `/v3/recall`): a memory
     counts for its `source_message_ids`;
   - recall: `/v3/recall` at its default budget (about 1,000 tokens): turns count for themselves,
     memories for their sources;
   - recall, as a follow-up: the question rewritten as a follow-up to an earlier question about the same
     person ("And what did she research?"), with that question and its answer as `messages`
     (bench/followups.py says how); aim: within 0.03 of the direct phrasing.
   Coverage = the share of the question's evidence turns present in the answer.

Also reported: L1 memories per 100 turns, sources per memory, memories that look like fragments
(ending on a function word, or under three words), memories that say "User" in a transcript of named
people, memories holding more than one fact ("multi_fact" and its share; aim ≤ 5 %: two independent
clauses joined by and/but/yet/so or ';', each with its own subject and finite verb, date notes aside —
the rule and what it leaves out are in `bench/multi_fact.py`), the tokens recall used, and latency p50/p95
of the four calls.

Latency at scale (--latency-turns, default 10,000): the LoCoMo turns again, cycled into one scope
until it holds that many, flushed through the pipeline and embedded; then each question is asked
there through `conversation/search` (limit 10) and `/v3/recall`, alternating, and the p95 ratio is
reported (aim: recall p95 ≤ 2× conversation/search p95).

Prints Markdown tables and writes JSON to bench/results/recall_quality.json.

    python bench/recall_quality.py                        # all 10 conversations + the 10k-turn latency run
    python bench/recall_quality.py --conversations 2 --latency-turns 0   # a quick partial run
    python bench/recall_quality.py --env MEMHUB_LLM_BASE_URL=... --env MEMHUB_LLM_MODEL=...   # with an LLM
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from common import HERE, Latency, client, ok_data, running_server, write_result
from followups import followup_questions
from locomo import CATEGORIES, DATA, evidence_ids, sessions, turn_messages, wait_for_backlog
from multi_fact import holds_several_facts

DEFAULT_OUT = HERE / "results" / "recall_quality.json"
BATCH = 100
ROWS = ("l0_top10", "l1_top5", "recall", "recall_followup")
ROW_NAMES = {"l0_top10": "L0 only (conversation/search top 10)", "l1_top5": "L1 only (atomic/search top 5)"}
ROW_NAMES["recall"] = "/v3/recall (default budget)"
ROW_NAMES["recall_followup"] = "/v3/recall, asked as follow-ups (bench/followups.py)"
AIMS = {"recall": 0.85, "l1_top5": 0.40}
# Words a complete English sentence never ends on ("User loves to.", "… went to the."); clause-final verbs and
# prepositions ("who they are.", "count them in.") end real sentences, so they are not here.
_DANGLING = frozenset(re.findall(r"\w+", "to the a an of and or my their his her our your its than but"))


def ingest(
    http: httpx.Client, sample: dict[str, Any], user_id: str, session_prefix: str = "", **scope_ids: str
) -> dict[str, str]:
    """Add every turn and flush each session (in the scope of `user_id` and `scope_ids`, e.g. a team and an
    agent); returns message id → dia_id."""
    conversation = sample["conversation"]
    dia_of: dict[str, str] = {}
    for number, date, turns in sessions(conversation):
        scope = {**scope_ids, "user_id": user_id, "session_id": f"{session_prefix}session_{number}"}
        messages = turn_messages(conversation, date, turns)
        for start in range(0, len(messages), BATCH):
            chunk = messages[start : start + BATCH]
            ids = ok_data(http, "/v3/conversation/add", {**scope, "messages": chunk})["accepted_ids"]
            dia_of.update(zip(ids, (m["metadata"]["dia_id"] for m in chunk), strict=True))
        ok_data(http, "/v3/pipeline/flush", scope)
    return dia_of


def wait_for_pipeline(http: httpx.Client, timeout_s: float) -> float:
    """Poll pipeline/status (the whole tenant, as the gateway key sees it) until every stage is idle."""
    started = time.monotonic()
    while True:
        status = ok_data(http, "/v3/pipeline/status", {"user_id": "bench"})
        if status["waiting_sessions"] == 0 and all(status[s]["idle"] for s in ("l1", "l2", "l3")):
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"pipeline not idle after {timeout_s:.0f} s: {status}")
        time.sleep(0.5)


def memories(http: httpx.Client, user_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = ok_data(http, "/v3/atomic/query", {"user_id": user_id, "limit": 100, "offset": len(items)})["items"]
        items += page
        if len(page) < 100:
            return items


def looks_like_fragment(content: str) -> bool:
    """Ends on a word no sentence ends on ("User loves to.") or has under three words once the date note is gone."""
    text = re.sub(r"\s*\([^)]*\)", "", content).strip().rstrip(".!。")
    words = text.split()
    return len(words) < 3 or words[-1].lower() in _DANGLING


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def coverage(found: set[str], evidence: set[str]) -> float:
    return len(found & evidence) / len(evidence)


def evaluate(
    http: httpx.Client,
    sample: dict[str, Any],
    dia_of: dict[str, str],
    scores: dict[str, dict[Any, list[float]]],
    latencies: dict[str, list[float]],
    tokens: list[int],
    layers: dict[str, int],
) -> None:
    """Score the four answers of every question of categories 1–4."""
    turns = {t["dia_id"] for _, _, ts in sessions(sample["conversation"]) for t in ts}
    scope = {"user_id": sample["sample_id"]}
    asked = [q for q in sample["qa"] if q.get("category") in CATEGORIES]
    for question, (follow_up, window) in zip(asked, followup_questions(asked, sample), strict=True):
        category = question["category"]
        evidence = {e for e in evidence_ids(question["evidence"]) if e in turns}
        if not evidence:
            continue
        # The server caches query vectors by their exact text: a trailing space per call makes each
        # call embed its query itself, so the three latencies compare like for like.
        query = question["question"].strip()
        started = time.perf_counter()
        l0 = ok_data(http, "/v3/conversation/search", {**scope, "query": query, "limit": 10})
        latencies["l0_top10"].append(time.perf_counter() - started)
        started = time.perf_counter()
        l1 = ok_data(http, "/v3/atomic/search", {**scope, "query": query + " ", "limit": 5})
        latencies["l1_top5"].append(time.perf_counter() - started)
        started = time.perf_counter()
        recalled = ok_data(http, "/v3/recall", {**scope, "query": query + "  "})
        latencies["recall"].append(time.perf_counter() - started)
        messages = [{"role": role, "content": content} for role, content in window]
        started = time.perf_counter()
        followed = ok_data(http, "/v3/recall", {**scope, "query": follow_up + "   ", "messages": messages})
        latencies["recall_followup"].append(time.perf_counter() - started)

        found = {
            "l0_top10": {(m.get("metadata") or {}).get("dia_id", "") for m in l0["messages"]},
            "l1_top5": {dia_of.get(s, "") for m in l1["items"] for s in m["source_message_ids"]},
            "recall": recalled_turns(recalled, dia_of),
            "recall_followup": recalled_turns(followed, dia_of),
        }
        for item in recalled["memories"]:
            layers[item["layer"]] += 1
        tokens.append(recalled["tokens"])
        for row in ROWS:
            value = coverage(found[row], evidence)
            scores[row][category].append(value)
            scores[row]["all"].append(value)


def recalled_turns(recalled: dict[str, Any], dia_of: dict[str, str]) -> set[str]:
    """The turns a recall answer holds: a turn counts for itself, a memory for its sources."""
    found: set[str] = set()
    for item in recalled["memories"]:
        ids = item["source_message_ids"] if item["layer"] == "l1" else [item["id"]]
        found |= {dia_of.get(i, "") for i in ids}
    return found


def latency_run(http: httpx.Client, samples: list[dict[str, Any]], turns_wanted: int, timeout: float) -> dict[str, Any]:
    """One scope filled with `turns_wanted` turns; conversation/search vs /v3/recall on the same questions."""
    user_id = "latency"
    added, round_no = 0, 0
    while added < turns_wanted:
        for sample in samples:
            if added < turns_wanted:
                added += len(ingest(http, sample, user_id, f"r{round_no}_{sample['sample_id']}_"))
        round_no += 1
    progress(f"latency scope: added {added} turns")
    pipeline_s = wait_for_pipeline(http, timeout)
    embed_s, _ = wait_for_backlog(http, timeout)
    progress(f"latency scope: pipeline idle after {pipeline_s:.0f} s, embeddings after {embed_s:.0f} s more")
    held = ok_data(http, "/v3/atomic/count", {"user_id": user_id})["total"]
    questions = [q["question"].strip() for s in samples for q in s["qa"] if q.get("category") in CATEGORIES]
    search: list[float] = []
    recall: list[float] = []
    for query in questions:
        for path, body, bucket in (
            ("/v3/conversation/search", {"user_id": user_id, "query": query, "limit": 10}, search),
            ("/v3/recall", {"user_id": user_id, "query": query + " "}, recall),  # its own query embedding
        ):
            started = time.perf_counter()
            ok_data(http, path, body)
            bucket.append(time.perf_counter() - started)
    s, r = Latency.of(search), Latency.of(recall)
    return {
        "turns": added,
        "memories": held,
        "pipeline_wait_s": round(pipeline_s, 1),
        "embedding_wait_s": round(embed_s, 1),
        "conversation_search": s.__dict__,
        "recall": r.__dict__,
        "p95_ratio": round(r.p95_ms / s.p95_ms, 2),
    }


def table(
    scores: dict[str, dict[Any, list[float]]],
    rows: Sequence[str] = ROWS,
    names: Mapping[str, str] = ROW_NAMES,
    heading: str = "what a question gets",
) -> str:
    """Coverage per row, overall and per LoCoMo category, as a Markdown table."""
    columns = ["all", *CATEGORIES]
    header = f"| {heading} | all | " + " | ".join(CATEGORIES.values()) + " |"
    lines = [header, "|---|" + "---:|" * len(columns)]
    for row in rows:
        cells = [f"{statistics.fmean(scores[row][c]):.3f}" if scores[row][c] else "" for c in columns]
        lines.append(f"| {names[row]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="how many conversations (quick runs)")
    parser.add_argument("--latency-turns", type=int, default=10_000, help="turns in the latency scope (0: skip)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (e.g. an LLM)")
    parser.add_argument("--threads", type=int, default=2, help="embedding threads of the server")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for pipeline and embeddings")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `memhub serve`")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    samples = json.loads(args.data.read_text())[: args.conversations]
    env = {"MEMHUB_EMBEDDING_THREADS": str(args.threads)}
    env.update(dict(item.split("=", 1) for item in args.env))
    scores: dict[str, dict[Any, list[float]]] = {row: defaultdict(list) for row in ROWS}
    latencies: dict[str, list[float]] = defaultdict(list)
    tokens: list[int] = []
    layers: dict[str, int] = defaultdict(int)
    stats: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="memhub-recall-quality-") as tmp,
        running_server(Path(tmp) / "data", args.python, env) as server,
        client(server) as http,
    ):
        started = time.monotonic()
        mapped = {s["sample_id"]: ingest(http, s, s["sample_id"]) for s in samples}
        add_s = time.monotonic() - started
        progress(f"added {sum(len(m) for m in mapped.values())} turns in {add_s:.0f} s")
        pipeline_s = wait_for_pipeline(http, args.timeout)
        embed_s, health = wait_for_backlog(http, args.timeout)
        progress(f"pipeline idle after {pipeline_s:.0f} s more, embeddings after {embed_s:.0f} s more")
        held = {s["sample_id"]: memories(http, s["sample_id"]) for s in samples}
        for sample in samples:
            evaluate(http, sample, mapped[sample["sample_id"]], scores, latencies, tokens, layers)
            progress(f"scored {sample['sample_id']}")
        if args.latency_turns:
            stats["latency_at_scale"] = latency_run(http, samples, args.latency_turns, args.timeout)

    turns = sum(len(m) for m in mapped.values())
    all_memories = [m for items in held.values() for m in items]
    speakers = {s["conversation"]["speaker_a"] for s in samples} | {s["conversation"]["speaker_b"] for s in samples}
    stats.update(
        {
            "turns": turns,
            "memories": len(all_memories),
            "memories_per_100_turns": round(100 * len(all_memories) / turns, 1),
            "sources_per_memory": round(statistics.fmean(len(m["source_message_ids"]) for m in all_memories), 2)
            if all_memories
            else 0.0,
            "fragment_like": sum(looks_like_fragment(m["content"]) for m in all_memories),
            "says_user": sum(bool(re.match(r"User\b", m["content"])) for m in all_memories),
            "multi_fact": (multi := sum(holds_several_facts(m["content"]) for m in all_memories)),
            "multi_fact_share": round(multi / len(all_memories), 4) if all_memories else 0.0,
            "names_a_speaker": sum(any(name in m["content"] for name in speakers) for m in all_memories),
            "recall_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else 0.0,
            "recall_items_by_layer": dict(layers),
            "add_s": round(add_s, 1),
            "pipeline_wait_s": round(pipeline_s, 1),
            "embedding_wait_s": round(embed_s, 1),
            "embedding_model": health["embedding"].get("model"),
        }
    )
    summary = {
        row: {(c if c == "all" else CATEGORIES[c]): round(statistics.fmean(v), 4) for c, v in scores[row].items() if v}
        for row in ROWS
    }
    latency = {row: Latency.of(latencies[row]).__dict__ for row in ROWS}

    print(f"\nLoCoMo-{len(samples)}: {turns} turns, {len(scores['recall']['all'])} questions, env {env}")
    print(table(scores))
    print(
        f"\nL1: {stats['memories']} memories ({stats['memories_per_100_turns']} per 100 turns), "
        f"{stats['sources_per_memory']} sources per memory, {stats['fragment_like']} fragment-like, "
        f"{stats['says_user']} say 'User', {stats['names_a_speaker']} name a speaker"
    )
    print(f"L1 holding more than one fact: {stats['multi_fact']} ({stats['multi_fact_share']:.1%}, aim ≤ 5 %)")
    print(f"recall: {stats['recall_tokens_mean']} tokens on average, items by layer {dict(layers)}")
    for row in ROWS:
        lat = latency[row]
        print(f"latency {row}: p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms")
    if "latency_at_scale" in stats:
        scale = stats["latency_at_scale"]
        print(
            f"at {scale['turns']} turns + {scale['memories']} memories in one scope: conversation/search p95 "
            f"{scale['conversation_search']['p95_ms']:.1f} ms, recall p95 {scale['recall']['p95_ms']:.1f} ms "
            f"(ratio {scale['p95_ratio']}, aim ≤ 2)"
        )
    for row, aim in AIMS.items():
        value = summary[row].get("all", 0.0)
        print(f"aim {ROW_NAMES[row]} ≥ {aim}: {value:.3f} ({'MET' if value >= aim else 'MISSED'})")
    gap = summary["recall"].get("all", 0.0) - summary["recall_followup"].get("all", 0.0)
    print(f"aim follow-ups within 0.03 of the direct phrasing: {gap:+.3f} ({'MET' if gap <= 0.03 else 'MISSED'})")
    write_result(
        args.out,
        {
            "benchmark": "recall-quality",
            "conversations": len(samples),
            "coverage": summary,
            "latency": latency,
            **stats,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
