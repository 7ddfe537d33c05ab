"""The heuristic task judge: closing, switching, continuing and starting tasks, in English and Chinese."""

from __future__ import annotations

import re

import pytest

from memhub.model.offload import RecentTurn, TaskJudgment
from memhub.offload.graph import filename_for
from memhub.offload.stages import GraphDigest
from memhub.offload.tasks import HeuristicTaskJudge, content_words, task_label

LOGIN = "001-fix-the-login-redirect.mmd"
CSV = "002-add-csv-export.mmd"
GRAPHS = [
    GraphDigest(LOGIN, "fix the login redirect", done=3, doing=1, todo=0),
    GraphDigest(CSV, "add CSV export to the reports page", done=2, doing=0, todo=1),
]
RECENT = [
    RecentTurn("user", "The login page redirects twice after sign-in, fix it"),
    RecentTurn("assistant", "I changed src/auth.py so the redirect target is checked once; the tests pass now."),
]

judge = HeuristicTaskJudge().judge


def continues(graph: str | None) -> TaskJudgment:
    return TaskJudgment(task_completed=False, is_long_task=True, is_continuation=True, continuation_graph=graph)


def resumes(graph: str) -> TaskJudgment:
    return TaskJudgment(task_completed=True, is_long_task=True, is_continuation=True, continuation_graph=graph)


ENDS = TaskJudgment(task_completed=True, is_long_task=False, is_continuation=False)


def starts(label: str) -> TaskJudgment:
    return TaskJudgment(task_completed=True, is_long_task=True, is_continuation=False, new_task_label=label)


@pytest.mark.parametrize(
    "prompt",
    [
        "continue",
        "go on",
        "ok, keep going",
        "also handle the logout redirect",
        "now fix the failing test",
        "thanks! now add tests for it",
        "why does it still redirect twice?",
        "what about the session cookie?",
        "继续",
        "接着做",
        "还有，把错误提示改成中文",
        "那个跳转还是有问题",
    ],
)
def test_prompts_that_carry_on_continue_the_active_graph(prompt: str) -> None:
    assert judge(prompt, RECENT, GRAPHS, LOGIN) == continues(LOGIN)


@pytest.mark.parametrize(
    "prompt", ["thanks, that's all", "Perfect, thank you!", "lgtm", "好了，谢谢", "搞定了，辛苦了"]
)
def test_a_sign_off_ends_the_task(prompt: str) -> None:
    assert judge(prompt, RECENT, GRAPHS, LOGIN) == ENDS


def test_thanks_followed_by_a_request_is_not_a_sign_off() -> None:
    assert judge("Thanks, that works. Now also fix the redirect for the logout page", RECENT, GRAPHS, LOGIN) == (
        continues(LOGIN)
    )


def test_an_explicit_new_task_starts_one() -> None:
    assert judge("New task: refactor the API client. It is slow.", RECENT, GRAPHS, LOGIN) == starts(
        "refactor the API client"
    )
    assert judge("新任务：实现用户注册接口，需要邮箱验证", RECENT, GRAPHS, LOGIN) == starts("实现用户注册接口")


def test_a_request_on_another_topic_starts_a_new_task() -> None:
    judgment = judge("Write a Dockerfile for the worker service", RECENT, GRAPHS, LOGIN)
    assert judgment == starts("Write a Dockerfile for the worker service")


def test_a_request_sharing_the_topic_stays_on_the_task() -> None:
    assert judge("Make the redirect target configurable", RECENT, GRAPHS, LOGIN) == continues(LOGIN)


def test_a_prompt_naming_another_graph_resumes_it() -> None:
    assert judge("let's get back to the CSV export for the reports", RECENT, GRAPHS, LOGIN) == resumes(CSV)
    assert judge("Back to the CSV export on the reports page please", [], GRAPHS, None) == resumes(CSV)


def test_naming_the_active_graph_continues_it() -> None:
    assert judge("the login redirect is still broken on mobile", RECENT, GRAPHS, LOGIN) == continues(LOGIN)


def test_one_shared_word_does_not_name_a_graph() -> None:
    # "export" alone is not "add CSV export to the reports page".
    assert judge("Export the logs to S3 every night", [], GRAPHS, None) == starts("Export the logs to S3 every night")


def test_continue_without_an_active_task_resumes_the_latest_unfinished_graph() -> None:
    assert judge("continue", [], GRAPHS, None) == resumes(CSV)
    finished = [GraphDigest(LOGIN, "fix the login redirect", 4, 0, 0)]
    assert judge("continue", [], finished, None) == TaskJudgment(True, False, False)


@pytest.mark.parametrize(
    "prompt",
    ["what is a closure?", "How does Python's GIL work?", "什么是闭包？", "hello", "Is Redis single-threaded?"],
)
def test_questions_and_chat_without_a_task_are_short(prompt: str) -> None:
    assert judge(prompt, [], GRAPHS, None) == ENDS


@pytest.mark.parametrize(
    ("prompt", "label"),
    [
        ("Implement OAuth login with GitHub, then add tests", "Implement OAuth login with GitHub"),
        ("Can you refactor src/memhub/offload/graph.py to split parsing out?", "refactor src/memhub/offload/graph.py"),
        ("please fix the flaky test in tests/test_worker.py", "fix the flaky test in tests/test_worker.py"),
        ("帮我实现一个用户注册接口，需要邮箱验证", "实现一个用户注册接口"),
        ("How do I fix this? Please fix the build on CI", "Please fix the build on CI"),
    ],
)
def test_requests_without_a_task_start_a_long_one(prompt: str, label: str) -> None:
    judgment = judge(prompt, [], [], None)
    assert judgment.task_completed and judgment.is_long_task and not judgment.is_continuation
    assert judgment.new_task_label == label or judgment.new_task_label == task_label(prompt)


def test_a_long_specification_is_a_long_task_whatever_its_verbs() -> None:
    spec = "The worker service " + "needs to respect the queue priorities and the rate limits of each tenant. " * 8
    assert judge(spec, [], [], None).is_long_task


def test_labels_are_short_first_clauses_and_safe_file_stems() -> None:
    assert task_label("New task: refactor the API client. It is slow.") == "refactor the API client"
    assert task_label("Could you please port the parser to Rust; keep the tests") == "port the parser to Rust"
    assert task_label("fix src/app.py. Then test") == "fix src/app.py"
    assert task_label("  ") == "task"
    assert len(task_label("word " * 100)) <= 60
    for prompt in ("Implement OAuth", "../../etc/passwd: rewrite it", "修复登录跳转", "🙂"):
        assert re.fullmatch(r"[a-z0-9-]+\.mmd", filename_for(task_label(prompt), []))


def test_content_words_skip_stop_words_and_pair_chinese_characters() -> None:
    assert content_words("Please fix the redirects in the login page") == {"redirect", "login", "page"}
    assert content_words("修复登录") == {"修复", "复登", "登录"}


def test_the_judgment_is_deterministic() -> None:
    for prompt in ("continue", "Write a Dockerfile", "好了", "back to the CSV export"):
        assert judge(prompt, RECENT, GRAPHS, LOGIN) == judge(prompt, RECENT, GRAPHS, LOGIN)
