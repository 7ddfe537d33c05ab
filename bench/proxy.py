"""What the memory proxy adds to an agent's LLM call: time to first byte and to the end, p50 / p95, streamed and
not, OpenAI chat and Anthropic messages, over calling the same upstream directly.

A real `memhub serve` forwards to a fake provider (a local HTTP server speaking both protocols, in a process of its
own, as a provider is elsewhere). Each proxied turn carries a Claude-Code-like system
prompt (`# Heading` sections, ~9 KB) and a short conversation, and gets the real blocks: the persona, the scene
index, the memory tools, a skills listing and the session context. The session's blocks are computed on its first
turn (measured apart, as "cold") and reused after, so the measured turns are the warm path every later turn takes.

Direct and proxied calls alternate, and the added latency is taken per pair (proxied minus the direct call just
before it), so load that drifts during the run hits both sides alike.

    python bench/proxy.py [--turns 300] [--out bench/results/proxy.json]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake provider lives with the tests

from common import SERVICE, Latency, client, ok_data, percentile, running_server, write_result

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


def seed_memory(http: httpx.Client) -> tuple[str, str, str]:
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
    return key, team, agent


def ttfb_and_total(send: Callable[[], httpx.Response]) -> tuple[float, float]:
    """Seconds to the response's first body byte and to its end."""
    start = time.perf_counter()
    with send() as response:
        first = None
        for _chunk in response.iter_raw():
            if first is None:
                first = time.perf_counter()
        end = time.perf_counter()
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.read()!r}")
    return (first or end) - start, end - start


def request_body(protocol: str, stream: bool, n: int) -> dict[str, Any]:
    question = {"role": "user", "content": f"Run the release checklist, step {n}."}
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


# Two servers: the proxy's own cost (nothing runs in the background), and the default server, whose every captured
# turn is then written to L0, embedded and mined in the background, at an agent's pace.
SETUPS: dict[str, tuple[dict[str, str], str]] = {
    "proxy alone": (
        {"MEMHUB_PROXY_CAPTURE": "false", "MEMHUB_EMBEDDING_PROVIDER": "none", "MEMHUB_PIPELINE_ENABLED": "false"},
        "back to back",
    ),
    "default server": ({}, "paced"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300, help="measured turns per protocol and mode")
    parser.add_argument("--pace-ms", type=float, default=100.0, help="pause between turns on the default server")
    parser.add_argument("--setup", choices=sorted(SETUPS), action="append", help="only these setups (default: both)")
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
                    key, team, agent = seed_memory(admin)
                    headers = {"x-team-id": team, "x-agent-id": agent}
                    with httpx.Client(timeout=60) as http:
                        for protocol in ("openai", "anthropic"):
                            for stream in (False, True):
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
