#!/usr/bin/env python3
"""Search benchmark: L0 and L1 hybrid search (BM25 + vectors) latency through real HTTP, at scale.

Aim (the issue): p95 ≤ 15 ms at 100k records in one scope, ≤ 25 ms at 1M records over 10 scopes.

The server's embedding worker (local e5, ~40 texts/s) cannot embed a million records in a benchmark's
time, so the data are loaded IN-PROCESS before the server starts, through the store's public API:

  1. records: `add_messages` (sessions of 200 messages) and `add_atomic` in big batches with
     `synchronous="OFF"`; texts from bench/gateway.py's seeded `TextGen` (EN/ZH chat vocabulary);
  2. `reset_embeddings(local e5-small, 384-d)` records the model the server will use and queues
     every record;
  3. the queue is drained with `next_embedding_tasks` + `store_embeddings`, writing synthetic unit
     vectors instead of e5's: 2,000 Gaussian centres in a 48-d latent space projected to 384-d plus
     noise, L2-normalised, seeded (bench/vectors.py's "clustered" data). A search costs the same with
     them as with real vectors; only the ranking is meaningless.

Then `memhub serve` (default local e5 model, so each query is embedded for real) runs on that data
dir and the benchmark measures client-side round trips of `conversation/search` (L0) and
`atomic/search` (L1), one client, sequential, distinct queries unless said otherwise:

  - HTTP floor: an empty scope, with distinct queries (HTTP + query embedding) and with the same
    queries again (the server caches query vectors: HTTP only);
  - cold: the first search of a scope loads its vectors from SQLite (timed on its own); above
    20,000 vectors a scope's HNSW graph is then built in the background and searches stay exact
    until it is ready: measured until the graph is published (server log) or the quota is done;
  - warm (HNSW published): limit 5 (the default) and limit 20, plus the limit-5 queries repeated
    (query vector cached: the difference is the query embedding);
  - BM25 only: the same queries against a server with MEMHUB_EMBEDDING_PROVIDER=none;
  - with spread data (10 scopes), queries go round-robin over the scopes.

Then (unless --no-restart) the first search after a restart, per layer and scope, with the snapshots the
first server wrote (the graphs it built, saved beside the database) and without them
(`MEMHUB_VECTOR_SNAPSHOTS=false`: the rows are read from SQL and the graph rebuilt), both with the start-up
warm off (`MEMHUB_VECTOR_WARM_SCOPES=0`) so the search itself pays for the load; and with the defaults (the
warm loads the latest scopes while the server comes up). `--restart-only` measures just that, writing the
snapshots first if the data dir has none.

Finally (unless --no-breakdown) the one-scope data is searched in-process to split a search's time:
query embedding (e5), tokenising, the BM25 channel, the vector channel, the cosine look-up of
BM25-only hits, and the whole service call; HTTP round trip minus (service + embedding) is the
transport/JSON share.

Prints a Markdown table and writes JSON to bench/results/search.json.

    python bench/search.py            # full: 100k L0 + 100k L1 in one scope; 1M L0 over 10 scopes
    python bench/search.py --quick    # 10k + 10k in one scope; 100k L0 over 10 scopes (a few minutes)
    python bench/search.py --data-dir /tmp/mh-search   # keep the loaded data and reuse it next time
    python bench/search.py --one 100000 --spread 0 --restart-only --data-dir /tmp/mh-search
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import HERE, SERVICE, Latency, Server, client, git_rev, running_server
from gateway import TextGen
from memhub.ids import atomic_id, message_id
from memhub.index.tokenize import query_terms
from memhub.memory.atomic import MEMORY_TYPES, AtomicService
from memhub.memory.conversation import ConversationService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.model import AtomicFilter, EmbeddingModel, MessageFilter, NewAtomic, NewMessage
from memhub.retrieval.embed import EmbeddingConfig, LocalEmbedder
from memhub.retrieval.hybrid import SearchOptions
from memhub.scope import Isolation, MemoryScope
from memhub.store.factory import StoreOptions, open_store
from memhub.store.sqlite.store import DB_FILENAME, EXACT_VECTOR_LIMIT
from memhub.store.sqlite.vector_snapshots import SUFFIX as SNAPSHOT_SUFFIX
from memhub.store.sqlite.vectors import SNAPSHOT_MIN_VECTORS

DEFAULT_OUT = HERE / "results" / "search.json"
MODEL = EmbeddingModel("local:multilingual-e5-small-q4", 384)
# The pipeline stays off: it would turn the loaded messages into new L1 memories under the benchmark's feet.
NO_PIPELINE = {"MEMHUB_PIPELINE_ENABLED": "false"}
E5 = {
    "MEMHUB_EMBEDDING_PROVIDER": "local",
    "MEMHUB_EMBEDDING_MODEL": "e5-small",
    "MEMHUB_LOG_LEVEL": "info",
    **NO_PIPELINE,
}
BM25_ONLY = {"MEMHUB_EMBEDDING_PROVIDER": "none", **NO_PIPELINE}
TEAM, USER = "bench-team", "bench-user"
SESSION_LEN = 200  # messages per session (one add_messages call)
L1_BATCH = 2_000
EMBED_CHUNK = 10_000  # queue entries per next_embedding_tasks / store_embeddings call
SPREAD_SCOPES = 10
T0_MS = 1_700_000_000_000
AIM_ONE_P95_MS = 15.0
AIM_SPREAD_P95_MS = 25.0
GRAPH_LINE = re.compile(r"vector graph built: (\d+) vectors in ([\d.]+) s")
SNAPSHOT_LINE = re.compile(r"vector snapshot written: (\d+) vectors")
SNAPSHOT_LOAD_LINE = re.compile(r"loaded from its snapshot in ([\d.]+) s")
# The restarts: (label, extra environment). Warm off: the first search itself loads the scope.
RESTARTS = (
    ("snapshot, warm off", {"MEMHUB_VECTOR_WARM_SCOPES": "0"}),
    ("no snapshot (SQL rows), warm off", {"MEMHUB_VECTOR_WARM_SCOPES": "0", "MEMHUB_VECTOR_SNAPSHOTS": "false"}),
    ("snapshot, warm on (default)", {}),
)
ENDPOINT = {"L0": ("/v3/conversation/search", "messages"), "L1": ("/v3/atomic/search", "items")}


def _scope_body(name: str) -> dict[str, str]:
    return {"team_id": TEAM, "agent_id": f"agent-{name}", "user_id": USER}


def _memory_scope(name: str) -> MemoryScope:
    # What the gateway derives from _scope_body + the x-tdai-service-id header (checked by /count after loading).
    return MemoryScope(SERVICE, TEAM, USER, f"agent-{name}", "")


def _loadavg() -> float:
    return round(os.getloadavg()[0], 2)


def _log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {_loadavg():.1f}] {text}", file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeSpec:
    name: str
    l0: int
    l1: int


@dataclass(frozen=True)
class DataSpec:
    label: str
    scopes: tuple[ScopeSpec, ...]

    @property
    def total(self) -> int:
        return sum(s.l0 + s.l1 for s in self.scopes)

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "scopes": [asdict(s) for s in self.scopes]}


class ClusteredVectors:
    """Seeded synthetic sentence-embedding-like unit vectors (bench/vectors.py's "clustered" data)."""

    def __init__(self, seed: int, dim: int = 384, latent: int = 48, clusters: int = 2_000) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.standard_normal((clusters, latent), dtype=np.float32)
        self.proj = self.rng.standard_normal((latent, dim), dtype=np.float32) / np.float32(np.sqrt(latent))
        self.dim = dim

    def draw(self, n: int) -> np.ndarray:
        rng = self.rng
        z = self.centres[rng.integers(0, self.centres.shape[0], n)]
        z = z + 0.6 * rng.standard_normal(z.shape, dtype=np.float32)
        x = z @ self.proj + 0.5 * rng.standard_normal((n, self.dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x


@dataclass
class LoadStats:
    records: int
    l0_s: float = 0.0
    l1_s: float = 0.0
    reset_s: float = 0.0
    next_tasks_s: float = 0.0
    vectors_gen_s: float = 0.0
    store_vectors_s: float = 0.0
    total_s: float = 0.0
    db_bytes: int = 0
    reused: bool = False

    def summary(self) -> str:
        if self.reused:
            return f"reused an earlier load ({self.records:,} records, {self.db_bytes / 2**30:.2f} GiB)"
        rate = self.records / self.total_s if self.total_s else 0
        return (
            f"{self.records:,} records in {self.total_s:.0f} s ({rate:,.0f}/s): L0 insert {self.l0_s:.0f} s, "
            f"L1 insert {self.l1_s:.0f} s, reset_embeddings {self.reset_s:.1f} s, next_embedding_tasks "
            f"{self.next_tasks_s:.0f} s, vector generation {self.vectors_gen_s:.0f} s, store_embeddings "
            f"{self.store_vectors_s:.0f} s; database {self.db_bytes / 2**30:.2f} GiB"
        )


def _db_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob("memhub.db*"))


def load(data_dir: Path, spec: DataSpec, seed: int) -> LoadStats:
    """Fill a fresh data dir through the store's public API, then give every record a synthetic vector."""
    manifest = data_dir / "bench-search-manifest.json"
    wanted = {"spec": spec.describe(), "seed": seed, "model": asdict(MODEL)}
    if manifest.exists() and json.loads(manifest.read_text()) == wanted:
        return LoadStats(spec.total, db_bytes=_db_bytes(data_dir), reused=True)
    if data_dir.exists():
        shutil.rmtree(data_dir)
    stats = LoadStats(spec.total)
    started = time.perf_counter()
    store = open_store(data_dir, StoreOptions(synchronous="OFF"))
    try:
        for i, sc in enumerate(spec.scopes):
            scope = _memory_scope(sc.name)
            gen = TextGen(seed + 101 * i)
            t0 = time.perf_counter()
            for first in range(0, sc.l0, SESSION_LEN):
                n = min(SESSION_LEN, sc.l0 - first)
                msgs = []
                for j in range(first, first + n):
                    stamp = T0_MS + j * 30_000
                    role = "user" if j % 2 == 0 else "assistant"
                    msgs.append(NewMessage(message_id(), role, gen.message(), stamp, stamp))
                store.add_messages(scope, f"session-{first // SESSION_LEN}", msgs)
                done = first + n
                if done % 50_000 == 0 or done == sc.l0:
                    _log(f"  {sc.name}: L0 {done:,}/{sc.l0:,} ({done / (time.perf_counter() - t0):,.0f}/s)")
            stats.l0_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            for first in range(0, sc.l1, L1_BATCH):
                n = min(L1_BATCH, sc.l1 - first)
                items = []
                for j in range(first, first + n):
                    stamp = T0_MS + j * 60_000
                    kind = MEMORY_TYPES[j % len(MEMORY_TYPES)]
                    priority = gen.rng.randint(0, 100)
                    items.append(NewAtomic(atomic_id(stamp), kind, gen.message(), priority, None, "default", stamp))
                store.add_atomic(scope, items)
            if sc.l1:
                _log(f"  {sc.name}: L1 {sc.l1:,} ({sc.l1 / (time.perf_counter() - t0):,.0f}/s)")
            stats.l1_s += time.perf_counter() - t0

        t0 = time.perf_counter()
        store.reset_embeddings(MODEL)
        stats.reset_s = time.perf_counter() - t0
        vectors = ClusteredVectors(seed)
        written = 0
        t_embed = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            tasks = store.next_embedding_tasks(EMBED_CHUNK)
            t1 = time.perf_counter()
            if not tasks:
                break
            batch = vectors.draw(len(tasks))
            t2 = time.perf_counter()
            written += store.store_embeddings(MODEL, tasks, batch)
            t3 = time.perf_counter()
            stats.next_tasks_s += t1 - t0
            stats.vectors_gen_s += t2 - t1
            stats.store_vectors_s += t3 - t2
            if written % 100_000 < EMBED_CHUNK:
                _log(f"  vectors {written:,}/{spec.total:,} ({written / (t3 - t_embed):,.0f}/s)")
        if written != spec.total or store.embedding_backlog():
            raise RuntimeError(f"wrote {written} vectors for {spec.total} records")
    finally:
        store.close()
    stats.total_s = time.perf_counter() - started
    stats.db_bytes = _db_bytes(data_dir)
    manifest.write_text(json.dumps(wanted))
    return stats


# -- queries --------------------------------------------------------------------------------------


class QueryPool:
    """Distinct seeded queries, handed out in disjoint slices (so no run hits the query-vector cache)."""

    def __init__(self, seed: int) -> None:
        self.gen = TextGen(seed)
        self.seen: set[str] = set()

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            q = self.gen.query()
            if q not in self.seen:
                self.seen.add(q)
                out.append(q)
        return out


# -- HTTP measurements ------------------------------------------------------------------------------


@dataclass
class Row:
    data: str
    run: str
    layer: str
    limit: int
    scope_records: int
    db_records: int
    queries: int
    hits_per_query: float
    strategies: dict[str, int]
    latency: Latency
    loadavg: float
    note: str = ""

    @property
    def strategy(self) -> str:
        return ", ".join(f"{k} {v}" if len(self.strategies) > 1 else k for k, v in self.strategies.items())


def _search_once(http: Any, layer: str, scope: str, query: str, limit: int) -> tuple[float, int, str]:
    path, key = ENDPOINT[layer]
    body = {**_scope_body(scope), "query": query, "limit": limit}
    t0 = time.perf_counter()
    response = http.post(path, json=body)
    elapsed = time.perf_counter() - t0
    envelope = response.json()
    if response.status_code != 200 or envelope.get("code") != 0:
        raise RuntimeError(f"{path} failed: {response.status_code} {envelope}")
    data = envelope["data"]
    return elapsed, len(data[key]), data["strategy"]


def measure(
    server: Server,
    *,
    data: str,
    run: str,
    layer: str,
    scopes: Sequence[str],
    queries: Sequence[str],
    limit: int,
    scope_records: int,
    db_records: int,
    stop: Any = None,
    note: str = "",
) -> Row:
    """Sequential searches, round-robin over `scopes`; `stop()` (checked every 10 queries) ends a run early."""
    latencies: list[float] = []
    hits = 0
    strategies: Counter[str] = Counter()
    load = _loadavg()
    with client(server) as http:
        for i, q in enumerate(queries):
            if stop is not None and i and i % 10 == 0 and stop():
                break
            elapsed, n, strategy = _search_once(http, layer, scopes[i % len(scopes)], q, limit)
            latencies.append(elapsed)
            hits += n
            strategies[strategy] += 1
    row = Row(
        data=data,
        run=run,
        layer=layer,
        limit=limit,
        scope_records=scope_records,
        db_records=db_records,
        queries=len(latencies),
        hits_per_query=round(hits / max(len(latencies), 1), 2),
        strategies=dict(strategies.most_common()),
        latency=Latency.of(latencies),
        loadavg=load,
        note=note,
    )
    lt = row.latency
    _log(f"    {data} | {run} | {layer} limit {limit}: p50 {lt.p50_ms:.1f} p95 {lt.p95_ms:.1f} ms ({row.strategy})")
    return row


class GraphWatch:
    """Counts the "vector graph built" lines of the server log (needs MEMHUB_LOG_LEVEL=info)."""

    def __init__(self, server: Server) -> None:
        self.log = server.log

    def builds(self) -> list[tuple[int, float]]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [(int(m[1]), float(m[2])) for m in GRAPH_LINE.finditer(text)]

    def snapshots(self) -> int:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return len(SNAPSHOT_LINE.findall(text))

    def wait_snapshots(self, count: int, timeout: float) -> bool:
        """Until `count` snapshots are written: the server must not be stopped before (a stop abandons a write)."""
        deadline = time.monotonic() + timeout
        while self.snapshots() < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True

    def wait(self, count: int, timeout: float) -> bool:
        t0 = time.perf_counter()
        last = -1
        while True:
            have = len(self.builds())
            if have >= count:
                return True
            if have != last:
                _log(f"  waiting for HNSW graphs: {have}/{count} built")
                last = have
            if time.perf_counter() - t0 > timeout:
                return False
            time.sleep(0.5)


def wait_backlog(server: Server, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with client(server) as http:
        while True:
            health = http.get("/health").json()
            emb = health.get("embedding", {})
            if emb.get("state") == "error":
                raise RuntimeError(f"embedding error: {emb}")
            if health["embedding_backlog"] == 0 and emb.get("model") == MODEL.model_id:
                return health
            if time.monotonic() > deadline:
                raise RuntimeError(f"backlog not drained: {health}")
            time.sleep(0.2)


def check_counts(server: Server, spec: DataSpec) -> None:
    with client(server) as http:
        for sc in spec.scopes[:2]:
            l0 = http.post("/v3/conversation/count", json=_scope_body(sc.name)).json()["data"]["total"]
            l1 = http.post("/v3/atomic/count", json=_scope_body(sc.name)).json()["data"]["total"]
            if (l0, l1) != (sc.l0, sc.l1):
                raise RuntimeError(f"scope {sc.name}: server sees L0 {l0} / L1 {l1}, loaded {sc.l0} / {sc.l1}")


@dataclass
class ServerTimes:
    start_s: float = 0.0
    first_search_s: dict[str, float] = field(default_factory=dict)  # "L0 scope": index load + first search
    graph_ready_s: dict[str, float] = field(default_factory=dict)  # since the layer's first search
    graph_builds: list[tuple[int, float]] = field(default_factory=list)  # (vectors, build s) from the log
    graph_timeout: bool = False
    snapshots_written: int = 0


def _snapshot_dir(data_dir: Path) -> Path:
    return data_dir / (DB_FILENAME + SNAPSHOT_SUFFIX)


def _snapshot_worthy(spec: DataSpec) -> int:
    """How many (layer, scope) indexes of the data get a snapshot."""
    return sum((s.l0 >= SNAPSHOT_MIN_VECTORS) + (s.l1 >= SNAPSHOT_MIN_VECTORS) for s in spec.scopes)


def bench_http(
    spec: DataSpec, data_dir: Path, args: argparse.Namespace, pool: QueryPool
) -> tuple[list[Row], ServerTimes]:
    rows: list[Row] = []
    times = ServerTimes()
    n = args.queries
    layers = [layer for layer in ("L0", "L1") if any(getattr(s, layer.lower()) for s in spec.scopes)]
    names = [s.name for s in spec.scopes]
    per_scope = {layer: max(getattr(s, layer.lower()) for s in spec.scopes) for layer in layers}
    big = {layer: sum(getattr(s, layer.lower()) > EXACT_VECTOR_LIMIT for s in spec.scopes) for layer in layers}
    warm_queries: dict[str, list[str]] = {}
    common = {"data": spec.label, "db_records": spec.total}

    # Cold means from SQL, on the first search: the snapshots an earlier run wrote go (this run's graphs write them
    # anew), and no start-up warm loads the scopes first.
    shutil.rmtree(_snapshot_dir(data_dir), ignore_errors=True)
    t0 = time.perf_counter()
    with running_server(data_dir, args.python, {**E5, "MEMHUB_VECTOR_WARM_SCOPES": "0"}) as server:
        times.start_s = time.perf_counter() - t0
        health = wait_backlog(server)
        check_counts(server, spec)
        _log(f"  server up in {times.start_s:.1f} s; backlog {health['embedding_backlog']}")
        watch = GraphWatch(server)

        # HTTP floor: nothing to search; distinct queries still pay for their embedding, repeated ones don't.
        floor = pool.take(n)
        for run, qs in (("floor: empty scope, distinct queries", floor), ("floor: empty scope, cached vectors", floor)):
            rows.append(
                measure(server, run=run, layer="L0", scopes=["nobody"], queries=qs, limit=5, scope_records=0, **common)
            )

        # Cold: the first search of each scope loads its vectors; big scopes then build a graph in the background.
        expected = 0
        for layer in layers:
            with client(server) as http:
                for name in names:
                    t1 = time.perf_counter()
                    _search_once(http, layer, name, pool.take(1)[0], 5)
                    times.first_search_s[f"{layer} {name}"] = round(time.perf_counter() - t1, 3)
            first_done = time.perf_counter()
            loads = [v for k, v in times.first_search_s.items() if k.startswith(layer)]
            _log(f"  {layer}: first search per scope (index load) max {max(loads):.2f} s")
            expected += big[layer]
            if big[layer] and len(names) == 1:
                before = len(watch.builds())
                row = measure(
                    server,
                    run="cold: exact scan, graph building",
                    layer=layer,
                    scopes=names,
                    queries=pool.take(n),
                    limit=5,
                    scope_records=per_scope[layer],
                    stop=lambda expected=expected: len(watch.builds()) >= expected,
                    **common,
                )
                if len(watch.builds()) > before:
                    row.note = "graph published during the run: the tail may be HNSW"
                rows.append(row)
            if big[layer]:
                ok = watch.wait(expected, args.graph_timeout)
                times.graph_ready_s[layer] = round(time.perf_counter() - first_done, 1)
                times.graph_timeout |= not ok
                if not ok:
                    _log(f"  WARNING: {layer} graphs not ready after {args.graph_timeout:.0f} s; measuring anyway")
                else:
                    _log(f"  {layer}: graphs ready {times.graph_ready_s[layer]:.0f} s after the first search")
        times.graph_builds = watch.builds()

        # Warm: graphs published (or none needed).
        for layer in layers:
            phase_layer = "warm: HNSW" if big[layer] else "warm: exact (small scopes)"
            qs = warm_queries[layer] = pool.take(n)
            kw = {"layer": layer, "scopes": names, "scope_records": per_scope[layer], **common}
            rows.append(measure(server, run=phase_layer, queries=qs, limit=5, **kw))
            rows.append(measure(server, run=f"{phase_layer}, cached query vector", queries=qs, limit=5, **kw))
            rows.append(measure(server, run=phase_layer, queries=pool.take(n), limit=20, **kw))
        if not watch.wait_snapshots(_snapshot_worthy(spec), args.graph_timeout):
            _log("  WARNING: not every snapshot was written; the restart measures will load from SQL")
        times.snapshots_written = watch.snapshots()

    # BM25 only: the warm queries again on a server without an embedder.
    with running_server(data_dir, args.python, BM25_ONLY) as server:
        for layer in layers:
            kw = {"layer": layer, "scopes": names, "scope_records": per_scope[layer], **common}
            rows.append(measure(server, run="BM25 only (provider none)", queries=warm_queries[layer], limit=5, **kw))
    return rows, times


# -- restarts -------------------------------------------------------------------------------------


@dataclass
class RestartRow:
    data: str
    run: str
    start_s: float  # server start until /health answers
    first_search_s: dict[str, float]  # "L0 scope": the first search of that layer and scope, HTTP round trip
    loads: dict[str, int]  # index loads the server logged, by source
    snapshot_load_s: list[float]  # each snapshot load's own time (server log): keys, matrix, checks, index
    loadavg: float


def _write_snapshots(spec: DataSpec, data_dir: Path, args: argparse.Namespace, pool: QueryPool) -> None:
    """A server that searches every scope once and stops when their graphs are built and saved."""
    want = _snapshot_worthy(spec)
    have = len(list(_snapshot_dir(data_dir).glob("*.meta.json")))
    if have >= want:
        return
    _log(f"  writing snapshots ({have} of {want} there) …")
    with running_server(data_dir, args.python, {**E5, "MEMHUB_VECTOR_WARM_SCOPES": "0"}) as server:
        wait_backlog(server)
        with client(server) as http:
            for layer in ("L0", "L1"):
                for sc in spec.scopes:
                    if getattr(sc, layer.lower()):
                        _search_once(http, layer, sc.name, pool.take(1)[0], 5)
        if not GraphWatch(server).wait_snapshots(want, args.graph_timeout):
            raise RuntimeError("snapshots not written in time")


def bench_restart(spec: DataSpec, data_dir: Path, args: argparse.Namespace, pool: QueryPool) -> list[RestartRow]:
    """The first search of each layer and scope after a restart, with and without snapshots."""
    rows: list[RestartRow] = []
    layers = [layer for layer in ("L0", "L1") if any(getattr(s, layer.lower()) for s in spec.scopes)]
    for run, env in RESTARTS:
        load = _loadavg()
        t0 = time.perf_counter()
        with running_server(data_dir, args.python, {**E5, **env}) as server:
            start_s = time.perf_counter() - t0
            wait_backlog(server)
            first: dict[str, float] = {}
            with client(server) as http:
                for layer in layers:
                    for sc in spec.scopes:
                        t1 = time.perf_counter()
                        _search_once(http, layer, sc.name, pool.take(1)[0], 5)
                        first[f"{layer} {sc.name}"] = round(time.perf_counter() - t1, 3)
            text = server.log.read_text(errors="replace")
            loads = {
                "snapshot": text.count("loaded from its snapshot"),
                "graph restored": text.count("vector graph restored"),
            }
            load_s = [float(m) for m in SNAPSHOT_LOAD_LINE.findall(text)]
        row = RestartRow(spec.label, run, round(start_s, 2), first, loads, load_s, load)
        rows.append(row)
        shown = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in first.items())
        _log(f"    {spec.label} | restart, {run}: {shown} (loads {loads})")
    return rows


def restart_markdown(rows: list[RestartRow]) -> str:
    lines = [
        "| data | restart | first search per scope, ms | max ms | server start s | snapshot loads, ms | load |",
        "|---|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        shown = ", ".join(f"{k} {v * 1000:.0f}" for k, v in r.first_search_s.items())
        worst = max(r.first_search_s.values()) * 1000
        snapshot = ", ".join(f"{x * 1000:.0f}" for x in r.snapshot_load_s) or "none"
        lines.append(f"| {r.data} | {r.run} | {shown} | {worst:.0f} | {r.start_s:.1f} | {snapshot} | {r.loadavg:.1f} |")
    return "\n".join(lines)


# -- in-process breakdown --------------------------------------------------------------------------


class _GraphLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.built = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "vector graph built" in message or "vector graph restored" in message:  # restored: from a snapshot
            self.built += 1


def breakdown(spec: DataSpec, data_dir: Path, args: argparse.Namespace, pool: QueryPool) -> dict[str, Any]:
    """Where a warm search's time goes, measured in-process on the one-scope data (graphs built first)."""
    sc = spec.scopes[0]
    scope = _memory_scope(sc.name)
    iso = Isolation(SERVICE, TEAM, USER, f"agent-{sc.name}")
    handler = _GraphLog()
    vlog = logging.getLogger("memhub.index.vectors")
    vlog.addHandler(handler)
    vlog.setLevel(logging.INFO)
    out: dict[str, Any] = {"scope_records": {"L0": sc.l0, "L1": sc.l1}}
    embedder = LocalEmbedder(EmbeddingConfig(provider="local", model="e5-small"))
    store = open_store(data_dir)
    # The server's own query path: the runtime's cache is primed here (timing the e5 calls), so the service
    # searches below pay everything but the embedding.
    runtime = EmbeddingRuntime(store, embedder, provider="local")
    try:
        if not runtime.check_model():
            raise RuntimeError("the embedding runtime did not accept the stored model")
        queries = pool.take(args.queries)
        runtime.embed_query("warm up")
        embed_s: list[float] = []
        vectors: dict[str, np.ndarray] = {}
        for q in queries:
            t0 = time.perf_counter()
            v = runtime.embed_query(q)
            embed_s.append(time.perf_counter() - t0)
            assert v is not None
            vectors[q] = v
        out["embed_query_e5"] = asdict(Latency.of(embed_s))
        services = {"L0": ConversationService(store, runtime), "L1": AtomicService(store, runtime)}
        terms_s = []
        for q in queries:
            t0 = time.perf_counter()
            query_terms(q)
            terms_s.append(time.perf_counter() - t0)
        out["query_terms"] = asdict(Latency.of(terms_s))
        expected = 0
        for layer in ("L0", "L1"):
            size = sc.l0 if layer == "L0" else sc.l1
            if not size:
                continue
            if layer == "L0":
                flt: Any = MessageFilter()
                lexical, semantic, similar = (
                    store.search_messages,
                    store.vector_search_messages,
                    store.message_similarities,
                )
            else:
                flt = AtomicFilter()
                lexical, semantic, similar = store.search_atomic, store.vector_search_atomic, store.atomic_similarities
            t0 = time.perf_counter()
            semantic(scope, vectors[queries[0]], flt, 50)
            load_s = time.perf_counter() - t0
            if size > EXACT_VECTOR_LIMIT:
                expected += 1
                deadline = time.monotonic() + args.graph_timeout
                while handler.built < expected and time.monotonic() < deadline:
                    time.sleep(0.2)
            parts: dict[str, list[float]] = {
                "bm25 (pool 50)": [],
                "vector (top 50)": [],
                "cosine of BM25-only hits": [],
            }
            parts["service.search limit 5"] = []
            for q in queries:
                v = vectors[q]
                terms = query_terms(q)
                t0 = time.perf_counter()
                lex = lexical(scope, terms, flt, 50) if not terms.empty else []
                t1 = time.perf_counter()
                sem = semantic(scope, v, flt, 50)
                t2 = time.perf_counter()
                got = {r.id for r, _ in sem}
                similar(scope, v, [r.id for r, _ in lex if r.id not in got])
                t3 = time.perf_counter()
                services[layer].search(iso, q, flt, SearchOptions(limit=5))
                t4 = time.perf_counter()
                for key, s in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                    parts[key].append(s)
            out[layer] = {
                "index_load_s": round(load_s, 2),
                "graph_built": handler.built >= expected,
                **{k: asdict(Latency.of(v)) for k, v in parts.items()},
            }
            _log(
                f"  breakdown {layer}: " + ", ".join(f"{k} p50 {Latency.of(v).p50_ms:.1f} ms" for k, v in parts.items())
            )
    finally:
        runtime.close()
        store.close()
        vlog.removeHandler(handler)
    return out


# -- report ------------------------------------------------------------------------------------------


def markdown(rows: list[Row]) -> str:
    lines = [
        "| data | run | layer | limit | records in scope | records in db | queries | hits/q "
        "| p50 ms | p95 ms | p99 ms | strategy | load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lt = r.latency
        note = f" ({r.note})" if r.note else ""
        lines.append(
            f"| {r.data} | {r.run}{note} | {r.layer} | {r.limit} | {r.scope_records:,} | {r.db_records:,} "
            f"| {r.queries} | {r.hits_per_query} | {lt.p50_ms:.1f} | {lt.p95_ms:.1f} | {lt.p99_ms:.1f} "
            f"| {r.strategy} | {r.loadavg:.1f} |"
        )
    return "\n".join(lines)


def breakdown_markdown(b: dict[str, Any]) -> str:
    # The HTTP transport's own share is the "floor: empty scope, cached vectors" row of the main table.
    lines = ["| in-process part (one scope) | layer | p50 ms | p95 ms | mean ms |", "|---|---|---:|---:|---:|"]
    for key, label in (("embed_query_e5", "query embedding (e5, 1 thread)"), ("query_terms", "query tokenising")):
        lt = b[key]
        lines.append(f"| {label} | – | {lt['p50_ms']:.2f} | {lt['p95_ms']:.2f} | {lt['mean_ms']:.2f} |")
    for layer in ("L0", "L1"):
        for key, lt in b.get(layer, {}).items():
            if isinstance(lt, dict):
                lines.append(f"| {key} | {layer} | {lt['p50_ms']:.2f} | {lt['p95_ms']:.2f} | {lt['mean_ms']:.2f} |")
    return "\n".join(lines)


def _pick(rows: list[Row], data: str, run_prefix: str, layer: str, limit: int = 5) -> Row | None:
    for r in rows:
        same = r.data == data and r.layer == layer and r.limit == limit
        if same and r.run.startswith(run_prefix) and "cached" not in r.run:
            return r
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k+10k in one scope, 100k L0 over 10 scopes")
    parser.add_argument("--one", type=int, help="L0 and L1 records in the one-scope data (default 100k; quick 10k)")
    parser.add_argument("--spread", type=int, help="L0 records over 10 scopes (default 1M; quick 100k; 0 skips)")
    parser.add_argument("--spread-l1", type=int, default=0, help="L1 records over the 10 scopes too (default 0)")
    parser.add_argument("--queries", type=int, help="searches per measurement (default 500; quick 100; ≤ 1000)")
    parser.add_argument("--graph-timeout", type=float, default=1800, help="max wait for HNSW builds, s")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the in-process time breakdown")
    parser.add_argument("--no-restart", action="store_true", help="skip the first-search-after-restart runs")
    parser.add_argument(
        "--restart-only", action="store_true", help="only the restart runs (writing the snapshots first if needed)"
    )
    parser.add_argument("--seed", type=int, default=20260815)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has memhub installed")
    parser.add_argument("--data-dir", type=Path, help="keep the loaded data here and reuse it when it matches")
    args = parser.parse_args(argv)
    one = args.one if args.one is not None else (10_000 if args.quick else 100_000)
    spread = args.spread if args.spread is not None else (100_000 if args.quick else 1_000_000)
    args.queries = args.queries or (100 if args.quick else 500)
    if args.queries > 1000:
        parser.error("--queries must be ≤ 1000 (the server caches 1,024 query vectors)")

    specs = []
    if one:
        specs.append(DataSpec(f"1 scope × {one:,} L0 + {one:,} L1", (ScopeSpec("one", one, one),)))
    if spread:
        per, per_l1 = spread // SPREAD_SCOPES, args.spread_l1 // SPREAD_SCOPES
        label = f"{SPREAD_SCOPES} scopes × {per:,} L0" + (f" + {per_l1:,} L1" if per_l1 else "")
        specs.append(DataSpec(label, tuple(ScopeSpec(f"spread-{i}", per, per_l1) for i in range(SPREAD_SCOPES))))

    root = args.data_dir or Path(tempfile.mkdtemp(prefix="memhub-search-"))
    root.mkdir(parents=True, exist_ok=True)
    pool = QueryPool(args.seed + 7)
    load_start = _loadavg()
    rows: list[Row] = []
    restarts: list[RestartRow] = []
    loads: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    detail: dict[str, Any] | None = None
    errors: dict[str, str] = {}
    started = time.perf_counter()
    try:
        for k, spec in enumerate(specs):
            data_dir = root / f"data-{k}"
            _log(f"load {spec.label} into {data_dir} …")
            stats = load(data_dir, spec, args.seed + 1000 * k)
            loads[spec.label] = asdict(stats)
            _log(f"  loaded: {stats.summary()}")
            try:
                if args.restart_only:
                    _write_snapshots(spec, data_dir, args, pool)
                else:
                    _log(f"search {spec.label} through HTTP …")
                    got, times = bench_http(spec, data_dir, args, pool)
                    rows += got
                    servers[spec.label] = asdict(times)
                if not args.no_restart:
                    _log(f"first search after a restart, {spec.label} …")
                    restarts += bench_restart(spec, data_dir, args, pool)
                if k == 0 and one and not args.no_breakdown and not args.restart_only:
                    _log("in-process breakdown (one scope) …")
                    detail = breakdown(spec, data_dir, args, pool)
            except Exception as exc:  # keep what the other data sets measured
                errors[spec.label] = f"{type(exc).__name__}: {exc}"
                _log(f"FAILED {spec.label}: {errors[spec.label][:2000]}")
    finally:
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            _log(f"data kept in {root}")
    elapsed = time.perf_counter() - started

    table = markdown(rows)
    verdicts: dict[str, Any] = {}
    aim_lines = []
    for spec, aim in zip(specs, (AIM_ONE_P95_MS, AIM_SPREAD_P95_MS) if one else (AIM_SPREAD_P95_MS,), strict=False):
        got = {}
        for layer in ("L0", "L1"):
            r = _pick(rows, spec.label, "warm", layer)
            if r is not None:
                got[layer] = r.latency.p95_ms
        met = bool(got) and max(got.values()) <= aim
        verdicts[spec.label] = {"aim_p95_ms": aim, "warm_p95_ms": got, "met": met}
        shown = ", ".join(f"{k} {v:.1f} ms" for k, v in got.items())
        aim_lines.append(
            f"aim: p95 ≤ {aim:.0f} ms for {spec.label} (warm, distinct queries, limit 5) → {shown} "
            f"({'met' if met else 'MISSED'})"
        )
    result: dict[str, Any] = {
        "benchmark": "memhub search (HTTP, hybrid BM25 + vectors)",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": args.quick,
        "queries_per_measurement": args.queries,
        "seed": args.seed,
        "data": [s.describe() for s in specs],
        "vectors": "synthetic clustered unit vectors (2,000 centres, 48-d latent → 384-d + noise); queries by e5",
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version,
            "numpy": np.__version__,
            "git": git_rev(),
            "loadavg_start": load_start,
            "loadavg_end": _loadavg(),
        },
        "elapsed_s": round(elapsed, 1),
        "load": loads,
        "server": servers,
        "search": [asdict(r) for r in rows],
        "restart": [asdict(r) for r in restarts],
        "breakdown": detail,
        "verdict": verdicts,
        "errors": errors,
        "markdown": table,
        "restart_markdown": restart_markdown(restarts) if restarts else None,
        "breakdown_markdown": breakdown_markdown(detail) if detail else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n")

    if rows:
        print(table)
        print()
    if restarts:
        print(restart_markdown(restarts))
        print()
    if detail is not None:
        print(breakdown_markdown(detail))
        print()
    for label, stats in loads.items():
        print(f"load {label}: {LoadStats(**stats).summary()}")
    for label, t in servers.items():
        builds = ", ".join(f"{n:,} in {s:.0f} s" for n, s in t["graph_builds"]) or "none"
        loads_s = list(t["first_search_s"].values())
        print(
            f"server {label}: start {t['start_s']:.1f} s; first search per scope (index load) "
            f"max {max(loads_s):.2f} s; HNSW ready after first search {t['graph_ready_s'] or '–'}; "
            f"builds (vectors in s): {builds}{' (TIMED OUT)' if t['graph_timeout'] else ''}"
        )
    print(f"load average: {load_start} at start, {_loadavg()} at end (2-core box is shared); total {elapsed:.0f} s")
    for line in aim_lines:
        print(line)
    for label, error in errors.items():
        print(f"FAILED {label}: {error.splitlines()[0][:300]}")
    print(f"JSON: {args.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
