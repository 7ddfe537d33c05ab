#!/usr/bin/env python3
"""Memory-pipeline benchmark: L0 → L1 throughput and queue latency offline, LLM cost with a scripted LLM.

(a) offline, end to end over HTTP against `memhub serve` (no LLM: the rule-based extractor): --messages
    realistic chat lines (English and Chinese; preferences, identity, plans, instructions, chit-chat; user and
    assistant turns) of several users and sessions, added with `conversation/add` in batches by a few client
    threads, while the server's pipeline worker runs (MEMHUB_PIPELINE_IDLE_SECONDS=0, fast poll).
    - messages/s: --messages divided by the time from the first add to "all L1 committed" (pipeline/status:
      waiting_sessions == 0 and no open L1 job), polled every 20 ms after the last add;
    - queue latency, message accepted → L1 visible: for every message that produced a memory, the memory's
      created_at (stamped after extraction, a few ms before the commit makes it visible) minus the wall-clock
      time the client got the `conversation/add` answer that accepted the message; p50/p95 over them.
    That burst queues messages faster than they are extracted, so its latency is mostly time spent waiting in
    the backlog; a second, paced run (--paced-messages at --paced-rate messages/s, one round per add as chat
    clients send them) gives the latency of a pipeline that keeps up.
    L2/L3 are held back (delay 1 h) so the numbers are L0 → L1 only; embeddings are off (BM25) so the
    embedding worker does not compete for the CPU.
(b) with a scripted LLM (FakeChat, an OpenAI-compatible server in this process): --llm-messages added one round
    (user + assistant) per `conversation/add`, as chat clients do, with the default schedule (every 5 user
    rounds, warm-up), then a flush; LLM calls per stage and prompt/completion tokens per 1,000 messages, and
    extraction calls per 10 messages. Tokens are estimated (4 Latin characters or 1 CJK character per token):
    FakeChat is not a tokenizer.

Aims: offline ≥ 500 messages/s; ≤ 1 extraction call per 10 messages.

Prints a Markdown table and writes JSON to bench/results/pipeline.json.

    python bench/pipeline.py            # full run (5,000 messages offline, 2,000 with the LLM)
    python bench/pipeline.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from common import HERE, Latency, client, git_rev, ok_data, running_server

# FakeChat (the scripted OpenAI-compatible server) lives with the tests, not in the package: it is test
# tooling that must never ship. The repository root goes on sys.path so `tests.pipeline.fake_llm` imports
# as it does under pytest; it only needs the standard library.
sys.path.insert(0, str(HERE.parent))
from tests.pipeline.fake_llm import FakeChat, Reply

DEFAULT_OUT = HERE / "results" / "pipeline.json"
AIM_MESSAGES_PER_S = 500
AIM_EXTRACTION_CALLS_PER_10 = 1.0
TEAM, AGENT = "bench-team", "bench-agent"
OFFLINE_ENV = {
    "MEMHUB_EMBEDDING_PROVIDER": "none",
    "MEMHUB_PIPELINE_IDLE_SECONDS": "0",
    "MEMHUB_PIPELINE_POLL_MS": "20",
    "MEMHUB_PIPELINE_L2_DELAY_SECONDS": "3600",
    "MEMHUB_PIPELINE_L2_MIN_INTERVAL_SECONDS": "3600",
}
# L2 right after a profile's first L1s, then at most every 15 min (the default) until the closing flush asks for
# scenes and persona now: a short run's L2/L3 calls are a few per profile (all users here share one profile).
LLM_ENV = {
    "MEMHUB_EMBEDDING_PROVIDER": "none",
    "MEMHUB_PIPELINE_POLL_MS": "20",
    "MEMHUB_PIPELINE_L2_DELAY_SECONDS": "0",
    "MEMHUB_LLM_MODEL": "fake-chat",
}

# -- a realistic conversation ------------------------------------------------------------------------------------

_EN = {
    "drink": ["green tea", "black coffee", "oat milk lattes", "sparkling water", "jasmine tea", "espresso"],
    "food": ["mushrooms", "spicy food", "cilantro", "seafood", "olives", "raw onions"],
    "hobby": ["hiking", "bouldering", "playing the cello", "baking sourdough", "chess", "trail running"],
    "city": ["Berlin", "Lisbon", "Tokyo", "Toronto", "Singapore", "Madrid", "Seoul"],
    "job": ["data engineer", "nurse", "product manager", "teacher", "architect", "backend developer"],
    "name": ["Alice", "Tom", "Priya", "Lukas", "Mei", "Jonas", "Sara"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
    "skill": ["Spanish", "the piano", "Rust", "watercolour painting", "Japanese"],
    "lang": ["English", "German", "French"],
}
_ZH = {
    "drink": ["绿茶", "美式咖啡", "乌龙茶", "豆浆", "柠檬水"],
    "food": ["香菜", "辣的东西", "海鲜", "羊肉", "榴莲"],
    "hobby": ["爬山", "游泳", "弹吉他", "看科幻小说", "打羽毛球", "做饭"],
    "city": ["上海", "深圳", "成都", "杭州", "北京", "西安"],
    "job": ["产品经理", "前端工程师", "医生", "设计师", "数据分析师"],
    "name": ["小王", "李雷", "韩梅梅", "张伟", "陈静"],
    "day": ["周一", "周三", "周五", "周六"],
    "skill": ["日语", "钢琴", "摄影", "Python"],
}
_EN_USER = {
    "preference": [
        "I prefer {drink} over {drink2}.",
        "I really love {hobby}, I do it almost every weekend.",
        "I can't stand {food}, please remember that.",
        "My favourite drink is {drink}.",
    ],
    "identity": ["My name is {name} and I work as a {job} in {city}.", "I live in {city} with my partner."],
    "plan": [
        "I'm going to {city} next {day} for a conference.",
        "I plan to start learning {skill} next month.",
        "On {day} I have a dentist appointment at 9.",
    ],
    "instruction": [
        "Always answer me in {lang}.",
        "Never use emojis in your replies.",
        "Please keep your answers under 100 words from now on.",
    ],
    "chitchat": [
        "lol ok",
        "thanks!",
        "haha that's funny",
        "hmm let me think about it",
        "good morning",
        "what's the weather like today?",
        "can you recommend a movie?",
        "ok cool",
    ],
}
_ZH_USER = {
    "preference": ["我喜欢喝{drink}。", "我不吃{food}。", "我平时最喜欢{hobby}。"],
    "identity": ["我叫{name}，是一名{job}，住在{city}。", "我在{city}工作。"],
    "plan": ["我下{day}要去{city}出差。", "我打算明年开始学{skill}。"],
    "instruction": ["请用中文回答我。", "不要在回复里用表情符号。", "以后回答尽量简短一点。"],
    "chitchat": ["哈哈", "好的谢谢", "今天天气不错", "你好", "嗯嗯", "在吗？", "有点累了"],
}
_EN_BOT = ["Got it, thanks for telling me!", "Sure, noted.", "Sounds great!", "Here is a suggestion: try it.", "OK!"]
_ZH_BOT = ["好的，记住了。", "没问题！", "听起来不错。", "我来帮你看看。", "明白了。"]
_KINDS = ["preference", "identity", "plan", "instruction", "chitchat"]
_WEIGHTS = [25, 10, 15, 10, 40]


def _fill(template: str, words: dict[str, list[str]], rng: random.Random) -> str:
    values = {k: rng.choice(v) for k, v in words.items()}
    values["drink2"] = rng.choice(words["drink"])
    return template.format(**values)


def user_line(rng: random.Random, chinese: bool) -> str:
    kind = rng.choices(_KINDS, _WEIGHTS)[0]
    table, words = (_ZH_USER, _ZH) if chinese else (_EN_USER, _EN)
    return _fill(rng.choice(table[kind]), words, rng)


def bot_line(rng: random.Random, chinese: bool) -> str:
    return rng.choice(_ZH_BOT if chinese else _EN_BOT)


@dataclass
class Session:
    user: str
    session: str
    chinese: float  # share of Chinese lines
    rounds: list[list[dict[str, str]]] = field(default_factory=list)  # [user, assistant] per round

    def scope(self) -> dict[str, str]:
        return {"team_id": TEAM, "agent_id": AGENT, "user_id": self.user, "session_id": self.session}


def conversation(messages: int, users: int, sessions_per_user: int, seed: int = 5) -> list[Session]:
    """`messages` messages (user/assistant rounds) over users × sessions; some users write mostly Chinese."""
    rng = random.Random(seed)
    sessions = [
        Session(f"user-{u}", f"s{u}-{s}", chinese=(0.8 if u % 3 == 0 else 0.3 if u % 3 == 1 else 0.05))
        for u in range(users)
        for s in range(sessions_per_user)
    ]
    for n in range(messages // 2):
        sess = sessions[rng.randrange(len(sessions))] if n >= len(sessions) else sessions[n]
        chinese = rng.random() < sess.chinese
        sess.rounds.append(
            [
                {"role": "user", "content": user_line(rng, chinese)},
                {"role": "assistant", "content": bot_line(rng, chinese)},
            ]
        )
    return [s for s in sessions if s.rounds]


# -- helpers ------------------------------------------------------------------------------------------------------


def _status(http: httpx.Client) -> dict[str, Any]:
    return ok_data(http, "/v2/pipeline/status", {"team_id": TEAM, "agent_id": AGENT, "user_id": "user-0"})


def _l1_done(status: dict[str, Any]) -> bool:
    return status["waiting_sessions"] == 0 and status["l1"]["idle"]


def _all_idle(status: dict[str, Any]) -> bool:
    return status["waiting_sessions"] == 0 and all(status[s]["idle"] for s in ("l1", "l2", "l3"))


def _wait(http: httpx.Client, done: Any, timeout: float, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = _status(http)
        if done(status):
            return status
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not reached within {timeout:.0f} s: {status}")
        time.sleep(0.02)


def _memories(http: httpx.Client, user: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        body = {"team_id": TEAM, "agent_id": AGENT, "user_id": user, "limit": 100, "offset": len(items)}
        page = ok_data(http, "/v3/atomic/query", body)["items"]
        items += page
        if len(page) < 100:
            return items


def _iso_ms(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def _add_all(
    server: Any, sessions: Sequence[Session], rounds_per_add: int, threads: int, rate: float | None = None
) -> tuple[dict[str, float], float, float]:
    """Add every session's rounds (`rounds_per_add` per call) from `threads` clients, at most `rate` messages/s.

    Returns (message id → wall time its add was answered, first add start, last add end) in time.time().
    """
    accepted: dict[str, float] = {}
    lock = threading.Lock()
    groups = [sessions[i::threads] for i in range(threads)]
    interval = threads * 2 * rounds_per_add / rate if rate else 0.0  # between one client's adds

    def run(group: Sequence[Session]) -> None:
        next_at = time.monotonic()
        with client(server) as http:
            position = {s.session: 0 for s in group}
            pending = list(group)
            while pending:  # round-robin over this client's sessions, like interleaved conversations
                for sess in list(pending):
                    start = position[sess.session]
                    chunk = sess.rounds[start : start + rounds_per_add]
                    position[sess.session] = start + len(chunk)
                    if position[sess.session] >= len(sess.rounds):
                        pending.remove(sess)
                    messages = [m for r in chunk for m in r]
                    if interval:
                        time.sleep(max(next_at - time.monotonic(), 0.0))
                        next_at += interval
                    ids = ok_data(http, "/v3/conversation/add", {**sess.scope(), "messages": messages})["accepted_ids"]
                    now = time.time()
                    with lock:
                        accepted.update(dict.fromkeys(ids, now))

    first = time.time()
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(run, g) for g in groups]:
            future.result()
    return accepted, first, time.time()


# -- (a) offline --------------------------------------------------------------------------------------------------


def offline(
    python: str,
    messages: int,
    users: int,
    sessions: int,
    rounds_per_add: int,
    threads: int,
    rate: float | None = None,
    seed: int = 5,
) -> dict:
    """One offline run: a burst as fast as the clients go (rate None), or adds paced at `rate` messages/s."""
    convo = conversation(messages, users, sessions, seed)
    total = sum(len(r) for s in convo for r in s.rounds)
    with (
        tempfile.TemporaryDirectory(prefix="memhub-bench-pipeline-") as tmp,
        running_server(Path(tmp) / "data", python, OFFLINE_ENV) as server,
        client(server) as http,
    ):
        accepted, first, added = _add_all(server, convo, rounds_per_add, threads, rate)
        _wait(http, _l1_done, 600, "all L1 committed")
        done = time.time()
        status = _status(http)
        items = [m for u in sorted({s.user for s in convo}) for m in _memories(http, u)]
    first_seen: dict[str, float] = {}
    for memory in items:
        created = _iso_ms(memory["created_at"]) / 1000
        for source in memory["source_message_ids"]:
            first_seen[source] = min(first_seen.get(source, created), created)
    latencies = [max(first_seen[i] - accepted[i], 0.0) for i in first_seen if i in accepted]
    return {
        "messages": total,
        "sessions": len(convo),
        "users": users,
        "add_seconds": round(added - first, 3),
        "add_messages_per_s": round(total / (added - first), 1),
        "seconds": round(done - first, 3),
        "messages_per_s": round(total / (done - first), 1),
        "memories": len(items),
        "messages_with_memories": len(first_seen),
        "latency": Latency.of(latencies) if latencies else None,
        "jobs_done": status["worker"]["jobs_done"],
        "jobs_failed": status["worker"]["jobs_failed"],
    }


# -- (b) scripted LLM ---------------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LINE = re.compile(r"^\[(?P<id>[^\]\s]+)\] \[(?P<role>[a-z]+)\] \[[^\]]*\]: (?P<text>.*)$", re.MULTILINE)
_CHITCHAT = {line for table in (_EN_USER, _ZH_USER) for line in table["chitchat"]}
_STAGES = {
    "You segment a conversation into scenes": "extract",
    "You resolve conflicts between NEW memories": "dedup",
    "You maintain a small set of scene files": "scenes",
    "You write the core profile": "persona",
}


def estimate_tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def _block(text: str, tag: str) -> str:
    start = text.find(f"<{tag}>\n")
    end = text.find(f"\n</{tag}>", start)
    return text[start + len(tag) + 3 : end] if start >= 0 and end >= 0 else ""


class Scripted:
    """The fake LLM's answers: a memory per informative user message, 'store' decisions, one scene, a persona."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.prompt_tokens: dict[str, int] = {}
        self.completion_tokens: dict[str, int] = {}
        self.extracted_messages = 0
        self.batch_sizes: dict[int, int] = {}  # new messages per extraction call -> calls

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        stage = next((s for marker, s in _STAGES.items() if marker in system), "other")
        if stage == "extract":
            lines = [(m["id"], m["role"], m["text"]) for m in _LINE.finditer(_block(user, "new_messages"))]
            memories = [
                {"content": f"The user said: {t}", "type": "persona", "priority": 70, "source_message_ids": [i]}
                for i, role, t in lines
                if role == "user" and t not in _CHITCHAT
            ]
            answer: Any = [{"scene_name": "AI chats with the user", "message_ids": [i for i, _, _ in lines]}]
            answer[0]["memories"] = memories
            extracted = len(lines)
        elif stage == "dedup":
            count = user.count("### New memory ")
            answer = [{"candidate": n, "action": "store", "target_ids": []} for n in range(1, count + 1)]
            extracted = 0
        elif stage == "scenes":
            body_text = "The user's story. " + _block(user, "new_memories")[:2000]
            answer = {
                "operations": [{"action": "create", "filename": "Life.md", "summary": "life", "content": body_text}]
            }
            extracted = 0
        else:
            answer = "# User Profile\n\n## 1. Context & Current State\nA busy person who likes tea."
            extracted = 0
        content = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        prompt = estimate_tokens("".join(str(m.get("content", "")) for m in messages))
        completion = estimate_tokens(content)
        with self.lock:
            self.calls[stage] = self.calls.get(stage, 0) + 1
            self.prompt_tokens[stage] = self.prompt_tokens.get(stage, 0) + prompt
            self.completion_tokens[stage] = self.completion_tokens.get(stage, 0) + completion
            self.extracted_messages += extracted
            if stage == "extract":
                self.batch_sizes[extracted] = self.batch_sizes.get(extracted, 0) + 1
        return Reply.text(content, prompt_tokens=prompt, completion_tokens=completion)


