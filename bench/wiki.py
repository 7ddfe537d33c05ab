#!/usr/bin/env python3
"""Wiki benchmark: ingest speed per format, index build and snapshot load, and tool latency over HTTP.

Aim (the issue): "ingest speed (pages/s for Markdown, PDF, DOCX), `tools/call search` p50/p95 on a
1,000-document wiki, and index build time. Aim: search p95 ≤ 10 ms."

The corpus is generated deterministically (seeded RNG, no downloads): --themes theme folders, each with
a README.md (theme title, summary, tags) and --per-theme documents: mostly Markdown (front matter, H1,
sections, tables, code blocks, bullet lists, `[[wikilinks]]` and relative links to pages of the same and
other themes; every fifth one in Chinese), plus --pdf-per-theme multi-page PDFs (written the way
tests/knowledge/test_wiki_sources.py `make_pdf` does, with several text lines per page; Helvetica, so
English only) and --docx-per-theme DOCX files made with python-docx (headings, paragraphs, a table; every
third one in Chinese). The default is 20 themes × 50 documents (45 Markdown, 2 PDF of 10 pages, 3 DOCX)
= 1,000 documents.

Measured:
  1. ingest, in-process: `build_generation` (extraction, pages, two-layer index, units, manifest, fsync)
     over a source root holding one format only, per format, and over all formats (cold); then the same
     root again with nothing changed (incremental: every file hashed, none re-extracted) and with 1% of the
     files changed. Pages: a Markdown or DOCX file counts as one page, a PDF page as one page. The
     extraction alone (`extract_directory`) is timed separately to show what the rest of a build costs;
  2. index: `write_index` (generate + write + validate every index.json) over the built pages, and the
     load of a `WikiSnapshot` of the built generation (the first load also initialises the tokenizer's
     dictionaries);
  3. queries over real HTTP against `memhub serve` (BM25 only, MEMHUB_EMBEDDING_PROVIDER=none): the wiki is
     created with `source_path` pointing at the corpus (MEMHUB_WIKI_SOURCE_ROOTS) and built with
     `wiki/ingest {wait: true}`; then --queries varied queries (English, Chinese, mixed; 1–6 words; some
     that match nothing) go through `tools/call search` (limit 10), `tools/call search_sources` and
     `wiki/retrieve`, sequentially from one client after a warm-up, interleaved so that all see the same
     machine state; `tools/call get_info` (no index work) is the HTTP floor. The same queries are run
     in-process on a `WikiSnapshot` of the same corpus, so the HTTP share is visible. When the search p95
     misses the aim (or with --profile), `WikiSnapshot.search` is run under cProfile and the functions with
     the most cumulative time are printed.

Prints Markdown tables and writes JSON to bench/results/wiki.json.

    python bench/wiki.py            # full run: 1,000 documents, 400 queries
    python bench/wiki.py --quick    # smoke run: 100 documents, 100 queries
    python bench/wiki.py --themes 10 --per-theme 100 --queries 1000 --profile
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import os
import platform
import pstats
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import docx

from common import HERE, Latency, Server, client, git_rev, ok_data, running_server
from memhub.knowledge.wiki.index import write_index
from memhub.knowledge.wiki.indexer import BuildReport, build_generation
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.knowledge.wiki.sources import extract_directory

DEFAULT_OUT = HERE / "results" / "wiki.json"
AIM_P95_MS = 10.0  # tools/call search p95 on a 1,000-document wiki
BM25_ONLY = {"MEMHUB_EMBEDDING_PROVIDER": "none"}
TEAM = "bench-team"
SEARCH_LIMIT = 10
WARMUP = 30
LINES_PER_PDF_PAGE = 36
PDF_LINE_CHARS = 95
CHANGED_SHARE = 0.01

# -- vocabulary -----------------------------------------------------------------------------------

# Theme folder, English title, Chinese title, and (English, Chinese) domain terms.
THEMES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("payments", "Payments", "支付", [("refund", "退款"), ("invoice", "发票"), ("chargeback", "拒付"),
        ("settlement", "结算"), ("ledger", "账本"), ("currency", "币种"), ("payout", "打款"),
        ("reconciliation", "对账"), ("merchant", "商户"), ("subscription", "订阅")]),
    ("authentication", "Authentication", "身份认证", [("token", "令牌"), ("session", "会话"),
        ("password", "密码"), ("oauth", "授权"), ("credential", "凭证"), ("rotation", "轮换"),
        ("scope", "权限范围"), ("login", "登录"), ("sso", "单点登录"), ("mfa", "多因素认证")]),
    ("kubernetes", "Kubernetes", "容器编排", [("pod", "容器组"), ("node", "节点"), ("cluster", "集群"),
        ("helm", "部署模板"), ("rollout", "滚动发布"), ("namespace", "命名空间"), ("ingress", "入口"),
        ("autoscaler", "自动扩缩容"), ("replica", "副本"), ("probe", "探针")]),
    ("database", "Database", "数据库", [("postgres", "关系库"), ("migration", "迁移"), ("vacuum", "清理"),
        ("transaction", "事务"), ("schema", "表结构"), ("partition", "分区"), ("backup", "备份"),
        ("deadlock", "死锁"), ("replication", "复制"), ("connection", "连接池")]),
    ("caching", "Caching", "缓存", [("redis", "缓存实例"), ("eviction", "淘汰"), ("ttl", "过期时间"),
        ("invalidation", "失效"), ("stampede", "缓存击穿"), ("warmup", "预热"), ("memcached", "分布式缓存"),
        ("keyspace", "键空间"), ("hotkey", "热点键"), ("serialization", "序列化")]),
    ("observability", "Observability", "可观测性", [("metrics", "指标"), ("tracing", "链路追踪"),
        ("logging", "日志"), ("alert", "告警"), ("dashboard", "看板"), ("span", "跨度"),
        ("prometheus", "监控系统"), ("slo", "服务目标"), ("incident", "故障"), ("sampling", "采样")]),
    ("networking", "Networking", "网络", [("dns", "域名解析"), ("tls", "传输加密"), ("certificate", "证书"),
        ("proxy", "代理"), ("firewall", "防火墙"), ("balancer", "负载均衡"), ("subnet", "子网"),
        ("gateway", "网关"), ("cdn", "内容分发"), ("packet", "数据包")]),
    ("search", "Search", "搜索", [("bm25", "相关性打分"), ("tokenizer", "分词器"), ("ranking", "排序"),
        ("embedding", "向量表示"), ("recall", "召回"), ("precision", "准确率"), ("analyzer", "分析器"),
        ("synonym", "同义词"), ("stemming", "词干提取"), ("reranker", "重排序")]),
    ("messaging", "Messaging", "消息队列", [("kafka", "消息系统"), ("topic", "主题"), ("consumer", "消费者"),
        ("offset", "位点"), ("retry", "重试"), ("deadletter", "死信"), ("backpressure", "背压"),
        ("broker", "代理节点"), ("idempotency", "幂等"), ("ordering", "顺序")]),
    ("frontend", "Frontend", "前端", [("react", "组件库"), ("component", "组件"), ("hydration", "注水"),
        ("bundle", "打包"), ("accessibility", "无障碍"), ("router", "路由"), ("state", "状态管理"),
        ("render", "渲染"), ("typescript", "类型脚本"), ("hook", "钩子")]),
    ("mobile", "Mobile", "移动端", [("ios", "苹果系统"), ("android", "安卓"), ("push", "推送"),
        ("notification", "通知"), ("crash", "崩溃"), ("testflight", "内测"), ("permission", "权限"),
        ("offline", "离线"), ("sync", "同步"), ("battery", "电量")]),
    ("ml-platform", "ML platform", "机器学习平台", [("model", "模型"), ("training", "训练"),
        ("inference", "推理"), ("gpu", "显卡"), ("feature", "特征"), ("dataset", "数据集"),
        ("checkpoint", "检查点"), ("evaluation", "评测"), ("drift", "漂移"), ("quantization", "量化")]),
    ("security", "Security", "安全", [("vulnerability", "漏洞"), ("audit", "审计"), ("encryption", "加密"),
        ("kms", "密钥管理"), ("policy", "策略"), ("compliance", "合规"), ("pentest", "渗透测试"),
        ("sandbox", "沙箱"), ("privilege", "特权"), ("secret", "密钥")]),
    ("storage", "Storage", "存储", [("bucket", "存储桶"), ("object", "对象"), ("lifecycle", "生命周期"),
        ("snapshot", "快照"), ("volume", "卷"), ("throughput", "吞吐"), ("iops", "读写次数"),
        ("archive", "归档"), ("retention", "保留"), ("compression", "压缩")]),
    ("ci-cd", "CI/CD", "持续集成", [("pipeline", "流水线"), ("artifact", "制品"), ("runner", "执行器"),
        ("lint", "静态检查"), ("release", "发布"), ("tag", "标签"), ("rollback", "回滚"),
        ("canary", "灰度"), ("approval", "审批"), ("coverage", "覆盖率")]),
    ("api-design", "API design", "接口设计", [("endpoint", "接口"), ("pagination", "分页"),
        ("versioning", "版本管理"), ("ratelimit", "限流"), ("webhook", "回调"), ("openapi", "接口规范"),
        ("grpc", "远程调用"), ("error", "错误码"), ("status", "状态码"), ("json", "数据格式")]),
    ("data-warehouse", "Data warehouse", "数据仓库", [("etl", "抽取转换"), ("warehouse", "仓库"),
        ("parquet", "列式文件"), ("airflow", "调度器"), ("dag", "有向图"), ("spark", "计算引擎"),
        ("lineage", "血缘"), ("freshness", "新鲜度"), ("backfill", "回填"), ("dbt", "建模工具")]),
    ("support", "Support operations", "客户支持", [("ticket", "工单"), ("escalation", "升级"),
        ("sla", "服务等级"), ("runbook", "运维手册"), ("oncall", "值班"), ("handover", "交接"),
        ("customer", "客户"), ("priority", "优先级"), ("triage", "分诊"), ("postmortem", "复盘")]),
    ("onboarding", "Onboarding", "入职", [("laptop", "笔记本"), ("vpn", "专线"), ("mentor", "导师"),
        ("handbook", "手册"), ("benefits", "福利"), ("leave", "休假"), ("expense", "报销"),
        ("travel", "差旅"), ("badge", "工牌"), ("account", "账号")]),
    ("coding-standards", "Coding standards", "编码规范", [("python", "脚本语言"), ("typing", "类型标注"),
        ("formatting", "格式化"), ("review", "代码评审"), ("naming", "命名"), ("docstring", "文档字符串"),
        ("exception", "异常"), ("dependency", "依赖"), ("refactor", "重构"), ("testing", "测试")]),
]  # fmt: skip


def _words(text: str) -> list[str]:
    return text.split()


SHARED_EN = _words("billing search gateway scheduler ingest export notification reporting audit sync")
SHARED_ZH = _words("计费 检索 网关 调度 数据接入 导出 通知 报表 审计 同步")
TOOLS = _words("Grafana PagerDuty Sentry Jenkins Datadog Kibana Jira Slack")
CFG_SUFFIXES = _words("MAX_RETRIES TIMEOUT_MS BATCH_SIZE POOL_SIZE TTL_SECONDS ENABLED REGION CONCURRENCY")
CODE_KEYS = _words("max_retries timeout_ms batch_size pool_size ttl_seconds concurrency")
VERBS = _words("configure rotate debug scale migrate monitor test tune audit upgrade")
NONSENSE_EN = _words("quokka zeppelin marzipan obelisk tuba kayak gazebo nectarine walrus origami")
NONSENSE_ZH = _words("量子纠缠 敦煌壁画 熊猫基地 青花瓷器 剪纸艺术")

EN_TEMPLATES = [
    "The {a} service owns {b} for every tenant and publishes its state to the {c} pipeline.",
    "When {a} fails, the worker retries {k} times with exponential backoff before it raises an alert in {tool}.",
    "Set `{cfg}` to {n} before you enable {a} in production; the default is too low for large tenants.",
    "We measured {a} at {n} ms p95 under {m} requests per second on the staging cluster.",
    "Each {a} record carries a {b} identifier so that {c} jobs can reconcile it later.",
    "Do not call the {a} endpoint from the {b} path directly; go through the {c} client instead.",
    "The {a} dashboard in {tool} shows {b} errors per minute, grouped by region and release.",
    "Rotate the {a} credentials every {n} days and record the change in the audit log.",
    "If the {b} backlog grows beyond {m} items, scale the {a} workers horizontally.",
    "Older releases stored {a} data in a single table, which made {b} changes slow and risky.",
    "The on-call engineer checks {a} health first, then the {b} backlog, then the most recent deploys.",
    "A {a} change needs one review from the {b} owners and a passing {c} check.",
    "Use this runbook when {b} latency exceeds the {n} ms budget for more than {k} minutes.",
    "Caching {a} responses for {n} seconds cut the {b} load by roughly {k}0 percent.",
    "The {a} API answers 409 when a {b} operation is already in progress for the same tenant.",
    "Keep {a} and {b} in the same region to avoid cross-zone traffic and its cost.",
    "Since version {k}.{n}, {a} validates the {b} payload before it is written to {c} storage.",
    "Ask in the #{a} channel before you change {b} defaults that other teams rely on.",
]

ZH_TEMPLATES = [
    "{a}服务负责所有租户的{b}，并把状态同步到{c}流水线。",
    "当{a}失败时，工作进程会按指数退避重试 {k} 次，然后在 {tool} 中触发告警。",
    "在生产环境启用{a}之前，请把 `{cfg}` 设置为 {n}；默认值对大租户来说太低。",
    "我们在预发集群上测得{a}的 p95 延迟为 {n} 毫秒，吞吐为每秒 {m} 次请求。",
    "每条{a}记录都带有{b}标识，方便{c}任务之后对账。",
    "不要在{b}链路中直接调用{a}接口，请通过{c}客户端访问。",
    "{tool} 里的{a}看板按地域和版本展示每分钟的{b}错误数。",
    "每隔 {n} 天轮换一次{a}凭证，并在审计日志中记录变更。",
    "如果{b}积压超过 {m} 条，请水平扩容{a}工作进程。",
    "值班工程师先检查{a}的健康状态，再看{b}积压，最后排查最近的发布。",
    "{a}相关的变更需要{b}负责人评审，并通过{c}检查。",
    "当{b}延迟连续 {k} 分钟超过 {n} 毫秒时，请按本手册处理{a}问题。",
    "从 {k}.{n} 版本开始，{a}会在写入{c}存储前校验{b}数据（{en}）。",
    "修改{b}的默认值之前，请先在 #{en} 频道里确认，其他团队可能依赖它。",
]

EN_TITLES = [
    "How to {verb} {a}",
    "{A} {b} runbook",
    "Troubleshooting {a} {b}",
    "{A} design notes",
    "{A} and {b} FAQ",
    "{A} configuration reference",
    "Migrating {a} to {b}",
    "{A} best practices",
    "{A} incident review {n}",
    "Monitoring {a} and {b}",
]
ZH_TITLES = [
    "如何配置{a}",
    "{a}{b}运维手册",
    "{a}故障排查",
    "{a}设计说明",
    "{a}与{b}常见问题",
    "{a}配置参考",
    "{a}迁移到{b}",
    "{a}最佳实践",
    "{a}事故复盘 {n}",
    "{a}和{b}监控指南",
]
EN_SECTIONS = _words("Overview Background Configuration Steps Troubleshooting Monitoring Rollback Limits Examples FAQ")
ZH_SECTIONS = _words("概述 背景 配置 操作步骤 故障排查 监控 回滚 限制 示例 常见问题")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- the corpus -------------------------------------------------------------------------------------


@dataclass
class Section:
    heading: str
    paragraphs: list[str]
    bullets: list[str] = field(default_factory=list)
    table: list[list[str]] = field(default_factory=list)
    code: str = ""


@dataclass
class Doc:
    """One source document, whatever its format; rendered to bytes by `render`."""

    theme: str
    rel: str  # relative path with extension
    kind: str  # md | pdf | docx
    zh: bool
    title: str
    tags: list[str]
    sections: list[Section]
    intro: str = ""
    summary: str = ""
    status: str = "current"
    links: list[tuple[str, str]] = field(default_factory=list)  # (link text, Markdown link target)
    pages: int = 1  # PDF pages

    @property
    def stem(self) -> str:
        return self.rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]


class CorpusGen:
    """Seeded generator of technical documents in English and Chinese."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _fill(self, template: str, terms: list[tuple[str, str]], zh: bool) -> str:
        rng = self.rng
        (a_en, a_zh), (b_en, b_zh) = rng.sample(terms, 2)
        c = rng.randrange(len(SHARED_EN))
        values = {
            "a": a_zh if zh else a_en,
            "b": b_zh if zh else b_en,
            "c": SHARED_ZH[c] if zh else SHARED_EN[c],
            "en": a_en,
            "tool": rng.choice(TOOLS),
            "cfg": f"{a_en.upper()}_{rng.choice(CFG_SUFFIXES)}",
            "n": str(rng.randint(2, 500)),
            "m": str(rng.randint(100, 20_000)),
            "k": str(rng.randint(2, 9)),
        }
        if zh and rng.random() < 0.25:
            values["a"] = a_en  # Chinese docs name some technical terms in English
        return template.format(**values)

    def sentence(self, terms: list[tuple[str, str]], zh: bool) -> str:
        return self._fill(self.rng.choice(ZH_TEMPLATES if zh else EN_TEMPLATES), terms, zh)

    def paragraph(self, terms: list[tuple[str, str]], zh: bool, sentences: int) -> str:
        return ("" if zh else " ").join(self.sentence(terms, zh) for _ in range(sentences))

    def title(self, terms: list[tuple[str, str]], zh: bool) -> tuple[str, str, str]:
        """(title, English slug words, the two main terms in English)."""
        rng = self.rng
        i = rng.randrange(len(EN_TITLES))
        (a_en, a_zh), (b_en, b_zh) = rng.sample(terms, 2)
        n = str(rng.randint(1, 99))
        verb = rng.choice(VERBS)
        en = EN_TITLES[i].format(a=a_en, b=b_en, A=a_en.capitalize(), verb=verb, n=n)
        title = ZH_TITLES[i].format(a=a_zh, b=b_zh, n=n) if zh else en
        return title, _slug(en), a_en

    def section(self, name: str, terms: list[tuple[str, str]], zh: bool, *, rich: bool) -> Section:
        rng = self.rng
        paragraphs = [self.paragraph(terms, zh, rng.randint(2, 5)) for _ in range(rng.randint(1, 3))]
        sec = Section(name, paragraphs)
        if rich and rng.random() < 0.3:
            sec.bullets = [self.sentence(terms, zh) for _ in range(rng.randint(2, 5))]
        if rich and rng.random() < 0.2:
            head = ["设置", "默认值", "说明"] if zh else ["Setting", "Default", "Description"]
            rows = []
            for _ in range(rng.randint(2, 6)):
                term_en, term_zh = rng.choice(terms)
                what = f"{term_zh}的上限" if zh else f"Upper bound for {term_en}"
                rows.append([f"`{term_en.upper()}_{rng.choice(CFG_SUFFIXES)}`", str(rng.randint(1, 1000)), what])
            sec.table = [head, *rows]
        if rich and rng.random() < 0.15:
            term_en = rng.choice(terms)[0]
            sec.code = (
                f"{term_en}:\n  enabled: true\n  {rng.choice(CODE_KEYS)}: {rng.randint(1, 900)}\n"
                f"  region: {rng.choice(['eu-west-1', 'us-east-2', 'ap-southeast-1'])}"
            )
        return sec

    def doc(self, theme: int, number: int, kind: str, zh: bool, pdf_pages: int) -> Doc:
        rng = self.rng
        folder, _, _, terms = THEMES[theme]
        title, slug, main = self.title(terms, zh)
        ext = {"md": "md", "pdf": "pdf", "docx": "docx"}[kind]
        rel = f"{folder}/{number:03d}-{slug}.{ext}"
        names = list(ZH_SECTIONS if zh else EN_SECTIONS)
        rng.shuffle(names)
        tags = list(dict.fromkeys([main, *(t[0] for t in rng.sample(terms, 2))]))
        doc = Doc(folder, rel, kind, zh, title, tags, [], pages=pdf_pages if kind == "pdf" else 1)
        if kind == "pdf":
            # Enough sections to fill the pages; render cuts the text into pages.
            lines = 0
            while lines < pdf_pages * LINES_PER_PDF_PAGE:
                sec = self.section(rng.choice(EN_SECTIONS), terms, False, rich=False)
                doc.sections.append(sec)
                lines += 2 + sum(len(p) // PDF_LINE_CHARS + 1 for p in sec.paragraphs)
            return doc
        doc.sections = [self.section(names[i], terms, zh, rich=True) for i in range(rng.randint(3, 6))]
        doc.intro = self.paragraph(terms, zh, rng.randint(1, 3))
        if kind == "md":
            if rng.random() < 0.3:
                doc.summary = self.sentence(terms, zh)
            if rng.random() < 0.04:
                doc.status = "archived"
        return doc


def render_markdown(doc: Doc) -> bytes:
    front = [f"title: {json.dumps(doc.title, ensure_ascii=False)}", f"tags: [{', '.join(doc.tags)}]"]
    if doc.summary:
        front.append(f"summary: {json.dumps(doc.summary, ensure_ascii=False)}")
    if doc.status != "current":
        front.append(f"status: {doc.status}")
    out = ["---", *front, "---", "", f"# {doc.title}", "", doc.intro, ""]
    for i, sec in enumerate(doc.sections):
        out += [f"## {sec.heading}", ""]
        for j, para in enumerate(sec.paragraphs):
            if j == 0 and i < len(doc.links):
                text, target = doc.links[i]
                see = f"参见 [{text}]({target})。" if doc.zh else f" See [{text}]({target}) for details."
                para += see
            out += [para, ""]
        if sec.bullets:
            out += [*(f"- {b}" for b in sec.bullets), ""]
        if sec.table:
            head, *rows = sec.table
            out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            out += ["| " + " | ".join(r) + " |" for r in rows] + [""]
        if sec.code:
            out += ["```yaml", sec.code, "```", ""]
    if doc.links:
        out += ["## 相关页面" if doc.zh else "## Related pages", ""]
        for _, target in doc.links:
            # Wikilinks by page id (theme/stem) for the related list, relative links inline above.
            out.append(f"- [[{target.removeprefix('../').removesuffix('.md')}]]")
        out.append("")
    return "\n".join(out).encode()


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF (the approach of the tests' `make_pdf`), with several Helvetica lines per page."""
    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    font = 3 + 2 * count
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode()]
    for i, lines in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {4 + 2 * i} 0 R >>".encode()
        )
        shown = []
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            shown.append(f"({escaped}) Tj T*")
        stream = ("BT /F1 10 Tf 13 TL 54 750 Td " + " ".join(shown) + " ET").encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def render_pdf(doc: Doc) -> bytes:
    lines = [doc.title, ""]
    for number, sec in enumerate(doc.sections, 1):
        lines += [f"{number}. {sec.heading}"]
        for para in sec.paragraphs:
            lines += [*_wrap(para, PDF_LINE_CHARS), ""]
    pages = [lines[i : i + LINES_PER_PDF_PAGE] for i in range(0, len(lines), LINES_PER_PDF_PAGE)]
    return pdf_bytes(pages[: doc.pages])


