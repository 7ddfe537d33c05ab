#!/usr/bin/env python3
"""Gateway benchmark: ingest throughput and conversation/search latency through real HTTP.

Starts `memhub serve` as a subprocess (the interpreter running this script, `-m memhub.cli`)
over a temporary data dir with a configured gateway key, then measures:

  (a) ingest: `conversation/add` with 100 messages per request, single client and several
      concurrent client threads (messages/s);
  (b) search: `conversation/search` latency (p50/p95/p99, client-side round trip) in one scope
      at each size of --sizes, and at the largest size spread over 10 scopes (searching one).

Texts are generated deterministically (seeded RNG over a fixed English/Chinese vocabulary of ~600
words with a Zipf-like distribution, plus a long tail of names and ticket/order numbers; no
downloads); queries are 1–4 words drawn uniformly from the same vocabulary. The vocabulary is
small next to real chat, so common terms have long posting lists: a deliberately hard case.
Prints a Markdown table and writes JSON to bench/results/gateway.json.

    python bench/gateway.py            # full run: sizes 10k and 100k
    python bench/gateway.py --quick    # smoke run, a few seconds
    python bench/gateway.py --sizes 10000,50000 --threads 4 --queries 500
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common import HERE, Latency, Server, client, git_rev, running_server

DEFAULT_OUT = HERE / "results" / "gateway.json"
BATCH = 100  # messages per conversation/add request
SPREAD_SCOPES = 10
# This benchmark measures the BM25 gateway path; bench/search.py measures search with vectors.
BM25_ONLY = {"MEMHUB_EMBEDDING_PROVIDER": "none"}
AIM_INGEST = 3000.0  # messages/s
AIM_P95_MS = 15.0  # search p95 at 100k


def _scope(name: str) -> dict[str, str]:
    return {"team_id": "bench-team", "agent_id": f"agent-{name}", "user_id": "bench-user"}


# -- deterministic text ------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


EN_WORDS = _words("""
project deadline meeting schedule budget report review design database migration server client
python rust typescript deploy release version branch commit merge test coverage latency cache
index query search memory agent model prompt token context window embedding vector retrieval
customer invoice payment order shipping refund account password login security audit policy
travel flight hotel booking airport train ticket passport visa itinerary beach mountain hiking
restaurant dinner lunch breakfast coffee tea hotpot noodles dumplings sushi pizza salad dessert
doctor appointment medicine allergy exercise running swimming yoga sleep weekend holiday birthday
family daughter son wife husband mother father friend colleague manager team office remote
weather rain sunny cold warm snow spring summer autumn winter morning evening tonight tomorrow
music guitar piano concert movie book novel podcast museum gallery photo camera painting garden
kubernetes docker container cluster node pod volume network firewall certificate domain proxy
pipeline scheduler worker queue retry timeout error exception stacktrace logging metrics alert
invoice contract proposal slide spreadsheet presentation roadmap milestone sprint backlog ticket
chengdu beijing shanghai shenzhen hangzhou tokyo paris london berlin singapore seattle boston
prefer like dislike remember forget plan cancel confirm reschedule move update delete create
quickly carefully usually never always sometimes maybe definitely important urgent optional
""")

ZH_WORDS = _words("""
项目 截止日期 会议 安排 预算 报告 评审 设计 数据库 迁移 服务器 客户端 部署 发布 版本 分支 提交 合并
测试 覆盖率 延迟 缓存 索引 查询 搜索 记忆 智能体 模型 提示词 上下文 向量 检索 客户 发票 付款 订单
物流 退款 账号 密码 登录 安全 审计 策略 旅行 航班 酒店 预订 机场 火车 车票 护照 签证 行程 海边 爬山
徒步 餐厅 晚饭 午饭 早饭 咖啡 喝茶 火锅 面条 饺子 寿司 披萨 沙拉 甜点 医生 预约 药物 过敏 锻炼 跑步
游泳 瑜伽 睡觉 周末 假期 生日 家人 女儿 儿子 妻子 丈夫 妈妈 爸爸 朋友 同事 经理 团队 办公室 远程
天气 下雨 晴天 寒冷 温暖 下雪 春天 夏天 秋天 冬天 早上 晚上 今晚 明天 音乐 吉他 钢琴 音乐会 电影
小说 播客 博物馆 画廊 照片 相机 绘画 花园 集群 节点 网络 防火墙 证书 域名 代理 流水线 调度 队列
重试 超时 错误 异常 日志 指标 告警 合同 方案 幻灯片 表格 路线图 里程碑 迭代 需求 成都 北京 上海
深圳 杭州 东京 巴黎 伦敦 喜欢 不喜欢 记得 忘记 计划 取消 确认 改期 更新 删除 创建 经常 从不 总是
有时 也许 一定 重要 紧急 可选 我们 他们 已经 需要 应该 可以 下周 上周 今天 昨天
""")

EN_GLUE = _words("the a to and of for in on with at is was will we I you my our please can")
ZH_GLUE = _words("的 了 在 和 是 要 把 给 也 就 还 都 吗 呢 吧")

# The long tail real chats have: people and ticket/order/flight numbers (rare terms).
EN_NAMES = _words("""
alice bob carol david emma frank grace henry irene jack kate liam mia noah olivia peter quinn rachel
sam tina umar victor wendy xavier yara zoe aaron bella chris diana ethan fiona george hannah ivan
julia kevin laura mike nina oscar paula ryan sara tom uma vince will
""")
ZH_NAMES = _words("""
张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄丽 周杰 吴敏 徐强 孙悦 马超 朱婷 胡军 郭鹏 何雪 林峰 罗琳 高翔
""")
ID_PREFIXES = ["PR-", "INC-", "JIRA-", "order ", "room ", "CA", "MU", "ticket #"]
ENTITY_RATE = 0.06  # chance that a word slot holds a name or a number instead


def _zipf_weights(n: int, s: float = 0.9) -> list[float]:
    return [1.0 / (rank + 1) ** s for rank in range(n)]


class TextGen:
    """Seeded generator of chat-like messages and short queries."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        en = list(EN_WORDS)
        zh = list(ZH_WORDS)
        random.Random(1234).shuffle(en)  # which words are "frequent" is fixed, not alphabetical
        random.Random(5678).shuffle(zh)
        self.en, self.zh = en, zh
        self.en_cum = _cumulative(_zipf_weights(len(en)))
        self.zh_cum = _cumulative(_zipf_weights(len(zh)))

    def _en(self, k: int) -> list[str]:
        return self.rng.choices(self.en, cum_weights=self.en_cum, k=k)

    def _zh(self, k: int) -> list[str]:
        return self.rng.choices(self.zh, cum_weights=self.zh_cum, k=k)

    def _entity(self, zh: bool) -> str:
        if self.rng.random() < 0.5:
            return self.rng.choice(ZH_NAMES if zh and self.rng.random() < 0.7 else EN_NAMES)
        return f"{self.rng.choice(ID_PREFIXES)}{self.rng.randint(100, 99_999)}"

    def _en_sentence(self, words: int) -> str:
        out = []
        for w in self._en(words):
            out.append(self._entity(False) if self.rng.random() < ENTITY_RATE else w)
            if self.rng.random() < 0.35:
                out.append(self.rng.choice(EN_GLUE))
        text = " ".join(out)
        return text[0].upper() + text[1:] + self.rng.choice([".", ".", "?", "!"])

    def _zh_sentence(self, words: int) -> str:
        out = []
        for w in self._zh(words):
            out.append(self._entity(True) if self.rng.random() < ENTITY_RATE else w)
            if self.rng.random() < 0.4:
                out.append(self.rng.choice(ZH_GLUE))
        return "".join(out) + self.rng.choice(["。", "。", "？", "！"])

    def message(self) -> str:
        mode = self.rng.random()
        if mode < 0.45:
            return " ".join(self._en_sentence(self.rng.randint(5, 18)) for _ in range(self.rng.randint(1, 3)))
        if mode < 0.75:
            return "".join(self._zh_sentence(self.rng.randint(4, 14)) for _ in range(self.rng.randint(1, 3)))
        parts = [self._zh_sentence(self.rng.randint(3, 9)), self._en_sentence(self.rng.randint(3, 9))]
        self.rng.shuffle(parts)
        return " ".join(parts)

    def query(self) -> str:
        """1–4 words drawn uniformly from the vocabulary (a mix of frequent and rare terms)."""
        n = self.rng.randint(1, 4)
        mode = self.rng.random()
        if mode < 0.45:
            words = [self.rng.choice(self.en) for _ in range(n)]
            if self.rng.random() < 0.15:
                words[-1] = self.rng.choice(EN_NAMES)
            return " ".join(words)
        if mode < 0.8:
            words = [self.rng.choice(self.zh) for _ in range(n)]
            if self.rng.random() < 0.15:
                words[-1] = self.rng.choice(ZH_NAMES)
            return "".join(words)
        return " ".join([self.rng.choice(self.zh), *(self.rng.choice(self.en) for _ in range(n - 1))])


