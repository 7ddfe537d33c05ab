"""ChatClient against a real local HTTP server (FakeChat), and parse_json_loose on sloppy model output."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memhub.llm import ChatClient, LLMConfig, LLMError, parse_json_loose
from tests.fake_clock import FakeClock
from tests.pipeline.fake_llm import FakeChat, Reply

KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture
def fake() -> Iterator[FakeChat]:
    with FakeChat() as server:
        yield server


def make_client(fake: FakeChat, clock: FakeClock | None = None, **overrides: Any) -> ChatClient:
    settings: dict[str, Any] = {
        "base_url": fake.base_url,
        "model": "fake-chat",
        "api_key": KEY,
        "timeout_ms": 5000,  # generous: a reply from a busy machine's loopback is never a timeout
        "max_retries": 3,
        "backoff_base_ms": 10,
        "backoff_max_ms": 40,
        "retry_after_max_ms": 300,
    }
    settings.update(overrides)
    return ChatClient(LLMConfig(**settings), clock.clock() if clock else None)


MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


# -- success path --------------------------------------------------------------------------------------------------


def test_complete_returns_text_model_tokens_and_latency(fake: FakeChat) -> None:
    fake.push(Reply.text("hello", prompt_tokens=12, completion_tokens=3, model="served-model"))
    with make_client(fake, max_tokens=321, temperature=0.5) as client:
        result = client.complete(MESSAGES)
    assert result.text == "hello"
    assert (result.model, result.prompt_tokens, result.completion_tokens) == ("served-model", 12, 3)
    assert result.latency_ms >= 0 and result.attempts == 1 and result.finish_reason == "stop"
    request = fake.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.authorization == f"Bearer {KEY}"
    assert request.body["model"] == "fake-chat"
    assert request.body["messages"] == MESSAGES
    assert request.body["max_tokens"] == 321 and request.body["temperature"] == 0.5
    assert not request.json_mode


def test_base_url_without_v1_posts_to_chat_completions(fake: FakeChat) -> None:
    fake.push("ok")
    client = make_client(fake, base_url=fake.base_url.removesuffix("/v1") + "/")
    assert client.complete(MESSAGES).text == "ok"
    assert fake.requests[0].path == "/chat/completions"


def test_json_mode_sends_response_format_unless_disabled(fake: FakeChat) -> None:
    fake.push("{}", "{}", "{}")
    client = make_client(fake)
    client.complete(MESSAGES, json_mode=True)
    client.complete(MESSAGES)
    make_client(fake, response_format=False).complete(MESSAGES, json_mode=True)
    assert [r.json_mode for r in fake.requests] == [True, False, False]
    assert fake.requests[0].body["response_format"] == {"type": "json_object"}


def test_response_format_rejected_falls_back_once_and_remembers(fake: FakeChat) -> None:
    fake.reject_response_format = True
    fake.push("[1]", "[2]")
    client = make_client(fake)
    assert client.complete(MESSAGES, json_mode=True).text == "[1]"
    assert client.complete(MESSAGES, json_mode=True).text == "[2]"
    # one rejected request, then both calls without the field
    assert [r.json_mode for r in fake.requests] == [True, False, False]


def test_missing_content_is_empty_text(fake: FakeChat) -> None:
    fake.push(Reply(content=None, finish_reason="content_filter"))
    result = make_client(fake).complete(MESSAGES)
    assert result.text == "" and result.finish_reason == "content_filter"


# -- retries -------------------------------------------------------------------------------------------------------


def test_500_then_success_is_retried(fake: FakeChat) -> None:
    fake.push(Reply.fail(500), Reply.fail(503), "fine")
    result = make_client(fake).complete(MESSAGES)
    assert result.text == "fine" and result.attempts == 3
    assert fake.request_count == 3


def test_429_honours_retry_after(fake: FakeChat) -> None:
    fake.push(Reply.fail(429, "slow down", retry_after=0.15), "fine")
    clock = FakeClock()
    result = make_client(fake, clock, timeout_ms=1000).complete(MESSAGES)
    assert result.text == "fine"
    assert clock.slept == [0.15]  # the provider's hint, longer than the 5-10 ms backoff
    assert fake.request_count == 2


def test_retry_after_is_capped(fake: FakeChat) -> None:
    fake.push(Reply.fail(429, retry_after=60), "fine")
    clock = FakeClock()
    result = make_client(fake, clock, timeout_ms=1000, retry_after_max_ms=50).complete(MESSAGES)
    assert result.text == "fine"
    assert clock.slept == [0.05]


def test_retry_after_beyond_budget_fails_at_once(fake: FakeChat) -> None:
    fake.push(Reply.fail(429, retry_after=5), "never")
    clock = FakeClock()
    with pytest.raises(LLMError) as info:
        make_client(fake, clock, retry_after_max_ms=10_000, budget_ms=400).complete(MESSAGES)
    assert clock.slept == []  # no wait that could only end past the budget
    assert info.value.retryable and info.value.status == 429
    assert fake.request_count == 1


def test_timeout_then_success_is_retried(fake: FakeChat) -> None:
    # The first attempt gets no answer until the fake stops; a busy machine may time out one more.
    fake.push(Reply.slow(600), "fine", "fine")
    result = make_client(fake, FakeClock(), timeout_ms=1000, max_retries=3).complete(MESSAGES)
    assert result.text == "fine" and result.attempts >= 2
    assert fake.requests[0].reply is not None and fake.requests[0].reply.delay == 600


def test_malformed_body_is_retried(fake: FakeChat) -> None:
    fake.push(Reply.malformed(), "fine")
    assert make_client(fake).complete(MESSAGES).text == "fine"
    assert fake.request_count == 2


def test_dropped_connection_is_retried(fake: FakeChat) -> None:
    fake.push(Reply(drop=True), "fine")
    assert make_client(fake).complete(MESSAGES).text == "fine"


def test_persistent_500_gives_up_after_max_retries(fake: FakeChat) -> None:
    fake.script = Reply.fail(500, "boom")
    with pytest.raises(LLMError) as info:
        make_client(fake, max_retries=2).complete(MESSAGES)
    assert info.value.retryable is True and info.value.status == 500
    assert fake.request_count == 3
    assert "3 attempt(s)" in str(info.value) and "boom" in str(info.value)


def test_total_budget_is_respected(fake: FakeChat) -> None:
    clock = FakeClock()

    def failing_slowly(_: dict[str, Any]) -> Reply:  # the attempt used 2 s of the budget, then failed
        clock.now += 2.0
        return Reply.fail(503, "overloaded")

    def stalled(_: dict[str, Any]) -> Reply:  # the provider stops answering for longer than the budget
        clock.now += 10.0
        return Reply.slow(600)

    fake.push(failing_slowly, failing_slowly, stalled)
    client = make_client(
        fake, clock, timeout_ms=2000, budget_ms=5000, max_retries=10, backoff_base_ms=1, backoff_max_ms=1
    )
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    # Two 2 s attempts and two ~1 ms pauses leave ~0.998 s: the third attempt is cut to that, not the 2 s
    # per-attempt timeout, and nothing is tried once the budget is gone, though 10 retries were allowed.
    assert fake.request_count == 3 and len(clock.slept) == 2 and max(clock.slept) <= 0.001
    assert "after 3 attempt(s)" in str(info.value) and "timed out after 1.00s" in str(info.value)
    assert info.value.retryable


def test_no_attempt_starts_without_time_left_for_it(fake: FakeChat) -> None:
    clock = FakeClock()

    def failing_slowly(_: dict[str, Any]) -> Reply:
        clock.now += 4.96  # leaves 0.04 s: less than a backoff plus the shortest attempt worth starting
        return Reply.fail(500)

    fake.push(failing_slowly, "never sent")
    with pytest.raises(LLMError) as info:
        make_client(fake, clock, budget_ms=5000, max_retries=10).complete(MESSAGES)
    assert fake.request_count == 1 and clock.slept == [] and fake.pending == 1
    assert info.value.retryable and info.value.status == 500


def test_connection_refused_is_retryable(fake: FakeChat) -> None:
    client = make_client(fake, max_retries=1)
    fake.stop()
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert info.value.retryable and info.value.status is None


def test_backoff_grows_with_jitter_and_is_capped(fake: FakeChat) -> None:
    client = make_client(fake, backoff_base_ms=100, backoff_max_ms=350)
    for _ in range(20):
        assert 0.05 <= client._backoff(1) <= 0.1
        assert 0.1 <= client._backoff(2) <= 0.2
        assert 0.175 <= client._backoff(5) <= 0.35
    assert len({client._backoff(3) for _ in range(10)}) > 1  # jittered


# -- final errors --------------------------------------------------------------------------------------------------


def test_401_is_not_retried_and_key_is_not_leaked(fake: FakeChat) -> None:
    fake.api_key = "the-right-key"
    with pytest.raises(LLMError) as info:
        make_client(fake).complete(MESSAGES)
    assert info.value.retryable is False and info.value.status == 401
    assert fake.request_count == 1
    assert KEY not in str(info.value) and "***" in str(info.value)  # the fake echoed the header back
    assert KEY not in repr(make_client(fake).config)


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_4xx_are_not_retried(fake: FakeChat, status: int) -> None:
    fake.push(Reply.fail(status, "nope"), "never")
    with pytest.raises(LLMError) as info:
        make_client(fake).complete(MESSAGES)
    assert info.value.retryable is False and info.value.status == status
    assert fake.request_count == 1


def test_400_about_response_format_without_json_mode_is_final(fake: FakeChat) -> None:
    fake.push(Reply.fail(400, "response_format is weird"), "never")
    with pytest.raises(LLMError) as info:
        make_client(fake).complete(MESSAGES)
    assert info.value.retryable is False
    assert fake.request_count == 1


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        ChatClient(LLMConfig(base_url="", model="m"))
    with pytest.raises(ValueError):
        ChatClient(LLMConfig(base_url="ftp://x", model="m"))
    with pytest.raises(ValueError):
        ChatClient(LLMConfig(base_url="http://x", model=" "))
    with pytest.raises(ValueError):
        ChatClient(LLMConfig(base_url="http://x", model="m", timeout_ms=0))


def test_closed_client_fails_without_retry(fake: FakeChat) -> None:
    client = make_client(fake)
    client.close()
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert not info.value.retryable and fake.request_count == 0


def test_client_is_thread_safe(fake: FakeChat) -> None:
    fake.script = lambda body: Reply.text(body["messages"][-1]["content"].upper())
    client = make_client(fake)
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = client.complete([{"role": "user", "content": f"msg {i}"}]).text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: f"MSG {i}" for i in range(12)}


# -- JSON repair ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"a": 1}]', [{"a": 1}]),
        ('```json\n[{"a": 1}]\n```', [{"a": 1}]),
        ('```\n{"a": 1}\n```\nDone!', {"a": 1}),
        ('Sure! Here is the result:\n[{"a": 1}]\nLet me know [if] you need more.', [{"a": 1}]),
        ('Result [the list]: [{"a": 1}, {"a": 2}] ok', [{"a": 1}, {"a": 2}]),
        ('[{"a": 1,}, {"b": [1, 2,],},]', [{"a": 1}, {"b": [1, 2]}]),
        ("{'a': 'b', 'c': [True, False, None]}", {"a": "b", "c": [True, False, None]}),
        ('{a: 1, b_key: "x"}', {"a": 1, "b_key": "x"}),
        ('{"a": "line1\nline2\ttab"}', {"a": "line1\nline2\ttab"}),
        ('{"content": "用户说"你好"", "p": 1}', {"content": '用户说"你好"', "p": 1}),
        ("{'c': 'the user's cat'}", {"c": "the user's cat"}),
        ('\ufeff{"x": 1}', {"x": 1}),
        ('[{"a": 1}, {"b": 2', [{"a": 1}]),
        ("[1, 2, 3", [1, 2]),
        ('["a", "b"', ["a", "b"]),
        ('["a", "unfinished', ["a"]),
        (
            '[{"scene_name": "s", "memories": [{"content": "a", "type": "persona"}, {"content": "b", "ty',
            [{"scene_name": "s", "memories": [{"content": "a", "type": "persona"}, {"content": "b"}]}],
        ),
        ('```json\n[{"a": 1}, {"b"', [{"a": 1}]),
        ('[{"a": 1} {"b": 2}]', [{"a": 1}, {"b": 2}]),
        ('{"a": 1} // trailing comment', {"a": 1}),
        ('{"a": /* why */ 1}', {"a": 1}),
        ("<think>maybe [1]?</think>\n[2]", [2]),
        ('{"a": "\\u4e2d\\u6587", "b": "\\ud83d\\ude00"}', {"a": "中文", "b": "😀"}),
        ('{"type": persona, "n": -1.5e2}', {"type": "persona", "n": -150.0}),
        ('{"a": [1, 2]]}', {"a": [1, 2]}),
        ("[]", []),
        ('"just a string"', "just a string"),
        ('{"a": NaN, "b": undefined}', {"a": None, "b": None}),
    ],
)
def test_parse_json_loose_repairs(text: str, expected: Any) -> None:
    assert parse_json_loose(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[", "{", '{"a', "```json\n```", "\ufeff"])
def test_parse_json_loose_raises_when_nothing_usable(text: str) -> None:
    with pytest.raises(ValueError):
        parse_json_loose(text)


def test_parse_json_loose_survives_deep_nesting() -> None:
    with pytest.raises(ValueError):
        parse_json_loose("[" * 5000)
    assert parse_json_loose("[" * 50 + "]" * 50) is not None