def render_docx(doc: Doc) -> bytes:
    document = docx.Document()
    document.add_heading(doc.title, level=1)
    document.add_paragraph(doc.intro)
    for sec in doc.sections:
        document.add_heading(sec.heading, level=2)
        for para in sec.paragraphs:
            document.add_paragraph(para)
        for bullet in sec.bullets:
            document.add_paragraph(bullet, style="List Bullet")
        if sec.table:
            table = document.add_table(rows=len(sec.table), cols=len(sec.table[0]))
            for r, row in enumerate(sec.table):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
        if sec.code:
            document.add_paragraph(sec.code)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def render(doc: Doc) -> bytes:
    if doc.kind == "pdf":
        return render_pdf(doc)
    if doc.kind == "docx":
        return render_docx(doc)
    return render_markdown(doc)


def readme(theme: int, gen: CorpusGen) -> bytes:
    _, title, title_zh, terms = THEMES[theme]
    summary = gen.sentence(terms, False)
    tags = ", ".join(t[0] for t in terms[:4])
    return (
        f"---\ntitle: {title} ({title_zh})\nsummary: {json.dumps(summary)}\ntags: [{tags}]\n---\n\n"
        f"# {title}\n\n{summary}\n"
    ).encode()


@dataclass
class Corpus:
    docs: list[Doc]
    readmes: dict[str, bytes]  # rel → bytes
    files: dict[str, bytes]  # rel → bytes, every document rendered

    def pages(self, kind: str) -> int:
        """Source pages: one per Markdown / DOCX file (theme READMEs included), one per PDF page."""
        n = sum(d.pages for d in self.docs if d.kind == kind)
        return n + (len(self.readmes) if kind == "md" else 0)

    def write(self, root: Path, kinds: Sequence[str]) -> None:
        for rel, data in self.readmes.items():
            if "md" in kinds:
                _put(root / rel, data)
        for doc in self.docs:
            if doc.kind in kinds:
                _put(root / doc.rel, self.files[doc.rel])


