"""Reading the JSON that language models actually write.

`parse_json_loose` first tries the strict parser (inside a ```json fence, then on the whole text), and only then a
tolerant recursive-descent parser that accepts what models get wrong: prose around the value,
trailing or missing commas, single-quoted strings and keys, bare keys, Python literals (True/False/None), raw
newlines and stray double quotes inside strings, // and /* */ comments, and output cut off mid-way (the
incomplete last element is dropped and the open brackets are closed). It returns plain Python values.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_json_loose"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[^\s,:{}\[\]\"'/]+")
_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "none": None,
    "undefined": None,
    "nan": None,
}
_START = re.compile(r"[\[{]")
_KEY = re.compile(r"[^\s,:{}\[\]\"'=]+")
_MAX_STARTS = 64  # candidate start positions tried per text; bounds the work on adversarial prose
_MAX_DEPTH = 200  # nesting deeper than this is refused rather than risking the recursion limit


def parse_json_loose(text: str) -> Any:
    """The first usable JSON value in a model's output; raises ValueError when there is none."""
    if not isinstance(text, str):
        raise ValueError("model output is not text")
    cleaned = _THINK.sub("", text.replace("\ufeff", "")).strip()
    if not cleaned:
        raise ValueError("model output is empty")
    sources = [m.group(2) for m in _FENCE.finditer(cleaned) if m.group(2).strip()]
    sources.append(cleaned)
    for source in sources:
        found, value = _strict(source.strip())
        if found:
            return value
    for source in sources:
        found, value = _loose(source)
        if found:
            return value
    raise ValueError("no JSON value found in model output")


def _strict(text: str) -> tuple[bool, Any]:
    # Only the whole text: a strict parse at an inner "{" would return one element of a cut-off array.
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: absurd nesting, left to the depth-limited parser
        return False, None


def _loose(text: str) -> tuple[bool, Any]:
    """The longest container the tolerant parser can read from some `{`/`[` in the text."""
    best: tuple[int, Any] | None = None
    position = 0
    for _ in range(_MAX_STARTS):
        match = _START.search(text, position)
        if match is None:
            break
        parser = _Parser(text, match.start())
        try:
            value, complete = parser.value(0)
        except _Unusable:
            position = match.start() + 1
            continue
        span = parser.pos - match.start()
        # An empty container cut off by the end of the text (a lone "[") carries nothing.
        usable = complete or bool(value)
        if usable and (best is None or span > best[0]):
            best = (span, value)
        position = max(parser.pos, match.start() + 1)
    if best is None:
        return False, None
    return True, best[1]


class _Unusable(Exception):
    """Nothing value-like at this position."""


class _Parser:
    """Tolerant recursive descent over `text` from `pos`. Each value() returns (value, complete)."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos
        self.n = len(text)

    # -- lexical helpers -----------------------------------------------------------------------------------------

    def skip(self) -> None:
        """Skip whitespace and comments."""
        text, n = self.text, self.n
        while self.pos < n:
            ch = text[self.pos]
            if ch.isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                self.pos = n if end < 0 else end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < self.n else ""

    # -- values --------------------------------------------------------------------------------------------------

    def value(self, depth: int) -> tuple[Any, bool]:
        if depth > _MAX_DEPTH:
            raise _Unusable()
        ch = self.peek()
        if ch == "":
            return None, False
        if ch == "{":
            return self.obj(depth)
        if ch == "[":
            return self.arr(depth)
        if ch in "\"'":
            return self.string()
        match = _NUMBER.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            token = match.group()
            number: Any = float(token) if any(c in token for c in ".eE") else int(token)
            # A number that touches the end of the text may itself be cut short.
            return number, self.pos < self.n
        match = _WORD.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            word = match.group()
            lowered = word.lower()
            if lowered in _LITERALS:
                return _LITERALS[lowered], self.pos < self.n
            return word, self.pos < self.n  # a bare word: most likely an unquoted string
        raise _Unusable()

    def string(self) -> tuple[str, bool]:
        quote = self.text[self.pos]
        self.pos += 1
        out: list[str] = []
        text, n = self.text, self.n
        while self.pos < n:
            ch = text[self.pos]
            if ch == "\\":
                if self.pos + 1 >= n:
                    break
                self.pos += 1
                out.append(self.escape())
                continue
            if ch == quote and self.closes():
                self.pos += 1
                return "".join(out), True
            out.append(ch)  # raw newlines, tabs and stray quotes are kept as written
            self.pos += 1
        return "".join(out), False

    def closes(self) -> bool:
        """Whether the quote at `pos` ends the string: only if what follows could follow a string in JSON."""
        rest = self.pos + 1
        while rest < self.n and self.text[rest] in " \t\r":
            rest += 1
        return rest >= self.n or self.text[rest] in ",:}]\n"

    def escape(self) -> str:
        ch = self.text[self.pos]
        self.pos += 1
        simple = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
        if ch in simple:
            return simple[ch]
        if ch == "u":
            digits = self.text[self.pos : self.pos + 4]
            if re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                self.pos += 4
                code = int(digits, 16)
                # A surrogate pair written as two escapes.
                if 0xD800 <= code < 0xDC00 and re.match(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", self.text[self.pos :]):
                    low = int(self.text[self.pos + 2 : self.pos + 6], 16)
                    self.pos += 6
                    return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                return chr(code) if not 0xD800 <= code < 0xE000 else "\ufffd"
        return ch  # an unknown escape: keep the character

    def obj(self, depth: int) -> tuple[dict[str, Any], bool]:
        self.pos += 1  # "{"
        result: dict[str, Any] = {}
        while True:
            ch = self.peek()
            if ch == "":
                return result, False
            if ch in "}]":  # "]" closing an object: a model's bracket mix-up
                self.pos += 1
                return result, True
            if ch == ",":
                self.pos += 1
                continue
            if ch in "{[":  # a value where a key belongs: nothing sensible to keep
                _, complete = self.value(depth + 1)
                if not complete:
                    return result, False
                continue
            key, complete = self.key()
            if not complete:
                return result, False
            if self.peek() in ":=":
                self.pos += 1
            elif self.peek() in ",}]":
                continue  # a key without a value
            value, complete = self.value(depth + 1)
            if not complete:
                # Keep a cut-off container (its complete parts are still useful), drop a cut-off scalar.
                if isinstance(value, dict | list) and value:
                    result[key] = value
                return result, False
            result[key] = value

    def key(self) -> tuple[str, bool]:
        ch = self.peek()
        if ch in "\"'":
            return self.string()
        match = _KEY.match(self.text, self.pos)
        if not match:
            raise _Unusable()
        self.pos = match.end()
        return match.group(), self.pos < self.n

    def arr(self, depth: int) -> tuple[list[Any], bool]:
        self.pos += 1  # "["
        result: list[Any] = []
        while True:
            ch = self.peek()
            if ch == "":
                return result, False
            if ch in "]}":
                self.pos += 1
                return result, True
            if ch in ",:":
                self.pos += 1
                continue
            value, complete = self.value(depth + 1)
            if not complete:
                if isinstance(value, dict | list) and value:
                    result.append(value)
                return result, False
            result.append(value)
