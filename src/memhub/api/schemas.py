"""Request bodies of the data plane, as the v3 contract defines them (strict types, no coercion)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, model_validator

from memhub.api.json_rules import NON_BLANK, SCENE_FILE, SCENE_PATH, SCENE_PREFIX, given, named, one_of_given
from memhub.ids import NO_CONTROL_PATTERN
from memhub.memory.atomic import DEFAULT_PRIORITY, MEMORY_TYPES
from memhub.memory.paths import MAX_PATH_CHARS, path_problem
from memhub.retrieval.hybrid import SearchOptions
from memhub.timeutil import instant_ms, parse_iso_ms

MAX_CONTENT_CHARS = 8192
MAX_QUERY_CHARS = 2048
MAX_METADATA_BYTES = 4096
MAX_ID_CHARS = 256
MAX_DOCUMENT_CHARS = 200_000
# The largest integer the store keeps (SQLite INTEGER): ids and versions past it cannot be stored or found.
INT64_MAX = 2**63 - 1
# An idempotency key (body or `Idempotency-Key` header): 1..255 printable ASCII characters.
IDEMPOTENCY_KEY_PATTERN = r"^[\x20-\x7e]{1,255}$"
IDEMPOTENCY_KEY_RULE = "must be 1..255 printable ASCII characters"


def _iso_instant(value: str) -> str:
    # Stored instants must render again: years 1-9999 in UTC, checked after the offset is applied.
    instant_ms(value)
    return value


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes of JSON (got {size})")
    return value


def _safe_file_path(value: str) -> str:
    problem = path_problem(value, allow_directory=False)
    if problem:
        raise ValueError(problem)
    return value


def _safe_any_path(value: str) -> str:
    problem = path_problem(value, allow_directory=True)
    if problem:
        raise ValueError(problem)
    return value


def _safe_prefix(value: str) -> str:
    # A prefix may end mid-name ("notes/2026"), so only traversal-type problems count.
    if value and (problem := path_problem(value, allow_directory=True)) and "segments" not in problem:
        raise ValueError(problem)
    return value


IsoInstant = Annotated[str, AfterValidator(_iso_instant), Field(json_schema_extra={"format": "date-time"})]
Metadata = Annotated[
    dict[str, Any],
    AfterValidator(_metadata),
    Field(description=f"At most {MAX_METADATA_BYTES} bytes as compact UTF-8 JSON"),
]
IdString = Annotated[str, Field(max_length=MAX_ID_CHARS, pattern=NO_CONTROL_PATTERN)]
MemoryId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=NO_CONTROL_PATTERN)]
FilePath = Annotated[
    str, AfterValidator(_safe_file_path), Field(json_schema_extra={"pattern": SCENE_FILE, "maxLength": MAX_PATH_CHARS})
]
AnyPath = Annotated[
    str, AfterValidator(_safe_any_path), Field(json_schema_extra={"pattern": SCENE_PATH, "maxLength": MAX_PATH_CHARS})
]
# Holds at least one id that is not blank (blank ids are dropped).
SOME_ID = {"type": "array", "contains": {"type": "string", "pattern": NON_BLANK}}
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
MemoryType = Literal["persona", "episodic", "instruction", "work_fact", "work_task", "work_method", "work_artifact"]
assert set(MemoryType.__args__) == set(MEMORY_TYPES)  # type: ignore[attr-defined]


class Body(BaseModel):
    """Every data-plane body: strict JSON types, isolation ids allowed anywhere, other keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")

    team_id: IdString | None = None
    agent_id: IdString | None = None
    user_id: IdString | None = None
    session_id: IdString | None = None
    task_id: IdString | None = None


class TimeRange(Body):
    """Optional inclusive time window."""

    time_start: IsoInstant | None = None
    time_end: IsoInstant | None = None

    def bounds_ms(self) -> tuple[int | None, int | None]:
        """The window as epoch milliseconds (None where open)."""
        start = parse_iso_ms(self.time_start) if self.time_start else None
        end = parse_iso_ms(self.time_end) if self.time_end else None
        return start, end

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        if self.time_start and self.time_end and parse_iso_ms(self.time_start) > parse_iso_ms(self.time_end):  # type: ignore[operator]
            raise ValueError("time_start: must not be after time_end")
        return self


class Paging(BaseModel):
    """limit/offset with the contract's bounds."""

    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10_000_000)


# -- L0 ------------------------------------------------------------------------------------
class ConversationMessage(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    role: Literal["user", "assistant"]
    content: Content
    timestamp: IsoInstant | None = None
    recorded_at: IsoInstant | None = None
    metadata: Metadata | None = None


class ConversationAdd(Body):
    messages: list[ConversationMessage] = Field(min_length=1, max_length=100)
    idempotency_key: Annotated[str, Field(pattern=IDEMPOTENCY_KEY_PATTERN)] | None = None


class ConversationQuery(TimeRange, Paging):
    pass


class SearchKnobs(BaseModel):
    """memhub extensions to the search bodies; the original's clients never send them."""

    min_score: float | None = Field(
        None, ge=0, le=2, validation_alias=AliasChoices("min_score", "score_threshold", "scoreThreshold")
    )
    recency_half_life_days: float | None = Field(None, gt=0, le=36_500)
    dedupe: bool = True
    max_chars: int | None = Field(None, ge=0, le=10_000_000)
    max_tokens: int | None = Field(None, ge=0, le=10_000_000)

    def options(self, limit: int) -> SearchOptions:
        """The engine's options for this request."""
        return SearchOptions(
            limit=limit,
            min_score=self.min_score,
            recency_half_life_days=self.recency_half_life_days,
            dedupe=self.dedupe,
            max_chars=self.max_chars,
            max_tokens=self.max_tokens,
        )


class ConversationSearch(TimeRange, SearchKnobs):
    query: Query
    limit: int = Field(5, ge=1, le=100)


class ConversationCount(TimeRange):
    pass


def _dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(i.strip() for i in ids if i.strip()))


