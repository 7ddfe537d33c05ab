"""Reading request bodies: size limit, gzip/deflate, JSON objects only."""

from __future__ import annotations

import json
import zlib
from typing import Any

from starlette.requests import Request

from memhub.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

INVALID_JSON = "Invalid JSON body"


async def read_limited(request: Request, limit: int) -> bytes:
    """The raw body, refusing anything over the limit before reading it when the length is declared."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise PayloadTooLarge(f"Request body too large (limit {limit} bytes)")
        except ValueError:
            raise BadRequest("content-length: must be an integer") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Request body too large (limit {limit} bytes)")
        chunks.append(chunk)
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


async def read_json_object(request: Request, limit: int) -> dict[str, Any]:
    """The body as a JSON object; empty or malformed bodies are 400 `Invalid JSON body`."""
    raw = decode_content(await read_limited(request, limit), request.headers.get("content-encoding"), limit)
    if not raw.strip():
        raise BadRequest(INVALID_JSON)
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest(INVALID_JSON) from None
    if not isinstance(value, dict):
        raise BadRequest(f"{INVALID_JSON}: the body must be a JSON object")
    return value
