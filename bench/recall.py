#!/usr/bin/env python3
"""Recall benchmark: the agent kit's recall end to end at 10k and 100k L1 memories, and capture.

Aim: warm recall p95 ≤ 30 ms at 100k L1 memories in one scope (the original's recall budget is 200 ms).

Data: bench/search.py's in-process loader fills one scope with N L1 memories (seeded chat-like texts,
synthetic clustered vectors; see its docstring) before the server starts. `memhub serve` then runs on
that data with the local e5 model, so every recall's query is embedded for real; through HTTP the
benchmark writes a persona (`/v3/core/write`) and --scenes scene files (`/v3/scenario/create`) in the
same scope, so all three recall paths return real data.

Per size, one client, sequential, distinct queries (search.py's QueryPool: 1–4 words, EN/ZH):

  - cold: the scope's first recall (the server loads the scope's vectors; a new kit opens its
    connections), timed on its own with a 60 s deadline;
  - graph building: above 20,000 vectors the server then builds an HNSW graph in the background and
    searches stay exact until it is published (server log): recalls during that window, then a wait;
  - warm: `MemoryAgent.connect(...).recall(q)` timed by the caller, deadline --deadline (2 s), so the
    figure is the true end-to-end time; recalls whose in-kit time passed the default 200 ms deadline
    are counted (they would have come back degraded);
  - paths inside recall: the same again with a client that times each of the three calls on the
    kit's loop, which gives each path's time under the others' concurrency and the kit's overhead
    (caller-side time minus the slowest path: thread hop, sanitising, task set-up, prompt blocks);
  - paths alone: the three calls one after another with the sync `MemoryClient`;
  - user-message queries: warm recalls whose query is a whole chat message (5–50 words), as an agent
    that passes the user's prompt would send;
  - "again" rows repeat a run's queries at once: the server has cached their query vectors, so the
    difference to the first pass is the query's e5 embedding.

Capture: a kit with its own session queues --capture messages (user/assistant turns of 2, one
`capture` call each) into the same scope; the caller-side enqueue rate is messages / time spent in
`capture`, the drain rate is messages / time from the first `capture` until `flush` returned, and
`/v3/conversation/count` must then show every message. The server runs with its defaults (pipeline
and embedding worker on), so their background work on the captured messages shares the 2 cores.

Prints Markdown tables and writes JSON to bench/results/recall.json.

    python bench/recall.py            # 10k and 100k L1 memories, 300 recalls per run, 5,000 captured messages
    python bench/recall.py --quick    # 10k only, 100 recalls, 1,000 messages (under a minute)
    python bench/recall.py --data-dir /tmp/mh-recall   # keep the loaded data and reuse it next time
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common import HERE, KEY, SERVICE, Latency, Server, client, running_server, write_result
from gateway import TextGen
from memhub.sdk import AsyncMemoryClient, MemoryClient
from memhub.sdk.agent import AgentConfig, MemoryAgent
from memhub.store.sqlite.store import EXACT_VECTOR_LIMIT
from search import (
    E5,
    TEAM,
    USER,
    DataSpec,
    GraphWatch,
    LoadStats,
    QueryPool,
    ScopeSpec,
    _loadavg,
    _log,
    check_counts,
    load,
    wait_backlog,
)

DEFAULT_OUT = HERE / "results" / "recall.json"
SCOPE = "one"  # search.py's scope name: agent "agent-one" of bench-team / bench-user
AGENT = f"agent-{SCOPE}"
AIM_P95_MS = 30.0
DEFAULT_DEADLINE_MS = AgentConfig().recall_deadline * 1000
COLD_DEADLINE_S = 60.0
WARMUP_RECALLS = 5
MEMORIES, PERSONA, SCENES = "memories", "persona", "scenes"  # the kit's names for its recall paths
PATH_LABEL = {MEMORIES: "L1 atomic/search", PERSONA: "L3 core/read", SCENES: "L2 scenario/ls"}
CACHED_SEARCH = "memories, cached"
CACHED = "query vectors cached: no e5 embedding"

PERSONA_TEXT = """# Persona