def _put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def make_corpus(seed: int, themes: int, per_theme: int, pdfs: int, docxs: int, pdf_pages: int) -> Corpus:
    """`themes` folders of `per_theme` documents: Markdown, then `pdfs` PDFs and `docxs` DOCX files."""
    gen = CorpusGen(seed)
    docs: list[Doc] = []
    readmes: dict[str, bytes] = {}
    for t in range(themes):
        readmes[f"{THEMES[t][0]}/README.md"] = readme(t, gen)
        for number in range(per_theme):
            if number < per_theme - pdfs - docxs:
                docs.append(gen.doc(t, number, "md", number % 5 == 4, pdf_pages))
            elif number < per_theme - docxs:
                docs.append(gen.doc(t, number, "pdf", False, pdf_pages))
            else:
                docs.append(gen.doc(t, number, "docx", number % 3 == 0, pdf_pages))
    markdown = [d for d in docs if d.kind == "md"]
    by_theme: dict[str, list[Doc]] = {}
    for d in markdown:
        by_theme.setdefault(d.theme, []).append(d)
    for d in markdown:
        # 2–4 links: mostly to pages of the same theme, some across themes.
        for _ in range(gen.rng.randint(2, 4)):
            pool = by_theme[d.theme] if gen.rng.random() < 0.7 or len(by_theme) == 1 else markdown
            target = gen.rng.choice(pool)
            if target is not d and all(target.rel not in t for _, t in d.links):
                d.links.append((target.title, f"../{target.rel}"))
    files = {d.rel: render(d) for d in docs}
    return Corpus(docs, readmes, files)


