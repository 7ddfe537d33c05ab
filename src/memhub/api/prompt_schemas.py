"""Request bodies of /v3/memory-prompt/* and /v3/memory-generation-log/*.

These are strict objects, as in the original: unknown keys are refused. The isolation ids of
every data-plane body stay allowed; on these routes `team_id`/`agent_id` in the body also name
the target (a setting's team, the team and agent whose effective prompt to resolve, a filter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from memhub.api.json_rules import absent, all_of, given, named, non_blank, one_of_given, when
from memhub.api.schemas import MAX_ID_CHARS, Body, IsoInstant
from memhub.ids import NO_CONTROL_PATTERN
from memhub.timeutil import parse_iso_ms

MAX_NAME_CHARS = 100
MAX_PROMPT_CHARS = 10_000
MAX_CURSOR_CHARS = 512
MAX_WINDOW_MS = 90 * 86_400_000

Layer = Literal["l1", "l2", "l3"]
Order = Literal["asc", "desc"]


def _trimmed(limit: int) -> Callable[[str], str]:
    # Limits count characters (code points) after trimming, like the original's Unicode length.
    def check(value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be empty")
        if len(value) > limit:
            raise ValueError(f"must be at most {limit} characters")
        return value

    return check


def _text(limit: int, *, single_line: bool) -> Any:
    # Ids and names refuse control characters; all count their length after trimming.
    rule = Field(pattern=NO_CONTROL_PATTERN) if single_line else Field()
    return Annotated[
        str,
        rule,
        AfterValidator(_trimmed(limit)),
        Field(json_schema_extra=non_blank(limit, single_line=single_line)),
    ]


Name = _text(MAX_NAME_CHARS, single_line=True)
PromptText = _text(MAX_PROMPT_CHARS, single_line=False)
PromptId = _text(MAX_ID_CHARS, single_line=True)
# A team or agent named in the body (blank counts as absent) and a window's two ends.
AGENT_NEEDS_TEAM = when(named("agent_id"), named("team_id"))
WINDOW = all_of(when(given("start_time"), given("end_time")), when(given("end_time"), given("start_time")))
WINDOW_TEXT = "start_time and end_time come together, start_time first, at most 90 days apart"


def _present(value: str | None) -> str | None:
    """A target id as given in the body: blank counts as absent."""
    return value.strip() if value and value.strip() else None


class PromptBody(Body):
    """A strict body: isolation ids plus the route's own fields, nothing else."""

    model_config = ConfigDict(strict=True, extra="forbid")

    def team(self) -> str | None:
        """The team named in the body (not a header), or None."""
        return _present(self.team_id)

    def agent(self) -> str | None:
        """The agent named in the body (not a header), or None."""
        return _present(self.agent_id)


class OffsetPaging(BaseModel):
    """limit/offset/time_order as the original's list routes take them."""

    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10_000_000)
    time_order: Order = "desc"


def _window(start: str | None, end: str | None) -> tuple[int, int] | None:
    """start_time/end_time together, ordered and at most 90 days apart (rules named by field)."""
    if (start is None) != (end is None):
        raise ValueError("start_time: start_time and end_time must be provided together")
    if start is None or end is None:
        return None
    start_ms, end_ms = parse_iso_ms(start), parse_iso_ms(end)
    assert start_ms is not None and end_ms is not None  # IsoInstant checked them
    if start_ms > end_ms:
        raise ValueError("start_time: must not be after end_time")
    if end_ms - start_ms > MAX_WINDOW_MS:
        raise ValueError("end_time: the time range must not exceed 90 days")
    return start_ms, end_ms


class TimeWindow(BaseModel):
    """An optional inclusive window of at most 90 days."""

    model_config = ConfigDict(json_schema_extra={**WINDOW, "description": WINDOW_TEXT})

    start_time: IsoInstant | None = None
    end_time: IsoInstant | None = None

    def window(self) -> tuple[int, int] | None:
        """(start_ms, end_ms), or None when no window was given."""
        return _window(self.start_time, self.end_time)


# -- memory prompts ------------------------------------------------------------------------
class MemoryPromptCreate(PromptBody):
    name: Name
    layer: Layer
    prompt: PromptText


class MemoryPromptUpdate(PromptBody):
    model_config = ConfigDict(json_schema_extra=one_of_given(given("name"), given("prompt")))

    memory_prompt_id: PromptId
    name: Name | None = None
    prompt: PromptText | None = None

    @model_validator(mode="after")
    def _something(self) -> MemoryPromptUpdate:
        if self.name is None and self.prompt is None:
            raise ValueError("name: name or prompt is required")
        return self


class MemoryPromptDelete(PromptBody):
    memory_prompt_ids: list[PromptId] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _dedupe(self) -> MemoryPromptDelete:
        self.memory_prompt_ids = list(dict.fromkeys(self.memory_prompt_ids))
        return self


