"""Golden tests of the retrieval walk (question → themes → documents) on the fixture knowledge tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.knowledge.wiki.index import WikiIndex, load_index
from memhub.knowledge.wiki.walk import (
    SKIP_CONVERSATION,
    SKIP_DATA,
    asks_about_past,
    extract_paths,
    is_data_question,
    walk,
)

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"


@pytest.fixture(scope="module")
def index() -> WikiIndex:
    return load_index(FIXTURE)


# (question, expected themes, expected documents in rank order)
GOLDEN = [
    ("How do refunds work and who approves them?", ["payments"], ["payments/refunds", "handbook"]),
    ("退款需要谁审批？", ["payments"], ["payments/refunds-zh"]),
    (
        "What was the old refund policy before 2023?",
        ["payments", "standards"],
        ["payments/refund-policy-2022", "payments/refunds"],
    ),
    ("以前的请假制度是怎样的？", ["hr"], ["hr/leave-policy-2019", "hr/leave-policy"]),
    ("我有几天年假？", ["hr"], ["hr/leave-policy"]),
    ("How many days of annual leave do I get?", ["hr"], ["hr/leave-policy", "handbook"]),
    (
        "How should I name things in src/payments/api/refund.py?",
        ["payments"],
        ["payments/payments-code-style", "payments/refunds", "handbook"],
    ),
    (
        "Please review web/App.tsx for style",
        ["engineering", "standards"],
        ["engineering/frontend-style", "engineering/code-review"],
    ),
    ("How do I roll back a deploy?", ["engineering"], ["engineering/deploy-runbook"]),
    ("What are the password rules?", ["standards"], ["standards/security-baseline"]),
    ("差旅住宿标准是多少钱一晚？", ["hr"], ["hr/expenses"]),
    ("How do I get laptop access?", ["engineering", "hr"], ["handbook"]),
    ("结算周期是什么意思", ["engineering", "hr"], ["glossary-zh"]),
    ("xyzzy plugh", ["engineering", "hr"], ["engineering/code-review", "engineering/deploy-runbook", "hr/expenses"]),
]


@pytest.mark.parametrize(("question", "themes", "documents"), GOLDEN, ids=[g[0][:40] for g in GOLDEN])
def test_golden_walk(index: WikiIndex, question: str, themes: list[str], documents: list[str]) -> None:
    result = walk(index, question)
    assert result.skipped_reason is None
    assert [t.id for t in result.themes] == themes
    assert [d.id for d in result.documents] == documents


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("How many orders did we ship last month in the sales database?", SKIP_DATA),
        ("上个月订单总数是多少？查一下数据库", SKIP_DATA),
        ("What did we discuss yesterday?", SKIP_CONVERSATION),
        ("Can you recap our conversation?", SKIP_CONVERSATION),
        ("我们刚才聊了什么？", SKIP_CONVERSATION),
        ("之前问过哪些问题", SKIP_CONVERSATION),
    ],
)
def test_skipped_questions(index: WikiIndex, question: str, reason: str) -> None:
    result = walk(index, question)
    assert result.skipped_reason == reason
    assert result.themes == () and result.documents == ()


def test_numbers_question_skips_only_against_a_data_connection(index: WikiIndex) -> None:
    assert not is_data_question("How many days of annual leave do I get?")
    assert is_data_question("How many days of annual leave do I get?", data_connection=True)
    assert walk(index, "统计本月新增员工多少人", data_connection=True).skipped_reason == SKIP_DATA


def test_fallback_themes_are_flagged(index: WikiIndex) -> None:
    result = walk(index, "xyzzy plugh")
    assert all(t.fallback and t.score == 0 for t in result.themes)


def test_archived_only_when_asking_about_the_past(index: WikiIndex) -> None:
    current = walk(index, "refund policy notice")
    assert "payments/refund-policy-2022" not in [d.id for d in current.documents]
    past = walk(index, "previous refund policy notice")
    assert past.past and past.documents[0].id == "payments/refund-policy-2022"
    forced = walk(index, "refund policy notice", past=True)
    assert "payments/refund-policy-2022" in [d.id for d in forced.documents]


def test_draft_standards_are_never_picked(index: WikiIndex) -> None:
    for question in ("password policy draft", "Password policy (draft) proposed rotation", "旧 password policy"):
        assert "standards/password-policy-draft" not in [d.id for d in walk(index, question).documents]


def test_paths_entries_need_a_matching_path(index: WikiIndex) -> None:
    question = "payments code conventions idempotency"
    assert "payments/payments-code-style" not in [d.id for d in walk(index, question).documents]
    assert "payments/payments-code-style" not in [
        d.id for d in walk(index, question, paths=["src/orders/x.py"]).documents
    ]
    hit = walk(index, question, paths=["/home/me/repo/src/payments/ledger.py"])
    assert hit.documents[0].id == "payments/payments-code-style"
    assert hit.documents[0].matched_globs == ("src/payments/**",)
    attachment = walk(index, "component style", paths=["Button.tsx"])
    assert attachment.documents[0].id == "engineering/frontend-style"
    assert attachment.documents[0].matched_globs == ("**/*.tsx",)


def test_a_matching_document_glob_opens_its_theme_even_when_the_words_miss_it(index: WikiIndex) -> None:
    question = "How should I name things?"
    assert "payments" not in [t.id for t in walk(index, question).themes]
    hit = walk(index, question, paths=["src/payments/api/refund.py"])
    assert "payments" in [t.id for t in hit.themes]
    assert hit.documents[0].id == "payments/payments-code-style"
    assert hit.documents[0].matched_globs == ("src/payments/**",)


def test_caps_on_themes_and_documents(index: WikiIndex) -> None:
    result = walk(index, "refund policy approval deploy runbook review leave 请假 报销")
    assert len(result.themes) == 2
    assert len(result.documents) == 3
    per_theme: dict[str | None, int] = {}
    for doc in result.documents:
        per_theme[doc.theme] = per_theme.get(doc.theme, 0) + 1
    assert max(per_theme.values()) <= 2


@pytest.mark.parametrize(
    ("question", "past"),
    [
        ("What was the previous policy?", True),
        ("show the history of the deploy process", True),
        ("the old refund rules", True),
        ("what did the policy say last year", True),
        ("以前的报销标准", True),
        ("历史通知", True),
        ("之前的流程", True),
        ("旧版制度", True),
        ("What is the refund policy?", False),
        ("现在的请假制度", False),
        ("Check this before you deploy", False),
    ],
)
def test_past_detection(question: str, past: bool) -> None:
    assert asks_about_past(question) is past


def test_extract_paths() -> None:
    message = "See src/payments/api.py, web/App.tsx and README.md (not https://x.io/a/b) — 还有 docs\\guide.md。"
    assert extract_paths(message) == ("src/payments/api.py", "web/App.tsx", "README.md", "docs\\guide.md")


def test_walk_is_deterministic(index: WikiIndex) -> None:
    assert walk(index, "退款需要谁审批？") == walk(index, "退款需要谁审批？")
