"""`POST /v3/context/compose` (a memhub extension): the runtime context of one agent turn
(docs/context.md).

Authentication is the data plane's (the gateway key, or a user key); the isolation ids come from the body, then
the `x-tdai-*-id` headers, then the user key's user, as on every data-plane route, and the composer applies the
data plane's authorization. Team and agent are optional (a help turn has neither), so strict isolation does not
apply, as for /v3/knowledge/*. Nothing is written.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.isolation import resolve_isolation
from memhub.api.meta_schemas import MetaBody
from memhub.api.schemas import Body
from memhub.context import ComposeRequest, ContextComposer
from memhub.context.model import CAP_BOUNDS, DEFAULT_CAPS, Caps

QUERY_MAX = 4000
PATHS_MAX = 50
ATTACHMENTS_MAX = 20
PathText = Annotated[str, Field(min_length=1, max_length=1024)]
FileName = Annotated[str, Field(min_length=1, max_length=512)]


def _cap(name: str) -> Any:
    low, high = CAP_BOUNDS[name]
    return Field(None, ge=low, le=high, description=f"default {DEFAULT_CAPS[name]}")


class CapabilityFlags(BaseModel):
    """Asset capability flags for this turn; an absent flag follows the user's configuration."""

    model_config = ConfigDict(strict=True, extra="forbid")

    llm_wiki: bool | None = None
    code_graph: bool | None = None
    skill: bool | None = None
    chat_memory: bool | None = None


class CapsOverride(BaseModel):
    """Character caps to use instead of the defaults, each within its bounds."""

    model_config = ConfigDict(strict=True, extra="forbid")

    workspace: int | None = _cap("workspace")
    agent: int | None = _cap("agent")
    help: int | None = _cap("help")
    standards: int | None = _cap("standards")
    skills: int | None = _cap("skills")
    memory: int | None = _cap("memory")
    conversation: int | None = _cap("conversation")
    total: int | None = _cap("total")


class ContextCompose(Body, MetaBody):
    """memhub: compose one turn's runtime context. A data-plane body (isolation ids, the same rules) served by
    the management plane's route runner, which gives the handler the caller and the knowledge services."""

    query: Annotated[str, Field(min_length=1, max_length=QUERY_MAX)]
    help_mode: bool = False
    system_agent: bool = False
    paths: Annotated[list[PathText], Field(max_length=PATHS_MAX)] = Field(default_factory=list)
    attachments: Annotated[list[FileName], Field(max_length=ATTACHMENTS_MAX)] = Field(default_factory=list)
    data_connection: bool = False
    capabilities: CapabilityFlags = Field(default_factory=CapabilityFlags)
    caps: CapsOverride = Field(default_factory=CapsOverride)
    language: Literal["en", "zh"] = "en"
    conversation_id: Annotated[str, Field(max_length=512)] | None = None
    agent_source: Annotated[str, Field(max_length=128)] | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    def request(self) -> ComposeRequest:
        """The service's request: the caps and flags the body set over the defaults."""
        caps = Caps(**{k: v for k, v in self.caps.model_dump().items() if v is not None})
        flags = {k: v for k, v in self.capabilities.model_dump().items() if v is not None}
        return ComposeRequest(
            query=self.query,
            help_mode=self.help_mode,
            system_agent=self.system_agent,
            paths=tuple(self.paths),
            attachments=tuple(self.attachments),
            data_connection=self.data_connection,
            capabilities=flags,
            caps=caps,
            language=self.language,
            conversation_id=self.conversation_id,
            agent_source=self.agent_source,
        )


def routes(composer: ContextComposer) -> list[GuardedRoute]:
    """The context routes, served by this composer."""

    def compose(call: GuardedCall, body: ContextCompose) -> Any:
        caller = call.caller
        isolation = resolve_isolation(caller.service_id, body, call.request, strict=False, default_user=caller.user_id)
        return composer.compose(caller, isolation, body.request()).view()

    return [GuardedRoute("compose", ContextCompose, compose, Guard.DATA, summary="Compose one turn's runtime context")]
