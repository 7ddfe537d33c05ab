"""GET /health: open, never authenticated, in the original's shape plus embedding status."""

from __future__ import annotations

import time
from typing import Any

from memhub import __version__
from memhub.memory.embedding import EmbeddingRuntime, status_view
from memhub.pipeline.worker import PipelineWorker
from memhub.store import MemoryStore


def health_payload(
    store: MemoryStore,
    embedding: EmbeddingRuntime | None,
    started: float,
    *,
    auth_enabled: bool,
    pipeline: PipelineWorker | None = None,
) -> dict[str, Any]:
    """Status, version, uptime, stores, services and the embedding backlog (the original's
    `/health` fields plus memhub's).

    `embedding_backlog` counts records still without a vector; callers that need vector search
    over what they just wrote (benchmarks, imports) wait for it to reach 0.
    """
    state = embedding.status() if embedding is not None and embedding.embedder is not None else None
    # Without an embedder nothing is pending: records stay queued (so that enabling a model later
    # embeds them) but no one should wait for them.
    backlog = state.backlog if state is not None else 0
    return {
        "status": "ok",
        "version": __version__,
        "uptime": round(time.monotonic() - started, 3),
        "stores": {
            "vectorStore": f"{store.backend_name()}-vectors" if state and state.model else "none",
            "embeddingService": state.model if state and state.model else "none",
            "fullText": "fts5-bm25",
            "database": store.backend_name(),
        },
        "services": {
            # One thread schedules due work (the original's timer scanner) and runs the jobs.
            "timerScanner": {"running": bool(pipeline and pipeline.running)},
            "pipelineWorker": {
                "running": bool(pipeline and pipeline.running),
                "tasksCompleted": pipeline.jobs_done if pipeline else 0,
                "tasksFailed": pipeline.jobs_failed if pipeline else 0,
                "generator": pipeline.runner.stages.generator if pipeline else "none",
            },
            "embeddingWorker": {"running": state is not None and state.state not in ("off", "error")},
            "stateBackend": "connected",
        },
        "embedding": status_view(state) if state is not None else {"provider": "none", "backlog": 0},
        "embedding_backlog": backlog,
        "auth": "gateway-key" if auth_enabled else "disabled",
    }
