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
   the ingest → summary latency), as the model's own answer would take at least as long; the server summarises
   each pair as it comes (`MEMHUB_OFFLOAD_SUMMARY_BATCH=1`), since the replay has no model time in which a
   batch of 4 pairs, or its 30 s age, would be reached;
3. then `POST /v2/offload/compact` with the call's whole context (the conversation so far, uncompacted: the
   session's earlier decisions are re-applied by the server), its `context_window`, `total_tokens` and the
   per-message counts.

Per level (mild / aggressive / emergency) the context window is chosen so that the trajectory's last call fills
70%, 90% or 100% of it, and once more 200% (emergency_2x: a context twice its window, where emergency has more
to do than mild replacements); each gets two sessions of its own:

- once: the whole trajectory ingested, then its last call's context (the largest, ~150k tokens) compacted once,
  with no earlier decisions: what one compaction at that level does;
- replay: a compaction before every model call, as an agent's client makes them. The server re-applies the
  session's earlier decisions first and resolves the level on what is left, so as the context grows the calls
  fall in lower levels than the one aimed at; every compaction is reported under the level the server resolved.

Tokens are counted here, the same way before and after (texts, tool calls' names and inputs, tool results, 4
tokens a message), so the reduction does not depend on the server's own count.

Retention is judged on each session's last compaction: a fixed set of questions about facts that appeared only
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
provider (tests/proxy/fake_upstream.py), once with offload on (`MEMHUB_PROXY_OFFLOAD=on`) and once off (`=off`,
the proxy's default), and the tokens the provider received counted.

Aims: at the mild level ≥ 50% fewer tokens with ≥ 90% retention offline; ingest → summary p95 ≤ 1 s offline;
compact p95 ≤ 50 ms for a 150k-token context.

    python bench/offload.py                 # two trajectories, offline and LLM, and the proxy (about 10 minutes)
    python bench/offload.py --quick         # one short trajectory
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from common import HERE, SERVICE, Latency, client, running_server, write_result
from offload_trajectory import (
    ModelCall,
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
    text_tokens,
)

# The fakes live with the tests, not in the package: test tooling never ships. The repository root goes on
# sys.path so that they import as they do under pytest.
sys.path.insert(0, str(HERE.parent))
from tests.pipeline.fake_llm import FakeChat, Reply
from tests.proxy.fake_upstream import FakeUpstream

DEFAULT_OUT = HERE / "results" / "offload.json"
DEFAULT_TRAJECTORIES = HERE / "results" / "offload_trajectories.json"
# The last call's share of the window per level aimed at. Below 1.0, mild replacements alone bring these contexts
# under the aggressive and emergency targets, so those levels cut nothing more; at twice the window (a context
# that outgrew its model, or a small-window model) emergency has to drop and cut.
LEVELS = {"mild": 0.70, "aggressive": 0.90, "emergency": 1.00, "emergency_2x": 2.00}
LEVEL_ORDER = ("fastpath", "mild", "aggressive", "emergency")
TEAM, AGENT, USER = "bench-team", "bench-agent", "bench-user"
ISOLATION = {"x-tdai-team-id": TEAM, "x-tdai-agent-id": AGENT, "x-tdai-user-id": USER}
RECENT_TURNS = 6  # text turns sent with a prompt's ingest, as the client sends its last messages
SUMMARY_TIMEOUT_S = 30.0
REPEATS_AT_FINAL = 20
BIG_CONTEXT = 120_000  # replayed calls at least this long count as "about 150k" for the latency aim
AIM_REDUCTION, AIM_RETENTION, AIM_SUMMARY_P95_MS, AIM_COMPACT_P95_MS = 0.50, 0.90, 1000.0, 50.0
# A replay makes its calls back to back, without the model's time between them that lets a real session's pairs
# reach the summary batch or its age (4 pairs or 30 s): each pair is summarised on its own instead, so that the
# wait below measures the summary's work and the worker's pickup, not the batch's age.
SERVER_ENV = {"MEMHUB_EMBEDDING_PROVIDER": "none", "MEMHUB_OFFLOAD_SUMMARY_BATCH": "1"}
# The proxy's offload switch and its two values; the proxy leaves offload off unless told.
PROXY_OFFLOAD = "MEMHUB_PROXY_OFFLOAD"
PROXY_WINDOW = "MEMHUB_PROXY_OFFLOAD_CONTEXT_WINDOW"
PROXY_SHARE = 0.8  # a proxied trajectory's last call fills this share of its window: past mild, under aggressive


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the routes ----------------------------------------------------------------------------------------------------


class Routes:
    """The offload routes of one server, with the bench's isolation ids; every call's wall time is kept."""

    def __init__(self, http: httpx.Client, pace_s: float = 0.25) -> None:
        self.http = http
        self.times: dict[str, list[float]] = defaultdict(list)
        self.pace_s = pace_s
        self.watch_status = False  # set once the server is known to report its offload work

    def check(self) -> None:
        """Stop with a clear message when the server has no offload routes; learn how to watch its work."""
        response = self.http.post("/v2/offload/query-mmd", json={"session_id": "bench-probe"}, headers=ISOLATION)
        if response.status_code == 404:
            raise SystemExit("this server has no /v2/offload/* routes: nothing to measure on this branch yet")
        self.watch_status = offload_status(self) is not None
        if not self.watch_status:
            progress(f"no offload status in /v2/pipeline/status: ingest → summary not measured, {self.pace_s} s pace")

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


POLL_S = 0.005


def offload_status(routes: Routes) -> dict[str, Any] | None:
    """The offload part of the pipeline's status for the bench's scope, when the server reports one."""
    response = routes.http.post("/v2/pipeline/status", json={}, headers=ISOLATION)
    data = response.json().get("data") if response.status_code == 200 else None
    if not isinstance(data, dict):
        return None
    found = {k: v for k, v in data.items() if "offload" in k.lower() and isinstance(v, dict)}
    return found or None


def summaries_done(status: dict[str, Any]) -> bool:
    """Whether the offload status shows no pair waiting for its summary and no summary job queued or running."""
    offload = status.get("offload")
    if not isinstance(offload, dict):
        return True
    job = offload.get("summary") if isinstance(offload.get("summary"), dict) else {}
    return not offload.get("pairs_pending") and not job.get("queued") and not job.get("running")


def wait_for_summaries(routes: Routes, session: str, call_ids: Sequence[str], timeout: float) -> float | None:
    """Seconds from now until every pair ingested so far has its summary (the pipeline's offload status), or None
    when the timeout passed first. Without an offload status the wait is a fixed pace and not measured."""
    if not routes.watch_status:
        time.sleep(routes.pace_s)
        return None
    started = time.perf_counter()
    while True:
        if summaries_done(offload_status(routes) or {}):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            return None
        time.sleep(POLL_S)


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
    """One session's run: `kind` "replay" compacts before every call, "once" only the last call's context."""

    kind: str
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


def window_for(trajectory: Trajectory, share: float) -> int:
    """The context window in which the trajectory's last call fills `share` of it."""
    return math.ceil(context_tokens(trajectory.context(trajectory.calls[-1])) / share)


def ingest_call(routes: Routes, session: str, trajectory: Trajectory, call: ModelCall) -> None:
    """What the client sends before a model call: the prompt that opened a task, the pairs that came back."""
    if call.pairs or call.prompt:
        recent = recent_turns(trajectory.messages[: call.upto - 1]) if call.prompt else []
        routes.ingest(session, call.pairs, call.prompt, recent)


def compaction(routes: Routes, session: str, context: list[dict[str, Any]], window: int, n: int) -> Compaction:
    tokens = [message_tokens(m) for m in context]
    started = time.perf_counter()
    data = routes.compact(session, context, window, tokens)
    seconds = time.perf_counter() - started
    report = data.get("report") or {}
    compacted = data.get("messages") or []
    level = str(report.get("resolvedLevel", "?"))
    return Compaction(n, level, sum(tokens), context_tokens(compacted), seconds, {**report, "_messages": compacted})


def replay(routes: Routes, trajectory: Trajectory, level: str, share: float, mode: str, repeats: int) -> Replay:
    """The whole trajectory, compacted before every model call, in a window its last call fills to `share`."""
    window = window_for(trajectory, share)
    session = f"bench-{mode}-{trajectory.name}-replay-{level}"
    result = Replay("replay", trajectory.name, level, window)
    for n, call in enumerate(trajectory.calls):
        ingest_call(routes, session, trajectory, call)
        if call.pairs:
            waited = wait_for_summaries(routes, session, [p["tool_call_id"] for p in call.pairs], SUMMARY_TIMEOUT_S)
            if waited is None:
                result.summary_timeouts += 1
            else:
                result.summary_s.append(waited)
        result.compactions.append(compaction(routes, session, trajectory.context(call), window, n))
    last = trajectory.context(trajectory.calls[-1])
    for _ in range(repeats):
        result.final_repeats_s.append(compaction(routes, session, last, window, len(trajectory.calls)).seconds)
    finish(routes, session, trajectory, result)
    return result


def once(routes: Routes, trajectory: Trajectory, level: str, share: float, mode: str) -> Replay:
    """The whole trajectory ingested, then its last call's context compacted once, with no earlier decisions:
    what one compaction at `level` does to a ~150k-token context."""
    window = window_for(trajectory, share)
    session = f"bench-{mode}-{trajectory.name}-once-{level}"
    result = Replay("once", trajectory.name, level, window)
    for call in trajectory.calls:
        ingest_call(routes, session, trajectory, call)
    ids = [p["tool_call_id"] for call in trajectory.calls for p in call.pairs]
    if wait_for_summaries(routes, session, ids, SUMMARY_TIMEOUT_S * 4) is None:
        result.summary_timeouts += 1
    last = trajectory.context(trajectory.calls[-1])
    result.compactions.append(compaction(routes, session, last, window, len(trajectory.calls) - 1))
    finish(routes, session, trajectory, result)
    return result


def finish(routes: Routes, session: str, trajectory: Trajectory, result: Replay) -> None:
    """Retention on the last compaction; its messages are kept apart from the reports (they are large)."""
    for c in result.compactions:
        result.final_messages = c.report.pop("_messages")
    result.verdicts, result.read_ref_calls = retention(routes, session, trajectory.questions, result.final_messages)


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
    pace: float,
) -> tuple[list[Replay], dict[str, list[float]]]:
    with (
        tempfile.TemporaryDirectory(prefix=f"memhub-offload-{mode}-") as tmp,
        running_server(Path(tmp) / "data", python, {**SERVER_ENV, **env}) as server,
        client(server) as http,
    ):
        routes = Routes(http, pace)
        routes.check()
        replays = []
        for trajectory in trajectories:
            for level in levels:
                for kind in ("once", "replay"):
                    started = time.monotonic()
                    if kind == "once":
                        done = once(routes, trajectory, level, LEVELS[level], mode)
                    else:
                        done = replay(routes, trajectory, level, LEVELS[level], mode, repeats)
                    replays.append(done)
                    kept = sum(v.retained for v in done.verdicts.values())
                    last = done.compactions[-1]
                    progress(
                        f"{mode} {trajectory.name} {kind} {level}: {len(done.compactions)} compactions, last "
                        f"{last.level} {last.tokens_before:,} → {last.tokens_after:,} tokens, retention "
                        f"{kept}/{len(done.verdicts)} ({time.monotonic() - started:.0f} s)"
                    )
        return replays, dict(routes.times)


