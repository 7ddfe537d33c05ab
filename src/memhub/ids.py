"""Identifier formats shared with the original system (`msg-<12hex>`, `m_<epochms>_<8hex>` …)."""

from __future__ import annotations

import re
import secrets
import time

# Characters no id or name may hold: C0 and C1 controls, DEL, and the Unicode line and paragraph
# separators. They would break log lines, HTTP headers and the prompts ids and names are rendered into.
CONTROL_CLASS = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
# The rule as a pattern (JSON Schema, Python and pydantic's regex engine all read it alike).
NO_CONTROL_PATTERN = f"^[^{CONTROL_CLASS}]*$"
NO_CONTROL_RULE = "must not contain control characters"
_CONTROL = re.compile(f"[{CONTROL_CLASS}]")


def has_control(value: str) -> bool:
    """True when the text holds a character no id or name may contain."""
    return _CONTROL.search(value) is not None


MAX_SERVICE_ID_CHARS = 128  # a tenant's service id (`x-tdai-service-id`, the proxy's space id)


def valid_service_id(service_id: str) -> bool:
    """1..128 printable characters."""
    return 0 < len(service_id) <= MAX_SERVICE_ID_CHARS and not has_control(service_id)


def request_id() -> str:
    """`req-` + 16 hex, the envelope's request id."""
    return "req-" + secrets.token_hex(8)


def message_id() -> str:
    """L0 message id, `msg-` + 12 hex."""
    return "msg-" + secrets.token_hex(6)


def atomic_id(now_ms: int | None = None) -> str:
    """L1 memory id, `m_<epochms>_<8hex>`."""
    ms = now_ms if now_ms is not None else int(time.time() * 1000)
    return f"m_{ms}_{secrets.token_hex(4)}"


def audit_id() -> str:
    """Audit row id, `audit-` + 16 hex."""
    return "audit-" + secrets.token_hex(8)