# -- ingest -----------------------------------------------------------------------------------------


@dataclass
class IngestRow:
    name: str
    files: int
    pages: int
    megabytes: float
    build_s: float
    pages_per_s: float
    extract_s: float | None = None
    extract_pages_per_s: float | None = None
    reextracted: int | None = None
    report: dict[str, Any] = field(default_factory=dict)


def _size(root: Path) -> tuple[int, float]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files) / 1e6


def _report_counts(report: BuildReport) -> dict[str, Any]:
    return {
        "added": len(report.added),
        "changed": len(report.changed),
        "unchanged": len(report.unchanged),
        "removed": len(report.removed),
        "errors": len(report.errors),
        "pages": report.pages,
    }


def timed_build(source: Path, target: Path, previous: Path | None = None) -> tuple[float, BuildReport]:
    t0 = time.perf_counter()
    report = build_generation(source, target, previous)
    elapsed = time.perf_counter() - t0
    if report.errors:
        raise RuntimeError(f"build of {source} reported errors: {report.errors[:3]}")
    return elapsed, report


def ingest_format(name: str, source: Path, target: Path, pages: int) -> IngestRow:
    """Extraction alone, then a cold build, of a source root."""
    t0 = time.perf_counter()
    extracted = extract_directory(source)
    extract_s = time.perf_counter() - t0
    if extracted.errors:
        raise RuntimeError(f"extraction of {source} reported errors: {extracted.errors[:3]}")
    build_s, report = timed_build(source, target)
    files, mb = _size(source)
    return IngestRow(
        name=name,
        files=files,
        pages=pages,
        megabytes=round(mb, 2),
        build_s=round(build_s, 3),
        pages_per_s=round(pages / build_s, 1),
        extract_s=round(extract_s, 3),
        extract_pages_per_s=round(pages / extract_s, 1),
        reextracted=len(report.added) + len(report.changed),
        report=_report_counts(report),
    )