# -- an LLM for the offload prompts ----------------------------------------------------------------------------------


LLM_CALLS: Counter[str] = Counter()  # offload prompts FakeChat answered, by stage
LLM_PROMPT_CHARS: Counter[str] = Counter()


def block(text: str, tag: str) -> str | None:
    """The inside of the prompt's `<tag>` data block, if it has one."""
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return m.group(1) if m else None


def json_lines(text: str) -> list[dict[str, Any]]:
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def extractive_llm(body: dict[str, Any]) -> Reply:
    """FakeChat's answer to an offload prompt: deterministic JSON of the shape the prompt asks for, made the way a
    careless model would (a summary is the call and the result's first lines; one graph node per update), so
    the LLM path's plumbing and costs are measured, never a model's quality."""
    user = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
    chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    if (pairs := block(user, "tool_pairs")) is not None:
        LLM_CALLS["summary"] += 1
        LLM_PROMPT_CHARS["summary"] += chars
        summaries = []
        for item in json_lines(pairs):
            result = str(item.get("result", ""))
            lines = [line.strip() for line in result.splitlines() if line.strip()]
            text = f"{item.get('tool_call', '')}: {' | '.join(lines[:4])}"[:200]
            size = int(item.get("result_chars") or len(result))
            score = 2 if item.get("error") else 1 if size <= 500 else 5 if "Read" in str(item.get("tool_call")) else 7
            summaries.append({"tool_call_id": item.get("tool_call_id"), "summary": text, "score": score})
        return Reply.json({"summaries": summaries})
    if (prompt := block(user, "new_prompt")) is not None:
        LLM_CALLS["task"] += 1
        LLM_PROMPT_CHARS["task"] += chars
        label = " ".join(prompt.split())[:60]
        judgment = {"task_completed": True, "is_long_task": True, "is_continuation": False}
        return Reply.json({**judgment, "continuation_graph": None, "new_task_label": label})
    if (entries := block(user, "new_entries")) is not None:
        LLM_CALLS["graph"] += 1
        LLM_PROMPT_CHARS["graph"] += chars
        items = json_lines(entries)
        ids = re.findall(r"^\s*(\w+)\[", block(user, "current_graph") or "", re.M)
        first = items[0] if items else {}
        node: dict[str, Any] = {
            "id": "new1",
            "title": f"explore: {str(first.get('tool_call', 'steps'))[:40]}",
            "status": "doing",
            "summary": str(first.get("summary", ""))[:150],
        }
        if ids:
            node["after"] = ids[-1]
        node_of = {str(i.get("tool_call_id")): "new1" for i in items}
        return Reply.json({"goal": None, "nodes": [node], "node_of": node_of})
    LLM_CALLS["other"] += 1
    return Reply.text("{}")


