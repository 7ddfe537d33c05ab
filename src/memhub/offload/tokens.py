"""Token counts of text and of chat messages, with OpenAI's BPE vocabularies (shipped inside `bpe_openai`).

Compaction decides what to cut from token counts, so they must be real ones, not a characters-per-token guess:
a 150k-token context of code and logs is off by a fifth or more under any fixed ratio. Providers other than
OpenAI tokenise differently, but o200k_base is within a few percent of them on code and prose, which is the
accuracy a compaction threshold needs.

A session's context is re-sent every turn with only a few new messages, so message counts are cached by a
digest of the message's canonical JSON: re-compacting a 150k-token context tokenises only what is new.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import bpe_openai

DEFAULT_ENCODING = "o200k_base"
# What a provider adds around each message (role markers, separators): OpenAI documents 3–4 tokens.
MESSAGE_FRAMING_TOKENS = 4
# An image or file block is billed by its pixels or pages, never by its base64 text; this is what a typical
# screenshot costs (Anthropic's ~1.15 megapixel image), a safe side for a threshold.
ATTACHMENT_TOKENS = 1_600
# bpe_openai refuses over 200k tokens or 1M characters per call; cut long text into pieces well inside both.
_PIECE_CHARS = 100_000

_ATTACHMENT_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})
# The fields of a message, an item or a content block whose text reaches the model; everything else (ids,
# signatures, cache markers, usage, timestamps) is metadata the provider does not tokenise.
_TEXT_FIELDS = (
    "role",
    "name",
    "text",
    "content",
    "thinking",
    "refusal",
    "summary",
    "tool_calls",
    "function",
    "input",
    "arguments",
    "output",
)
# Tool arguments reach the model as JSON, keys included.
_JSON_FIELDS = frozenset({"input", "arguments"})

_MODELS_ON_CL100K = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-ada", "text-embedding-3")
_MODELS_ON_O200K = ("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o")


def encoding_for_model(model: str | None) -> str:
    """The vocabulary a model's tokenizer is closest to: cl100k_base for GPT-4 and 3.5, o200k_base otherwise."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if name.startswith(_MODELS_ON_CL100K) and not name.startswith(_MODELS_ON_O200K):
        return "cl100k_base"
    return DEFAULT_ENCODING


def message_digest(message: Mapping[str, Any]) -> bytes:
    """A 16-byte digest of the message's canonical JSON (sorted keys): equal messages, equal digests."""
    canonical = json.dumps(message, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenCounter:
    """Counts tokens with one vocabulary; message counts go through a thread-safe bounded LRU cache."""

    def __init__(self, encoding: str = DEFAULT_ENCODING, cache_size: int = 16_384) -> None:
        self.encoding = encoding
        self._encoder = bpe_openai.get_encoding(encoding)
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """The number of tokens in `text`, special-token look-alikes counted as plain text."""
        total = 0
        start = 0
        while start < len(text):
            stop = start + _PIECE_CHARS
            if stop < len(text):
                # Cutting at a line break keeps the pieces' counts summing to the whole's.
                newline = text.rfind("\n", start, stop)
                stop = newline + 1 if newline > start else stop
            total += len(self._encoder.encode_ordinary(text[start:stop]))
            start = stop
        return total

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` of at most `max_tokens` tokens, never ending inside a character."""
        if max_tokens <= 0:
            return ""
        # Eight characters per token covers any text but long runs of one character; for those the prefix
        # returned is shorter than the budget allows, never longer.
        head = text[: max_tokens * 8]
        tokens = self._encoder.encode_ordinary(head)
        if len(tokens) <= max_tokens and len(head) == len(text):
            return text
        cut = self._encoder.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")
        return cut if text.startswith(cut) else head[: len(cut)]

    def message_tokens(self, message: Mapping[str, Any]) -> int:
        """The tokens a provider would count for one message, item or transcript entry, framing included."""
        key = message_digest(message)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        parts: list[str] = []
        attachments = _collect_text(message, parts)
        tokens = self.count("\n".join(parts)) + attachments * ATTACHMENT_TOKENS + MESSAGE_FRAMING_TOKENS
        with self._lock:
            self._cache[key] = tokens
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return tokens


def _collect_text(node: Any, parts: list[str]) -> int:
    """Append the model-visible text under `node` to `parts`; return how many attachments it holds."""
    if isinstance(node, str):
        parts.append(node)
        return 0
    if isinstance(node, list):
        return sum(_collect_text(item, parts) for item in node)
    if not isinstance(node, Mapping):
        return 0
    if node.get("type") in _ATTACHMENT_TYPES:
        return 1
    if node.get("type") == "message" and isinstance(node.get("message"), Mapping):
        return _collect_text(node["message"], parts)  # a transcript entry wraps the message itself
    attachments = 0
    for field in _TEXT_FIELDS:
        value = node.get(field)
        if value is None:
            continue
        if field in _JSON_FIELDS and not isinstance(value, str):
            parts.append(json.dumps(value, ensure_ascii=False))
        else:
            attachments += _collect_text(value, parts)
    return attachments


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The process's shared counter for a vocabulary (built once: loading one takes ~40 ms)."""
    with _counters_lock:
        if encoding not in _counters:
            _counters[encoding] = TokenCounter(encoding)
        return _counters[encoding]


def count_tokens(text: str) -> int:
    """Tokens in `text` with the default vocabulary (o200k_base)."""
    return counter().count(text)


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` within `max_tokens` tokens of the default vocabulary."""
    return counter().truncate(text, max_tokens)


def message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one message with the default vocabulary, cached by content."""
    return counter().message_tokens(message)
