"""Token counts: a real BPE vocabulary, the text a provider tokenises in each format, and the message cache."""

from __future__ import annotations

import json
import threading
from typing import Any

import bpe_openai
import pytest

from memhub.offload import tokens
from memhub.offload.tokens import (
    ATTACHMENT_TOKENS,
    MESSAGE_FRAMING_TOKENS,
    TokenCounter,
    count_tokens,
    encoding_for_model,
    message_digest,
    message_tokens,
)

O200K = bpe_openai.get_encoding("o200k_base")


def plain(text: str) -> int:
    return len(O200K.encode_ordinary(text))


def test_count_tokens_is_the_vocabularys_count() -> None:
    text = "def compact(messages):\n    return [m for m in messages if m]  # 压缩上下文\n"
    assert count_tokens(text) == plain(text)
    assert count_tokens("") == 0


def test_text_that_looks_like_a_special_token_is_counted_as_text() -> None:
    assert count_tokens("a <|endoftext|> b") == plain("a <|endoftext|> b")


def test_text_beyond_the_tokenizers_per_call_limits_is_counted_in_pieces() -> None:
    line = "x = lookup(key, scope=scope)  # one line of a long log\n"
    text = line * 25_000  # 1.4M characters: over the library's 1M-character and 200k-token limits
    assert count_tokens(text) == plain(line) * 25_000


def test_a_string_message_is_its_role_and_content_plus_framing() -> None:
    message = {"role": "user", "content": "Run the store tests and tell me what fails."}
    assert (
        message_tokens(message) == plain("user\nRun the store tests and tell me what fails.") + MESSAGE_FRAMING_TOKENS
    )


def test_openai_tool_calls_count_their_names_and_arguments() -> None:
    arguments = json.dumps({"command": "pytest -q tests/store", "description": "Run the store tests"})
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": arguments}}],
    }
    assert message_tokens(message) == plain(f"assistant\nBash\n{arguments}") + MESSAGE_FRAMING_TOKENS


def test_anthropic_blocks_count_text_tool_use_input_and_nested_tool_result_content() -> None:
    tool_input = {"file_path": "/repo/src/store.py"}
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me read it."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": tool_input},
        ],
    }
    assert message_tokens(assistant) == (
        plain(f"assistant\nLet me read it.\nRead\n{json.dumps(tool_input)}") + MESSAGE_FRAMING_TOKENS
    )
    result = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "1\timport os"}, {"type": "text", "text": "2\timport re"}],
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }
    assert message_tokens(result) == plain("user\n1\timport os\n2\timport re") + MESSAGE_FRAMING_TOKENS


def test_responses_items_count_calls_and_outputs() -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd": "ls"}'}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "README.md\nsrc\ntests"}
    assert message_tokens(call) == plain('shell\n{"cmd": "ls"}') + MESSAGE_FRAMING_TOKENS
    assert message_tokens(output) == plain("README.md\nsrc\ntests") + MESSAGE_FRAMING_TOKENS


def test_metadata_and_ids_are_not_counted() -> None:
    bare = {"role": "toolResult", "toolCallId": "call_1", "content": [{"type": "text", "text": "ok"}]}
    with_metadata = {**bare, "timestamp": 1_760_000_000_000, "usage": {"input": 12_000}, "details": {"raw": "x" * 5000}}
    assert message_tokens(with_metadata) == message_tokens(bare)
    wrapped = {"type": "message", "id": "entry-1", "message": bare}
    assert message_tokens(wrapped) == message_tokens(bare)


def test_an_image_costs_a_fixed_amount_not_its_base64() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 50_000}}
    message = {"role": "user", "content": [{"type": "text", "text": "What is wrong here?"}, image]}
    expected = plain("user\nWhat is wrong here?") + ATTACHMENT_TOKENS + MESSAGE_FRAMING_TOKENS
    assert message_tokens(message) == expected


class CountingEncoding:
    """An encoding that counts how often it is asked to tokenise."""

    def __init__(self) -> None:
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return O200K.encode_ordinary(text)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingEncoding:
    encoding = CountingEncoding()
    monkeypatch.setattr(tokens.bpe_openai, "get_encoding", lambda name: encoding)
    return encoding


def test_a_message_seen_before_is_not_tokenised_again(counting: CountingEncoding) -> None:
    counter = TokenCounter()
    message = {"role": "user", "content": "hello " * 100}
    first = counter.message_tokens(message)
    assert counting.calls == 1
    assert counter.message_tokens({"content": "hello " * 100, "role": "user"}) == first  # same JSON, other key order
    assert counting.calls == 1
    counter.message_tokens({"role": "user", "content": "hello " * 101})
    assert counting.calls == 2


def test_the_cache_is_bounded_and_evicts_the_least_recently_used(counting: CountingEncoding) -> None:
    counter = TokenCounter(cache_size=2)
    first, second, third = ({"role": "user", "content": f"message {n}"} for n in range(3))
    counter.message_tokens(first)
    counter.message_tokens(second)
    counter.message_tokens(first)  # first is now the most recently used
    counter.message_tokens(third)  # evicts second
    calls = counting.calls
    counter.message_tokens(first)
    assert counting.calls == calls
    counter.message_tokens(second)
    assert counting.calls == calls + 1


def test_counts_from_many_threads_agree_with_one_thread() -> None:
    messages = [
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"line {n}\n" * (n % 50 + 1)} for n in range(300)
    ]
    single = TokenCounter()
    expected = [single.message_tokens(message) for message in messages]
    shared = TokenCounter(cache_size=64)  # small, so that threads evict each other's entries
    results: dict[int, list[int]] = {}

    def work(worker: int) -> None:
        order = list(range(len(messages)))
        order = order[worker * 70 :] + order[: worker * 70]
        counts = {index: shared.message_tokens(messages[index]) for index in order}
        results[worker] = [counts[index] for index in range(len(messages))]

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {worker: expected for worker in range(4)}


def test_digests_follow_content_not_key_order() -> None:
    message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    reordered = {"content": [{"text": "hi", "type": "text"}], "role": "user"}
    assert message_digest(message) == message_digest(reordered)
    assert message_digest(message) != message_digest({"role": "user", "content": "hi"})


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo-2024-04-09", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("openai/gpt-4-0613", "cl100k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("claude-sonnet-4-5", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_the_vocabulary_follows_the_model(model: str | None, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_cl100k_counts_with_its_own_vocabulary() -> None:
    text = "Compaction keeps the thread of a long task."
    assert tokens.counter("cl100k_base").count(text) == len(
        bpe_openai.get_encoding("cl100k_base").encode_ordinary(text)
    )