# -- the proxy -------------------------------------------------------------------------------------------------------


PROXY_SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude. Work in the user's repository."


def request_tokens(body: dict[str, Any]) -> int:
    """The tokens of a Messages request as counted here: its system prompt and its messages."""
    system = body.get("system")
    system_text = system if isinstance(system, str) else message_text({"content": system or []})
    return text_tokens(system_text) + context_tokens(body.get("messages") or [])


def proxy_run(
    trajectories: Sequence[Trajectory], python: str, env: dict[str, str], model: str, pace: float
) -> dict[str, list[dict[str, Any]]]:
    """Every model call of every trajectory through the proxy to a fake provider: per call, the tokens sent, the
    tokens the provider received and what the proxy's memory header said. Each trajectory gets a server whose
    window (`MEMHUB_PROXY_OFFLOAD_CONTEXT_WINDOW`) its last call fills to `PROXY_SHARE`, as a long run fills a
    real model's window."""
    turns: dict[str, list[dict[str, Any]]] = {}
    for trajectory in trajectories:
        window = window_for(trajectory, PROXY_SHARE)
        with FakeUpstream() as fake, tempfile.TemporaryDirectory(prefix="memhub-offload-proxy-") as tmp:
            server_env = {
                **SERVER_ENV,
                "MEMHUB_PROXY_ANTHROPIC_BASE_URL": fake.root,
                "MEMHUB_PROXY_ANTHROPIC_API_KEY": "sk-ant-bench",
                PROXY_WINDOW: str(window),
                **env,
            }
            with (
                running_server(Path(tmp) / "data", python, server_env) as server,
                client(server) as http,
                httpx.Client(base_url=server.url, timeout=120) as proxy,
            ):
                admin = http.post("/v3/internal/meta/user/init-admin", json={"username": "bench"}).json()["data"]
                rows = []
                previous = b""
                headers = {
                    "x-api-key": admin["user_key"],
                    "anthropic-version": "2023-06-01",
                    "x-team-id": admin["team_id"],
                    "x-agent-id": admin["agent_id"],
                    "x-claude-code-session-id": f"bench-proxy-{trajectory.name}",
                }
                for call in trajectory.calls:
                    body = {
                        "model": model,
                        "max_tokens": 256,
                        "system": PROXY_SYSTEM,
                        "messages": trajectory.context(call),
                    }
                    fake.requests.clear()
                    response = proxy.post(f"/proxy/{SERVICE}/v1/messages", json=body, headers=headers)
                    response.raise_for_status()
                    [sent] = fake.turns("/v1/messages")
                    rows.append(
                        {
                            "sent": request_tokens(body),
                            "upstream": request_tokens(sent.json),
                            "memory": response.headers.get("x-memhub-memory", ""),
                            "bytes": len(sent.body),
                            "same_prefix_bytes": common_prefix(previous, sent.body),
                        }
                    )
                    previous = sent.body
                    time.sleep(pace)  # the model's answer takes time; the proxy's background work runs meanwhile
                turns[trajectory.name] = rows
    return turns


