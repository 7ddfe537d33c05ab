"""The memory generation log (the original's `/v3/memory-generation-log/*`): what each L1/L2/L3
generation read, wrote and ran with.

The pipeline worker calls `record(...)` after every job, succeeded or failed. Records are kept for
30 days (older ones are pruned as new ones are written); lists page newest first with an opaque
cursor. Reads take the caller's `GenerationScope` (memhub.pipeline.generation_access; None: the
whole instance) and a record outside it is not found, exactly like an unknown one.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memhub.errors import BadRequest, NotFound
from memhub.model.prompts import (
    GenerationFilter,
    GenerationLog,
    GenerationRef,
    GenerationScope,
    GenerationStatus,
    Position,
    PromptLayer,
    PromptRef,
    RefLayer,
    TokenUsage,
)
from memhub.store.prompts import PromptStore
from memhub.timeutil import ms_to_iso, now_ms

DAY_MS = 86_400_000
RETENTION_MS = 30 * DAY_MS
DEFAULT_WINDOW_MS = 7 * DAY_MS  # a list without a window shows the last week, as the original
MAX_ERROR_CHARS = 4000  # an LLM error body can be huge; the log keeps its head
NOT_FOUND = "MEMORY_GENERATION_LOG_NOT_FOUND"
BAD_CURSOR = "INVALID_GENERATION_LOG_CURSOR"
SCOPE_FIELDS = ("team_id", "agent_id", "user_id", "task_id", "session_id")

RefLike = GenerationRef | tuple[RefLayer, str]


def _refs(items: Iterable[RefLike]) -> tuple[GenerationRef, ...]:
    return tuple(r if isinstance(r, GenerationRef) else GenerationRef(r[0], r[1]) for r in items)


def encode_cursor(position: Position) -> str:
    """An opaque cursor for the page after `position`."""
    raw = json.dumps({"t": position[0], "s": position[1]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    """The position a cursor stands for; 400 INVALID_GENERATION_LOG_CURSOR for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
        t, s = value["t"], value["s"]
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise BadRequest(f"{BAD_CURSOR}: cursor is not one this server issued") from None
    if not (isinstance(t, int) and isinstance(s, int)) or isinstance(t, bool) or isinstance(s, bool):
        raise BadRequest(f"{BAD_CURSOR}: cursor is not one this server issued")
    return t, s


def _ref_view(r: GenerationRef) -> dict[str, str]:
    return {"layer": r.layer, "record_id": r.record_id}


def log_view(g: GenerationLog) -> dict[str, Any]:
    """A generation log record on the wire."""
    return {
        "log_id": g.log_id,
        "layer": g.layer,
        "status": g.status,
        "team_id": g.team_id or None,
        "agent_id": g.agent_id or None,
        "user_id": g.user_id or None,
        "task_id": g.task_id or None,
        "session_id": g.session_id or None,
        "prompt": {
            "memory_prompt_id": g.prompt.memory_prompt_id,
            "version": g.prompt.version,
            "source": g.prompt.source,
            "prompt_sha256": g.prompt.sha256,
        }
        if g.prompt
        else None,
        "input_refs": [_ref_view(r) for r in g.input_refs],
        "output_refs": [_ref_view(r) for r in g.output_refs],
        "model": g.model,
        "latency_ms": g.latency_ms,
        "tokens": {"prompt": g.tokens.prompt, "completion": g.tokens.completion} if g.tokens else None,
        "error_message": g.error,
        "finished_at_ms": g.created_ms,
        "finished_at": ms_to_iso(g.created_ms),
    }


@dataclass(frozen=True, slots=True)
class GenerationLogService:
    """Write and read the generation log of an instance."""

    store: PromptStore
    retention_ms: int = RETENTION_MS
    clock: Callable[[], int] = now_ms

    def record(
        self,
        service_id: str,
        layer: PromptLayer,
        status: GenerationStatus,
        *,
        scope: Mapping[str, str] | None = None,
        prompt: PromptRef | None = None,
        input_refs: Iterable[RefLike] = (),
        output_refs: Iterable[RefLike] = (),
        model: str = "offline",
        latency_ms: int = 0,
        tokens: TokenUsage | None = None,
        error: str | None = None,
    ) -> str:
        """Log one finished generation and return its log id; logs past retention are pruned.

        `scope` holds the job's isolation ids (team_id, agent_id, user_id, task_id, session_id;
        missing ones are stored empty) — a pipeline job's scope dict fits as it is.
        """
        ids = {name: str((scope or {}).get(name) or "") for name in SCOPE_FIELDS}
        now = self.clock()
        log = GenerationLog(
            log_id=f"mgl-{uuid.uuid4()}",
            service_id=service_id,
            layer=layer,
            status=status,
            prompt=prompt,
            input_refs=_refs(input_refs),
            output_refs=_refs(output_refs),
            model=model,
            latency_ms=max(0, int(latency_ms)),
            tokens=tokens,
            error=error[:MAX_ERROR_CHARS] if error else None,
            created_ms=now,
            **ids,
        )
        self.store.record_generation(log, now - self.retention_ms)
        return log.log_id

    def list(
        self,
        service_id: str,
        *,
        window: tuple[int, int] | None = None,
        layer: PromptLayer | None = None,
        status: GenerationStatus | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        visible: GenerationScope | None = None,
    ) -> dict[str, Any]:
        """Newest first within an inclusive (start_ms, end_ms) window (the last 7 days without one)."""
        if window is None:
            end = self.clock()
            window = (end - DEFAULT_WINDOW_MS, end)
        flt = GenerationFilter(window[0], window[1], layer, status, team_id, agent_id, visible)
        after = decode_cursor(cursor) if cursor else None
        items, nxt = self.store.list_generations(service_id, flt, after, limit)
        out: dict[str, Any] = {"items": [log_view(g) for g in items]}
        if nxt is not None:
            out["next_cursor"] = encode_cursor(nxt)
        return out

    def get(self, service_id: str, log_id: str, visible: GenerationScope | None = None) -> GenerationLog:
        """One log by id, or 404."""
        found = self.store.get_generation(service_id, log_id=log_id, visible=visible)
        if found is None:
            raise NotFound(NOT_FOUND)
        return found

    def for_memory(
        self, service_id: str, memory_id: str, layer: PromptLayer, visible: GenerationScope | None = None
    ) -> GenerationLog:
        """The newest log that produced a memory of `layer`, or 404."""
        found = self.store.get_generation(service_id, output=GenerationRef(layer, memory_id), visible=visible)
        if found is None:
            raise NotFound(NOT_FOUND)
        return found
