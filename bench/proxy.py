"""What the memory proxy adds to an agent's LLM call: time to first byte and to the end, p50 / p95, streamed and
not, OpenAI chat and Anthropic messages, over calling the same upstream directly.

A real `memhub serve` forwards to a fake provider (a local HTTP server speaking both protocols, in a process of its
own, as a provider is elsewhere). Each proxied turn carries a Claude-Code-like system
prompt (`# Heading` sections, ~9 KB) and a short conversation, and gets the real blocks: the persona, the scene
index, the memory tools, a skills listing and the session context. The session's blocks are computed on its first
turn (measured apart, as "cold") and reused after, so the measured turns are the warm path every later turn takes.

Direct and proxied calls alternate, and the added latency is taken per pair (proxied minus the direct call just
before it), so load that drifts during the run hits both sides alike.

Three servers: the proxy alone (capture, pipeline, embedder and per-turn recall off, turns back to back), the
default server (per-turn recall on over the few memories seeded), and the default server over a scope of 10,000
LoCoMo turns and their memories (read in place from ../shared/eval-data/locomo/, never copied), where each turn
asks a LoCoMo question, so per-turn recall does its full work. That setup also times `/v3/recall` with the same
query right after each proxied turn (recall's own p95, aim: added p95 ≤ it + 5 ms), and checks that the upstream
got the same bytes before the turn's last user message every turn (system prompt and history byte-identical).

    python bench/proxy.py [--turns 300] [--setup ...] [--out bench/results/proxy.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake provider lives with the tests

from common import SERVICE, Latency, client, ok_data, percentile, running_server, write_result
from locomo import CATEGORIES, DATA, wait_for_backlog
from recall_quality import ingest, progress, wait_for_pipeline

SECTION = "Follow the user's instructions carefully and keep answers short. " * 12
SYSTEM_PROMPT = "\n\n".join(
    [
        "You are Claude Code, Anthropic's official CLI for Claude.",
        f"# Tone and style\n{SECTION}",
        f"# Doing tasks\n{SECTION * 3}",
        f"# Tool usage policy\n{SECTION * 2}",
        "# Memory\nYou have a persistent, file-based memory system.",
        "# Environment\nWorking directory: /home/dev/project\nPlatform: linux",
        f"# Harness\n{SECTION}",
    ]
)
HISTORY = [
    {"role": "user", "content": "Where is the release script?"},
    {"role": "assistant", "content": "It is scripts/release.sh; it tags and uploads the package."},
    {"role": "user", "content": "And what does it need in the environment?"},
    {"role": "assistant", "content": "TWINE_PASSWORD and a clean working tree."},
]


def seed_memory(http: httpx.Client) -> tuple[str, str, str, str]:
    """An instance admin with a team and agent (init-admin), a persona, scenes and a skill: the blocks' data."""
    admin = ok_data(http, "/v3/internal/meta/user/init-admin", {"username": "bench"})
    key, team, agent = admin["user_key"], admin["team_id"], admin["agent_id"]
    ids = {"team_id": team, "agent_id": agent, "user_id": admin["user_id"]}
    persona = "## Who\nA release engineer who prefers small, reviewed changes.\n" * 20
    ok_data(http, "/v3/core/write", {**ids, "content": persona})
    for n in range(8):
        scene = {"path": f"release-{n}.md", "content": f"Step {n} of the release.", "summary": f"release step {n}"}
        ok_data(http, "/v3/scenario/create", {**ids, **scene})
    skill = "---\nname: cut-a-release\ndescription: Tag, build and upload a release.\n---\nRun the tests, tag, upload."
    ok_data(http, "/v3/skill/create", {**ids, "name": "cut-a-release", "content": skill})
    return key, team, agent, admin["user_id"]


def ttfb_and_total(send: Callable[[], httpx.Response], said: list[str] | None = None) -> tuple[float, float]:
    """Seconds to the response's first body byte and to its end; `said` gets its `x-memhub-memory` header."""
    start = time.perf_counter()
    with send() as response:
        if said is not None:
            said.append(response.headers.get("x-memhub-memory", ""))
        first = None
        for _chunk in response.iter_raw():
            if first is None:
                first = time.perf_counter()
        end = time.perf_counter()
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.read()!r}")
    return (first or end) - start, end - start


def request_body(protocol: str, stream: bool, n: int, asked: str | None = None) -> dict[str, Any]:
    question = {"role": "user", "content": asked or f"Run the release checklist, step {n}."}
    if protocol == "openai":
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, *HISTORY, question]
        return {"model": "fake-model", "messages": messages, "stream": stream}
    return {
        "model": "fake-model",
        "max_tokens": 256,
        "system": SYSTEM_PROMPT,
        "messages": [*HISTORY, question],
        "stream": stream,
    }