## Who
Wei Chen, senior backend engineer on the payments team, based in Chengdu (UTC+8). Works remote
three days a week; in the office on Tuesdays and Thursdays.

## Preferences
- Answers short and concrete; code in Python or Rust, never pseudo-code.
- Prefers oolong tea, dislikes early meetings (nothing before 10:00).
- Writes commit messages in English, chats with the team in Chinese.

## Ongoing work
- Migrating the invoice service from MySQL to Postgres (milestone: end of next sprint).
- On call every fourth week; the last incident was a retry storm in the refund queue.

## Personal
- Daughter Lily (8) plays the piano; concerts on Saturday mornings.
- Training for a half marathon in Hangzhou in the autumn.
"""
SCENE_TOPICS = [
    "invoice-migration",
    "refund-queue-incident",
    "on-call-rotation",
    "postgres-tuning",
    "sprint-planning",
    "code-review-habits",
    "release-process",
    "kubernetes-cluster",
    "certificate-renewal",
    "payments-api-design",
    "latency-budget",
    "team-offsite",
    "hangzhou-half-marathon",
    "lily-piano-concerts",
    "tea-preferences",
    "travel-tokyo-trip",
    "weekend-hiking",
    "book-club",
    "home-garden",
    "family-dinner-plans",
    "visa-application",
    "doctor-appointments",
    "rust-learning",
    "python-tooling",
    "metrics-dashboards",
    "alerting-rules",
    "customer-escalations",
    "budget-review",
    "hiring-interviews",
    "mentoring-notes",
]


# -- the kit and the raw client ------------------------------------------------------------------


class TimedClient(AsyncMemoryClient):
    """An AsyncMemoryClient that records how long each recall path's call took on the kit's loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.last: dict[str, float] = {}

    @contextmanager
    def _clock(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.last[name] = time.perf_counter() - t0

    async def search_atomic(self, query: str, **kwargs: Any) -> dict[str, Any]:
        """`search_atomic`, timed."""
        with self._clock(MEMORIES):
            return await super().search_atomic(query, **kwargs)

    async def read_core(self) -> dict[str, Any]:
        """`read_core`, timed."""
        with self._clock(PERSONA):
            return await super().read_core()

    async def list_scenarios(self, **kwargs: Any) -> dict[str, Any]:
        """`list_scenarios`, timed."""
        with self._clock(SCENES):
            return await super().list_scenarios(**kwargs)


def _ids(session: str) -> dict[str, str]:
    return {"team_id": TEAM, "agent_id": AGENT, "user_id": USER, "session_id": session}


def connect(server: Server, session: str, config: AgentConfig) -> MemoryAgent:
    """The kit exactly as an agent builds it."""
    return MemoryAgent.connect(server.url, KEY, SERVICE, **_ids(session), config=config)


def connect_timed(server: Server, session: str, config: AgentConfig) -> tuple[MemoryAgent, TimedClient]:
    """The kit over a client that times each path (what `connect` builds, with the timing subclass)."""
    timed = TimedClient(server.url, KEY, SERVICE, **_ids(session))
    return MemoryAgent(timed, session_id=session, config=config), timed


# -- measurements ----------------------------------------------------------------------------------


@dataclass
class Row:
    size: int
    run: str
    latency: Latency | None
    over_default: int | None = None  # recalls whose in-kit time passed the default 200 ms deadline
    degraded: int | None = None  # recalls that came back with a path missing
    hits: float | None = None  # memories per recall
    persona: float | None = None  # share of recalls that carried the persona
    scenes: float | None = None  # scene paths per recall
    note: str = ""
    loadavg: float = field(default_factory=_loadavg)  # 1-minute load when the run ended (the box is shared)


@dataclass
class RecallRun:
    wall: list[float] = field(default_factory=list)
    in_kit: list[float] = field(default_factory=list)  # Recall.elapsed_ms, in seconds
    paths: dict[str, list[float]] = field(default_factory=lambda: {MEMORIES: [], PERSONA: [], SCENES: []})
    overhead: list[float] = field(default_factory=list)
    degraded: int = 0
    hits: int = 0
    persona: int = 0
    scenes: int = 0

    def row(self, size: int, run: str, *, note: str = "", in_kit: bool = False) -> Row:
        """This run's caller-side (or in-kit) latency with what the recalls carried."""
        n = max(len(self.wall), 1)
        values = self.in_kit if in_kit else self.wall
        return Row(
            size,
            run,
            Latency.of(values) if values else None,
            over_default=sum(s * 1000 > DEFAULT_DEADLINE_MS for s in self.in_kit),
            degraded=self.degraded,
            hits=round(self.hits / n, 2),
            persona=round(self.persona / n, 3),
            scenes=round(self.scenes / n, 2),
            note=note,
        )


def recall_many(
    agent: MemoryAgent,
    queries: Sequence[str],
    timed: TimedClient | None = None,
    stop: Callable[[], bool] | None = None,
) -> RecallRun:
    """Sequential recalls timed by the caller; `stop()` (checked every 10 recalls) ends the run early."""
    run = RecallRun()
    for i, q in enumerate(queries):
        if stop is not None and i and i % 10 == 0 and stop():
            break
        if timed is not None:
            timed.last.clear()
        t0 = time.perf_counter()
        r = agent.recall(q)
        wall = time.perf_counter() - t0
        run.wall.append(wall)
        run.in_kit.append(r.elapsed_ms / 1000)
        run.degraded += bool(r.degraded)
        run.hits += len(r.memories)
        run.persona += r.persona is not None
        run.scenes += len(r.scenes)
        if timed is not None and len(timed.last) == 3:
            for name, s in timed.last.items():
                run.paths[name].append(s)
            run.overhead.append(wall - max(timed.last.values()))
    return run


def raw_paths(server: Server, queries: Sequence[str]) -> dict[str, list[float]]:
    """The three recall calls alone, one after another, with the sync SDK client."""
    out: dict[str, list[float]] = {MEMORIES: [], PERSONA: [], SCENES: [], CACHED_SEARCH: []}
    with MemoryClient(server.url, KEY, SERVICE, **_ids("bench-raw")) as memory:
        memory.read_core()  # opens the connection outside the measurement
        for q in queries:
            for name, call in (
                (MEMORIES, lambda q=q: memory.search_atomic(q, limit=5)),
                (PERSONA, memory.read_core),
                (SCENES, memory.list_scenarios),
            ):
                t0 = time.perf_counter()
                call()
                out[name].append(time.perf_counter() - t0)
        # The same searches again: the server has their query vectors cached, so the difference is e5's.
        for q in queries:
            t0 = time.perf_counter()
            memory.search_atomic(q, limit=5)
            out[CACHED_SEARCH].append(time.perf_counter() - t0)
    return out


def seed_profile(server: Server, scenes: int, gen: TextGen) -> None:
    """Persona and scene files through HTTP, so recall's L3 and L2 paths return real data."""
    body = {"team_id": TEAM, "agent_id": AGENT, "user_id": USER}
    with client(server) as http:
        response = http.post("/v3/core/write", json={**body, "content": PERSONA_TEXT})
        if response.status_code != 200 or response.json().get("code") != 0:
            raise RuntimeError(f"core/write failed: {response.status_code} {response.text[:300]}")
        for i in range(scenes):
            lap = i // len(SCENE_TOPICS)
            topic = SCENE_TOPICS[i % len(SCENE_TOPICS)] + (f"-{lap}" if lap else "")
            content = f"# {topic}\n\n" + "\n".join(f"- {gen.message()}" for _ in range(6))
            scene = {**body, "path": f"scene_blocks/{topic}.md", "content": content, "summary": gen.message()[:200]}
            response = http.post("/v3/scenario/create", json=scene)
            if response.status_code != 200 or response.json().get("code") != 0:
                raise RuntimeError(f"scenario/create failed: {response.status_code} {response.text[:300]}")


@dataclass
class CaptureResult:
    size: int
    messages: int
    turns: int
    queued: int
    enqueue_s: float
    enqueue_per_s: float
    drain_s: float
    drain_per_s: float
    flushed: bool
    stored: int
    call: Latency  # one capture() call, caller side
    stats: dict[str, Any]
    server_after: dict[str, Any]


def capture_run(server: Server, size: int, messages: int, gen: TextGen, flush_timeout: float) -> CaptureResult:
    """Queue `messages` in turns of 2, then wait for the background sender; checks what the gateway stored."""
    turns = messages // 2
    session = f"capture-{size}"
    # The queue must hold the whole burst: the default 256 batches is sized for one capture per LLM turn, and
    # a burst that outruns the sender would be dropped (counted in stats) rather than measured.
    config = AgentConfig(capture_queue_size=turns + 1)
    turn_msgs = [
        [{"role": "user", "content": gen.message()}, {"role": "assistant", "content": gen.message()}]
        for _ in range(turns)
    ]
    agent = connect(server, session, config)
    calls: list[float] = []
    queued = 0
    try:
        t0 = time.perf_counter()
        for msgs in turn_msgs:
            t1 = time.perf_counter()
            queued += agent.capture(msgs, since=0)
            calls.append(time.perf_counter() - t1)
        enqueued = time.perf_counter()
        flushed = agent.flush(flush_timeout)
        drained = time.perf_counter()
        stats = agent.stats
    finally:
        agent.close(flush_timeout=0)
    with MemoryClient(server.url, KEY, SERVICE, **_ids(session)) as memory:
        stored = int(memory.count_conversation()["total"])
    with client(server) as http:
        health = http.get("/health").json()
    enqueue_s, drain_s = enqueued - t0, drained - t0
    return CaptureResult(
        size=size,
        messages=turns * 2,
        turns=turns,
        queued=queued,
        enqueue_s=round(enqueue_s, 3),
        enqueue_per_s=round(queued / enqueue_s, 1),
        drain_s=round(drain_s, 3),
        drain_per_s=round(stats["capture"]["messages_sent"] / drain_s, 1),
        flushed=flushed,
        stored=stored,
        call=Latency.of(calls),
        stats=stats,
        server_after={
            "embedding_backlog": health.get("embedding_backlog"),
            "pipeline": health.get("services", {}).get("pipelineWorker"),
        },
    )


@dataclass
class SizeResult:
    size: int
    load: dict[str, Any]
    server_start_s: float = 0.0
    cold: dict[str, Any] = field(default_factory=dict)
    graph_ready_s: float | None = None
    graph_builds: list[tuple[int, float]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    capture: CaptureResult | None = None


def bench_size(size: int, root: Path, args: argparse.Namespace, pool: QueryPool) -> SizeResult:
    """Load one scope of `size` L1 memories, start the server on it and run every measurement."""
    spec = DataSpec(f"1 scope × {size:,} L1", (ScopeSpec(SCOPE, 0, size),))
    base = root / f"l1-{size}"
    _log(f"load {spec.label} into {base} …")
    stats = load(base, spec, args.seed + size)
    _log(f"  loaded: {stats.summary()}")
    if args.data_dir is not None:
        # The run writes a persona, scenes and captured messages: a copy keeps the loaded data reusable.
        data_dir = root / f"run-{size}"
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.copytree(base, data_dir)
    else:
        data_dir = base
    out = SizeResult(size, asdict(stats))
    n = args.recalls
    gen = TextGen(args.seed + 31 + size)
    t0 = time.perf_counter()
    with running_server(data_dir, args.python, E5) as server:
        out.server_start_s = round(time.perf_counter() - t0, 2)
        wait_backlog(server)
        check_counts(server, spec)
        seed_profile(server, args.scenes, gen)
        wait_backlog(server)
        _log(f"  server up in {out.server_start_s:.1f} s; persona and {args.scenes} scenes written")
        watch = GraphWatch(server)

        # Cold: the scope's first search loads its vectors; a fresh kit also opens its connections.
        cold_agent = connect(server, "bench-cold", AgentConfig(recall_deadline=COLD_DEADLINE_S))
        try:
            query = pool.take(1)[0]
            t1 = time.perf_counter()
            r = cold_agent.recall(query)
            wall = time.perf_counter() - t1
        finally:
            cold_agent.close()
        out.cold = {
            "wall_ms": round(wall * 1000, 1),
            "in_kit_ms": r.elapsed_ms,
            "degraded": list(r.degraded),
            "memories": len(r.memories),
            "persona": r.persona is not None,
            "scenes": len(r.scenes),
        }
        # The kit lists the scenes' directory ("scene_blocks/") among the paths too: only files are counted.
        if not (r.memories and r.persona and sum(not p.endswith("/") for p in r.scenes) == args.scenes):
            raise RuntimeError(f"a recall path returned no data: {out.cold}")
        _log(f"  cold recall {wall * 1000:.0f} ms ({len(r.memories)} memories, {len(r.scenes)} scenes)")
        out.rows.append(Row(size, "cold: first recall of the scope", Latency.of([wall]), note="n = 1"))

        agent = connect(server, "bench-warm", AgentConfig(recall_deadline=args.deadline))
        try:
            if size > EXACT_VECTOR_LIMIT:
                first_done = time.perf_counter()
                run = recall_many(agent, pool.take(n), stop=lambda: len(watch.builds()) >= 1)
                note = "exact vector scan; " + ("graph published during the run" if watch.builds() else "")
                out.rows.append(run.row(size, "graph building (after the cold recall)", note=note.rstrip("; ")))
                if not watch.wait(1, args.graph_timeout):
                    _log(f"  WARNING: HNSW graph not ready after {args.graph_timeout:.0f} s; measuring anyway")
                out.graph_ready_s = round(time.perf_counter() - first_done, 1)
                out.graph_builds = watch.builds()
                _log(f"  HNSW graph ready {out.graph_ready_s:.0f} s after the cold recall")
            recall_many(agent, pool.take(WARMUP_RECALLS))
            queries = pool.take(n)
            warm = recall_many(agent, queries)
            strategy = "HNSW" if size > EXACT_VECTOR_LIMIT else "exact"
            out.rows.append(warm.row(size, f"warm recall ({strategy}), caller side", note="MemoryAgent.connect"))
            out.rows.append(warm.row(size, "warm recall, Recall.elapsed_ms", in_kit=True))
            lt = out.rows[-2].latency
            assert lt is not None
            _log(f"  warm recall p50 {lt.p50_ms:.1f} p95 {lt.p95_ms:.1f} p99 {lt.p99_ms:.1f} ms")
            # Right away, while the server's query-vector cache (1,024 entries) still holds them all.
            again = recall_many(agent, queries)
            out.rows.append(again.row(size, "warm recall, same queries again", note=CACHED))
        finally:
            agent.close()

        timed_agent, timed = connect_timed(server, "bench-timed", AgentConfig(recall_deadline=args.deadline))
        try:
            recall_many(timed_agent, pool.take(WARMUP_RECALLS), timed)
            run = recall_many(timed_agent, pool.take(n), timed)
        finally:
            timed_agent.close()
        out.rows.append(run.row(size, "warm recall, timed client", note="paths below are from these recalls"))
        for name, values in run.paths.items():
            out.rows.append(Row(size, f"  path in recall: {PATH_LABEL[name]}", Latency.of(values)))
        out.rows.append(Row(size, "  kit overhead: caller time − slowest path", Latency.of(run.overhead)))

        alone = raw_paths(server, pool.take(n))
        for name, values in alone.items():
            label = PATH_LABEL.get(name, f"{PATH_LABEL[MEMORIES]}, same queries again")
            note = CACHED if name == CACHED_SEARCH else "sync MemoryClient"
            out.rows.append(Row(size, f"path alone: {label}", Latency.of(values), note=note))

        agent = connect(server, "bench-long", AgentConfig(recall_deadline=args.deadline))
        try:
            recall_many(agent, [gen.message() for _ in range(WARMUP_RECALLS)])
            messages = [gen.message() for _ in range(n)]
            run = recall_many(agent, messages)
            again = recall_many(agent, messages)
        finally:
            agent.close()
        out.rows.append(run.row(size, "warm recall, user-message queries", note="a whole chat message as the query"))
        out.rows.append(again.row(size, "warm recall, user-message queries again", note=CACHED))

        if args.capture:
            _log(f"  capture {args.capture:,} messages …")
            out.capture = capture_run(server, size, args.capture, gen, args.flush_timeout)
            c = out.capture
            _log(f"  capture: enqueue {c.enqueue_per_s:,.0f}/s, drain {c.drain_per_s:,.0f}/s, stored {c.stored:,}")
    return out


# -- report ----------------------------------------------------------------------------------------------


def _cell(value: float | None, fmt: str = "{:.1f}") -> str:
    return "–" if value is None else fmt.format(value)


def markdown(results: Sequence[SizeResult]) -> str:
    """One table of every recall measurement."""
    lines = [
        "| L1 in scope | run | n | p50 ms | p95 ms | p99 ms | max ms | > 200 ms | degraded | mem/recall | load "
        "| note |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for res in results:
        for r in res.rows:
            lt = r.latency
            ms = [_cell(getattr(lt, k)) if lt else "–" for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")]
            lines.append(
                f"| {r.size:,} | {r.run} | {lt.n if lt else 0} | {' | '.join(ms)} | {_cell(r.over_default, '{}')} "
                f"| {_cell(r.degraded, '{}')} | {_cell(r.hits, '{:.1f}')} | {r.loadavg:.1f} | {r.note} |"
            )
    return "\n".join(lines)


def capture_markdown(results: Sequence[SizeResult]) -> str:
    """One table of the capture runs."""
    lines = [
        "| L1 in scope | messages | turns | enqueue s | enqueue msg/s | capture() p50 / p99 ms "
        "| drain s | stored msg/s | stored (count) | retries | dropped |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        c = res.capture
        if c is None:
            continue
        cap = c.stats["capture"]
        lines.append(
            f"| {c.size:,} | {c.messages:,} | {c.turns:,} | {c.enqueue_s:.2f} | {c.enqueue_per_s:,.0f} "
            f"| {c.call.p50_ms:.2f} / {c.call.p99_ms:.2f} | {c.drain_s:.1f} | {c.drain_per_s:,.0f} "
            f"| {c.stored:,}{'' if c.stored == c.messages else ' (MISMATCH)'} | {cap['retries']} | {cap['dropped']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 1 when a size failed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k only, 100 recalls, 1,000 captured messages")
    parser.add_argument("--sizes", help="comma-separated L1 counts (default 10000,100000; quick 10000)")
    parser.add_argument("--recalls", type=int, help="recalls per run (default 300; quick 100)")
    parser.add_argument("--capture", type=int, help="messages to capture per size (default 5000; quick 1000; 0 skips)")
    parser.add_argument("--scenes", type=int, default=30, help="scene files written to the scope (default 30)")
    parser.add_argument("--deadline", type=float, default=2.0, help="recall_deadline of the measured kit, s")
    parser.add_argument("--flush-timeout", type=float, default=600, help="max wait for the capture queue, s")
    parser.add_argument("--graph-timeout", type=float, default=1800, help="max wait for the HNSW build, s")
    parser.add_argument("--seed", type=int, default=20260815)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has memhub installed")
    parser.add_argument("--data-dir", type=Path, help="keep the loaded data here and reuse it when it matches")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([10_000] if args.quick else [10_000, 100_000])
    args.recalls = args.recalls or (100 if args.quick else 300)
    args.capture = args.capture if args.capture is not None else (1_000 if args.quick else 5_000)
    if not 1 <= args.scenes <= 39:
        # The kit lists at most max_scenes = 40 paths, and the directory takes one.
        parser.error("--scenes must be 1–39")

    root = args.data_dir or Path(tempfile.mkdtemp(prefix="memhub-recall-"))
    root.mkdir(parents=True, exist_ok=True)
    pool = QueryPool(args.seed + 7)
    load_start = _loadavg()
    results: list[SizeResult] = []
    errors: dict[str, str] = {}
    started = time.perf_counter()
    try:
        for size in sizes:
            try:
                results.append(bench_size(size, root, args, pool))
            except Exception as exc:  # keep what the other size measured
                errors[f"{size}"] = f"{type(exc).__name__}: {exc}"
                _log(f"FAILED {size:,}: {errors[f'{size}'][:2000]}")
    finally:
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for size in sizes:
                shutil.rmtree(root / f"run-{size}", ignore_errors=True)
            _log(f"loaded data kept in {root}")
    elapsed = time.perf_counter() - started

    verdict: dict[str, Any] = {"aim_p95_ms": AIM_P95_MS, "budget_ms": DEFAULT_DEADLINE_MS}
    for res in results:
        warm = next(r for r in res.rows if r.run.startswith("warm recall ("))
        assert warm.latency is not None
        verdict[f"{res.size}"] = {"warm_p95_ms": warm.latency.p95_ms, "met": warm.latency.p95_ms <= AIM_P95_MS}
    table, capture_table = markdown(results), capture_markdown(results)
    payload: dict[str, Any] = {
        "benchmark": "memhub agent kit: recall end to end (L1 search + L3 read + L2 ls in parallel) and capture",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": args.quick,
        "sizes": sizes,
        "recalls_per_run": args.recalls,
        "deadline_s": args.deadline,
        "scenes": args.scenes,
        "seed": args.seed,
        "vectors": "synthetic clustered unit vectors (search.py's loader); queries embedded by e5-small on the server",
        "environment": {
            "sqlite": sqlite3.sqlite_version,
            "loadavg_start": load_start,
            "loadavg_end": _loadavg(),
            "cpus": os.cpu_count(),
        },
        "elapsed_s": round(elapsed, 1),
        "results": [asdict(r) for r in results],
        "verdict": verdict,
        "errors": errors,
        "markdown": table,
        "capture_markdown": capture_table,
    }

    print(table)
    print()
    print(capture_table)
    print()
    for res in results:
        stats = LoadStats(**res.load)
        graph = f"; HNSW ready {res.graph_ready_s:.0f} s after the cold recall" if res.graph_ready_s else ""
        print(f"{res.size:,} L1: load {stats.summary()}; server start {res.server_start_s:.1f} s{graph}")
        print(f"{res.size:,} L1: cold recall {res.cold}")
        if res.capture is not None:
            print(f"{res.size:,} L1: after capture {res.capture.server_after}")
    for key, v in verdict.items():
        if isinstance(v, dict):
            print(
                f"aim: warm recall p95 ≤ {AIM_P95_MS:.0f} ms at {int(key):,} L1 → {v['warm_p95_ms']:.1f} ms "
                f"({'met' if v['met'] else 'MISSED'}); budget {DEFAULT_DEADLINE_MS:.0f} ms"
            )
    print(f"load average: {load_start} at start, {_loadavg()} at end; total {elapsed:.0f} s")
    for size, error in errors.items():
        print(f"FAILED {size}: {error.splitlines()[0][:300]}")
    write_result(args.out, payload)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
