#!/usr/bin/env python3
"""Context offload on genuine agent trajectories: tokens saved per compaction level, what the agent can still
answer, and how fast the routes are.

The trajectories (bench/offload_trajectory.py) are a scripted coding agent's real work on this repository: real
searches, file reads, test runs and git history, in Anthropic Messages format, each ending near 150k tokens
(o200k_base). A real `memhub serve` (embeddings off: offload does not use them) gets each trajectory replayed
as the agent's client would send it, step by step:

1. before each model call, `POST /v2/offload/ingest` with what is new since the last one: the prompt that opened
   a task (with the recent text turns) or the tool pairs whose results just came back;
2. then the replay waits until those pairs have their summaries (the time from the ingest's answer to that is
   the ingest → summary latency), as the model's own answer would take at least as long;
3. then `POST /v2/offload/compact` with the call's whole context (the conversation so far, uncompacted: the
   session's earlier decisions are re-applied by the server), its `context_window`, `total_tokens` and the
   per-message counts.

Each trajectory is replayed once per level, in a session of its own, with a context window chosen so that its
last call lands in that level: the final context fills 70% of the window (mild), 90% (aggressive) or 100%
(emergency). Earlier calls of the same replay fall in lower levels as the context grows; every compaction is
reported under the level the server resolved. Tokens are counted here, the same way before and after (texts,
tool calls' names and inputs, tool results, 4 tokens a message), so the reduction does not depend on the
server's own count.

Retention is judged on each replay's last compaction: a fixed set of questions about facts that appeared only
in earlier tool results (see bench/offload_trajectory.py). A question is retained when its exact answer is in
the compacted messages, or in what `POST /v2/offload/read-ref` returns for a result_ref of the compacted
messages whose context mentions the question's key term (the stand-in's text and the tool call it answers, or
the lines around the ref in a longer text such as the task graph): the refs an agent looking for that fact would
read back, one call per ref, without a query or a line range.

Compact latency is every replayed compaction's wall time over HTTP (with the JSON of the whole context), and
apart, 20 more compactions of each trajectory's final context (the largest, ~150k tokens) once its replay is
done. The run is made offline (the extractive stages), then with an LLM: FakeChat (tests/pipeline/fake_llm.py)
answers the offload prompts with deterministic extractive JSON, so the LLM path's plumbing and cost are measured,
not a model's quality. Through the proxy, each call's context is sent as an Anthropic request to a fake
provider (tests/proxy/fake_upstream.py), with offload on and off, and the tokens the provider received counted.

Aims: at the mild level ≥ 50% fewer tokens with ≥ 90% retention offline; ingest → summary p95 ≤ 1 s offline;
compact p95 ≤ 50 ms for a 150k-token context.

    python bench/offload.py                 # two trajectories, offline and LLM, and the proxy (about 10 minutes)
    python bench/offload.py --quick         # one short trajectory
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from common import HERE, Latency, client, running_server, write_result
from offload_trajectory import (
    Question,
    Trajectory,
    Verdict,
    context_text,
    context_tokens,
    describe,
    judge,
    load_or_generate,
    message_text,
    message_tokens,
    ref_contexts,
)

# The fakes live with the tests, not in the package: test tooling never ships. The repository root goes on
# sys.path so that they import as they do under pytest.
sys.path.insert(0, str(HERE.parent))
from tests.pipeline.fake_llm import FakeChat, Reply

DEFAULT_OUT = HERE / "results" / "offload.json"
DEFAULT_TRAJECTORIES = HERE / "results" / "offload_trajectories.json"
LEVELS = {"mild": 0.70, "aggressive": 0.90, "emergency": 1.00}  # the last call's share of the window
LEVEL_ORDER = ("fastpath", "mild", "aggressive", "emergency")
TEAM, AGENT, USER = "bench-team", "bench-agent", "bench-user"
ISOLATION = {"x-tdai-team-id": TEAM, "x-tdai-agent-id": AGENT, "x-tdai-user-id": USER}
RECENT_TURNS = 6  # text turns sent with a prompt's ingest, as the client sends its last messages
SUMMARY_TIMEOUT_S = 30.0
REPEATS_AT_FINAL = 20
AIM_REDUCTION, AIM_RETENTION, AIM_SUMMARY_P95_MS, AIM_COMPACT_P95_MS = 0.50, 0.90, 1000.0, 50.0
SERVER_ENV = {"MEMHUB_EMBEDDING_PROVIDER": "none"}


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the routes ----------------------------------------------------------------------------------------------------


class Routes:
    """The offload routes of one server, with the bench's isolation ids; every call's wall time is kept."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        self.times: dict[str, list[float]] = defaultdict(list)

    def post(self, route: str, body: dict[str, Any]) -> Any:
        started = time.perf_counter()
        response = self.http.post(f"/v2/offload/{route}", json=body, headers=ISOLATION)
        self.times[route].append(time.perf_counter() - started)
        envelope = response.json()
        if not 200 <= response.status_code < 300 or envelope.get("code") != 0:
            raise RuntimeError(f"/v2/offload/{route}: HTTP {response.status_code} {str(envelope)[:2000]}")
        return envelope.get("data")

    def ingest(self, session: str, pairs: Sequence[dict[str, Any]], prompt: str | None, recent: list[Any]) -> None:
        body: dict[str, Any] = {"session_id": session}
        if pairs:
            body["tool_pairs"] = list(pairs)
        if prompt:
            body["prompt"] = prompt
            body["recent_messages"] = recent
        self.post("ingest", body)

    def compact(self, session: str, messages: list[dict[str, Any]], window: int, tokens: list[int]) -> Any:
        total = sum(tokens)
        body = {
            "session_id": session,
            "messages": messages,
            "ratio": round(min(total / window, 2.0), 4),
            "context_window": window,
            "total_tokens": total,
            "message_tokens": tokens,
        }
        return self.post("compact", body)

    def read_ref(self, session: str, ref: str) -> str:
        data = self.post("read-ref", {"session_id": session, "result_ref": ref})
        return str(data.get("content", ""))

    def query_mmd(self, session: str) -> Any:
        return self.post("query-mmd", {"session_id": session})


