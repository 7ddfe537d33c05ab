"""A long prompt is embedded from its likeliest ask, within the cap; a question is embedded whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.memory.embedding import QUERY_MAX_TOKENS, QUERY_WHOLE_TOKENS, EmbeddingRuntime
from memhub.retrieval.packing import estimate_tokens
from memhub.retrieval.query_focus import focus_query
from memhub.store.sqlite import SQLiteStore

PREAMBLE = "We shipped the beta last month and the support queue doubled. Most tickets are about login. " * 8


def test_a_text_within_the_cap_is_returned_as_is() -> None:
    text = "When did Caroline go to the support group?"
    assert focus_query(text, 24) == text


@pytest.mark.parametrize(
    ("prompt", "ask"),
    [
        (PREAMBLE + "Anyway, what did Caroline say about the billing migration? Thanks.", "what did Caroline say"),
        ("What did Caroline say about the billing migration? " + PREAMBLE, "what did Caroline say"),
        (PREAMBLE + "Tell me who owns the staging cluster now", "who owns the staging cluster"),
        (
            "我们上个月发布了测试版，支持队列翻了一倍。" * 6 + "卡罗琳对计费迁移说了什么？谢谢。",
            "卡罗琳对计费迁移说了什么？",
        ),
    ],
)
def test_the_question_is_kept_wherever_it_stands(prompt: str, ask: str) -> None:
    focused = focus_query(prompt, 24)
    assert ask.casefold() in focused.casefold()
    assert estimate_tokens(focused) <= 24


def test_without_a_question_the_last_then_the_first_sentence_are_kept() -> None:
    sentences = [f"Sentence number {n} talks about topic {n} at length." for n in range(12)]
    focused = focus_query(" ".join(sentences), 30)
    assert focused == f"{sentences[0]} {sentences[-1]}"


def test_sentences_come_back_in_their_order() -> None:
    prompt = "Is the cluster up? " + PREAMBLE + "Who restarted it?"
    assert focus_query(prompt, 12) == "Is the cluster up? Who restarted it?"


def test_a_fenced_block_is_left_out_while_there_is_prose() -> None:
    trace = "```\nTraceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'token'\n```\n"
    prompt = "Please fix this:\n" + trace + "The login handler fails when the token expires."
    focused = focus_query(prompt, 20)
    assert "Traceback" not in focused
    assert "login handler fails" in focused


def test_one_sentence_over_the_cap_keeps_its_head() -> None:
    sentence = "what did the team decide about " + " and ".join(f"item {n}" for n in range(60)) + "?"
    focused = focus_query(sentence, 16)
    assert sentence.startswith(focused)
    assert 0 < estimate_tokens(focused) <= 16


def test_the_runtime_embeds_questions_whole_and_prompts_focused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    try:
        runtime = EmbeddingRuntime(store, None, provider="none", query_focus_tokens=24)
        question = "What did Caroline research about adoption agencies and their support for the community"
        assert estimate_tokens(question) <= QUERY_WHOLE_TOKENS
        assert runtime.query_text(question) == question
        prompt = PREAMBLE + "So what did Caroline research?"
        focused = runtime.query_text(prompt)
        assert focused.endswith("So what did Caroline research?")
        assert estimate_tokens(focused) <= 24
        head_only = EmbeddingRuntime(store, None, provider="none", query_focus_tokens=0)
        assert head_only.query_text(prompt) == prompt[: QUERY_MAX_TOKENS * 4]
    finally:
        store.close()
