"""What MCP adds to a memory call: tool-call latency (p50 / p95) of `memory_search` and `persona_read` over stdio
(`memhub mcp`, a subprocess the way a host runs it) and over `/mcp` (inside `memhub serve`), against the same call
made straight through the SDK (`AsyncMemoryClient.recall` / `read_core`).

A real `memhub serve` (BM25 search, no pipeline) holds a user with a persona and a few hundred memories. The three
paths take turns call by call, so load that drifts during the run hits all of them alike; the added latency is each
MCP path's percentile minus the SDK's.

    python bench/mcp.py [--calls 300] [--out bench/results/mcp.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

# This script is named like the `mcp` package: its own directory leaves the path while the package is imported.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

sys.path.insert(0, str(HERE))
from common import SERVICE, Latency, client, running_server, seed_admin, write_result  # noqa: E402
from memhub.sdk.memory import AsyncMemoryClient  # noqa: E402

WARMUP = 5
TOPICS = ("release", "deploy", "database", "oncall", "review", "testing", "laptop", "travel", "coffee", "music")
QUERIES = ("how do we release", "who is on call", "database migrations", "coffee order", "code review rules")


def seed(http: Any, memories: int) -> dict[str, str]:
    """An instance admin with a persona and `memories` L1 memories on a few topics; their ids and key."""
    notes = (
        f"Note {n} about {TOPICS[n % len(TOPICS)]}: the team settled how {TOPICS[n % len(TOPICS)]} works in meeting "
        f"{n // len(TOPICS)}."
        for n in range(memories)
    )
    return seed_admin(http, notes)


Call = Callable[[int], Awaitable[None]]


async def run(url: str, who: dict[str, str], calls: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per call, by tool and path."""
    sdk = AsyncMemoryClient(
        url,
        who["key"],
        SERVICE,
        team_id=who["team_id"],
        agent_id=who["agent_id"],
        user_id=who["user_id"],
        timeout=60,
    )
    stdio = Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "memhub.cli", "mcp", "--url", url, "--key", who["key"], "--service-id", SERVICE],
            env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            cwd=HERE.parent,
        ),
        read_timeout_seconds=60,
    )
    headers = {"authorization": f"Bearer {who['key']}", "x-tdai-service-id": SERVICE}
    http = Client(streamable_http_client(url + "/mcp", http_client=create_mcp_http_client(headers=headers)))

    def tool(c: Client, name: str, args: Callable[[int], dict[str, Any]]) -> Call:
        async def call(i: int) -> None:
            result = await c.call_tool(name, args(i))
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content}")

        return call

    search_args: Callable[[int], dict[str, Any]] = lambda i: {"query": QUERIES[i % len(QUERIES)], "limit": 10}  # noqa: E731

    async def sdk_search(i: int) -> None:
        await sdk.recall(QUERIES[i % len(QUERIES)], include_persona=False, include_scenes=False)

    async def sdk_persona(i: int) -> None:
        await sdk.read_core()

    samples: dict[str, dict[str, list[float]]] = {}
    async with stdio, http:
        paths: dict[str, dict[str, Call]] = {
            "memory_search": {
                "sdk": sdk_search,
                "stdio": tool(stdio, "memory_search", search_args),
                "http": tool(http, "memory_search", search_args),
            },
            "persona_read": {
                "sdk": sdk_persona,
                "stdio": tool(stdio, "persona_read", lambda i: {}),
                "http": tool(http, "persona_read", lambda i: {}),
            },
        }
        for name, by_path in paths.items():
            samples[name] = {path: [] for path in by_path}
            order = list(by_path)
            for i in range(WARMUP + calls):
                # A different path leads each round, so none always runs right after another's call.
                for path in order[i % len(order) :] + order[: i % len(order)]:
                    start = time.perf_counter()
                    await by_path[path](i)
                    if i >= WARMUP:
                        samples[name][path].append(time.perf_counter() - start)
    await sdk.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="measured calls per tool and path")
    parser.add_argument("--memories", type=int, default=300, help="L1 memories of the user")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "mcp.json")
    args = parser.parse_args()
    env = {"MEMHUB_EMBEDDING_PROVIDER": "none", "MEMHUB_PIPELINE_ENABLED": "false"}
    with (
        tempfile.TemporaryDirectory(prefix="mh-mcp-") as tmp,
        running_server(Path(tmp) / "data", sys.executable, env) as server,
        client(server) as admin,
    ):
        who = seed(admin, args.memories)
        samples = anyio.run(run, server.url, who, args.calls)
    results: list[dict[str, Any]] = []
    print("\n| tool | path | p50 | p95 | added p50 / p95 over the SDK |")
    print("|---|---|---:|---:|---:|")
    for name, by_path in samples.items():
        base = Latency.of(by_path["sdk"])
        for path, seconds in by_path.items():
            lat = Latency.of(seconds)
            added = (round(lat.p50_ms - base.p50_ms, 3), round(lat.p95_ms - base.p95_ms, 3))
            results.append(
                {
                    "tool": name,
                    "path": path,
                    "latency": lat.__dict__,
                    "added_p50_ms": added[0],
                    "added_p95_ms": added[1],
                }
            )
            shown = "—" if path == "sdk" else f"{added[0]:.2f} / {added[1]:.2f} ms"
            print(f"| {name} | {path} | {lat.p50_ms:.2f} ms | {lat.p95_ms:.2f} ms | {shown} |")
    write_result(args.out, {"calls": args.calls, "memories": args.memories, "results": results})


if __name__ == "__main__":
    main()