def measure(
    pace: float,
    http: httpx.Client,
    server_url: str,
    fake_root: str,
    key: str,
    headers: dict[str, str],
    protocol: str,
    stream: bool,
    turns: int,
) -> dict[str, Any]:
    """Alternate direct and proxied calls in one session; the session's first (cold) turn is reported apart."""
    path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
    proxied_url = f"{server_url}/proxy/{SERVICE}{path}"
    direct_url = f"{fake_root}{path}"
    session = f"bench-{protocol}-{'stream' if stream else 'json'}"
    proxy_headers = {**headers, "authorization": f"Bearer {key}", "x-session-id": session}
    if protocol == "anthropic":
        proxy_headers["anthropic-version"] = "2023-06-01"

    def proxied(n: int) -> tuple[float, float]:
        body = request_body(protocol, stream, n)
        return ttfb_and_total(lambda: http.stream("POST", proxied_url, json=body, headers=proxy_headers))

    def direct(n: int) -> tuple[float, float]:
        body = request_body(protocol, stream, n)
        return ttfb_and_total(lambda: http.stream("POST", direct_url, json=body))

    cold = proxied(0)
    for n in range(1, 11):  # warm both paths' connections and the server's code paths
        direct(n)
        proxied(n)
    pairs = []
    for n in range(turns):
        pairs.append((direct(n), proxied(n)))
        time.sleep(pace)  # an agent's turns are spaced by its model's answer; background work runs meanwhile
    d_first = [d[0] for d, _ in pairs]
    p_first = [p[0] for _, p in pairs]
    d_total = [d[1] for d, _ in pairs]
    p_total = [p[1] for _, p in pairs]
    added_first = sorted((p[0] - d[0]) * 1000 for d, p in pairs)
    added_total = sorted((p[1] - d[1]) * 1000 for d, p in pairs)
    return {
        "protocol": protocol,
        "stream": stream,
        "turns": turns,
        "cold_first_byte_ms": round(cold[0] * 1000, 2),
        "direct_first_byte": Latency.of(d_first).__dict__,
        "proxied_first_byte": Latency.of(p_first).__dict__,
        "direct_total": Latency.of(d_total).__dict__,
        "proxied_total": Latency.of(p_total).__dict__,
        "added_first_byte_p50_ms": round(percentile(added_first, 0.5), 2),
        "added_first_byte_p95_ms": round(percentile(added_first, 0.95), 2),
        "added_total_p50_ms": round(percentile(added_total, 0.5), 2),
        "added_total_p95_ms": round(percentile(added_total, 0.95), 2),
        "added_first_byte_mean_ms": round(statistics.fmean(added_first), 2),
    }