def change_files(corpus: Corpus, root: Path, share: float, rng: random.Random) -> list[str]:
    """Rewrite `share` of the documents under `root` with one more sentence; the names changed."""
    count = max(1, round(len(corpus.docs) * share))
    picked = rng.sample(corpus.docs, count)
    gen = CorpusGen(rng.randint(0, 2**31))
    for doc in picked:
        terms = next(t[3] for t in THEMES if t[0] == doc.theme)
        sec = doc.sections[-1] if doc.kind != "pdf" else doc.sections[0]
        changed = copy.deepcopy(doc)
        target = changed.sections[doc.sections.index(sec)]
        target.paragraphs = [*target.paragraphs[:-1], target.paragraphs[-1] + " " + gen.sentence(terms, doc.zh)]
        _put(root / doc.rel, render(changed))
    return sorted(d.rel for d in picked)


# -- queries ----------------------------------------------------------------------------------------


def make_queries(corpus: Corpus, count: int, seed: int) -> list[str]:
    """English, Chinese and mixed queries of 1–6 words: domain terms, title words, phrasing, misses."""
    rng = random.Random(seed)
    themes = sorted({d.theme for d in corpus.docs})
    term_sets = [t[3] for t in THEMES if t[0] in themes]
    titles = [d.title for d in corpus.docs]
    out: list[str] = []
    while len(out) < count:
        terms = rng.choice(term_sets)
        mode = rng.random()
        if mode < 0.30:  # English domain terms, sometimes phrased as a request
            words = [rng.choice(terms)[0] for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.4:
                words = [*rng.choice([["how", "to"], [rng.choice(VERBS)], ["why", "does"]]), *words][:6]
            elif rng.random() < 0.3:
                words.append(rng.choice(SHARED_EN))
            query = " ".join(words)
        elif mode < 0.50:  # Chinese terms, with or without spaces, sometimes a question
            words = [rng.choice(terms)[1] for _ in range(rng.randint(1, 3))]
            query = ("" if rng.random() < 0.5 else " ").join(words)
            if rng.random() < 0.3:
                query = rng.choice(["如何", "怎么", "为什么"]) + query + rng.choice(["", "？"])
        elif mode < 0.65:  # mixed
            query = f"{rng.choice(terms)[1]} {rng.choice(terms)[0]}"
            if rng.random() < 0.4:
                query += " " + rng.choice(SHARED_EN)
        elif mode < 0.85:  # words of an existing title (known-item search)
            title = rng.choice(titles)
            parts = title.split()
            if len(parts) > 1:
                start = rng.randrange(len(parts))
                query = " ".join(parts[start : start + rng.randint(1, 6)])
            else:
                query = title[: rng.randint(2, max(2, len(title)))]
        elif mode < 0.93:  # config keys, numbers and tool names that appear in the prose
            term = rng.choice(terms)[0]
            query = rng.choice(
                [f"{term.upper()}_{rng.choice(CFG_SUFFIXES)}", f"{rng.choice(TOOLS)} {term}", f"{term} 409"]
            )
        else:  # nothing matches
            query = rng.choice([" ".join(rng.sample(NONSENSE_EN, rng.randint(1, 3))), rng.choice(NONSENSE_ZH)])
        query = query.strip()
        if query and query not in out:
            out.append(query)
    return out


# -- measurements over the snapshot (in-process) and HTTP -----------------------------------------


@dataclass
class QueryRow:
    name: str
    where: str
    queries: int
    hits_per_query: float
    empty: int
    latency: Latency


def engine_times(snapshot: WikiSnapshot, queries: Sequence[str]) -> dict[str, QueryRow]:
    """The tools' engine calls in-process, as `tools/call` and `wiki/retrieve` make them."""
    calls: dict[str, Callable[[str], int]] = {
        "search": lambda q: len(snapshot.search(q, SEARCH_LIMIT)["results"]),
        "search_sources": lambda q: len(snapshot.search_sources(q.split(), 10)["results"]),
        "retrieve": lambda q: len(snapshot.retrieve(q)["documents"]),
    }
    rows: dict[str, QueryRow] = {}
    for q in queries[:WARMUP]:
        for call in calls.values():
            call(q)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    hits: dict[str, list[int]] = {name: [] for name in calls}
    for q in queries:
        for name, call in calls.items():
            t0 = time.perf_counter()
            n = call(q)
            samples[name].append(time.perf_counter() - t0)
            hits[name].append(n)
    for name in calls:
        rows[name] = QueryRow(
            f"WikiSnapshot.{name}",
            "in-process",
            len(queries),
            round(statistics.fmean(hits[name]), 2),
            sum(1 for h in hits[name] if h == 0),
            Latency.of(samples[name]),
        )
    return rows


def profile_engine(snapshot: WikiSnapshot, queries: Sequence[str], top: int = 12) -> list[dict[str, Any]]:
    """cProfile of `WikiSnapshot.search` over the queries: the functions with the most cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for q in queries:
        snapshot.search(q, SEARCH_LIMIT)
    profiler.disable()
    # {(file, line, function): (primitive calls, calls, own time, cumulative time, callers)}
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(profiler).stats
    total = max(
        (v[3] for (file, _, name), v in stats.items() if file.endswith("snapshot.py") and name == "search"),
        default=0.0,
    )
    rows = []
    for (file, line, name), (_, calls, own, cumulative, _) in stats.items():
        # memhub's own functions, and of the libraries only the entry points memhub calls.
        if "memhub" not in file and name not in ("safe_load", "extract_text", "stemWords"):
            continue
        where = f"{file.split('site-packages/')[-1].split('src/')[-1]}:{line}({name})"
        rows.append(
            {
                "function": where,
                "calls": calls,
                "tottime_s": round(own, 4),
                "cumtime_s": round(cumulative, 4),
                "share": round(cumulative / total, 3) if total else None,
            }
        )
    rows.sort(key=lambda r: -r["cumtime_s"])
    return rows[:top]


def over_http(python: str, source_root: Path, data_dir: Path, queries: Sequence[str]) -> dict[str, Any]:
    """Create and build the wiki from `source_root`, then time the tools over HTTP."""
    env = {**BM25_ONLY, "MEMHUB_WIKI_SOURCE_ROOTS": str(source_root.parent.resolve())}
    with running_server(data_dir, python, env) as server, client(server) as http:
        wiki = ok_data(http, "/v3/wiki/create", {"team_id": TEAM, "name": "bench", "source_path": str(source_root)})
        wiki_id = wiki["wiki_id"]
        t0 = time.perf_counter()
        built = ok_data(http, "/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True})
        ingest_s = time.perf_counter() - t0
        if built["status"] != "ready":
            raise RuntimeError(f"wiki did not build: {built}")
        rows = _time_tools(server, wiki_id, queries)
    return {
        "wiki_id": wiki_id,
        "ingest_s": round(ingest_s, 3),
        "page_count": built["page_count"],
        "source_count": built["source_count"],
        "report": built.get("report"),
        "rows": rows,
    }


def _time_tools(server: Server, wiki_id: str, queries: Sequence[str]) -> dict[str, QueryRow]:
    def tool(name: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "/v3/tools/call", {"knowledge_id": wiki_id, "tool_name": name, "params": params}

    requests: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
        "get_info": lambda q: tool("get_info", {}),
        "search": lambda q: tool("search", {"query": q, "limit": SEARCH_LIMIT}),
        "search_sources": lambda q: tool("search_sources", {"keywords": q}),
        "retrieve": lambda q: ("/v3/wiki/retrieve", {"wiki_id": wiki_id, "question": q}),
    }
    hit_key = {"get_info": None, "search": "results", "search_sources": "results", "retrieve": "documents"}
    samples: dict[str, list[float]] = {name: [] for name in requests}
    hits: dict[str, list[int]] = {name: [] for name in requests}
    with client(server) as http:
        for q in queries[:WARMUP]:
            for make in requests.values():
                ok_data(http, *make(q))
        for i, q in enumerate(queries):
            names = list(requests)
            # Rotate which call goes first, so no one of them always follows another.
            names = names[i % len(names) :] + names[: i % len(names)]
            for name in names:
                path, body = requests[name](q)
                t0 = time.perf_counter()
                response = http.post(path, json=body)
                samples[name].append(time.perf_counter() - t0)
                envelope = response.json()
                data = envelope.get("data") or {}
                if response.status_code != 200 or envelope.get("code") != 0 or data.get("isError"):
                    raise RuntimeError(f"{name} {q!r}: {response.status_code} {envelope}")
                key = hit_key[name]
                hits[name].append(len(data[key]) if key else 1)
    labels = {
        "get_info": "tools/call get_info (HTTP floor)",
        "search": "tools/call search",
        "search_sources": "tools/call search_sources",
        "retrieve": "wiki/retrieve",
    }
    return {
        name: QueryRow(
            labels[name],
            "HTTP",
            len(queries),
            round(statistics.fmean(hits[name]), 2),
            sum(1 for h in hits[name] if h == 0),
            Latency.of(samples[name]),
        )
        for name in requests
    }


def median_time(fn: Callable[[], object], runs: int) -> tuple[float, float, list[float]]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), times


# -- report -----------------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def markdown(ingests: list[IngestRow], index_rows: list[dict[str, Any]], queries: list[QueryRow]) -> str:
    lines = [
        "| ingest (build_generation) | files | source pages | MB | re-extracted | build s | pages/s | "
        "extract-only s | extract pages/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in ingests:
        lines.append(
            f"| {r.name} | {r.files:,} | {r.pages:,} | {r.megabytes:.2f} | {_f(r.reextracted, 0)} "
            f"| {r.build_s:.2f} | {_f(r.pages_per_s)} | {_f(r.extract_s, 2)} | {_f(r.extract_pages_per_s)} |"
        )
    lines += [
        "",
        "Pages: a Markdown or DOCX file is one page, a PDF page is one page. Build = extraction + pages + "
        "two-layer index + units.json + manifest + fsync of the generation.",
        "",
        "| index | size | runs | median ms | min ms |",
        "|---|---|---:|---:|---:|",
    ]
    for row in index_rows:
        lines.append(
            f"| {row['name']} | {row['size']} | {row['runs']} | {row['median_ms']:,.1f} | {row['min_ms']:,.1f} |"
        )
    lines += [
        "",
        "| query | where | n | hits/q | empty | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for q in queries:
        lt = q.latency
        lines.append(
            f"| {q.name} | {q.where} | {q.queries} | {q.hits_per_query} | {q.empty} "
            f"| {lt.p50_ms:.2f} | {lt.p95_ms:.2f} | {lt.p99_ms:.2f} | {lt.mean_ms:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small corpus and few queries (smoke run)")
    parser.add_argument("--themes", type=int, help=f"theme folders (default 20; quick 10; at most {len(THEMES)})")
    parser.add_argument("--per-theme", type=int, help="documents per theme, all formats (default 50; quick 10)")
    parser.add_argument("--pdf-per-theme", type=int, help="PDFs per theme (default 2; quick 1)")
    parser.add_argument("--docx-per-theme", type=int, help="DOCX files per theme (default 3; quick 1)")
    parser.add_argument("--pdf-pages", type=int, help="pages per PDF (default 10; quick 5)")
    parser.add_argument("--queries", type=int, help="distinct queries (default 400; quick 100)")
    parser.add_argument("--runs", type=int, help="repeats of the index build and snapshot load (default 5; quick 2)")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the engine search (done anyway when the p95 aim is missed)"
    )
    parser.add_argument("--seed", type=int, default=20260815)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has memhub installed")
    parser.add_argument("--keep-data", action="store_true", help="keep the corpus and data dirs")
    args = parser.parse_args(argv)
    quick = args.quick
    themes = min(args.themes or (10 if quick else 20), len(THEMES))
    per_theme = args.per_theme or (10 if quick else 50)
    pdfs = args.pdf_per_theme if args.pdf_per_theme is not None else (1 if quick else 2)
    docxs = args.docx_per_theme if args.docx_per_theme is not None else (1 if quick else 3)
    pdf_pages = args.pdf_pages or (5 if quick else 10)
    n_queries = args.queries or (100 if quick else 400)
    runs = args.runs or (2 if quick else 5)
    if per_theme < pdfs + docxs + 2:
        parser.error("--per-theme must leave at least 2 Markdown documents per theme")

    load_start = [round(x, 2) for x in os.getloadavg()]
    tmp = Path(tempfile.mkdtemp(prefix="memhub-bench-wiki-"))
    try:
        print(f"generating {themes * per_theme:,} documents …", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        corpus = make_corpus(args.seed, themes, per_theme, pdfs, docxs, pdf_pages)
        generate_s = time.perf_counter() - t0
        sources = tmp / "sources"
        roots = {kind: sources / kind for kind in ("md", "pdf", "docx", "all")}
        for kind, root in roots.items():
            corpus.write(root, ("md", "pdf", "docx") if kind == "all" else (kind,))
        gens = tmp / "generations"

        # 1. ingest per format, then all formats cold, unchanged and with 1% changed.
        ingests: list[IngestRow] = []
        labels = {
            "md": "Markdown (1 file = 1 page)",
            "pdf": f"PDF ({pdf_pages} pages each; 1 PDF page = 1 page)",
            "docx": "DOCX (1 file = 1 page)",
        }
        for kind in ("md", "pdf", "docx"):
            if corpus.pages(kind) == 0:
                continue
            print(f"ingest {labels[kind]} …", file=sys.stderr, flush=True)
            ingests.append(ingest_format(labels[kind], roots[kind], gens / kind, corpus.pages(kind)))
        all_pages = sum(corpus.pages(k) for k in ("md", "pdf", "docx"))
        print("ingest all formats (cold, unchanged, 1% changed) …", file=sys.stderr, flush=True)
        cold = ingest_format("all formats, cold", roots["all"], gens / "all-1", all_pages)
        ingests.append(cold)
        files, mb = _size(roots["all"])
        build_s, report = timed_build(roots["all"], gens / "all-2", gens / "all-1")
        ingests.append(
            IngestRow(
                "all formats, re-ingest, nothing changed",
                files,
                all_pages,
                round(mb, 2),
                round(build_s, 3),
                round(all_pages / build_s, 1),
                reextracted=len(report.added) + len(report.changed),
                report=_report_counts(report),
            )
        )
        changed_root = sources / "all-changed"
        shutil.copytree(roots["all"], changed_root)
        changed = change_files(corpus, changed_root, CHANGED_SHARE, random.Random(args.seed + 7))
        build_s, report = timed_build(changed_root, gens / "all-3", gens / "all-2")
        if sorted(report.changed) != changed:
            raise RuntimeError(f"expected {len(changed)} changed files, the build saw {len(report.changed)}")
        ingests.append(
            IngestRow(
                f"all formats, re-ingest, 1% changed ({len(changed)} file{'s' if len(changed) != 1 else ''})",
                files,
                all_pages,
                round(mb, 2),
                round(build_s, 3),
                round(all_pages / build_s, 1),
                reextracted=len(report.added) + len(report.changed),
                report=_report_counts(report),
            )
        )

        # 2. index build and snapshot load over the full (all formats) generation.
        print("index build and snapshot load …", file=sys.stderr, flush=True)
        pages_dir = gens / "all-1" / "pages"
        t0 = time.perf_counter()
        snapshot = WikiSnapshot(1, gens / "all-1")
        first_load = time.perf_counter() - t0
        themes_n = len(snapshot.index.themes)
        docs_n = len(snapshot.index.all_documents())
        pages_n = len(snapshot.pages)
        links_n = sum(len(v) for v in snapshot.links.values())
        units_n = len(snapshot._sources.units)
        idx_median, idx_min, _ = median_time(lambda: write_index(pages_dir), runs)
        load_median, load_min, _ = median_time(lambda: WikiSnapshot(1, gens / "all-1"), runs)
        size = f"{themes_n} themes, {docs_n:,} documents"
        index_rows = [
            {"name": "write_index (generated two-layer index)", "size": size, "runs": runs},
            {"name": "WikiSnapshot load, first (tokenizer warm-up included)", "size": f"{pages_n:,} pages", "runs": 1},
            {"name": "WikiSnapshot load", "size": f"{pages_n:,} pages, {units_n:,} source units", "runs": runs},
        ]
        for row, (med, low) in zip(
            index_rows, [(idx_median, idx_min), (first_load, first_load), (load_median, load_min)], strict=True
        ):
            row["median_ms"], row["min_ms"] = round(med * 1000, 1), round(low * 1000, 1)

        # 3. queries: in-process engine, then HTTP against memhub serve.
        queries = make_queries(corpus, n_queries, args.seed + 1)
        print(f"in-process engine, {len(queries)} queries …", file=sys.stderr, flush=True)
        engine = engine_times(snapshot, queries)
        print("memhub serve: create, ingest, tools/call …", file=sys.stderr, flush=True)
        http = over_http(args.python, roots["all"], tmp / "server", queries)
        served = http["rows"]
        ingests.append(
            IngestRow(
                "all formats, HTTP wiki/ingest wait=true (server)",
                files,
                all_pages,
                round(mb, 2),
                http["ingest_s"],
                round(all_pages / http["ingest_s"], 1),
                reextracted=len((http["report"] or {}).get("added", [])),
            )
        )
        profile: list[dict[str, Any]] = []
        if args.profile or served["search"].latency.p95_ms > AIM_P95_MS:
            print("cProfile of WikiSnapshot.search …", file=sys.stderr, flush=True)
            profile = profile_engine(snapshot, queries)
        query_rows = [
            served["get_info"],
            served["search"],
            engine["search"],
            served["search_sources"],
            engine["search_sources"],
            served["retrieve"],
            engine["retrieve"],
        ]
    finally:
        if args.keep_data:
            print(f"data kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    table = markdown(ingests, index_rows, query_rows)
    p95 = served["search"].latency.p95_ms
    met = p95 <= AIM_P95_MS
    verdict = {
        "search_aim_p95_ms": AIM_P95_MS,
        "search_p95_ms": p95,
        "documents": docs_n,
        "search_meets_aim": met,
        "engine_search_p95_ms": engine["search"].latency.p95_ms,
        "http_floor_p50_ms": served["get_info"].latency.p50_ms,
    }
    result: dict[str, Any] = {
        "benchmark": "memhub wiki",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": quick,
        "corpus": {
            "seed": args.seed,
            "themes": themes,
            "documents": len(corpus.docs),
            "per_theme": per_theme,
            "markdown": sum(1 for d in corpus.docs if d.kind == "md"),
            "markdown_chinese": sum(1 for d in corpus.docs if d.kind == "md" and d.zh),
            "pdf": sum(1 for d in corpus.docs if d.kind == "pdf"),
            "pdf_pages": pdf_pages,
            "docx": sum(1 for d in corpus.docs if d.kind == "docx"),
            "theme_readmes": len(corpus.readmes),
            "source_pages": all_pages,
            "snapshot_pages": pages_n,
            "index_documents": docs_n,
            "resolved_links": links_n,
            "source_units": units_n,
            "generate_s": round(generate_s, 2),
            "changed_files": changed,
        },
        "queries": {"count": len(queries), "limit": SEARCH_LIMIT, "warmup": WARMUP, "sample": queries[:20]},
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": load_start,
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "git": git_rev(),
        },
        "ingest": [asdict(r) for r in ingests],
        "index": index_rows,
        "query_latency": [asdict(q) for q in query_rows],
        "http_wiki": {k: v for k, v in http.items() if k != "rows"},
        "verdict": verdict,
        "profile_search": profile,
        "markdown": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    print(table)
    print(
        f"\naim: tools/call search p95 ≤ {AIM_P95_MS} ms on a {docs_n:,}-document wiki → {p95:.2f} ms "
        f"({'met' if met else 'MISSED'}); engine alone p95 {engine['search'].latency.p95_ms:.2f} ms, "
        f"HTTP floor (get_info) p50 {served['get_info'].latency.p50_ms:.2f} ms"
    )
    if profile:
        print("\ncProfile of WikiSnapshot.search over the queries (cumulative time; memhub's functions):\n")
        print("| function | calls | own s | cumulative s | share of search |")
        print("|---|---:|---:|---:|---:|")
        for row in profile:
            share = f"{row['share']:.0%}" if row["share"] is not None else "—"
            print(
                f"| {row['function']} | {row['calls']:,} | {row['tottime_s']:.3f} | {row['cumtime_s']:.3f} | {share} |"
            )
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