class ConversationDelete(Body):
    model_config = ConfigDict(
        json_schema_extra=one_of_given(
            given("message_ids", SOME_ID), given("session_ids", SOME_ID), named("session_id")
        )
    )

    message_ids: list[IdString] | None = Field(None, min_length=1, max_length=5000)
    session_ids: list[IdString] | None = Field(None, min_length=1, max_length=100)

    def targets(self) -> tuple[list[str], list[str]]:
        """Trimmed, de-duplicated message ids and session ids.

        The deprecated singular `session_id` is a delete target only when nothing else is: clients
        also send it as isolation context, and merging it (as the original does) would widen a
        delete of a few messages to their whole session.
        """
        messages = _dedupe(list(self.message_ids or []))
        sessions = _dedupe(list(self.session_ids or []))
        if not messages and not sessions and self.session_id is not None:
            sessions = _dedupe([self.session_id])
        return messages, sessions

    @model_validator(mode="after")
    def _something(self) -> ConversationDelete:
        if self.targets() == ([], []):
            raise ValueError("message_ids: at least one of message_ids or session_ids must be provided")
        return self


# -- L1 ------------------------------------------------------------------------------------
class AtomicAdd(Body):
    content: Content
    type: MemoryType
    priority: int = Field(DEFAULT_PRIORITY, ge=-1, le=100)
    background: Annotated[str, Field(max_length=MAX_ID_CHARS)] | None = None
    source_message_ids: list[IdString] = Field(default_factory=list, max_length=500)
    metadata: Metadata | None = None


class AtomicUpdate(Body):
    id: MemoryId
    content: Content
    background: Annotated[str, Field(max_length=MAX_ID_CHARS)] | None = None


class AtomicQuery(TimeRange, Paging):
    type: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class AtomicSearch(TimeRange, SearchKnobs):
    query: Query
    limit: int = Field(5, ge=1, le=100)
    type: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class AtomicCount(TimeRange):
    type: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class AtomicDelete(Body):
    ids: list[IdString] = Field(min_length=1, max_length=5000, json_schema_extra=SOME_ID)

    @model_validator(mode="after")
    def _non_empty(self) -> AtomicDelete:
        self.ids = _dedupe(self.ids)
        if not self.ids:
            raise ValueError("ids: must contain at least one non-empty id")
        return self


# -- L2 ------------------------------------------------------------------------------------
class ScenarioList(Body):
    path_prefix: Annotated[
        str, Field(max_length=MAX_PATH_CHARS, json_schema_extra={"pattern": SCENE_PREFIX}), AfterValidator(_safe_prefix)
    ] = ""


class ScenarioRead(Body):
    path: FilePath


class ScenarioWrite(Body):
    path: FilePath
    content: Annotated[str, Field(max_length=MAX_DOCUMENT_CHARS)]
    summary: Annotated[str, Field(max_length=1024)] | None = None


class ScenarioRemove(Body):
    model_config = ConfigDict(json_schema_extra=one_of_given(given("path"), given("paths")))

    path: AnyPath | None = None
    paths: list[AnyPath] | None = Field(None, min_length=1, max_length=100)

    def targets(self) -> list[str]:
        """`path` and `paths[]` together, de-duplicated."""
        return list(dict.fromkeys([*([self.path] if self.path else []), *(self.paths or [])]))

    @model_validator(mode="after")
    def _something(self) -> ScenarioRemove:
        if not self.targets():
            raise ValueError("path: one of path or paths is required")
        return self


# -- L3 ------------------------------------------------------------------------------------
class CoreWrite(Body):
    content: Annotated[str, Field(max_length=MAX_DOCUMENT_CHARS)]


# -- pipeline (memhub extensions beside the original's /v2/pipeline/status) ------------------------
class PipelineStatus(Body):
    pass


class PipelineJobs(Body):
    states: list[Literal["pending", "running", "done", "dead"]] = Field(
        default_factory=lambda: ["pending", "running", "dead"], min_length=1, max_length=4
    )
    limit: int = Field(50, ge=1, le=500)


class PipelineReplay(Body):
    # Job ids are SQLite integers: a larger number is no job, and must not reach the database as one.
    job_ids: list[Annotated[int, Field(ge=1, le=INT64_MAX)]] = Field(min_length=1, max_length=500)


class PipelineFlush(Body):
    pass


# -- recall ---------------------------------------------------------------------------------
MAX_RECALL_TOKENS = 32_000
MAX_RECALL_CHARS = 128_000
MAX_RECENT_MESSAGES = 20


class RecentMessage(BaseModel):
    """A turn the agent already has in its context window (recall does not repeat it)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, Field(max_length=4 * MAX_CONTENT_CHARS)]


class Recall(Body):
    query: Query
    messages: list[RecentMessage] = Field(default_factory=list, max_length=MAX_RECENT_MESSAGES)
    max_tokens: int | None = Field(None, ge=1, le=MAX_RECALL_TOKENS)
    max_chars: int | None = Field(None, ge=1, le=MAX_RECALL_CHARS)
    include_persona: bool = True
    include_scenes: bool = True


class AtomicHistory(Body):
    id: MemoryId