def run_proxy(
    trajectories: Sequence[Trajectory],
    python: str,
    on_env: dict[str, str],
    off_env: dict[str, str],
    model: str,
    pace: float,
) -> dict[str, Any]:
    """The same calls through a proxy with offload switched on (`on_env`) and one with it off (`off_env`)."""
    on = proxy_run(trajectories, python, on_env, model, pace)
    off = proxy_run(trajectories, python, off_env, model, pace)
    result: dict[str, Any] = {"model": model, "on_env": on_env, "off_env": off_env, "trajectories": {}}
    for name in on:
        with_offload = [r["upstream"] for r in on[name]]
        without = [r["upstream"] for r in off[name]]
        result["trajectories"][name] = {
            "turns": len(with_offload),
            "sent_total": sum(r["sent"] for r in on[name]),
            "upstream_total_with_offload": sum(with_offload),
            "upstream_total_without_offload": sum(without),
            "upstream_mean_with_offload": round(statistics.fmean(with_offload)),
            "upstream_mean_without_offload": round(statistics.fmean(without)),
            "upstream_last_with_offload": with_offload[-1],
            "upstream_last_without_offload": without[-1],
            "offload_said": dict(Counter(offload_of(a["memory"]) for a in on[name])),
            "prefix_reuse_with_offload": round(prefix_reuse(on[name]), 4),
            "prefix_reuse_without_offload": round(prefix_reuse(off[name]), 4),
            "per_turn": [
                {
                    "sent": a["sent"],
                    "with_offload": a["upstream"],
                    "without_offload": b["upstream"],
                    "memory": a["memory"],
                }
                for a, b in zip(on[name], off[name], strict=True)
            ],
        }
    result["compacted"] = any(
        t["upstream_total_with_offload"] < t["upstream_total_without_offload"] for t in result["trajectories"].values()
    )
    return result


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes two requests share: what a provider's prompt cache can reuse of the second."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # bisect on equal prefixes: comparing slices is fast, a byte loop is not
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def prefix_reuse(rows: Sequence[dict[str, Any]]) -> float:
    """The share of the bytes of every request after the first that repeat the previous request's opening."""
    later = rows[1:]
    return sum(r["same_prefix_bytes"] for r in later) / max(1, sum(r["bytes"] for r in later))


