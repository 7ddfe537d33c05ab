"""Identifier formats shared with the original system (`msg-<12hex>`, `m_<epochms>_<8hex>` …)."""

from __future__ import annotations

import secrets
import time


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