def recent_turns(messages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The last text turns before a prompt (tool traffic left out), as `recent_messages`."""
    turns = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            turns.append({"role": message["role"], "content": content})
        elif all(b.get("type") == "text" for b in content):
            turns.append({"role": message["role"], "content": message_text(message)})
    return turns[-RECENT_TURNS:]


# -- waiting for summaries -------------------------------------------------------------------------------------------


def wait_for_summaries(routes: Routes, session: str, call_ids: Sequence[str], timeout: float) -> float | None:
    """Seconds until every pair in `call_ids` has its summary, or None when the timeout passed first."""
    raise NotImplementedError


# -- one replay ------------------------------------------------------------------------------------------------------


@dataclass
class Compaction:
    call: int
    level: str
    tokens_before: int
    tokens_after: int
    seconds: float
    report: dict[str, Any]


@dataclass
class Replay:
    trajectory: str
    level: str
    window: int
    compactions: list[Compaction] = field(default_factory=list)
    summary_s: list[float] = field(default_factory=list)
    summary_timeouts: int = 0
    final_messages: list[dict[str, Any]] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    read_ref_calls: int = 0
    final_repeats_s: list[float] = field(default_factory=list)


def replay(routes: Routes, trajectory: Trajectory, level: str, share: float, mode: str, repeats: int) -> Replay:
    tokens = [message_tokens(m) for m in trajectory.messages]
    final = sum(tokens[: trajectory.calls[-1].upto])
    window = math.ceil(final / share)
    session = f"bench-{mode}-{trajectory.name}-{level}"
    result = Replay(trajectory.name, level, window)
    for n, call in enumerate(trajectory.calls):
        if call.pairs or call.prompt:
            recent = recent_turns(trajectory.messages[: call.upto - 1]) if call.prompt else []
            routes.ingest(session, call.pairs, call.prompt, recent)
        if call.pairs:
            waited = wait_for_summaries(routes, session, [p["tool_call_id"] for p in call.pairs], SUMMARY_TIMEOUT_S)
            if waited is None:
                result.summary_timeouts += 1
            else:
                result.summary_s.append(waited)
        context = trajectory.context(call)
        started = time.perf_counter()
        data = routes.compact(session, context, window, tokens[: call.upto])
        seconds = time.perf_counter() - started
        report = data.get("report") or {}
        compacted = data.get("messages") or []
        result.compactions.append(
            Compaction(
                n,
                str(report.get("resolvedLevel", "?")),
                sum(tokens[: call.upto]),
                context_tokens(compacted),
                seconds,
                report,
            )
        )
        result.final_messages = compacted
    last = trajectory.context(trajectory.calls[-1])
    for _ in range(repeats):
        started = time.perf_counter()
        routes.compact(session, last, window, tokens[: trajectory.calls[-1].upto])
        result.final_repeats_s.append(time.perf_counter() - started)
    result.verdicts, result.read_ref_calls = retention(routes, session, trajectory.questions, result.final_messages)
    return result


def retention(
    routes: Routes, session: str, questions: Sequence[Question], messages: list[dict[str, Any]]
) -> tuple[dict[str, Verdict], int]:
    """Each question judged on the compacted messages (bench/offload_trajectory.py `judge`); read-ref calls are
    made once per ref, however many questions lead to it."""
    cache: dict[str, str] = {}

    def read(ref: str) -> str:
        if ref not in cache:
            cache[ref] = routes.read_ref(session, ref)
        return cache[ref]

    text, contexts = context_text(messages), ref_contexts(messages)
    verdicts = {q.id: judge(q, messages, read, contexts, text) for q in questions}
    return verdicts, len(cache)


# -- one server ------------------------------------------------------------------------------------------------------


def run_server(
    trajectories: Sequence[Trajectory],
    mode: str,
    python: str,
    env: dict[str, str],
    repeats: int,
    levels: Sequence[str],
) -> tuple[list[Replay], dict[str, list[float]]]:
    with (
        tempfile.TemporaryDirectory(prefix=f"memhub-offload-{mode}-") as tmp,
        running_server(Path(tmp) / "data", python, {**SERVER_ENV, **env}) as server,
        client(server) as http,
    ):
        routes = Routes(http)
        replays = []
        for trajectory in trajectories:
            for level in levels:
                started = time.monotonic()
                done = replay(routes, trajectory, level, LEVELS[level], mode, repeats)
                replays.append(done)
                kept = sum(v.retained for v in done.verdicts.values())
                last = done.compactions[-1]
                progress(
                    f"{mode} {trajectory.name} {level}: {len(done.compactions)} compactions, last {last.level} "
                    f"{last.tokens_before:,} → {last.tokens_after:,} tokens, retention {kept}/{len(done.verdicts)} "
                    f"({time.monotonic() - started:.0f} s)"
                )
        return replays, dict(routes.times)


# -- an LLM for the offload prompts ----------------------------------------------------------------------------------


def extractive_llm(body: dict[str, Any]) -> Reply:
    """FakeChat's answer to an offload prompt: deterministic JSON of the shape the prompt asks for."""
    raise NotImplementedError


# -- the proxy -------------------------------------------------------------------------------------------------------


def run_proxy(trajectories: Sequence[Trajectory], python: str) -> dict[str, Any]:
    raise NotImplementedError


# -- reporting -------------------------------------------------------------------------------------------------------


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def ms(seconds: Sequence[float], q: str = "p95_ms") -> str:
    return f"{getattr(Latency.of(seconds), q):.1f}" if seconds else "–"


def summarize(replays: Sequence[Replay], trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Per level of the last compaction: tokens, reduction, retention; per resolved level: every compaction."""
    questions = {t.name: {q.id: q for q in t.questions} for t in trajectories}
    final: dict[str, Any] = {}
    for level in LEVELS:
        chosen = [r for r in replays if r.level == level]
        if not chosen:
            continue
        before = sum(r.compactions[-1].tokens_before for r in chosen)
        after = sum(r.compactions[-1].tokens_after for r in chosen)
        verdicts = [(questions[r.trajectory][qid], v) for r in chosen for qid, v in r.verdicts.items()]
        how = Counter(v.how for _, v in verdicts)
        by_kind: dict[str, list[bool]] = defaultdict(list)
        for q, v in verdicts:
            by_kind[q.kind].append(v.retained)
        final[level] = {
            "resolved": sorted({r.compactions[-1].level for r in chosen}),
            "windows": {r.trajectory: r.window for r in chosen},
            "tokens_before": before,
            "tokens_after": after,
            "reduction": round(1 - after / before, 4) if before else None,
            "questions": len(verdicts),
            "retention": round(sum(v.retained for _, v in verdicts) / len(verdicts), 4) if verdicts else None,
            "in_context": how["context"],
            "via_read_ref": how["read_ref"],
            "lost": how["lost"],
            "read_ref_calls": sum(r.read_ref_calls for r in chosen),
            "retention_by_kind": {k: round(sum(v) / len(v), 4) for k, v in sorted(by_kind.items())},
            "lost_questions": [
                {
                    "trajectory": r.trajectory,
                    "kind": questions[r.trajectory][qid].kind,
                    "answer": questions[r.trajectory][qid].answer,
                }
                for r in chosen
                for qid, v in r.verdicts.items()
                if not v.retained
            ],
            "report": chosen[0].compactions[-1].report,
        }
    resolved: dict[str, Any] = {}
    every = [c for r in replays for c in r.compactions]
    for level in LEVEL_ORDER:
        chosen_c = [c for c in every if c.level == level]
        if not chosen_c:
            continue
        before = sum(c.tokens_before for c in chosen_c)
        after = sum(c.tokens_after for c in chosen_c)
        resolved[level] = {
            "compactions": len(chosen_c),
            "tokens_before": before,
            "tokens_after": after,
            "reduction": round(1 - after / before, 4) if before else None,
            "latency": Latency.of([c.seconds for c in chosen_c]).__dict__,
        }
    summary_s = [s for r in replays for s in r.summary_s]
    big = [c.seconds for c in every if c.tokens_before >= 120_000]
    repeats = [s for r in replays for s in r.final_repeats_s]
    return {
        "final": final,
        "resolved": resolved,
        "summary_latency": Latency.of(summary_s).__dict__ if summary_s else None,
        "summary_timeouts": sum(r.summary_timeouts for r in replays),
        "compact_latency": Latency.of([c.seconds for c in every]).__dict__,
        "compact_latency_120k_plus": Latency.of(big).__dict__ if big else None,
        "compact_latency_final_repeats": Latency.of(repeats).__dict__ if repeats else None,
        "final_tokens": {t.name: context_tokens(t.context(t.calls[-1])) for t in trajectories},
    }


def print_mode(mode: str, summary: dict[str, Any]) -> None:
    print(f"\n### {mode}: the last compaction of each replay, by the level it was aimed at\n")
    print(
        "| level | resolved | tokens before | tokens after | reduction | retention | in context | via read-ref "
        "| lost | read-ref calls |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level, row in summary["final"].items():
        print(
            f"| {level} | {', '.join(row['resolved'])} | {row['tokens_before']:,} | {row['tokens_after']:,} | "
            f"{100 * row['reduction']:.1f}% | {100 * row['retention']:.1f}% ({row['questions']}) | "
            f"{row['in_context']} | {row['via_read_ref']} | {row['lost']} | {row['read_ref_calls']} |"
        )
    print(f"\n### {mode}: every compaction of the replays, by the level the server resolved\n")
    print("| resolved level | compactions | tokens before | tokens after | reduction | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for level, row in summary["resolved"].items():
        lat = row["latency"]
        print(
            f"| {level} | {row['compactions']} | {row['tokens_before']:,} | {row['tokens_after']:,} | "
            f"{100 * row['reduction']:.1f}% | {lat['p50_ms']:.1f} | {lat['p95_ms']:.1f} |"
        )
    print()
    s = summary["summary_latency"]
    if s:
        print(
            f"ingest → summary: p50 {s['p50_ms']:.0f} ms, p95 {s['p95_ms']:.0f} ms, max {s['max_ms']:.0f} ms "
            f"over {s['n']} tool steps ({summary['summary_timeouts']} timed out)"
        )
    for name, label in (
        ("compact_latency", "compact, every replayed call"),
        ("compact_latency_120k_plus", "compact, calls of ≥ 120k tokens"),
        ("compact_latency_final_repeats", "compact, the final ~150k context again"),
    ):
        lat = summary[name]
        if lat:
            print(
                f"{label}: p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms, max {lat['max_ms']:.1f} ms "
                f"(n={lat['n']})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one short trajectory (its first tasks)")
    parser.add_argument("--rev", default="HEAD", help="the commit the agent works on")
    parser.add_argument("--trajectories", type=Path, default=DEFAULT_TRAJECTORIES, help="cache of the trajectories")
    parser.add_argument("--no-llm", action="store_true", help="skip the run with the fake LLM")
    parser.add_argument("--no-proxy", action="store_true", help="skip the run through the proxy")
    parser.add_argument("--levels", default=",".join(LEVELS), help="levels to aim at (comma-separated)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `memhub serve`")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    trajectories = load_or_generate(args.trajectories, args.rev, args.python, args.quick, progress)
    for trajectory in trajectories:
        progress(describe(trajectory))
    levels = [level for level in args.levels.split(",") if level]
    repeats = 5 if args.quick else REPEATS_AT_FINAL
    results: dict[str, Any] = {}
    times: dict[str, Any] = {}

    replays, route_times = run_server(trajectories, "offline", args.python, {}, repeats, levels)
    results["offline"] = summarize(replays, trajectories)
    times["offline"] = {route: Latency.of(s).__dict__ for route, s in route_times.items()}

    if not args.no_llm:
        with FakeChat(script=extractive_llm) as fake:
            env = {"MEMHUB_LLM_BASE_URL": fake.base_url, "MEMHUB_LLM_MODEL": "fake-chat"}
            replays, route_times = run_server(trajectories, "llm", args.python, env, repeats, levels)
            results["llm"] = summarize(replays, trajectories)
            results["llm"]["llm_requests"] = fake.request_count
            times["llm"] = {route: Latency.of(s).__dict__ for route, s in route_times.items()}

    proxy = None if args.no_proxy else run_proxy(trajectories, args.python)

    print(f"\n## Context offload on {len(trajectories)} genuine trajectories")
    for trajectory in trajectories:
        print(f"- {describe(trajectory)}")
    for mode, summary in results.items():
        print_mode(mode, summary)
    offline = results["offline"]
    mild = offline["final"].get("mild")
    if mild:
        met = mild["reduction"] >= AIM_REDUCTION and mild["retention"] >= AIM_RETENTION
        print(
            f"\naim, mild offline: ≥ {AIM_REDUCTION:.0%} fewer tokens with ≥ {AIM_RETENTION:.0%} retention: "
            f"{mild['reduction']:.1%}, {mild['retention']:.1%} ({'MET' if met else 'MISSED'})"
        )
    write_result(
        args.out,
        {
            "benchmark": "offload",
            "quick": args.quick,
            "trajectories": [
                {
                    "name": t.name,
                    "rev": t.rev,
                    "tasks": t.tasks,
                    "model_calls": len(t.calls),
                    "tool_pairs": sum(len(c.pairs) for c in t.calls),
                    "final_tokens": context_tokens(t.context(t.calls[-1])),
                    "questions": [asdict(q) for q in t.questions],
                    "planted_bug": t.planted_bug,
                }
                for t in trajectories
            ],
            "levels": LEVELS,
            "results": results,
            "route_latency": times,
            "proxy": proxy,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