class MemoryPromptGet(PromptBody, OffsetPaging):
    """By id; the effective prompt of team_id[+agent_id] for a layer; or a list (by layer)."""

    model_config = ConfigDict(
        json_schema_extra=all_of(
            AGENT_NEEDS_TEAM,
            when(named("team_id"), all_of(given("layer"), {"not": given("memory_prompt_id")})),
        )
    )

    memory_prompt_id: PromptId | None = None
    layer: Layer | None = None

    @model_validator(mode="after")
    def _mode(self) -> MemoryPromptGet:
        if self.agent() and not self.team():
            raise ValueError("team_id: is required with agent_id")
        if self.memory_prompt_id is not None and self.team():
            raise ValueError("memory_prompt_id: cannot be combined with team_id or agent_id")
        if self.team() and self.layer is None:
            raise ValueError("layer: is required to resolve the effective prompt of team_id/agent_id")
        return self


class MemoryPromptSet(PromptBody):
    model_config = ConfigDict(
        json_schema_extra=all_of(
            when(given("action", {"const": "apply"}), given("memory_prompt_id")),
            when(given("agent_ids"), named("team_id")),
        )
    )

    action: Literal["apply", "clear"]
    layer: Layer
    memory_prompt_id: PromptId | None = None
    agent_ids: list[PromptId] | None = Field(None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _target(self) -> MemoryPromptSet:
        if self.action == "apply" and self.memory_prompt_id is None:
            raise ValueError("memory_prompt_id: is required for apply")
        if self.agent_ids is not None:
            if not self.team():
                raise ValueError("team_id: is required with agent_ids")
            self.agent_ids = list(dict.fromkeys(self.agent_ids))
        return self


class MemoryPromptSettingList(PromptBody, OffsetPaging):
    model_config = ConfigDict(
        json_schema_extra=all_of(
            AGENT_NEEDS_TEAM,
            when(given("target_type", {"const": "instance"}), absent("team_id")),
            when(given("target_type", {"const": "team"}), absent("agent_id")),
        )
    )

    memory_prompt_id: PromptId | None = None
    target_type: Literal["instance", "team", "agent"] | None = None
    layer: Layer | None = None

    @model_validator(mode="after")
    def _target(self) -> MemoryPromptSettingList:
        if self.agent() and not self.team():
            raise ValueError("team_id: is required with agent_id")
        if self.target_type == "instance" and self.team():
            raise ValueError("target_type: an instance target cannot include team_id or agent_id")
        if self.target_type == "team" and self.agent():
            raise ValueError("agent_id: a team target cannot include agent_id")
        return self


class MemoryPromptLog(PromptBody, OffsetPaging, TimeWindow):
    model_config = ConfigDict(
        json_schema_extra={
            **all_of(WINDOW, AGENT_NEEDS_TEAM, one_of_given(given("memory_prompt_id"), named("team_id"))),
            "description": WINDOW_TEXT,
        }
    )

    memory_prompt_id: PromptId | None = None
    action: Literal["apply", "replace", "clear"] | None = None

    @model_validator(mode="after")
    def _rules(self) -> MemoryPromptLog:
        self.window()
        if self.agent() and not self.team():
            raise ValueError("team_id: is required with agent_id")
        if self.memory_prompt_id is None and not self.team():
            raise ValueError("memory_prompt_id: memory_prompt_id or team_id is required")
        return self


# -- generation log ------------------------------------------------------------------------
class GenerationLogList(PromptBody, TimeWindow):
    """Newest first; team_id/agent_id in the body narrow the list (a memhub extension)."""

    model_config = ConfigDict(
        json_schema_extra={**WINDOW, "description": WINDOW_TEXT + "; cursor is one this server issued"}
    )

    layer: Layer | None = None
    status: Literal["succeeded", "failed"] | None = None
    limit: int = Field(20, ge=1, le=100)
    cursor: Annotated[str, Field(min_length=1, max_length=MAX_CURSOR_CHARS)] | None = None

    @model_validator(mode="after")
    def _rules(self) -> GenerationLogList:
        self.window()
        return self


class GenerationLogGet(PromptBody):
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [given("log_id"), given("memory_id")],
            **when(given("memory_id"), given("layer")),
        }
    )

    log_id: PromptId | None = None
    memory_id: PromptId | None = None
    layer: Layer | None = None

    @model_validator(mode="after")
    def _mode(self) -> GenerationLogGet:
        if (self.log_id is None) == (self.memory_id is None):
            raise ValueError("log_id: provide exactly one of log_id or memory_id")
        if self.memory_id is not None and self.layer is None:
            raise ValueError("layer: is required with memory_id")
        return self