def _cumulative(weights: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


# -- server ---------------------------------------------------------------------------------


# -- measurements ---------------------------------------------------------------------------


@dataclass
class IngestResult:
    name: str
    clients: int
    messages: int
    requests: int
    seconds: float
    messages_per_s: float
    request_latency: Latency


@dataclass
class SearchResult:
    name: str
    scope_messages: int
    db_messages: int
    queries: int
    hits_per_query: float
    empty_queries: int
    latency: Latency
    sample_queries: list[str] = field(default_factory=list)


def _bodies(gen: TextGen, scopes: Sequence[str], messages_per_scope: int, start: int) -> list[bytes]:
    """Pre-encoded conversation/add bodies (so the timed loop measures the gateway, not the generator)."""
    bodies = []
    for name in scopes:
        for first in range(0, messages_per_scope, BATCH):
            n = min(BATCH, messages_per_scope - first)
            msgs = [
                {"role": "user" if (start + first + i) % 2 == 0 else "assistant", "content": gen.message()}
                for i in range(n)
            ]
            session = f"session-{(start + first) // 1000}"
            body = {**_scope(name), "session_id": session, "messages": msgs}
            bodies.append(json.dumps(body, ensure_ascii=False).encode())
    return bodies


def ingest(server: Server, name: str, bodies: list[bytes], clients: int) -> IngestResult:
    """Post every body, spread over `clients` threads; messages/s over the wall time."""
    latencies: list[float] = []
    accepted = [0]
    lock = threading.Lock()
    cursor = iter(range(len(bodies)))
    errors: list[str] = []

    def work() -> None:
        mine: list[float] = []
        count = 0
        with client(server) as http:
            while True:
                with lock:
                    i = next(cursor, None)
                if i is None or errors:
                    break
                t0 = time.perf_counter()
                response = http.post("/v3/conversation/add", content=bodies[i])
                mine.append(time.perf_counter() - t0)
                envelope = response.json()
                if response.status_code != 200 or envelope.get("code") != 0:
                    errors.append(f"{response.status_code} {envelope}")
                    break
                count += envelope["data"]["total_count"]
        with lock:
            latencies.extend(mine)
            accepted[0] += count

    threads = [threading.Thread(target=work, daemon=True) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"ingest failed: {errors[0]}")
    return IngestResult(
        name=name,
        clients=clients,
        messages=accepted[0],
        requests=len(bodies),
        seconds=round(elapsed, 3),
        messages_per_s=round(accepted[0] / elapsed, 1),
        request_latency=Latency.of(latencies),
    )


def search(server: Server, name: str, scope: str, gen: TextGen, queries: int, scope_n: int, db_n: int) -> SearchResult:
    """Sequential single-client searches (after a short warm-up that is not counted)."""
    texts = [gen.query() for _ in range(queries)]
    warmup = [gen.query() for _ in range(min(30, queries))]
    latencies: list[float] = []
    hits = 0
    empty = 0
    with client(server) as http:
        for q in warmup:
            http.post("/v3/conversation/search", json={**_scope(scope), "query": q})
        for q in texts:
            t0 = time.perf_counter()
            response = http.post("/v3/conversation/search", json={**_scope(scope), "query": q})
            latencies.append(time.perf_counter() - t0)
            envelope = response.json()
            if response.status_code != 200 or envelope.get("code") != 0:
                raise RuntimeError(f"search failed: {response.status_code} {envelope}")
            n = len(envelope["data"]["messages"])
            hits += n
            empty += n == 0
    return SearchResult(
        name=name,
        scope_messages=scope_n,
        db_messages=db_n,
        queries=queries,
        hits_per_query=round(hits / queries, 2),
        empty_queries=empty,
        latency=Latency.of(latencies),
        sample_queries=texts[:8],
    )


def _count(server: Server, scope: str) -> int:
    with client(server) as http:
        return http.post("/v3/conversation/count", json=_scope(scope)).json()["data"]["total"]


# -- report -----------------------------------------------------------------------------------


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if n >= 100 else f"{n:.2f}"


def markdown(ingests: list[IngestResult], searches: list[SearchResult]) -> str:
    lines = [
        "| ingest (100 msgs/request) | clients | messages | seconds | messages/s | req p50 ms | req p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in ingests:
        lines.append(
            f"| {r.name} | {r.clients} | {r.messages:,} | {r.seconds:.1f} | {_fmt(r.messages_per_s)} "
            f"| {r.request_latency.p50_ms:.1f} | {r.request_latency.p95_ms:.1f} |"
        )
    lines += [
        "",
        "| conversation/search | scope msgs | db msgs | queries | hits/q | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in searches:
        lt = s.latency
        lines.append(
            f"| {s.name} | {s.scope_messages:,} | {s.db_messages:,} | {s.queries} | {s.hits_per_query} "
            f"| {lt.p50_ms:.2f} | {lt.p95_ms:.2f} | {lt.p99_ms:.2f} | {lt.mean_ms:.2f} |"
        )
    return "\n".join(lines)


def _sizes(text: str) -> list[int]:
    sizes = sorted({int(s.replace("_", "").replace("k", "000")) for s in text.split(",") if s.strip()})
    if not sizes or sizes[0] < BATCH:
        raise argparse.ArgumentTypeError(f"sizes must be ≥ {BATCH}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and few queries (smoke run)")
    parser.add_argument("--sizes", type=_sizes, help="one-scope sizes, comma-separated (default 10000,100000)")
    parser.add_argument("--threads", type=int, default=4, help="concurrent ingest clients (default 4)")
    parser.add_argument("--queries", type=int, help="searches per measurement (default 500; quick 100)")
    parser.add_argument("--seed", type=int, default=20260815)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has memhub installed")
    parser.add_argument("--keep-data", action="store_true", help="keep the temporary data dirs")
    args = parser.parse_args(argv)

    sizes = args.sizes or ([1_000, 5_000] if args.quick else [10_000, 100_000])
    queries = args.queries or (100 if args.quick else 500)
    largest = sizes[-1]
    per_scope = max(BATCH, largest // SPREAD_SCOPES // BATCH * BATCH)
    gen = TextGen(args.seed)
    ingests: list[IngestResult] = []
    searches: list[SearchResult] = []

    tmp = Path(tempfile.mkdtemp(prefix="memhub-bench-"))
    try:
        # 1. one scope, grown to each size in turn; the first stage is ingested by a single client.
        with running_server(tmp / "one-scope", args.python, BM25_ONLY) as server:
            # Floor: the same kind of queries against a scope with no messages (HTTP + parsing only).
            print("search an empty scope (HTTP floor) …", file=sys.stderr, flush=True)
            searches.append(search(server, "empty scope (HTTP floor)", "nobody", TextGen(args.seed + 1), queries, 0, 0))
            have = 0
            for i, size in enumerate(sizes):
                bodies = _bodies(gen, ["one"], size - have, have)
                clients = 1 if i == 0 else args.threads
                label = f"one scope, {have:,}→{size:,}"
                print(f"ingest {label} with {clients} client(s) …", file=sys.stderr, flush=True)
                ingests.append(ingest(server, label, bodies, clients))
                have = size
                assert _count(server, "one") == size
                print(f"search one scope @ {size:,} …", file=sys.stderr, flush=True)
                searches.append(search(server, f"1 scope × {size:,}", "one", gen, queries, size, size))
        # 2. the largest size spread over 10 scopes (fresh data dir), concurrent clients; search one scope.
        names = [f"spread-{i}" for i in range(SPREAD_SCOPES)]
        with running_server(tmp / "spread", args.python, BM25_ONLY) as server:
            bodies = _bodies(gen, names, per_scope, 0)
            random.Random(args.seed).shuffle(bodies)  # interleave scopes as real traffic would
            label = f"{SPREAD_SCOPES} scopes, 0→{per_scope * SPREAD_SCOPES:,}"
            print(f"ingest {label} with {args.threads} clients …", file=sys.stderr, flush=True)
            ingests.append(ingest(server, label, bodies, args.threads))
            total = per_scope * SPREAD_SCOPES
            assert _count(server, names[3]) == per_scope
            print("search one of the spread scopes …", file=sys.stderr, flush=True)
            searches.append(
                search(server, f"{SPREAD_SCOPES} scopes × {per_scope:,}", names[3], gen, queries, per_scope, total)
            )
            # Single-client ingest on the loaded database for comparison with the concurrent figure.
            extra = _bodies(gen, [names[0]], min(largest // 10, 10_000), per_scope)
            ingests.append(ingest(server, f"single client onto {total:,}", extra, 1))
    finally:
        if args.keep_data:
            print(f"data kept in {tmp}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)

    table = markdown(ingests, searches)
    best_ingest = max(r.messages_per_s for r in ingests)
    p95_at_largest = [s.latency.p95_ms for s in searches if s.db_messages == largest]
    verdict = {
        "ingest_aim_messages_per_s": AIM_INGEST,
        "ingest_best_messages_per_s": best_ingest,
        "ingest_meets_aim": best_ingest >= AIM_INGEST,
        "search_aim_p95_ms": AIM_P95_MS,
        "search_p95_ms_at_largest": p95_at_largest,
        "search_meets_aim": bool(p95_at_largest) and max(p95_at_largest) <= AIM_P95_MS,
    }
    result: dict[str, Any] = {
        "benchmark": "memhub gateway",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": args.quick,
        "sizes": sizes,
        "threads": args.threads,
        "queries_per_measurement": queries,
        "batch": BATCH,
        "seed": args.seed,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version,
            "git": git_rev(),
        },
        "ingest": [asdict(r) for r in ingests],
        "search": [asdict(s) for s in searches],
        "verdict": verdict,
        "markdown": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    print(table)
    print(
        f"\naim: ingest ≥ {AIM_INGEST:,.0f} msg/s → best {best_ingest:,.0f} "
        f"({'met' if verdict['ingest_meets_aim'] else 'MISSED'}); "
        f"search p95 ≤ {AIM_P95_MS} ms at {largest:,} → {p95_at_largest} "
        f"({'met' if verdict['search_meets_aim'] else 'MISSED'})"
    )
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