def measure_recall(
    pace: float,
    http: httpx.Client,
    admin: httpx.Client,
    server_url: str,
    fake_root: str,
    key: str,
    headers: dict[str, str],
    protocol: str,
    stream: bool,
    questions: list[str],
    user_id: str,
) -> dict[str, Any]:
    """As `measure`, each turn asking another question, then `/v3/recall` timed with the same query; the upstream's
    bytes before the turn's last user message compared with the first turn's."""
    path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
    session = f"bench-recall-{protocol}-{'stream' if stream else 'json'}"
    proxy_headers = {**headers, "authorization": f"Bearer {key}", "x-session-id": session}
    if protocol == "anthropic":
        proxy_headers["anthropic-version"] = "2023-06-01"
    scope = {"team_id": headers["x-team-id"], "agent_id": headers["x-agent-id"], "user_id": user_id}

    said: list[str] = []

    def call(url: str, n: int, proxied: bool) -> tuple[float, float]:
        body = request_body(protocol, stream, n, questions[n])
        sent = proxy_headers if proxied else {}
        return ttfb_and_total(lambda: http.stream("POST", url, json=body, headers=sent), said if proxied else None)

    def upstream_prefix() -> bytes:
        """What the upstream got before the last user message: the system prompt and the history."""
        last = http.get(f"{fake_root}/_fake/last?path={path}").json()
        return json.dumps([last.get("system"), last["messages"][:-1]]).encode()

    def own_recall(n: int) -> float:
        # A space more than the proxy's query (which it strips): recall embeds the query itself, as the proxy did.
        body = {**scope, "query": questions[n] + " ", "include_persona": False}
        started = time.perf_counter()
        ok_data(admin, "/v3/recall", {**body, "include_scenes": False})
        return time.perf_counter() - started

    proxied_url, direct_url = f"{server_url}/proxy/{SERVICE}{path}", f"{fake_root}{path}"
    cold = call(proxied_url, 0, True)
    for n in range(1, 11):
        call(direct_url, n, False)
        call(proxied_url, n, True)
    first = upstream_prefix()
    said.clear()
    pairs, recall_s, identical = [], [], True
    for n in range(11, len(questions)):
        pairs.append((call(direct_url, n, False), call(proxied_url, n, True)))
        identical = identical and upstream_prefix() == first
        recall_s.append(own_recall(n))
        time.sleep(pace)
    outcomes = Counter("recall=<n>" if h.rpartition("recall=")[2].isdigit() else h for h in said)
    added_first = sorted((p[0] - d[0]) * 1000 for d, p in pairs)
    added_total = sorted((p[1] - d[1]) * 1000 for d, p in pairs)
    own = Latency.of(recall_s)
    return {
        "protocol": protocol,
        "stream": stream,
        "turns": len(pairs),
        "cold_first_byte_ms": round(cold[0] * 1000, 2),
        "direct_first_byte": Latency.of([d[0] for d, _ in pairs]).__dict__,
        "proxied_first_byte": Latency.of([p[0] for _, p in pairs]).__dict__,
        "direct_total": Latency.of([d[1] for d, _ in pairs]).__dict__,
        "proxied_total": Latency.of([p[1] for _, p in pairs]).__dict__,
        "added_first_byte_p50_ms": round(percentile(added_first, 0.5), 2),
        "added_first_byte_p95_ms": round(percentile(added_first, 0.95), 2),
        "added_total_p50_ms": round(percentile(added_total, 0.5), 2),
        "added_total_p95_ms": round(percentile(added_total, 0.95), 2),
        "added_first_byte_mean_ms": round(statistics.fmean(added_first), 2),
        "recall": own.__dict__,
        "aim_added_p95_ms": round(own.p95_ms + 5, 2),
        "aim_met": percentile(added_first, 0.95) <= own.p95_ms + 5,
        "prefix_identical": identical,
        "outcomes": dict(outcomes),
    }


def fill_scope(http: httpx.Client, data: Path, ids: dict[str, str], turns: int, timeout: float) -> list[str]:
    """The LoCoMo turns, cycled into the scope until it holds `turns`, extracted and embedded; the questions."""
    samples = json.loads(data.read_text())
    added, round_no = 0, 0
    while added < turns:
        for sample in samples:
            if added < turns:
                scope = {k: v for k, v in ids.items() if k != "user_id"}
                added += len(ingest(http, sample, ids["user_id"], f"r{round_no}_{sample['sample_id']}_", **scope))
        round_no += 1
    progress(f"recall scope: added {added} turns")
    pipeline_s = wait_for_pipeline(http, timeout)
    embed_s, _ = wait_for_backlog(http, timeout)
    progress(f"recall scope: pipeline idle after {pipeline_s:.0f} s, embeddings after {embed_s:.0f} s more")
    return [q["question"].strip() for s in samples for q in s["qa"] if q.get("category") in CATEGORIES]


