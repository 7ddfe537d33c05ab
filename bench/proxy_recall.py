#!/usr/bin/env python3
"""Evidence through the memory proxy: how much of what a question needs reaches the model's request.

Reads LoCoMo-10 from ../shared/eval-data/locomo/locomo10.json (CC BY-NC: read in place, never copied). A real
`memhub serve` in its default configuration (local e5 embeddings, offline pipeline, per-turn recall on) forwards
Anthropic-protocol turns to a fake provider that records the bytes it received. Per conversation, in a scope of
its own (one agent of the instance admin's team per conversation):

1. every turn is added with `/v3/conversation/add` (content "<speaker>: <text>", the session's date, the turn's
   `dia_id` in metadata), one session per LoCoMo session, the pipeline flushed after each (bench/recall_quality.py);
2. the run waits until the pipeline is idle and the embedding backlog is 0;
3. each question of categories 1–4 is sent through the proxy as the first turn of a new session (its own
   `x-claude-code-session-id`, a Claude-Code-like request: a system prompt, the question as the user's message
   with a cache marker), once with per-turn recall on (the default) and once with `x-memhub-recall: off` (the
   proxy's old default: the session's blocks only, persona and scene index among them);
4. an evidence turn counts when its text, or a memory drawn from it (an L1 memory whose `source_message_ids`
   name the turn), appears in the request the upstream received (whitespace folded; a turn is matched on its
   first 300 characters, as recall cuts a long turn).

For comparison, `/v3/recall` is called directly with the same question and budget (no persona or scene index,
as the proxy asks), scored by ids (a memory for its sources) and by the same text rule on its items, which says
how faithful the text rule is. Coverage = the share of a question's evidence turns found, averaged per LoCoMo
category and overall. The proxied calls' wall time and the `x-memhub-memory` outcomes are reported too.

Each proxied turn is captured into the scope as any turn would be (`--no-capture` switches capture off), so later
questions of a conversation also see the earlier ones among the turns recall ranks.

    python bench/proxy_recall.py                      # all 10 conversations (about 25 minutes, mostly embedding)
    python bench/proxy_recall.py --conversations 2    # a quick run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake provider lives with the tests

from tests.proxy.fake_upstream import FakeUpstream

from common import HERE, SERVICE, Latency, client, ok_data, running_server, write_result
from locomo import CATEGORIES, DATA, evidence_ids, sessions, wait_for_backlog
from recall_quality import coverage, ingest, progress, table, wait_for_pipeline

DEFAULT_OUT = HERE / "results" / "proxy_recall.json"
SYSTEM = "You are a helpful assistant. Answer the user's question about their conversations."
MATCH_CHARS = 300  # a turn is found by this much of its start (recall cuts a long turn, ending it with "…")
RECALL_TOKENS = 1000  # the proxy's default MEMHUB_PROXY_TURN_RECALL_MAX_TOKENS, for the direct /v3/recall row
ROWS = ("proxy_recall_on", "proxy_recall_off", "recall_ids", "recall_text")
ROW_NAMES = {
    "proxy_recall_on": "through the proxy, per-turn recall on (default)",
    "proxy_recall_off": "through the proxy, recall off (the old default)",
    "recall_ids": "/v3/recall direct, same budget, by ids",
    "recall_text": "/v3/recall direct, same budget, by the text rule",
}
AIM, GOAL = 0.65, 0.75


def folded(text: str) -> str:
    return " ".join(text.split())


def strings(value: Any) -> list[str]:
    """Every string in a JSON value (the text the model reads, and the keys and ids around it)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@dataclass
class Scope:
    """One conversation's scope: the admin's team and the conversation's own agent."""

    sample_id: str
    agent_id: str
    turn_text: dict[str, str]  # dia_id → the turn as stored ("<speaker>: <text>"), folded
    memories: list[tuple[str, set[str]]]  # (folded content, the dia_ids it was drawn from)


