"""Request bodies of `/v2/offload/*`, with the original's rules (and its SDKs' spellings) and a few of our own."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memhub.api.json_rules import NON_BLANK, given, named, one_of_given, when
from memhub.api.schemas import Body

# The original's session id rule: no slashes, so it can never name a path outside its session.
SESSION_ID_PATTERN = r"^[A-Za-z0-9_.\-:]{1,500}$"
SESSION_ID_RULE = "must be 1-500 characters of letters, digits, '_', '.', '-' or ':'"
# Every offload body is at most 1 MiB (the original's limit); a larger one is 413.
MAX_OFFLOAD_BODY_BYTES = 1024 * 1024
# The original client's default when it does not know the model's window.
DEFAULT_CONTEXT_WINDOW = 200_000
MAX_RECENT_TURNS = 100

# What the schema says of a message: an object with a non-empty `role`; anything else in it is the provider's.
ROLE_REQUIRED = {"type": "object", "required": ["role"], "properties": {"role": {"type": "string", "minLength": 1}}}

SessionId = Annotated[str, Field(pattern=SESSION_ID_PATTERN)]
Text = Annotated[str, Field(max_length=MAX_OFFLOAD_BODY_BYTES)]


class OffloadBody(Body):
    session_id: SessionId  # type: ignore[assignment]  # required here, and with the original's rule


class ToolPairIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    tool_name: Annotated[str, Field(min_length=1, max_length=200)]
    tool_call_id: Annotated[str, Field(min_length=1, max_length=500)]
    params: Any = None
    result: Any = None
    error: Text | None = None
    timestamp: Annotated[str, Field(min_length=1, max_length=100)]
    duration_ms: Annotated[float, Field(ge=0)] | None = None


class RecentTurnIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    role: Literal["user", "assistant"]
    content: Text


class OffloadIngest(OffloadBody):
    model_config = ConfigDict(
        json_schema_extra=one_of_given(given("tool_pairs", {"type": "array", "minItems": 1}), named("prompt"))
    )

    # Each pair's tool_call_id once per request (a rule the schema cannot state).
    tool_pairs: list[ToolPairIn] = Field(default_factory=list)
    prompt: (
        Annotated[str, Field(max_length=MAX_OFFLOAD_BODY_BYTES, json_schema_extra={"pattern": NON_BLANK})] | None
    ) = None
    recent_messages: list[RecentTurnIn] | None = Field(None, max_length=MAX_RECENT_TURNS)

    @model_validator(mode="after")
    def _something_to_ingest(self) -> OffloadIngest:
        if self.prompt is not None and not self.prompt.strip():
            raise ValueError("prompt: must not be empty or whitespace-only")
        if not self.tool_pairs and self.prompt is None:
            raise ValueError("tool_pairs: must not be empty when no prompt is given")
        ids = [p.tool_call_id for p in self.tool_pairs]
        for index, tool_call_id in enumerate(ids):
            if tool_call_id in ids[:index]:
                raise ValueError(f"tool_pairs[{index}].tool_call_id: must be unique within the request")
        return self


class OffloadCompact(OffloadBody):
    # Any shape a provider takes (OpenAI, Anthropic, the original's own) as long as it has a role; kept as sent.
    messages: list[dict[str, Any]] = Field(json_schema_extra={"items": ROLE_REQUIRED})
    ratio: Annotated[float, Field(ge=0, le=2)]
    # The original's Python SDK treats the window as optional while its server refuses its absence.
    context_window: Annotated[int, Field(ge=1)] = DEFAULT_CONTEXT_WINDOW
    total_tokens: Annotated[int, Field(ge=0)]
    message_tokens: list[Annotated[int, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _roles(self) -> OffloadCompact:
        for index, message in enumerate(self.messages):
            role = message.get("role")
            if not isinstance(role, str) or not role:
                raise ValueError(f"messages[{index}].role: must be a non-empty string")
        return self


class OffloadQueryGraphs(OffloadBody):
    limit: Annotated[int, Field(ge=1)] | None = None


class OffloadReadRef(OffloadBody):
    # A passage by query or by lines, not both; `start_line` ≤ `end_line` (a rule the schema cannot state).
    model_config = ConfigDict(
        json_schema_extra=when(given("query"), {"not": one_of_given(given("start_line"), given("end_line"))})
    )

    result_ref: Annotated[str, Field(min_length=1, max_length=1000)]
    query: Annotated[str, Field(min_length=1, max_length=1000, json_schema_extra={"pattern": NON_BLANK})] | None = None
    start_line: Annotated[int, Field(ge=1)] | None = None
    end_line: Annotated[int, Field(ge=1)] | None = None
    max_tokens: Annotated[int, Field(ge=1, le=4096)] = 1600

    @model_validator(mode="after")
    def _one_selection(self) -> OffloadReadRef:
        if self.query is not None and not self.query.strip():
            raise ValueError("query: must not be empty or whitespace-only")
        if self.query is not None and (self.start_line is not None or self.end_line is not None):
            raise ValueError("query: cannot be combined with start_line or end_line")
        if self.start_line is not None and self.end_line is not None and self.start_line > self.end_line:
            raise ValueError("start_line: must not exceed end_line")
        return self
