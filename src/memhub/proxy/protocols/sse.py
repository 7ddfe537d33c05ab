"""Server-sent events: an incremental decoder for the tap (chunks arrive cut anywhere) and an encoder for the
synthetic replies."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its `event:` name ("" when none came) and its joined `data:` lines."""

    event: str
    data: str


class SseDecoder:
    """Turns a byte stream cut at arbitrary points into events, as the EventSource rules read them."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by `chunk` (a partial line waits for the next one)."""
        self._buffer += chunk
        events: list[SseEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                return events
            end, skip = cut
            line = self._buffer[:end].decode("utf-8", errors="replace")
            self._buffer = self._buffer[end + skip :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def close(self) -> list[SseEvent]:
        """The last event when the stream ended without its blank line."""
        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line ends and how long its terminator is (CRLF, LF or CR)."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, 1
    if cr + 1 < len(buffer):
        return cr, 2 if buffer[cr + 1 : cr + 2] == b"\n" else 1
    return None  # a CR at the end: wait to see whether an LF follows


def encode(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One event in the wire form (`event:` line when named, one `data:` line, blank line)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
