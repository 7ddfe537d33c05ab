"""Shared fixtures: a real gateway app over a real SQLite file in a temporary data dir."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from memhub.api import create_app
from memhub.gateway_key import ensure_gateway_key
from memhub.memory.embedding import EmbeddingRuntime
from memhub.pipeline.worker import PipelineWorker
from memhub.runtime import build_hub, dimension_known_offline, embedding_runtime, open_store
from memhub.settings import Settings
from memhub.store import MemoryStore
from memhub.store.sqlite.store import EXACT_VECTOR_LIMIT

GATEWAY_KEY = "mh-gw-test-0123456789abcdefghijklmnopqrstuvwxyz"
SERVICE = "svc-a"
ISO = {"team_id": "team-1", "agent_id": "agent-1", "user_id": "user-1"}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never inherit the developer's MEMHUB_* / TDAI_* settings."""
    prefixes = ("MEMHUB_", "TDAI_", "V3_STRICT_ISOLATION", "MEMORY_MAX_BODY_BYTES", "MEMORY_TENCENTDB_ROOT")
    for name in list(os.environ):
        if name.startswith(prefixes):
            monkeypatch.delenv(name, raising=False)


@dataclass
class Gateway:
    """A running app (in-process, real HTTP stack) plus its store, with request helpers."""

    client: TestClient
    store: MemoryStore
    data_dir: Path
    key: str | None = GATEWAY_KEY
    default_service: str = SERVICE
    default_isolation: dict[str, str] = field(default_factory=lambda: dict(ISO))
    embedding: EmbeddingRuntime | None = None  # the app's embedding runtime (build_gateway(embedding=True))

    @property
    def pipeline(self) -> PipelineWorker:
        """The app's pipeline worker (not started: call `drain()` to run due jobs in this thread)."""
        worker = self.client.app.state.pipeline_worker  # type: ignore[attr-defined]
        assert worker is not None, "built with pipeline_enabled=False"
        return worker

    def health(self) -> dict[str, Any]:
        """GET /health (open, no auth)."""
        response = self.client.get("/health")
        assert response.status_code == 200, response.text
        return response.json()

    def drain(self, timeout: float = 60.0) -> None:
        """Embed every queued record now (in this thread); fails if the queue does not empty in time."""
        assert self.embedding is not None, "built without embedding=True"
        assert self.embedding.drain(timeout), f"embedding backlog left: {self.store.embedding_backlog()}"

    def close(self) -> None:
        """Stop the embedding worker (if any), then close the client and the store."""
        if self.embedding is not None:
            self.embedding.close()
        self.client.close()
        self.store.close()

    def headers(self, service: str | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
        h = {"authorization": f"Bearer {self.key or 'anything'}", "x-tdai-service-id": service or self.default_service}
        h.update(extra or {})
        return h

    def post(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        service: str | None = None,
        headers: dict[str, str] | None = None,
        isolation: dict[str, str] | None = None,
        raw_headers: dict[str, str] | None = None,
    ) -> Any:
        """POST a JSON body; isolation ids are merged into it unless `isolation={}` is passed."""
        payload = {**(self.default_isolation if isolation is None else isolation), **(body or {})}
        hdrs = raw_headers if raw_headers is not None else self.headers(service, headers)
        return self.client.post(path, json=payload, headers=hdrs)

    def ok(self, path: str, body: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """POST and assert a success envelope; returns `data`."""
        response = self.post(path, body, **kwargs)
        envelope = response.json()
        assert response.status_code == 200, envelope
        assert envelope["code"] == 0, envelope
        assert envelope["message"] == "ok"
        return envelope.get("data")

    def fails(self, path: str, body: dict[str, Any] | None, code: int, **kwargs: Any) -> dict[str, Any]:
        """POST and assert an error envelope with this code (and HTTP status); returns the envelope."""
        response = self.post(path, body, **kwargs)
        envelope = response.json()
        assert envelope["code"] == code, envelope
        assert response.status_code == (code if 400 <= code < 600 else 200)
        assert envelope["request_id"].startswith("req-")
        return envelope


def build_gateway(
    data_dir: Path,
    *,
    insecure: bool = False,
    embedding: bool = False,
    start_worker: bool = False,
    exact_vector_limit: int = EXACT_VECTOR_LIMIT,
    **overrides: Any,
) -> Gateway:
    """A gateway over `data_dir` with a known key (or none when insecure).

    `embedding=True` gives the app a real embedding runtime built from the settings (provider
    `local` e5-small unless `embedding_provider=...` says otherwise), checked at start like
    `memhub serve` does. Its worker runs only with `start_worker=True`; otherwise records stay
    queued until `Gateway.drain()`. Without `embedding`, search is BM25 only.
    """
    settings = Settings(data_dir=data_dir, gateway_api_key=None if insecure else GATEWAY_KEY, **overrides)
    store = open_store(settings, exact_vector_limit=exact_vector_limit)
    key = None if insecure else ensure_gateway_key(store, settings.gateway_api_key).key
    runtime = embedding_runtime(settings, store) if embedding else None
    if runtime is not None and dimension_known_offline(settings):
        runtime.check_model()
    # The pipeline worker never runs by itself in tests: `Gateway.pipeline.drain()` runs it on demand.
    app = create_app(build_hub(settings, store, embedding=runtime), key, run_pipeline=False)
    if runtime is not None and start_worker:
        runtime.start()
    client = TestClient(app, raise_server_exceptions=False)
    return Gateway(client, store, data_dir, None if insecure else GATEWAY_KEY, embedding=runtime)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    """The default gateway: auth on, lax isolation."""
    gw = build_gateway(tmp_path / "data")
    yield gw
    gw.client.close()
    gw.store.close()


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Any]:
    """Build gateways with other settings (strict isolation, CORS, small body limit, insecure …)."""
    made: list[Gateway] = []

    def make(name: str = "custom", **overrides: Any) -> Gateway:
        gw = build_gateway(tmp_path / name, **overrides)
        made.append(gw)
        return gw

    yield make
    for gw in made:
        gw.close()