def offload_of(memory: str) -> str:
    """What the proxy's memory header said of offload: its status word (`mild`, `prefix`, `none`, …) or `off`."""
    for part in memory.split("; "):
        if part.startswith("offload="):
            return part.removeprefix("offload=").split(",", 1)[0]
    return "off"


def proxy_envs(on: Sequence[str], off: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The two proxy servers' environments: offload switched on and off, then any KEY=VALUE given for each."""

    def parsed(items: Sequence[str]) -> dict[str, str]:
        pairs = [item.split("=", 1) for item in items]
        if any(len(pair) != 2 or not pair[0] for pair in pairs):
            raise SystemExit(f"expected KEY=VALUE, got {list(items)}")
        return dict(pairs)  # type: ignore[arg-type]

    return {PROXY_OFFLOAD: "on", **parsed(on)}, {PROXY_OFFLOAD: "off", **parsed(off)}


def print_proxy(proxy: dict[str, Any]) -> None:
    print(f"\n### through the proxy ({proxy['model']}), tokens the provider received per turn\n")
    print(
        "| trajectory | turns | mean with offload | mean without | last turn with | last turn without | saved "
        "| prefix reuse with / without | offload said |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, t in proxy["trajectories"].items():
        saved = 1 - t["upstream_total_with_offload"] / t["upstream_total_without_offload"]
        said = ", ".join(f"{k} {v}" for k, v in sorted(t["offload_said"].items()))
        reuse = f"{100 * t['prefix_reuse_with_offload']:.1f}% / {100 * t['prefix_reuse_without_offload']:.1f}%"
        print(
            f"| {name} | {t['turns']} | {t['upstream_mean_with_offload']:,} | {t['upstream_mean_without_offload']:,} | "
            f"{t['upstream_last_with_offload']:,} | {t['upstream_last_without_offload']:,} | {100 * saved:.1f}% "
            f"| {reuse} | {said} |"
        )
    if not proxy["compacted"]:
        switch = ", ".join(f"{k}={v}" for k, v in proxy["on_env"].items())
        print(f"\nthe proxy sent every turn uncompacted: its offload is absent or {switch} did not switch it on")


# -- reporting -------------------------------------------------------------------------------------------------------


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def ms(seconds: Sequence[float], q: str = "p95_ms") -> str:
    return f"{getattr(Latency.of(seconds), q):.1f}" if seconds else "–"


def final_rows(replays: Sequence[Replay], trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Per level aimed at: the last compaction's tokens and reduction, and its retention."""
    questions = {t.name: {q.id: q for q in t.questions} for t in trajectories}
    rows: dict[str, Any] = {}
    for level in LEVELS:
        chosen = [r for r in replays if r.level == level]
        if not chosen:
            continue
        before = sum(r.compactions[-1].tokens_before for r in chosen)
        after = sum(r.compactions[-1].tokens_after for r in chosen)
        verdicts = [(r.trajectory, questions[r.trajectory][qid], v) for r in chosen for qid, v in r.verdicts.items()]
        how = Counter(v.how for _, _, v in verdicts)
        by_kind: dict[str, list[bool]] = defaultdict(list)
        for _, q, v in verdicts:
            by_kind[q.kind].append(v.retained)
        rows[level] = {
            "resolved": sorted({r.compactions[-1].level for r in chosen}),
            "windows": {r.trajectory: r.window for r in chosen},
            "tokens_before": before,
            "tokens_after": after,
            "reduction": round(1 - after / before, 4) if before else None,
            "questions": len(verdicts),
            "retention": round(sum(v.retained for *_, v in verdicts) / len(verdicts), 4) if verdicts else None,
            "in_context": how["context"],
            "via_read_ref": how["read_ref"],
            "lost": how["lost"],
            "read_ref_calls": sum(r.read_ref_calls for r in chosen),
            "retention_by_kind": {k: round(sum(v) / len(v), 4) for k, v in sorted(by_kind.items())},
            "lost_questions": [
                {"trajectory": t, "kind": q.kind, "question": q.text, "answer": q.answer}
                for t, q, v in verdicts
                if not v.retained
            ],
            "reports": {r.trajectory: r.compactions[-1].report for r in chosen},
        }
    return rows


def summarize(replays: Sequence[Replay], trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Single compactions and replays per level aimed at; every replayed compaction by the level resolved."""
    resolved: dict[str, Any] = {}
    every = [c for r in replays if r.kind == "replay" for c in r.compactions]
    for level in LEVEL_ORDER:
        chosen = [c for c in every if c.level == level]
        if not chosen:
            continue
        before = sum(c.tokens_before for c in chosen)
        after = sum(c.tokens_after for c in chosen)
        resolved[level] = {
            "compactions": len(chosen),
            "tokens_before": before,
            "tokens_after": after,
            "reduction": round(1 - after / before, 4) if before else None,
            "latency": Latency.of([c.seconds for c in chosen]).__dict__,
        }
    summary_s = [s for r in replays for s in r.summary_s]
    big = [c.seconds for c in every if c.tokens_before >= BIG_CONTEXT]
    repeats = [s for r in replays for s in r.final_repeats_s]
    single = [r.compactions[-1].seconds for r in replays if r.kind == "once"]
    return {
        "once": final_rows([r for r in replays if r.kind == "once"], trajectories),
        "replay": final_rows([r for r in replays if r.kind == "replay"], trajectories),
        "resolved": resolved,
        "summary_latency": Latency.of(summary_s).__dict__ if summary_s else None,
        "summary_timeouts": sum(r.summary_timeouts for r in replays),
        "compact_latency": Latency.of([c.seconds for c in every]).__dict__ if every else None,
        "compact_latency_big": Latency.of(big).__dict__ if big else None,
        "compact_latency_final_repeats": Latency.of(repeats).__dict__ if repeats else None,
        "compact_latency_single": Latency.of(single).__dict__ if single else None,
    }


def print_final(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}\n")
    print(
        "| level | resolved | tokens before | tokens after | reduction | retention | in context | via read-ref "
        "| lost | read-ref calls |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level, row in rows.items():
        print(
            f"| {level} | {', '.join(row['resolved'])} | {row['tokens_before']:,} | {row['tokens_after']:,} | "
            f"{100 * row['reduction']:.1f}% | {100 * row['retention']:.1f}% ({row['questions']}) | "
            f"{row['in_context']} | {row['via_read_ref']} | {row['lost']} | {row['read_ref_calls']} |"
        )


def print_mode(mode: str, summary: dict[str, Any]) -> None:
    print_final(
        f"### {mode}: one compaction of each trajectory's final context, by level (no earlier decisions)",
        summary["once"],
    )
    print_final(
        f"### {mode}: replays compacting before every call, the last call's compaction, by the level aimed at",
        summary["replay"],
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
        ("compact_latency_big", f"compact, replayed calls of ≥ {BIG_CONTEXT // 1000}k tokens"),
        ("compact_latency_final_repeats", "compact, the final ~150k context again (decisions re-applied)"),
        ("compact_latency_single", "compact, the final context once (first decisions)"),
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
    parser.add_argument(
        "--proxy-on-env",
        action="append",
        default=[],
        help=f"KEY=VALUE for the proxy server that runs with offload (default {PROXY_OFFLOAD}=on)",
    )
    parser.add_argument(
        "--proxy-off-env",
        action="append",
        default=[],
        help=f"KEY=VALUE for the proxy server that runs without offload (default {PROXY_OFFLOAD}=off)",
    )
    parser.add_argument("--proxy-model", default="claude-sonnet-4-5", help="the model the proxied requests name")
    parser.add_argument("--proxy-pace", type=float, default=0.25, help="seconds between proxied turns")
    parser.add_argument("--pace", type=float, default=0.25, help="seconds between replayed calls without a status")
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

    replays, route_times = run_server(trajectories, "offline", args.python, {}, repeats, levels, args.pace)
    results["offline"] = summarize(replays, trajectories)
    times["offline"] = {route: Latency.of(s).__dict__ for route, s in route_times.items()}

    if not args.no_llm:
        with FakeChat(script=extractive_llm) as fake:
            env = {"MEMHUB_LLM_BASE_URL": fake.base_url, "MEMHUB_LLM_MODEL": "fake-chat"}
            replays, route_times = run_server(trajectories, "llm", args.python, env, repeats, levels, args.pace)
            results["llm"] = summarize(replays, trajectories)
            results["llm"]["llm_requests"] = fake.request_count
            results["llm"]["llm_calls_by_stage"] = dict(LLM_CALLS)
            results["llm"]["llm_prompt_chars_by_stage"] = dict(LLM_PROMPT_CHARS)
            if not LLM_CALLS:
                results["llm"]["note"] = "the server made no offload LLM call: its offload stages ran offline"
            times["llm"] = {route: Latency.of(s).__dict__ for route, s in route_times.items()}

    proxy = None
    if not args.no_proxy:
        on_env, off_env = proxy_envs(args.proxy_on_env, args.proxy_off_env)
        proxy = run_proxy(trajectories, args.python, on_env, off_env, args.proxy_model, args.proxy_pace)

    print(f"\n## Context offload on {len(trajectories)} genuine trajectories")
    for trajectory in trajectories:
        print(f"- {describe(trajectory)}")
    for mode, summary in results.items():
        print_mode(mode, summary)
    if proxy is not None:
        print_proxy(proxy)
    offline = results["offline"]
    mild = offline["once"].get("mild")
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
