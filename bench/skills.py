#!/usr/bin/env python3
"""Skills benchmark: write throughput, search and listing latency at 10,000 skills, and what versions cost.

Everything goes through real HTTP against `memhub serve` (one client, sequential, distinct queries):

1. create throughput: N skills (default 10,000) in one team, spread over 10 agents, each SKILL.md ~1 KB of
   generated operations prose (seeded; topics × tools × verbs so names and descriptions differ);
2. update throughput: `update` and `patch` with `expected_version` chained on one skill, and `update` across
   many skills;
3. search p95 over the 10,000 skills: `scope: "team"` (every skill of the team) and with an agent (its own
   ~1,000), in the default mode (bm25) and, with `--hybrid`, in hybrid mode on a server that embedded
   every skill (local e5: each query is embedded for real);
4. listing p95: `<available_skills>` for a query (search-ranked) and without one (the agent's skills);
5. storage: one skill with 20 resource files (8 KB each), written 100 times with the files unchanged: the
   distinct blobs and their bytes the store holds (read from the data dir after the server stopped), against
   one copy of the files.

Aims (the issue): search p95 ≤ 15 ms at 10,000 skills, listing p95 ≤ 20 ms, 100 versions with 20 unchanged
files ≈ 1 copy of the files.

Prints a Markdown table and writes JSON to bench/results/skills.json.

    python bench/skills.py              # 10,000 skills, BM25 (the default mode)
    python bench/skills.py --hybrid     # also a 2,000-skill server with local e5 vectors, hybrid mode
    python bench/skills.py --quick      # 1,000 skills, fewer queries
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import SERVICE, Latency, client, ok_data, running_server, write_result
from locomo import wait_for_backlog

TEAM = "team-bench"
AGENTS = [f"agent-{i}" for i in range(10)]
TOOLS = [
    "kubectl", "helm", "terraform", "pytest", "git", "docker", "psql", "redis-cli", "ansible", "jq", "curl",
    "npm", "cargo", "gradle", "maven", "poetry", "aws", "gcloud", "az", "ffmpeg", "rsync", "ssh", "grafana",
    "prometheus", "kafka", "airflow", "spark", "dbt", "nginx", "systemctl",
]  # fmt: skip
VERBS = [
    "deploy", "roll back", "debug", "migrate", "back up", "restore", "benchmark", "rotate keys for", "upgrade",
    "scale", "profile", "lint", "release", "audit", "monitor", "clean up", "bootstrap", "archive", "reindex",
    "throttle",
]  # fmt: skip
OBJECTS = [
    "the payments service", "a postgres replica", "the search cluster", "nightly reports", "the staging cluster",
    "user uploads", "the billing database", "feature flags", "the mobile build", "api gateways", "log pipelines",
    "a kafka topic", "the data warehouse", "ml models", "cron jobs", "ssl certificates", "docker images",
    "the cdn cache", "dns records", "test fixtures",
]  # fmt: skip
STEPS = [
    "check the current state with {tool} before touching anything",
    "take a snapshot so the change can be undone",
    "run {tool} with --dry-run and read the plan",
    "apply the change to one instance first and watch the error rate",
    "roll the change out in batches of ten percent",
    "verify the health checks and the dashboards",
    "write down what changed in the runbook",
    "if anything fails, stop and restore the snapshot",
]


def skill_doc(rng: random.Random, n: int) -> tuple[str, str, str]:
    """(name, description, SKILL.md) of the n-th generated skill."""
    verb, obj, tool = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TOOLS)
    name = f"{verb.replace(' ', '-')}-{obj.split()[-1].replace(' ', '-')}-{tool}-{n}"
    description = f"How to {verb} {obj} with {tool}, safely and step by step"
    steps = rng.sample(STEPS, 6)
    body = "\n".join(f"{i}. {s.format(tool=tool)}" for i, s in enumerate(steps, 1))
    extra = " ".join(rng.choice(TOOLS) for _ in range(40))
    content = f"---\nname: {name}\ndescription: {description}\n---\n# {verb} {obj}\n\n{body}\n\nSee also: {extra}\n"
    return name, description, content


def queries(rng: random.Random, n: int) -> list[str]:
    return [f"how do I {rng.choice(VERBS)} {rng.choice(OBJECTS)} using {rng.choice(TOOLS)}" for _ in range(n)]


def timed(fn: Any, items: list[Any]) -> tuple[list[float], list[Any]]:
    seconds, out = [], []
    for item in items:
        start = time.perf_counter()
        out.append(fn(item))
        seconds.append(time.perf_counter() - start)
    return seconds, out


def load_skills(http: Any, count: int, rng: random.Random) -> tuple[float, list[dict[str, Any]]]:
    """Create `count` skills; returns (skills per second, created summaries)."""

    def create(n: int) -> dict[str, Any]:
        name, _, content = skill_doc(rng, n)
        body = {"team_id": TEAM, "agent_id": AGENTS[n % len(AGENTS)], "user_id": "u1", "name": name, "content": content}
        return ok_data(http, "/v3/skill/create", body)

    start = time.perf_counter()
    _, created = timed(create, list(range(count)))
    return count / (time.perf_counter() - start), created


def update_rates(http: Any, created: list[dict[str, Any]], rounds: int) -> dict[str, float]:
    """Updates per second: chained on one skill (update, patch) and across many skills."""
    first = created[0]
    ids = {"team_id": TEAM, "agent_id": first["owner_agent_id"], "user_id": "u1"}
    got = ok_data(http, "/v3/skill/get", {**ids, "skill_id": first["skill_id"]})
    version, content = got["version"], got["content"]
    start = time.perf_counter()
    for i in range(rounds):
        content = content + f"\nnote {i}: keep the runbook current"
        body = {**ids, "skill_id": first["skill_id"], "expected_version": version, "content": content}
        version = ok_data(http, "/v3/skill/update", body)["version"]
    chained = rounds / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(rounds):
        body = {
            **ids,
            "skill_id": first["skill_id"],
            "expected_version": version,
            "old_string": f"note {i}:",
            "new_string": f"Note {i}:",
        }
        version = ok_data(http, "/v3/skill/patch", body)["version"]
    patched = rounds / (time.perf_counter() - start)
    start = time.perf_counter()
    for skill in created[1 : rounds + 1]:
        ids = {"team_id": TEAM, "agent_id": skill["owner_agent_id"], "user_id": "u1"}
        got = ok_data(http, "/v3/skill/get", {**ids, "skill_id": skill["skill_id"]})
        body = {
            **ids,
            "skill_id": skill["skill_id"],
            "expected_version": got["version"],
            "content": got["content"] + "\nx",
        }
        ok_data(http, "/v3/skill/update", body)
    spread = rounds / (time.perf_counter() - start)
    return {"update_chained_per_s": round(chained, 1), "patch_chained_per_s": round(patched, 1),
            "get_then_update_many_per_s": round(spread, 1)}  # fmt: skip


def search_latency(http: Any, qs: list[str], body: dict[str, Any]) -> tuple[Latency, float]:
    """Latency of `skill/search` over the queries, and the share of queries with at least one hit."""
    seconds, out = timed(lambda q: ok_data(http, "/v3/skill/search", {**body, "query": q}), qs)
    return Latency.of(seconds), sum(1 for d in out if d["items"]) / len(out)


def listing_latency(http: Any, qs: list[str | None], body: dict[str, Any]) -> Latency:
    def listing(q: str | None) -> Any:
        return ok_data(http, "/v3/skill/listing", {**body, **({"query": q} if q else {}), "char_budget": 4000})

    seconds, _ = timed(listing, qs)
    return Latency.of(seconds)


def storage(http: Any, rng: random.Random, versions: int) -> dict[str, Any]:
    """One skill with 20 unchanged 8 KB files written `versions` times."""
    files = [
        {"path": f"scripts/step-{i}.sh", "content": "".join(rng.choice("abcdefgh \n") for _ in range(8192)),
         "encoding": "utf-8"}
        for i in range(20)
    ]  # fmt: skip
    ids = {"team_id": TEAM, "agent_id": "agent-storage", "user_id": "u1"}
    _, _, content = skill_doc(rng, 10**6)
    name = content.split("\n")[1].removeprefix("name: ")
    created = ok_data(http, "/v3/skill/create", {**ids, "name": name, "content": content, "resources": files})
    version = created["version"]
    for i in range(versions - 1):
        content += f"\nrevision {i}"
        body = {**ids, "skill_id": created["skill_id"], "expected_version": version, "content": content}
        version = ok_data(http, "/v3/skill/update", body)["version"]
    return {
        "skill_id": created["skill_id"],
        "versions": version,
        "file_bytes_once": sum(len(f["content"]) for f in files),
    }


def blob_usage(data_dir: Path) -> tuple[int, int]:
    """(distinct blobs, bytes) of the tenant, read from the stopped server's data dir through the store API."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from memhub.runtime import open_store
    from memhub.settings import Settings

    store = open_store(Settings(data_dir=data_dir))
    try:
        return store.skills.blob_usage(SERVICE)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 skills, 100 queries")
    parser.add_argument("--hybrid", action="store_true", help="also measure hybrid search with local e5 vectors")
    parser.add_argument("--skills", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "skills.json")
    args = parser.parse_args()
    count = args.skills or (1_000 if args.quick else 10_000)
    nq = args.queries or (100 if args.quick else 300)
    rng = random.Random(19)
    qs = queries(random.Random(7), nq)
    result: dict[str, Any] = {"skills": count, "queries": nq}
    rows: list[tuple[str, str, str]] = []

    def ms(latency: Latency) -> str:
        return f"{latency.p50_ms:.1f} / {latency.p95_ms:.1f} ms"

    with tempfile.TemporaryDirectory(prefix="mh-skills-") as tmp:
        data_dir = Path(tmp) / "data"
        env = {"MEMHUB_EMBEDDING_PROVIDER": "none", "MEMHUB_PIPELINE_ENABLED": "false"}
        with running_server(data_dir, sys.executable, env) as server, client(server) as http:
            rate, created = load_skills(http, count, rng)
            result["create_per_s"] = round(rate, 1)
            rows.append(("create (sequential, one client)", f"{rate:.0f} skills/s", f"{count} skills"))
            up = update_rates(http, created, 100)
            result.update(up)
            rows.append(("update, chained on one skill (CAS)", f"{up['update_chained_per_s']:.0f}/s", "100 versions"))
            rows.append(("patch, chained on one skill (CAS)", f"{up['patch_chained_per_s']:.0f}/s", "100 versions"))
            rows.append(("get + update across skills", f"{up['get_then_update_many_per_s']:.0f}/s", "100 skills"))
            team = {"team_id": TEAM, "user_id": "u1", "scope": "team"}
            agent = {"team_id": TEAM, "agent_id": AGENTS[0], "user_id": "u1"}
            for label, body, size in (("team scope", team, count), ("one agent", agent, count // len(AGENTS))):
                latency, hit_rate = search_latency(http, qs, body)
                result[f"search_bm25_{label.replace(' ', '_')}"] = {**latency.__dict__, "hit_rate": hit_rate}
                rows.append((f"search p50 / p95, bm25, {label}", ms(latency), f"{size} skills, hits {hit_rate:.0%}"))
            listing_q = listing_latency(http, list(qs), agent)
            listing_none = listing_latency(http, [None] * nq, agent)
            result["listing_query"] = listing_q.__dict__
            result["listing_no_query"] = listing_none.__dict__
            rows.append(("listing p50 / p95, with a query", ms(listing_q), "one agent"))
            rows.append(("listing p50 / p95, no query", ms(listing_none), "one agent"))
            kept = storage(http, rng, 100)
        blobs, blob_bytes = blob_usage(data_dir)
        result["storage"] = {**kept, "blobs": blobs, "blob_bytes": blob_bytes}
        copies = blob_bytes / kept["file_bytes_once"]
        stored = f"{blobs} blobs, {blob_bytes / 1024:.0f} KiB"
        rows.append(("100 versions, 20 unchanged 8 KB files", stored, f"{copies:.2f} copies of the files"))
        if args.hybrid:
            hybrid_count = min(count, 2_000)
            hybrid_dir = Path(tmp) / "hybrid"
            env = {"MEMHUB_PIPELINE_ENABLED": "false", "MEMHUB_SKILL_SEARCH_MODE": "hybrid"}
            with running_server(hybrid_dir, sys.executable, env) as server, client(server) as http:
                load_skills(http, hybrid_count, random.Random(19))
                waited = wait_for_embeddings(http)
                latency, hit_rate = search_latency(http, qs, {**team, "mode": "hybrid"})
                result["search_hybrid_team_scope"] = {**latency.__dict__, "hit_rate": hit_rate, "embed_wait_s": waited}
                rows.append(("search p50 / p95, hybrid (e5 query), team scope", ms(latency), f"{hybrid_count} skills"))
    print("\n| measurement | result | notes |\n|---|---:|---|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")
    write_result(args.out, result)


def wait_for_embeddings(http: Any, timeout: float = 1800.0) -> float:
    waited, _ = wait_for_backlog(http, timeout)
    return round(waited, 1)


if __name__ == "__main__":
    main()