def with_llm(python: str, messages: int, users: int, sessions: int, threads: int) -> dict:
    convo = conversation(messages, users, sessions, seed=11)
    total = sum(len(r) for s in convo for r in s.rounds)
    scripted = Scripted()
    with (
        FakeChat(script=scripted) as fake,
        tempfile.TemporaryDirectory(prefix="memhub-bench-pipeline-llm-") as tmp,
    ):
        env = {**LLM_ENV, "MEMHUB_LLM_BASE_URL": fake.base_url}
        with running_server(Path(tmp) / "data", python, env) as server, client(server) as http:
            first = time.time()
            _add_all(server, convo, 1, threads)
            for user in sorted({s.user for s in convo}):  # the session-end flush: the remainder, then L2 and L3
                ok_data(http, "/v2/pipeline/flush", {"team_id": TEAM, "agent_id": AGENT, "user_id": user})
            status = _wait(http, _all_idle, 600, "the pipeline to go idle")
            seconds = time.time() - first
            memories = sum(len(_memories(http, u)) for u in sorted({s.user for s in convo}))
    per_k = 1000 / total
    stages = ["extract", "dedup", "scenes", "persona"]
    return {
        "messages": total,
        "sessions": len(convo),
        "seconds": round(seconds, 3),
        "memories": memories,
        "messages_sent_for_extraction": scripted.extracted_messages,
        "calls": {s: scripted.calls.get(s, 0) for s in stages},
        "calls_per_1000": {s: round(scripted.calls.get(s, 0) * per_k, 1) for s in stages},
        "prompt_tokens_per_1000": {s: round(scripted.prompt_tokens.get(s, 0) * per_k) for s in stages},
        "completion_tokens_per_1000": {s: round(scripted.completion_tokens.get(s, 0) * per_k) for s in stages},
        "extraction_calls_per_10": round(scripted.calls.get("extract", 0) * 10 / total, 3),
        "extraction_batch_sizes": dict(sorted(scripted.batch_sizes.items())),
        "jobs_failed": status["worker"]["jobs_failed"],
    }


