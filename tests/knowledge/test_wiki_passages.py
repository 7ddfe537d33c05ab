"""Passages and the capped knowledge block (the last two steps of the retrieval walk) on the fixture
articles."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.knowledge.wiki.passages import (
    CAP_AGENT,
    CAP_WORKSPACE,
    TRUNCATION_MARKER,
    Source,
    assemble,
    blocks,
    cap_for,
    select_passages,
    split_passages,
)

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"


def _read(rel: str) -> str:
    return (FIXTURE / rel).read_text(encoding="utf-8")


def _tables(text: str) -> list[str]:
    return [b.text for b in blocks(text) if b.atomic and b.text.lstrip().startswith("|")]


def test_short_article_is_one_passage() -> None:
    [passage] = split_passages(_read("payments/refunds.md"))
    assert passage.heading == "Refund policy"
    assert passage.text.startswith("# Refund policy\n") and "title:" not in passage.text
    assert "| ≥ 500 EUR | Finance lead | 5 days |" in passage.text


def test_long_english_article_merges_by_heading() -> None:
    text = _read("engineering/deploy-runbook.md")
    assert len(text) > 5000
    passages = split_passages(text)
    assert [p.heading for p in passages] == [
        "Deploy runbook",
        "Stage 2: checks before stage 2",
        "Stage 3: checks before stage 3",
        "Stage 4: checks before stage 4",
        "Stage 5: checks before stage 5",
        "Stage 6: checks before stage 6",
        "Release calendar",
        "Rollback",
    ]
    [calendar] = [p for p in passages if p.heading == "Release calendar"]
    # The 30-row table is larger than the ~1,200 target, and still whole.
    assert len(calendar.text) > 1200
    [table] = _tables(calendar.text)
    assert table.count("\n") == 31
    assert all(len(p.text) <= 1200 for p in passages if p is not calendar)


def test_long_chinese_article_never_cuts_its_table() -> None:
    text = _read("hr/expenses.md")
    assert len(text) > 5000
    passages = split_passages(text)
    assert [p.heading for p in passages] == ["报销制度", "餐饮补贴", "培训费用", "城市住宿标准表", "附则"]
    tables = [t for p in passages for t in _tables(p.text)]
    assert len(tables) == 1 and tables[0].count("\n") == 61


def test_select_passages_prefers_hits_in_reading_order() -> None:
    text = _read("engineering/deploy-runbook.md")
    [rollback] = select_passages(text, "redeploy incidents approval")
    assert rollback.heading == "Rollback"
    assert [p.heading for p in select_passages(text, "xyzzy")] == ["Deploy runbook"]
    [housing] = select_passages(_read("hr/expenses.md"), "城市住宿标准表", limit=1)
    assert housing.heading == "城市住宿标准表"


def test_caps() -> None:
    assert (cap_for("workspace"), cap_for("agent"), cap_for("help")) == (6000, 8000, 8000)


def test_block_under_cap_is_untouched() -> None:
    source = Source("payments/refunds", "Refund policy", "payments/refunds.md", _read("payments/refunds.md"))
    block = assemble([source], "refund approval")
    assert not block.truncated
    assert block.text.startswith("[source: payments/refunds.md — Refund policy]\n# Refund policy\n")
    assert block.chars == len(block.text) < CAP_WORKSPACE


def _sized_source(size: int, char: str = "字") -> Source:
    # Header "[source: a.md — A]\n" is 19 code points; the body makes up the rest.
    return Source("a", "A", "a.md", char * (size - 19))


def test_exactly_at_cap_is_not_truncated_and_one_over_is() -> None:
    exact = assemble([_sized_source(100)], "x", cap=100)
    assert not exact.truncated and exact.chars == 100
    over = assemble([_sized_source(101)], "x", cap=100)
    assert over.truncated and over.chars == 100 and over.text.endswith(TRUNCATION_MARKER)


def test_cap_counts_code_points_not_bytes_or_utf16_units() -> None:
    # U+20000 is one code point, four UTF-8 bytes and two UTF-16 units.
    block = assemble([_sized_source(100, "\U00020000")], "x", cap=100)
    assert not block.truncated and len(block.text) == 100
    assert len(block.text.encode("utf-8")) > 300


def test_truncation_drops_a_table_that_does_not_fit_instead_of_cutting_it() -> None:
    text = "# T\n\nIntro line.\n\n| a | b |\n| --- | --- |\n" + "".join(f"| {i} | 值{i} |\n" for i in range(200))
    block = assemble([Source("t", "T", "t.md", text)], "x", cap=300)
    assert block.truncated and block.chars <= 300
    assert "| a | b |" not in block.text
    assert block.text == "[source: t.md — T]\n# T\n\nIntro line." + TRUNCATION_MARKER


def test_truncation_cuts_prose_at_a_word_boundary() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    block = assemble([Source("p", "P", "p.md", words)], "x", cap=120)
    body = block.text.removeprefix("[source: p.md — P]\n").removesuffix(TRUNCATION_MARKER)
    assert block.chars <= 120 and words.startswith(body) and words[len(body)] == " "


def test_assembled_golden_for_workspace_and_agent_caps() -> None:
    sources = [
        Source(
            "engineering/deploy-runbook",
            "Deploy runbook",
            "engineering/deploy-runbook.md",
            _read("engineering/deploy-runbook.md"),
        ),
        Source("hr/expenses", "报销制度", "hr/expenses.md", _read("hr/expenses.md")),
    ]
    question = "stage checks canary metrics 报销 发票 住宿"
    workspace = assemble(sources, question, cap=CAP_WORKSPACE)
    agent = assemble(sources, question, cap=CAP_AGENT)
    assert workspace.truncated and workspace.chars == len(workspace.text) <= CAP_WORKSPACE
    assert workspace.text.endswith(TRUNCATION_MARKER)
    assert [(p.doc_id, p.heading, p.truncated) for p in workspace.passages] == [
        ("engineering/deploy-runbook", "Deploy runbook", False),
        ("engineering/deploy-runbook", "Stage 2: checks before stage 2", False),
        ("engineering/deploy-runbook", "Stage 3: checks before stage 3", False),
        ("engineering/deploy-runbook", "Stage 4: checks before stage 4", False),
        ("engineering/deploy-runbook", "Stage 5: checks before stage 5", False),
        ("engineering/deploy-runbook", "Stage 6: checks before stage 6", False),
        ("hr/expenses", "报销制度", True),
    ]
    assert agent.chars <= CAP_AGENT and len(agent.passages) > len(workspace.passages)
    # Every table in the block is whole: the 60-row housing table either appears complete or not at all.
    for block in (workspace, agent):
        for table in _tables(block.text):
            assert table.count("\n") in (31, 61)
    assert assemble(sources, question, cap=CAP_WORKSPACE) == workspace  # deterministic


@pytest.mark.parametrize("cap", [50, 200, 1000, 6000])
def test_never_over_cap(cap: int) -> None:
    sources = [Source("hr/expenses", "报销制度", "hr/expenses.md", _read("hr/expenses.md"))]
    assert assemble(sources, "住宿 标准 报销", cap=cap).chars <= cap
