"""What a Claude Code hook costs the agent: wall time of `memhub hooks run <event>` from spawn to exit, as Claude Code
runs it (a new process per event, the hook JSON on stdin), with the gateway up and with it down.

The command is the one `memhub hooks install` writes into Claude Code's settings (the `memhub` console script of
this environment, `memhub.cli.entry:main`), run through a shell as Claude Code runs hook commands.

Gateway up: a real `memhub serve` (BM25 search, no pipeline) holding a persona and a few hundred memories; the
transcript gets one new turn before each `stop`, so every capture sends something. Gateway down: nothing listens at
the URL; every hook must still exit 0, print nothing and come back quickly (the agent waits for it).

    python bench/hooks.py [--runs 30] [--out bench/results/hooks.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import HOST, SERVICE, Latency, client, free_port, running_server, seed_admin, write_result

REPO = Path(__file__).resolve().parents[1]
SESSION = "bench-session-0001"


def hook_command(event: str) -> str:
    """The hook's command line as `memhub hooks install` writes it, with this environment's `memhub` script (the one
    `install` picks when `memhub` is not on PATH; on PATH it is the same script)."""
    script = Path(sys.executable).parent / "memhub"
    if not script.is_file():
        raise SystemExit(f"{script} not found: install memhub into this environment (pip install -e .)")
    return shlex.join([str(script), "hooks", "run", event])


def seed(http: Any, memories: int) -> dict[str, str]:
    """An instance admin with a persona and `memories` L1 memories about releases; their ids and user key."""
    notes = (
        f"Note {n}: the team ships release {n} after the staging cluster blue-heron passes." for n in range(memories)
    )
    return seed_admin(http, notes)


def append_turn(transcript: Path, n: int) -> None:
    """One user message and one assistant reply, as Claude Code writes them."""
    stamp = f"2026-11-20T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    user = {"type": "user", "sessionId": SESSION, "timestamp": stamp, "uuid": f"u-{n}", "isSidechain": False}
    user["message"] = {"role": "user", "content": f"Question {n}: when does release {n} ship?"}
    reply = {"type": "assistant", "sessionId": SESSION, "timestamp": stamp, "uuid": f"a-{n}", "isSidechain": False}
    reply["message"] = {
        "id": f"msg-{n}",
        "role": "assistant",
        "content": [{"type": "text", "text": f"Release {n} ships after blue-heron passes."}],
    }
    with transcript.open("a", encoding="utf-8") as f:
        f.write(json.dumps(user) + "\n" + json.dumps(reply) + "\n")


def run_hook(event: str, payload: dict[str, Any], env: dict[str, str]) -> float:
    """Seconds from spawn to exit of one hook; it must exit 0 (and print only the hook's JSON, if anything)."""
    start = time.perf_counter()
    done = subprocess.run(
        hook_command(event),
        shell=True,
        input=json.dumps(payload),
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"{event}: exit {done.returncode}, stderr {done.stderr[-500:]!r}")
    if done.stdout:
        json.loads(done.stdout)
    return elapsed


def measure(url: str, who: dict[str, str], runs: int, state: Path, transcript: Path) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "CLAUDE_"))}
    env |= {
        "MEMHUB_URL": url,
        "MEMHUB_API_KEY": who["key"],
        "MEMHUB_SERVICE_ID": SERVICE,
        "MEMHUB_TEAM_ID": who["team_id"],
        "MEMHUB_AGENT_ID": who["agent_id"],
        "MEMHUB_USER_ID": who["user_id"],
        "MEMHUB_HOOKS_DIR": str(state),
    }
    common = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(REPO)}
    prompts = {**common, "hook_event_name": "UserPromptSubmit", "prompt": "When does the next release ship?"}
    starts = {**common, "hook_event_name": "SessionStart", "source": "startup"}
    stops = {**common, "hook_event_name": "Stop", "stop_hook_active": False}
    samples: dict[str, list[float]] = {"session-start": [], "user-prompt-submit": [], "stop": []}
    for n in range(runs + 1):  # the first round warms the interpreter's caches and is not counted
        append_turn(transcript, n)
        times = {
            "session-start": run_hook("session-start", starts, env),
            "user-prompt-submit": run_hook("user-prompt-submit", prompts, env),
            "stop": run_hook("stop", stops, env),
        }
        if n:
            for event, seconds in times.items():
                samples[event].append(seconds)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="measured runs per event and gateway state")
    parser.add_argument("--memories", type=int, default=300, help="L1 memories of the user")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "hooks.json")
    args = parser.parse_args()
    env = {"MEMHUB_EMBEDDING_PROVIDER": "none", "MEMHUB_PIPELINE_ENABLED": "false"}
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mh-hooks-") as tmp:
        root = Path(tmp)
        with running_server(root / "data", sys.executable, env) as server, client(server) as admin:
            who = seed(admin, args.memories)
            results["up"] = measure(server.url, who, args.runs, root / "state-up", root / "up.jsonl")
        down_url = f"http://{HOST}:{free_port()}"  # nothing listens here
        results["down"] = measure(down_url, who, args.runs, root / "state-down", root / "down.jsonl")
    rows: list[dict[str, Any]] = []
    print("\n| gateway | hook | p50 | p95 | max |")
    print("|---|---|---:|---:|---:|")
    for state, by_event in results.items():
        for event, seconds in by_event.items():
            lat = Latency.of(seconds)
            rows.append({"gateway": state, "event": event, "latency": lat.__dict__})
            print(f"| {state} | {event} | {lat.p50_ms:.0f} ms | {lat.p95_ms:.0f} ms | {lat.max_ms:.0f} ms |")
    load = os.getloadavg()[0]
    print(f"\nload average (1 min) at the end: {load:.2f} on {os.cpu_count()} cores")
    write_result(args.out, {"runs": args.runs, "memories": args.memories, "load_1min": load, "results": rows})


if __name__ == "__main__":
    main()