# The proxy's own cost (nothing runs in the background), the default server, whose every captured turn is then
# written to L0, embedded and mined in the background, at an agent's pace, and the default server whose scope holds
# 10,000 turns, each turn recalling over them.
SETUPS: dict[str, tuple[dict[str, str], str]] = {
    "proxy alone": (
        {
            "MEMHUB_PROXY_CAPTURE": "false",
            "MEMHUB_EMBEDDING_PROVIDER": "none",
            "MEMHUB_PIPELINE_ENABLED": "false",
            "MEMHUB_PROXY_TURN_RECALL": "false",
        },
        "back to back",
    ),
    "default server": ({}, "paced"),
    "recall, 10k turns": ({}, "paced"),
}
RECALL_SETUP = "recall, 10k turns"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300, help="measured turns per protocol and mode")
    parser.add_argument("--pace-ms", type=float, default=100.0, help="pause between turns on the default server")
    parser.add_argument("--setup", choices=sorted(SETUPS), action="append", help="only these setups (default: all)")
    parser.add_argument("--scope-turns", type=int, default=10_000, help="turns in the recall setup's scope")
    parser.add_argument("--data", type=Path, default=DATA, help="locomo10.json, for the recall setup")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for pipeline and embeddings")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "proxy.json")
    args = parser.parse_args()
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.proxy.fake_upstream"],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert fake.stdout is not None and fake.stdin is not None
    fake_root = fake.stdout.readline().strip()
    results: list[dict[str, Any]] = []
    try:
        for setup, (extra, pacing) in SETUPS.items():
            if args.setup and setup not in args.setup:
                continue
            pace = args.pace_ms / 1000 if pacing == "paced" else 0.0
            with tempfile.TemporaryDirectory(prefix="mh-proxy-") as tmp:
                env = {
                    "MEMHUB_PROXY_OPENAI_BASE_URL": f"{fake_root}/v1",
                    "MEMHUB_PROXY_OPENAI_API_KEY": "sk-bench-openai",
                    "MEMHUB_PROXY_ANTHROPIC_BASE_URL": fake_root,
                    "MEMHUB_PROXY_ANTHROPIC_API_KEY": "sk-ant-bench",
                    **extra,
                }
                with running_server(Path(tmp) / "data", sys.executable, env) as server, client(server) as admin:
                    key, team, agent, user = seed_memory(admin)
                    headers = {"x-team-id": team, "x-agent-id": agent}
                    questions = []
                    if setup == RECALL_SETUP:
                        ids = {"team_id": team, "agent_id": agent, "user_id": user}
                        questions = fill_scope(admin, args.data, ids, args.scope_turns, args.timeout)
                    with httpx.Client(timeout=60) as http:
                        for protocol in ("openai", "anthropic"):
                            for stream in (False, True):
                                if questions:
                                    asked = questions[: args.turns + 11]
                                    questions = questions[args.turns + 11 :] + asked  # each row its own questions
                                    row = measure_recall(
                                        pace, http, admin, server.url, fake_root, key, headers, protocol, stream,
                                        asked, user,
                                    )  # fmt: skip
                                else:
                                    row = measure(
                                        pace, http, server.url, fake_root, key, headers, protocol, stream, args.turns
                                    )
                                row["setup"] = setup
                                row["pace_ms"] = pace * 1000
                                results.append(row)
                                print(
                                    f"{setup} {protocol} stream={stream}: +{row['added_first_byte_p95_ms']} ms p95",
                                    file=sys.stderr,
                                )
                        injected = http.get(f"{fake_root}/_fake/last?path=/v1/messages").json()["system"]
    finally:
        fake.stdin.close()
        fake.wait(timeout=30)
    print(
        "\n| setup | protocol | mode | first byte p50 / p95, direct | proxied | added p50 / p95 "
        "| total added p50 / p95 "
        "| cold first byte |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        d, p = r["direct_first_byte"], r["proxied_first_byte"]
        print(
            f"| {r['setup']} | {r['protocol']} | {'stream' if r['stream'] else 'json'} "
            f"| {d['p50_ms']:.2f} / {d['p95_ms']:.2f} ms | {p['p50_ms']:.2f} / {p['p95_ms']:.2f} ms "
            f"| {r['added_first_byte_p50_ms']:.2f} / **{r['added_first_byte_p95_ms']:.2f}** ms "
            f"| {r['added_total_p50_ms']:.2f} / {r['added_total_p95_ms']:.2f} ms | {r['cold_first_byte_ms']:.1f} ms |"
        )
    recalled = [r for r in results if "recall" in r]
    if recalled:
        print(
            "\n| recall over 10k turns | mode | added p50 / p95 | /v3/recall p50 / p95, same query "
            "| aim: added p95 ≤ recall p95 + 5 ms | prefix byte-identical | x-memhub-memory |"
        )
        print("|---|---|---:|---:|---|---|---|")
        for r in recalled:
            print(
                f"| {r['protocol']} | {'stream' if r['stream'] else 'json'} "
                f"| {r['added_first_byte_p50_ms']:.2f} / {r['added_first_byte_p95_ms']:.2f} ms "
                f"| {r['recall']['p50_ms']:.2f} / {r['recall']['p95_ms']:.2f} ms "
                f"| {'met' if r['aim_met'] else 'missed'} | {'yes' if r['prefix_identical'] else 'NO'} "
                f"| {r['outcomes']} |"
            )
    system_chars = len(injected) if isinstance(injected, str) else sum(len(b.get("text", "")) for b in injected)
    print(f"\nsystem prompt as the upstream got it: {system_chars} characters ({len(SYSTEM_PROMPT)} sent)")
    write_result(
        args.out,
        {
            "turns": args.turns,
            "pace_ms": args.pace_ms,
            "results": results,
            "system_chars_upstream": system_chars,
            "system_chars_sent": len(SYSTEM_PROMPT),
        },
    )


if __name__ == "__main__":
    main()
