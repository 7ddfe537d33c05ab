#!/usr/bin/env python3
"""VectorIndex micro-benchmark: exact vs ANN recall@10, query latency, build time, mutation cost.

Data are synthetic unit vectors of dim 384 (no downloads):
  - clustered: 2,000 Gaussian clusters in a 48-dim latent space, projected to 384 dims, plus isotropic
    noise, normalised. Closer to real sentence embeddings than isotropic data.
  - hard: 10,000 clusters in a 192-dim latent space (sparser clusters; HNSW recall drops at 100k).
  - isotropic: i.i.d. Gaussian vectors, normalised. The worst case for any graph index and unrealistic
    for text embeddings (nearest neighbours barely closer than random points).
Queries are held-out points from the same distribution; ground truth is a brute-force top-10.

For each dataset and size the exact index (exact_limit above n) and the ANN index (exact_limit = min(20k,
n / 4), so the graph is used) answer the same queries one at a time. Reports p50/p95 per-query latency, recall@10
against ground truth (exact also with 1 BLAS thread when threadpoolctl is installed), the same with a
50 % `allowed` filter, the ANN build time (upsert → wait_ready) for
each --build-threads value, and the cost of upserting / removing 500 vectors on the ANN index.

Prints a Markdown table and writes JSON to bench/results/vectors.json.

    python bench/vectors.py                      # clustered 20k+100k, hard and isotropic 100k
    python bench/vectors.py --quick              # smoke run, ~20 s
    python bench/vectors.py --datasets clustered --sizes 20000 --dtypes i8,f16,f32
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memhub.index.vectors import VectorIndex

DIM = 384
DATASETS = {
    "clustered": {"latent": 48, "clusters": 2000},
    "hard": {"latent": 192, "clusters": 10000},
    "isotropic": {},
}


def make_data(kind: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "isotropic":
        x = rng.standard_normal((n, DIM), dtype=np.float32)
    else:
        p = DATASETS[kind]
        centres = rng.standard_normal((p["clusters"], p["latent"]), dtype=np.float32)
        proj = rng.standard_normal((p["latent"], DIM), dtype=np.float32) / np.float32(np.sqrt(p["latent"]))
        z = centres[rng.integers(0, p["clusters"], n)] + 0.6 * rng.standard_normal((n, p["latent"]), dtype=np.float32)
        x = z @ proj + 0.5 * rng.standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def ground_truth(x: np.ndarray, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[set[int]]:
    keys = np.arange(x.shape[0]) if allowed is None else np.sort(allowed)
    out: list[set[int]] = []
    for start in range(0, queries.shape[0], 100):
        scores = queries[start : start + 100] @ x[keys].T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        out.extend(set(keys[row].tolist()) for row in top)
    return out


def run_queries(
    index: VectorIndex, queries: np.ndarray, truth: list[set[int]], k: int, allowed: np.ndarray | None = None
) -> dict[str, float]:
    for q in queries[:20]:  # warm-up: page in the matrix and the graph
        index.search(q, k, allowed=allowed)
    lat: list[float] = []
    hits = 0
    for q, gt in zip(queries, truth, strict=True):
        t0 = time.perf_counter()
        got = index.search(q, k, allowed=allowed)
        lat.append(time.perf_counter() - t0)
        hits += len({key for key, _ in got} & gt)
    ms = np.array(lat) * 1e3
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "recall": hits / (k * len(truth)),
    }


def bench_case(kind: str, n: int, args: argparse.Namespace, dtype: str) -> dict[str, Any]:
    x = make_data(kind, n + args.queries, seed=n)
    data, queries = x[:n], x[n:]
    keys = np.arange(n, dtype=np.int64)
    k = 10
    truth = ground_truth(data, queries, k)
    rng = np.random.default_rng(1)
    allowed = np.sort(rng.choice(n, n // 2, replace=False)).astype(np.int64)
    truth_allowed = ground_truth(data, queries, k, allowed)
    top1 = float(np.mean([(data @ q).max() for q in queries[:100]]))
    result: dict[str, Any] = {"dataset": kind, "n": n, "dim": DIM, "graph_dtype": dtype, "mean_top1_cos": top1}

    exact = VectorIndex(DIM, exact_limit=10 * n)
    exact.upsert(keys, data)
    result["exact"] = run_queries(exact, queries, truth, k)
    result["exact_allowed50"] = run_queries(exact, queries, truth_allowed, k, allowed)
    try:  # numpy's BLAS uses every core for one product; with concurrent searches one thread each may be better
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            result["exact_blas1"] = run_queries(exact, queries, truth, k)
    except ImportError:
        pass
    exact.close()
    del exact

    builds: dict[str, float] = {}
    ann: VectorIndex | None = None
    for threads in args.build_threads:
        if ann is not None:
            ann.close()
        # The default exact_limit (20k) at 100k; n / 4 at smaller sizes so that the graph is used, also for
        # the 50 % filter (allowed sets up to exact_limit are scored exactly).
        limit = min(20_000, n // 4)
        ann = VectorIndex(DIM, exact_limit=limit, ann_threads=threads, ann_dtype=dtype)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        ann.upsert(keys, data)
        assert ann.wait_ready(3600) and ann.approximate
        builds[f"{threads}T"] = time.perf_counter() - t0
        print(f"  {kind} n={n} {dtype}: graph built in {builds[f'{threads}T']:.1f} s with {threads} thread(s)")
    assert ann is not None
    result["build_s"] = builds
    result["graph_memory_mb"] = ann._graph.memory_usage / 2**20
    result["ann"] = run_queries(ann, queries, truth, k)
    result["ann_allowed50"] = run_queries(ann, queries, truth_allowed, k, allowed)

    # Mutations: the calls themselves (what a writer waits for), then the background drain into the graph
    # (searches score the not-yet-drained keys exactly meanwhile).
    fresh = make_data(kind, 500, seed=n + 1)
    t0 = time.perf_counter()
    ann.upsert(np.arange(n, n + 500), fresh)
    upsert_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    ann.wait_ready(600)
    drain_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ann.remove(np.arange(n, n + 500))
    remove_ms = (time.perf_counter() - t0) * 1e3
    result["mutations"] = {"upsert500_ms": upsert_ms, "drain500_s": drain_s, "remove500_ms": remove_ms}
    ann.close()
    return result


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    return ", ".join(f"{i.get('internal_api')} {i.get('num_threads')}T" for i in threadpool_info())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=None, help="comma-separated subset of: " + ",".join(DATASETS))
    ap.add_argument("--sizes", default=None, help="comma-separated sizes (default: per dataset, see --help)")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--build-threads", default="1,2", help="ANN build thread counts to time (largest size only)")
    ap.add_argument("--dtypes", default="i8", help="graph dtypes to compare: i8,f16,f32")
    ap.add_argument("--quick", action="store_true", help="smoke run: clustered 20k, 200 queries, 2 threads")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "vectors.json"))
    args = ap.parse_args()

    if args.quick:
        plan = [("clustered", 20_000)]
        args.queries = min(args.queries, 200)
        args.build_threads = "2"
    elif args.sizes or args.datasets:
        kinds = (args.datasets or "clustered").split(",")
        sizes = [int(s) for s in (args.sizes or "20000,100000").split(",")]
        plan = [(kind, n) for kind in kinds for n in sizes]
    else:
        plan = [("clustered", 20_000), ("clustered", 100_000), ("hard", 100_000), ("isotropic", 100_000)]
    all_threads = [int(t) for t in args.build_threads.split(",")]
    largest = max(n for _, n in plan)

    results = []
    for dtype in args.dtypes.split(","):
        for kind, n in plan:
            # Timing several thread counts costs a full build each: only at the largest size.
            args.build_threads = all_threads if (n == largest and kind == plan[0][0]) else [max(all_threads)]
            results.append(bench_case(kind, n, args, dtype))

    header = (
        "| data | n | graph | exact p50/p95 ms (1 BLAS thread) | ANN p50/p95 ms | ANN recall@10 "
        "| filtered 50 %: exact / ANN p50 ms (ANN recall) | build s | graph MB "
        "| upsert 500 ms / drain s / remove 500 ms |"
    )
    print()
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in results:
        e, a, ef, af, m = r["exact"], r["ann"], r["exact_allowed50"], r["ann_allowed50"], r["mutations"]
        e1 = f"{r['exact_blas1']['p50_ms']:.2f} / {r['exact_blas1']['p95_ms']:.2f}" if "exact_blas1" in r else "n/a"
        builds = ", ".join(f"{v:.1f} ({t})" for t, v in r["build_s"].items())
        print(
            f"| {r['dataset']} (top1 {r['mean_top1_cos']:.2f}) | {r['n']:,} | {r['graph_dtype']} "
            f"| {e['p50_ms']:.2f} / {e['p95_ms']:.2f} ({e1}) "
            f"| {a['p50_ms']:.2f} / {a['p95_ms']:.2f} | {a['recall']:.4f} "
            f"| {ef['p50_ms']:.2f} / {af['p50_ms']:.2f} ({af['recall']:.4f}) | {builds} | {r['graph_memory_mb']:.0f} "
            f"| {m['upsert500_ms']:.1f} / {m['drain500_s']:.2f} / {m['remove500_ms']:.1f} |"
        )

    env = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "blas": blas_info(),
        "loadavg_at_end": os.getloadavg(),
    }
    try:
        import usearch

        env["usearch"] = usearch.__version__
    except ImportError:
        env["usearch"] = None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"env": env, "queries": args.queries, "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