def found_in(text: str, scope: Scope, evidence: set[str]) -> set[str]:
    """The evidence turns whose text, or a memory drawn from which, is in `text` (folded)."""
    hits = {d for d in evidence if scope.turn_text[d][:MATCH_CHARS] in text}
    for content, sources in scope.memories:
        if sources & evidence and content in text:
            hits |= sources & evidence
    return hits


def all_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [turn for _, _, turns in sessions(sample["conversation"]) for turn in turns]


def memories_of(http: httpx.Client, ids: dict[str, str], dia_of: dict[str, str]) -> list[tuple[str, set[str]]]:
    items: list[dict[str, Any]] = []
    while True:
        page = ok_data(http, "/v3/atomic/query", {**ids, "limit": 100, "offset": len(items)})["items"]
        items += page
        if len(page) < 100:
            break
    return [(folded(m["content"]), {dia_of[s] for s in m["source_message_ids"] if s in dia_of}) for m in items]


def evaluate(
    http: httpx.Client,
    proxy: httpx.Client,
    fake: FakeUpstream,
    sample: dict[str, Any],
    scope: Scope,
    admin: dict[str, str],
    dia_of: dict[str, str],
    scores: dict[str, dict[Any, list[float]]],
    latencies: dict[str, list[float]],
    outcomes: dict[str, Counter[str]],
) -> None:
    """Every question of categories 1–4 through the proxy (recall on, then off) and through /v3/recall."""
    ids = {"team_id": admin["team_id"], "agent_id": scope.agent_id, "user_id": admin["user_id"]}
    for n, question in enumerate(sample["qa"]):
        category = question.get("category")
        evidence = {e for e in evidence_ids(question.get("evidence") or []) if e in scope.turn_text}
        if category not in CATEGORIES or not evidence:
            continue
        asked = question["question"].strip()
        found: dict[str, set[str]] = {}
        for row, switch in (("proxy_recall_on", None), ("proxy_recall_off", "off")):
            headers = {
                "x-api-key": admin["key"],
                "anthropic-version": "2023-06-01",
                "x-team-id": admin["team_id"],
                "x-agent-id": scope.agent_id,
                "x-claude-code-session-id": f"{row}-{scope.sample_id}-{n}",
            }
            if switch is not None:
                headers["x-memhub-recall"] = switch
            body = {
                "model": "fake-model",
                "max_tokens": 64,
                "system": SYSTEM,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": asked, "cache_control": {"type": "ephemeral"}}],
                    }
                ],
            }
            fake.requests.clear()
            started = time.perf_counter()
            response = proxy.post(f"/proxy/{SERVICE}/v1/messages", json=body, headers=headers)
            latencies[row].append(time.perf_counter() - started)
            response.raise_for_status()
            memory = response.headers.get("x-memhub-memory", "")
            outcomes[row]["recall=<n>" if memory.rpartition("recall=")[2].isdigit() else memory] += 1
            [sent] = fake.turns("/v1/messages")
            found[row] = found_in(folded(" ".join(strings(sent.json))), scope, evidence)
        recalled = ok_data(
            http,
            "/v3/recall",
            {**ids, "query": asked, "max_tokens": RECALL_TOKENS, "include_persona": False, "include_scenes": False},
        )
        found["recall_ids"] = {
            dia_of.get(i, "")
            for item in recalled["memories"]
            for i in (item["source_message_ids"] if item["layer"] == "l1" else [item["id"]])
        }
        found["recall_text"] = found_in(folded(" ".join(i["content"] for i in recalled["memories"])), scope, evidence)
        for row in ROWS:
            value = coverage(found[row], evidence)
            scores[row][category].append(value)
            scores[row]["all"].append(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="how many conversations (quick runs)")
    parser.add_argument("--no-capture", action="store_true", help="switch the proxy's capture off")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    parser.add_argument("--threads", type=int, default=2, help="embedding threads of the server")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for pipeline and embeddings")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `memhub serve`")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    samples = json.loads(args.data.read_text())[: args.conversations]
    scores: dict[str, dict[Any, list[float]]] = {row: defaultdict(list) for row in ROWS}
    latencies: dict[str, list[float]] = defaultdict(list)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    with FakeUpstream() as fake, tempfile.TemporaryDirectory(prefix="memhub-proxy-recall-") as tmp:
        env = {
            "MEMHUB_EMBEDDING_THREADS": str(args.threads),
            "MEMHUB_PROXY_ANTHROPIC_BASE_URL": fake.root,
            "MEMHUB_PROXY_ANTHROPIC_API_KEY": "sk-ant-bench",
            **({"MEMHUB_PROXY_CAPTURE": "false"} if args.no_capture else {}),
            **dict(item.split("=", 1) for item in args.env),
        }
        with (
            running_server(Path(tmp) / "data", args.python, env) as server,
            client(server) as http,
            httpx.Client(base_url=server.url, timeout=120) as proxy,
        ):
            admin = ok_data(http, "/v3/internal/meta/user/init-admin", {"username": "bench"})
            admin = {**admin, "key": admin["user_key"]}
            as_admin = {"x-tdai-user-key": admin["key"]}
            started = time.monotonic()
            scopes: list[tuple[dict[str, Any], Scope, dict[str, str]]] = []
            for sample in samples:
                agent = {"team_id": admin["team_id"], "owner_user_id": admin["user_id"], "name": sample["sample_id"]}
                agent_id = ok_data(http, "/v3/meta/agent/create", {**agent, "visibility": "team"}, as_admin)["agent_id"]
                ids = {"team_id": admin["team_id"], "agent_id": agent_id}
                dia_of = ingest(http, sample, admin["user_id"], **ids)
                turns = {t["dia_id"]: folded(f"{t['speaker']}: {t['text']}") for t in all_turns(sample)}
                scopes.append((sample, Scope(sample["sample_id"], agent_id, turns, []), dia_of))
            add_s = time.monotonic() - started
            progress(f"added {sum(len(d) for _, _, d in scopes)} turns in {add_s:.0f} s")
            pipeline_s = wait_for_pipeline(http, args.timeout)
            embed_s, health = wait_for_backlog(http, args.timeout)
            progress(f"pipeline idle after {pipeline_s:.0f} s more, embeddings after {embed_s:.0f} s more")
            for sample, scope, dia_of in scopes:
                ids = {"team_id": admin["team_id"], "agent_id": scope.agent_id, "user_id": admin["user_id"]}
                scope.memories = memories_of(http, ids, dia_of)
                evaluate(http, proxy, fake, sample, scope, admin, dia_of, scores, latencies, outcomes)
                progress(f"scored {scope.sample_id}: {len(scores['proxy_recall_on']['all'])} questions so far")

    summary = {
        row: {(c if c == "all" else CATEGORIES[c]): round(statistics.fmean(v), 4) for c, v in scores[row].items() if v}
        for row in ROWS
    }
    latency = {row: Latency.of(latencies[row]).__dict__ for row in ("proxy_recall_on", "proxy_recall_off")}
    turns = sum(len(d) for _, _, d in scopes)
    print(f"\nLoCoMo-{len(samples)}: {turns} turns, {len(scores['proxy_recall_on']['all'])} questions, env {env}")
    print(table(scores, ROWS, ROW_NAMES, "what reaches the model"))
    for row, lat in latency.items():
        print(f"{ROW_NAMES[row]}: proxied call p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms")
    for row, counted in outcomes.items():
        print(f"x-memhub-memory, {row}: {dict(counted)}")
    value = summary["proxy_recall_on"]["all"]
    print(f"aim ≥ {AIM} (goal {GOAL}): {value:.3f} ({'MET' if value >= AIM else 'MISSED'})")
    write_result(
        args.out,
        {
            "benchmark": "proxy-recall",
            "conversations": len(samples),
            "turns": turns,
            "questions": len(scores["proxy_recall_on"]["all"]),
            "capture": not args.no_capture,
            "coverage": summary,
            "latency": latency,
            "outcomes": {row: dict(counted) for row, counted in outcomes.items()},
            "add_s": round(add_s, 1),
            "pipeline_wait_s": round(pipeline_s, 1),
            "embedding_wait_s": round(embed_s, 1),
            "embedding_model": health["embedding"].get("model"),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
