"""Reading request bodies: size limit, read deadline, gzip/deflate, JSON objects only.

The JSON is the strict subset every client library writes: no NaN or Infinity (Python's `json` accepts
them and would echo them back as invalid JSON), no unpaired surrogate escapes (text that cannot be encoded),
and at most MAX_DEPTH levels of nesting (a deeply nested body would otherwise exhaust the parser's recursion).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import zlib
from typing import Any

from starlette.requests import Request

from memhub.api.validation import field_path
from memhub.errors import BadRequest, FieldError, PayloadTooLarge, RequestTimeout, UnsupportedMediaType

INVALID_JSON = "Invalid JSON body"
MAX_DEPTH = 64
# Integral floats up to 2**53 read as integers (`5.0` is `5`), as the original's JavaScript server reads
# them: integer fields accept what any JSON encoder may write for a whole number.
_SAFE_INTEGER = 2**53


# JSON may escape half of a UTF-16 pair on its own; Python then holds a string that cannot be encoded
# (stored, logged or sent), so such text is refused at the door.
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
UNPAIRED = "be valid Unicode (an unpaired surrogate escape is not a character)"


class _NonFinite:
    """Stands for a NaN/Infinity literal until its place in the body is known."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


async def read_limited(request: Request, limit: int, timeout: float | None = None) -> bytes:
    """The raw body, refusing anything over the limit (before reading it when the length is declared).

    `timeout` bounds the whole read: a client that sends its headers and then dribbles the body would
    otherwise hold a worker for as long as it likes.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise PayloadTooLarge(f"Request body too large (limit {limit} bytes)")
        except ValueError:
            raise BadRequest("content-length: must be an integer") from None
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"Request body too large (limit {limit} bytes)")
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(f"Request body not received within {timeout:g} seconds") from None
    return b"".join(chunks)


def decode_content(raw: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo gzip/deflate; the decoded size is capped too, so a small bomb cannot grow past it."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return raw
    if name in ("gzip", "x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif name == "deflate":
        wbits = zlib.MAX_WBITS  # zlib-wrapped; raw deflate is tried below
    else:
        raise UnsupportedMediaType(f"Unsupported Content-Encoding: {encoding}")
    for bits in (wbits, -zlib.MAX_WBITS) if name == "deflate" else (wbits,):
        try:
            inflater = zlib.decompressobj(bits)
            out = inflater.decompress(raw, limit + 1)
            if len(out) > limit or inflater.unconsumed_tail:
                raise PayloadTooLarge(f"Request body too large after decompression (limit {limit} bytes)")
            return out + inflater.flush()
        except zlib.error:
            continue
    raise BadRequest(f"{INVALID_JSON}: body is not valid {name} data")


def _problem(value: Any) -> tuple[str, str] | None:
    """(field path, rule) for the first NaN/Infinity or over-deep nesting of a parsed body, walked without recursion."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, _NonFinite):
            return field_path(loc), f"must be a finite number ({item.text} is not valid JSON)"
        if isinstance(item, str) and _SURROGATE.search(item):
            return field_path(loc), f"must {UNPAIRED}"
        if isinstance(item, dict | list) and len(loc) >= MAX_DEPTH:
            return field_path(loc), f"must not nest arrays and objects deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            for key in item:
                if _SURROGATE.search(key):
                    return field_path(loc), f"keys must {UNPAIRED}"
            stack.extend(((*loc, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*loc, i), v) for i, v in reversed(list(enumerate(item))))
    return None


def parse_json(raw: bytes) -> Any:
    """Strict JSON: 400 for malformed text, NaN/Infinity and nesting deeper than MAX_DEPTH (naming the field)."""
    found: list[_NonFinite] = []

    def constant(text: str) -> _NonFinite:
        found.append(_NonFinite(text))
        return found[-1]

    def number(text: str) -> float | int | _NonFinite:
        value = float(text)
        if not math.isfinite(value):  # 1e999 overflows to Infinity
            return constant(text)
        if value.is_integer() and abs(value) <= _SAFE_INTEGER:
            return int(value)
        return value

    try:
        value = json.loads(raw, parse_constant=constant, parse_float=number)
    except RecursionError:
        # The parser's own recursion limit (~1000 levels) is far past MAX_DEPTH.
        raise BadRequest(f"{INVALID_JSON}: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest(INVALID_JSON) from None
    # Fewer brackets than the limit cannot nest past it, and without a \uD8xx-\uDFxx escape no string
    # holds a surrogate: most bodies skip the walk.
    if found or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH or _SURROGATE_ESCAPE.search(raw):
        problem = _problem(value)
        if problem is not None:
            raise FieldError(*problem)
    return value


async def read_json_object(request: Request, limit: int, timeout: float | None = None) -> dict[str, Any]:
    """The body as a JSON object; empty or malformed bodies are 400 `Invalid JSON body`."""
    raw = decode_content(await read_limited(request, limit, timeout), request.headers.get("content-encoding"), limit)
    if not raw.strip():
        raise BadRequest(INVALID_JSON)
    value = parse_json(raw)
    if not isinstance(value, dict):
        raise BadRequest(f"{INVALID_JSON}: the body must be a JSON object")
    return value
