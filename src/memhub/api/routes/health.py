"""GET /health: open, never authenticated, in the original's shape."""

from __future__ import annotations

import time
from typing import Any

from memhub import __version__
from memhub.store import MemoryStore


def health_payload(store: MemoryStore, started: float, *, auth_enabled: bool) -> dict[str, Any]:
    """Status, version, uptime, stores and services (spec §2.8)."""
    return {
        "status": "ok",
        "version": __version__,
        "uptime": round(time.monotonic() - started, 3),
        "stores": {
            "vectorStore": "none",
            "embeddingService": "none",
            "fullText": "fts5-bm25",
            "database": store.backend_name(),
        },
        "services": {
            "timerScanner": {"running": False},
            "pipelineWorker": {"running": False},
            "stateBackend": "connected",
        },
        "auth": "gateway-key" if auth_enabled else "disabled",
    }
