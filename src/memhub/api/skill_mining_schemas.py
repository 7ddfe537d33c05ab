"""Request bodies of the skill mining routes (`extract`, `conversation/add`, `conversation/force-archive`), with
the original's rules.

The session ids become one buffer key, which the original joins with `|`: `session_id`, `user_id`, `team_id` and
`agent_id` must not contain it. On `conversation/add` every tool call and tool result carries `tool_call_id` (the
pair's anchor; checked by the route, as the original's handler does); `tool_name` is optional (OpenAI's tool
messages have none). memhub adds its id conventions (at most 256
characters, no control characters). `space_id`, when sent, must be the request's service id: the tenant is the
authenticated one, and a body naming another is a client error, not a switch of tenant.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from memhub.api.meta_schemas import MetaBody
from memhub.api.schemas import IDEMPOTENCY_KEY_PATTERN, MAX_ID_CHARS
from memhub.ids import NO_CONTROL_PATTERN
from memhub.timeutil import parse_iso_ms

MAX_MESSAGES = 500
PAIRED_ROLES = ("tool_call", "tool_result")
Role = Literal["user", "assistant", "tool_call", "tool_result", "system"]


def _no_bar(value: str) -> str:
    if "|" in value:
        raise ValueError("must not contain '|'")
    return value


def _iso_datetime(value: str) -> str:
    if parse_iso_ms(value) is None:
        raise ValueError("must be an ISO 8601 date-time")
    return value


SessionPart = Annotated[
    str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=NO_CONTROL_PATTERN), AfterValidator(_no_bar)
]
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=NO_CONTROL_PATTERN)]
TaskRef = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN)]
ToolField = Annotated[str, Field(min_length=1, max_length=128)]


class _Message(MetaBody):
    role: Role
    tool_name: ToolField | None = None
    tool_call_id: ToolField | None = None

    def wire(self) -> dict[str, Any]:
        """The message as it is buffered and archived (absent fields left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class SkillTurnMessage(_Message):
    """One message of a turn: any content (even empty), a numeric or textual timestamp."""

    content: str
    timestamp: int | float | str | None = None


class ExtractMessage(_Message):
    """One message of a direct extraction: non-empty content, an ISO date-time if any."""

    content: str = Field(min_length=1)
    timestamp: Annotated[str, AfterValidator(_iso_datetime)] | None = None


class SkillConversationAdd(MetaBody):
    """conversation/add: one turn's messages for the session's buffer."""

    session_id: SessionPart
    space_id: SessionPart | None = None
    user_id: SessionPart
    team_id: SessionPart
    agent_id: SessionPart
    task_id: TaskRef | None = None
    messages: list[SkillTurnMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    # memhub: the same key again (or as the `Idempotency-Key` header) buffers nothing a second time.
    idempotency_key: Annotated[str, Field(pattern=IDEMPOTENCY_KEY_PATTERN)] | None = None

    def unpaired(self) -> int | None:
        """The index of the first tool call or result without `tool_call_id` (the original's handler rule)."""
        return next((i for i, m in enumerate(self.messages) if m.role in PAIRED_ROLES and not m.tool_call_id), None)


class ExtractOptions(MetaBody):
    max_iterations: int | None = Field(None, ge=1, le=64)


class SkillExtract(MetaBody):
    """extract: archive these messages for mining now (no buffer, no thresholds)."""

    space_id: SessionPart | None = None
    user_id: SessionPart
    team_id: SessionPart
    agent_id: SessionPart
    session_id: SessionPart | None = None
    task_id: TaskRef | None = None
    messages: list[ExtractMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    reason: str | None = Field(None, min_length=1, max_length=500)
    options: ExtractOptions | None = None


class SkillForceArchive(MetaBody):
    """conversation/force-archive: cut the session's buffer into an archive now."""

    space_id: Id | None = None
    user_id: Id
    team_id: Id
    agent_id: Id
    session_id: Id
    reason: str | None = Field(None, max_length=2000)
    task_id: TaskRef | None = None