# -- report -------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--messages", type=int, default=5000, help="offline: messages added")
    parser.add_argument("--llm-messages", type=int, default=2000, help="scripted LLM: messages added")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=3, help="sessions per user")
    parser.add_argument("--rounds-per-add", type=int, default=10, help="offline: rounds (2 messages) per add")
    parser.add_argument("--threads", type=int, default=4, help="concurrent HTTP clients")
    parser.add_argument("--paced-messages", type=int, default=1000, help="offline, paced: messages added")
    parser.add_argument("--paced-rate", type=float, default=200, help="offline, paced: messages/s offered")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.llm_messages, args.paced_messages = 1000, 400, 400

    off = offline(sys.executable, args.messages, args.users, args.sessions, args.rounds_per_add, args.threads)
    paced = offline(
        sys.executable, args.paced_messages, args.users, args.sessions, 1, args.threads, args.paced_rate, seed=7
    )
    llm = with_llm(sys.executable, args.llm_messages, args.users, args.sessions, args.threads)

    lat: Latency | None = off["latency"]
    paced_lat: Latency | None = paced["latency"]
    rows = [
        (
            "offline: messages/s, first add → all L1 committed",
            f"{off['messages_per_s']:.0f}",
            f"≥ {AIM_MESSAGES_PER_S}",
        ),
        ("offline: messages/s accepted by conversation/add", f"{off['add_messages_per_s']:.0f}", ""),
        (
            f"offline burst: queue latency accepted → L1, p50 / p95 ms (n={lat.n if lat else 0})",
            f"{lat.p50_ms:.0f} / {lat.p95_ms:.0f}" if lat else "n/a",
            "",
        ),
        (
            f"offline paced at {args.paced_rate:.0f} msg/s: queue latency accepted → L1, p50 / p95 ms "
            f"(n={paced_lat.n if paced_lat else 0})",
            f"{paced_lat.p50_ms:.0f} / {paced_lat.p95_ms:.0f}" if paced_lat else "n/a",
            "",
        ),
        ("offline: memories / messages", f"{off['memories']} / {off['messages']}", ""),
        ("LLM: extraction calls per 10 messages", f"{llm['extraction_calls_per_10']:.2f}", "≤ 1"),
        (
            "LLM: extraction calls by new messages in the batch",
            ", ".join(f"{size}: {n}" for size, n in llm["extraction_batch_sizes"].items()),
            "",
        ),
    ]
    for stage in ("extract", "dedup", "scenes", "persona"):
        rows.append(
            (
                f"LLM: {stage} calls / prompt tokens / completion tokens per 1,000 messages",
                f"{llm['calls_per_1000'][stage]:.1f} / {llm['prompt_tokens_per_1000'][stage]:,} / "
                f"{llm['completion_tokens_per_1000'][stage]:,}",
                "",
            )
        )
    total_calls = sum(llm["calls_per_1000"].values())
    total_prompt = sum(llm["prompt_tokens_per_1000"].values())
    total_completion = sum(llm["completion_tokens_per_1000"].values())
    rows.append(
        (
            "LLM: all calls / prompt tokens / completion tokens per 1,000 messages",
            f"{total_calls:.1f} / {total_prompt:,} / {total_completion:,}",
            "",
        )
    )
    print(
        f"\noffline: {off['messages']} messages, {off['users']} users, {off['sessions']} sessions, "
        f"{args.rounds_per_add * 2} messages per add, {args.threads} clients; paced: {paced['messages']} messages, "
        f"2 per add; "
        f"LLM: {llm['messages']} messages, 2 per add, then a flush\n"
    )
    print("| measure | value | aim |")
    print("|---|---:|---|")
    for name, value, aim in rows:
        print(f"| {name} | {value} | {aim} |")
    result = {
        "benchmark": "pipeline",
        "git": git_rev(),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "args": {k: str(v) for k, v in vars(args).items()},
        "offline": {**off, "latency": vars(lat) if lat else None},
        "offline_paced": {**paced, "rate": args.paced_rate, "latency": vars(paced_lat) if paced_lat else None},
        "llm": llm,
        "aims": {"messages_per_s": AIM_MESSAGES_PER_S, "extraction_calls_per_10": AIM_EXTRACTION_CALLS_PER_10},
        "rows": [{"measure": n, "value": v, "aim": a} for n, v, a in rows],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
