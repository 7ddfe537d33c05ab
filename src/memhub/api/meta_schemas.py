"""Request bodies of the management plane (`/v3/meta/*`, `/v3/internal/meta/*`) and `/v3/knowledge/*`.

They follow the original's schemas field for field. memhub adds bounds the original lacks (string
lengths, JSON in `metadata_json`, ISO instants) so that bad input is refused with the field named.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from memhub.api.json_rules import JSON_TEXT, given, one_of_given
from memhub.api.schemas import INT64_MAX, IsoInstant
from memhub.ids import NO_CONTROL_PATTERN
from memhub.knowledge.kinds import REGISTRY_TYPES
from memhub.meta.origins import origin_of
from memhub.meta.paging import DEFAULT_LIMIT, MAX_LIMIT, Page

AssetType = Literal["skill", "llm_wiki", "code_graph", "chat_memory"]
# A registry entry names one of the knowledge kinds the registry holds (skills are not among them).
KnowledgeType = Literal[REGISTRY_TYPES]  # type: ignore[valid-type]
Visibility = Literal["private", "team", "restricted", "agent", "task"]
AssetStatus = Literal["draft", "candidate", "approved", "deprecated", "archived", "failed"]
InjectionMode = Literal["direct", "summary", "tool", "reference"]
Permission = Literal["read", "write", "delete", "assign", "share", "use"]
TeamRole = Literal["admin", "member", "reviewer"]
# Older clients send tapd/github, newer ones external: all are accepted.
TaskSource = Literal["manual", "tapd", "github", "external", "other"]


def _json_text(value: str) -> str:
    try:
        json.loads(value)
    except ValueError:
        raise ValueError("must be a JSON document (a string holding JSON)") from None
    return value


def _url(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("must be an http(s) URL")
    # Different URL parsers must agree on the host an agent will be sent to (with its key).
    if origin_of(value) is None:
        raise ValueError("must be an http(s) URL with a plain host: no user@ part, spaces, quotes or backslashes")
    return value


def _agent_metadata(value: str) -> str:
    # memhub's own settings of an agent live under `memhub`; the proxy reads `memhub.offload` as its switch.
    metadata = json.loads(value)
    ours = metadata.get("memhub") if isinstance(metadata, dict) else None
    if ours is not None and not isinstance(ours, dict):
        raise ValueError("memhub: must be an object (memhub's own settings of the agent)")
    if isinstance(ours, dict) and "offload" in ours and ours["offload"] not in ("on", "off"):
        raise ValueError('memhub.offload: must be "on" or "off"')
    return value


def _one_or_many(value: Any) -> Any:
    # One value or a list of 1..5: normalised to a list here, so errors name `visibility[i]`.
    return [value] if isinstance(value, str) else value


Id = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_CONTROL_PATTERN)]
Name = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_CONTROL_PATTERN)]
Text = Annotated[str, Field(max_length=4096)]
LongText = Annotated[str, Field(max_length=65_536)]
JsonText = Annotated[str, Field(max_length=65_536, json_schema_extra=JSON_TEXT), AfterValidator(_json_text)]
AgentMetadata = Annotated[JsonText, AfterValidator(_agent_metadata)]
KeyName = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN)]
IdList = Annotated[list[Id], Field(min_length=1, max_length=1000)]
VisibilityFilter = Annotated[list[Visibility], Field(min_length=1, max_length=5), BeforeValidator(_one_or_many)]
# A host of plain ASCII URL characters: brackets and look-alike Unicode make the URL parser itself fail.
HTTP_URL = r"^[hH][tT][tT][pP][sS]?://[A-Za-z0-9._~%!$&'()*+,;=:@-]+(?:[/?#]\S*)?$"
Url = Annotated[
    str, Field(min_length=1, max_length=2048, json_schema_extra={"pattern": HTTP_URL}), AfterValidator(_url)
]
# Agents are told to send their user key to a knowledge entry's URL, so it must be on a trusted origin; which
# origins are trusted is the server's configuration, so the schema states the rule in words.
ServiceUrl = Annotated[
    Url,
    Field(
        description="An http(s) URL on this gateway's public origin (MEMHUB_KNOWLEDGE_PUBLIC_URL) or on an origin "
        "in MEMHUB_KNOWLEDGE_URL_ALLOWLIST, with no query and no @ in its path. It is stored canonical: no fragment, "
        "dot segments resolved, scheme and host in lower case, no default port."
    ),
]


class MetaBody(BaseModel):
    """Strict JSON types; unknown keys are ignored, as the original's schemas strip them."""

    model_config = ConfigDict(strict=True, extra="ignore")

    def fields(self) -> dict[str, Any]:
        """The fields the client sent (explicit nulls included), as plain values."""
        return self.model_dump(exclude_unset=True)


class Paged(MetaBody):
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0, le=10_000_000)

    def page(self) -> Page:
        """The requested slice."""
        return Page(self.limit, self.offset)


class UserIdOrKey(MetaBody):
    model_config = ConfigDict(json_schema_extra=one_of_given(given("user_id"), given("user_key")))

    user_id: Id | None = None
    user_key: Id | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Any:
        if not self.user_id and not self.user_key:
            raise ValueError("user_id: user_id or user_key is required")
        return self


# -- users and keys -------------------------------------------------------------------------
class UserCreate(MetaBody):
    username: Name
    user_id: Id | None = None
    external_id: Id | None = None
    auth_provider: Id | None = None
    display_name: Name | None = None
    email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=320)] | None = None


class UserCreateWithKey(MetaBody):
    username: Name
    user_key: Annotated[str, Field(min_length=16, max_length=256)]
    external_id: Id | None = None
    auth_provider: Id | None = None
    display_name: Name | None = None
    email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=320)] | None = None


class UserGet(UserIdOrKey):
    pass


class UserDelete(MetaBody):
    user_ids: IdList


class UserList(Paged):
    team_id: Id | None = None
    user_ids: Annotated[list[Id], Field(max_length=100)] | None = None
    username: Name | None = None


class InitAdmin(MetaBody):
    username: Name
    user_key: Annotated[str, Field(min_length=16, max_length=256)] | None = None
    instance_id: Id | None = None


class ListByInstance(Paged):
    instance_id: Id | None = None
    status: Literal["active", "inactive", "invited"] | None = None
    user_type: Literal["normal", "system_admin"] | None = None
    user_ids: Annotated[list[Id], Field(max_length=100)] | None = None


class UserKeyCreate(MetaBody):
    user_id: Id | None = None
    name: KeyName | None = None
    expires_at: IsoInstant | None = None


class UserKeyList(Paged):
    user_id: Id | None = None


class KeyRef(MetaBody):
    key_id: Id


class UserKeyUpdate(KeyRef):
    name: KeyName | None = None
    expires_at: IsoInstant | None = None


class AuthVerify(MetaBody):
    user_key: Annotated[str, Field(min_length=1, max_length=256)]


class AuditList(Paged):
    action: Id | None = None
    actor_user_id: Id | None = None
    since: IsoInstant | None = None
    until: IsoInstant | None = None


# -- teams and members ----------------------------------------------------------------------
class TeamChanges(MetaBody):
    """Fields team/create and team/update share."""

    description: Text | None = None
    status: Literal["active", "archived"] | None = None
    metadata_json: JsonText | None = None


class TeamCreate(TeamChanges):
    name: Name
    owner_user_id: Id


class TeamRef(MetaBody):
    team_id: Id


class TeamUpdate(TeamChanges, TeamRef):
    name: Name | None = None


class TeamDelete(MetaBody):
    team_ids: IdList


class TeamList(Paged, UserIdOrKey):
    name: Name | None = None


class MemberAdd(TeamRef):
    user_id: Id
    role: TeamRole | None = None
    status: Literal["active", "removed"] | None = None


class MemberRef(TeamRef):
    user_id: Id


class MemberList(Paged, TeamRef):
    pass


# -- agents, tasks, participation -----------------------------------------------------------
class AgentChanges(MetaBody):
    """Fields agent/create and agent/update share."""

    description: Text | None = None
    prompt: LongText | None = None
    visibility: Visibility | None = None
    status: Literal["active", "inactive"] | None = None
    metadata_json: AgentMetadata | None = None


class AgentCreate(AgentChanges):
    team_id: Id
    owner_user_id: Id
    name: Name


class AgentRef(MetaBody):
    agent_id: Id


class AgentUpdate(AgentChanges, AgentRef):
    name: Name | None = None


class AgentDelete(MetaBody):
    agent_ids: IdList


class AgentList(Paged):
    model_config = ConfigDict(
        json_schema_extra=one_of_given(given("team_id"), given("owner_user_id"), given("owner_user_key"))
    )

    team_id: Id | None = None
    owner_user_id: Id | None = None
    owner_user_key: Id | None = None
    status: Literal["active", "inactive"] | None = None
    name: Name | None = None

    @model_validator(mode="after")
    def _one_filter(self) -> Any:
        if not (self.team_id or self.owner_user_id or self.owner_user_key):
            raise ValueError("team_id: either team_id, owner_user_id, or owner_user_key is required")
        return self


class LinkedAgent(MetaBody):
    agent_id: Id
    role_in_task: Name | None = None


class TaskChanges(MetaBody):
    """Fields task/create and task/update share."""

    description: Text | None = None
    source_type: TaskSource | None = None
    source_url: Annotated[str, Field(max_length=2048)] | None = None
    status: Literal["running", "completed"] | None = None
    auto_assign_floating_assets: bool | None = None
    risk_level: Annotated[str, Field(max_length=64)] | None = None
    metadata_json: JsonText | None = None


class TaskCreate(TaskChanges):
    team_id: Id
    creator_user_id: Id
    title: Name
    linked_agents: Annotated[list[LinkedAgent], Field(max_length=100)] | None = None


class TaskRef(MetaBody):
    task_id: Id


class TaskUpdate(TaskChanges, TaskRef):
    title: Name | None = None


class TaskDelete(MetaBody):
    task_ids: IdList


class TaskList(Paged):
    model_config = ConfigDict(
        json_schema_extra=one_of_given(given("team_id"), given("creator_user_id"), given("creator_user_key"))
    )

    team_id: Id | None = None
    creator_user_id: Id | None = None
    creator_user_key: Id | None = None
    status: Literal["running", "completed"] | None = None
    title: Name | None = None

    @model_validator(mode="after")
    def _one_filter(self) -> Any:
        if not (self.team_id or self.creator_user_id or self.creator_user_key):
            raise ValueError("team_id: team_id, creator_user_id, or creator_user_key required")
        return self


class TaskAgentLink(TaskRef):
    agent_id: Id
    role_in_task: Name | None = None


class TaskAgentRef(TaskRef):
    agent_id: Id


class TaskAgentList(Paged, TaskRef):
    pass


class ParticipationAppend(MetaBody):
    team_id: Id
    task_id: Id
    agent_id: Id
    user_id: Id
    created_at: IsoInstant | None = None
    source: Name | None = None
    metadata_json: JsonText | None = None


class ParticipationList(Paged):
    team_id: Id
    task_id: Id | None = None
    agent_id: Id | None = None
    user_id: Id | None = None
    created_after: IsoInstant | None = None
    created_before: IsoInstant | None = None
    dedupe: bool | None = None


# -- assets, bindings, ACL ------------------------------------------------------------------
Ref = Annotated[str, Field(max_length=2048)]


class AssetChanges(MetaBody):
    """Fields asset/create and asset/update share."""

    description: Text | None = None
    source_ref: Ref | None = None
    visibility: Visibility | None = None
    status: AssetStatus | None = None
    confidence: Annotated[float, Field(ge=0, le=1)] | None = None
    expires_at: IsoInstant | None = None
    content_ref: Ref | None = None
    metadata_json: JsonText | None = None


class AssetCreate(AssetChanges):
    asset_id: Id
    team_id: Id
    asset_type: AssetType
    name: Name
    owner_user_id: Id
    source_type: Name


class AssetRef(MetaBody):
    asset_id: Id


class AssetUpdate(AssetChanges, AssetRef):
    name: Name | None = None
    version: Annotated[int, Field(ge=0, le=INT64_MAX)] | None = None


class AssetDelete(MetaBody):
    asset_ids: IdList


class AssetList(Paged):
    team_id: Id
    asset_type: AssetType | None = None
    status: AssetStatus | None = None
    owner_user_id: Id | None = None
    visibility: Visibility | None = None


class AssetListAccessible(Paged, UserIdOrKey):
    team_id: Id | None = None
    action: Permission | None = None
    asset_type: AssetType | None = None
    agent_id: Id | None = None
    visibility: VisibilityFilter | None = None


class Binding(MetaBody):
    asset_id: Id
    asset_type: AssetType
    injection_mode: InjectionMode | None = None
    priority: Annotated[int, Field(ge=-1_000_000, le=1_000_000)] | None = None
    created_by: Id


class FixedAssetSet(AgentRef):
    bindings: Annotated[list[Binding], Field(max_length=500)]


class FixedAssetList(Paged, AgentRef):
    pass


class FixedAssetDetail(Paged, AgentRef):
    apply_visibility_filter: bool | None = None
    touch_usage: bool | None = None
    asset_types: list[AssetType] | None = None


class FixedAssetSummary(MetaBody):
    agent_ids: Annotated[list[Id], Field(min_length=1, max_length=100)]
    asset_id: Id | None = None


class AclGrant(MetaBody):
    model_config = ConfigDict(json_schema_extra=one_of_given(given("granted_by"), given("granted_by_key")))

    asset_id: Id
    subject_type: Literal["user", "team_role", "agent"]
    subject_id: Id
    permission: Permission
    effect: Literal["allow", "deny"] | None = None
    granted_by: Id | None = None
    granted_by_key: Id | None = None

    @model_validator(mode="after")
    def _granter(self) -> Any:
        if not self.granted_by and not self.granted_by_key:
            raise ValueError("granted_by: granted_by or granted_by_key is required")
        return self


class AclRef(MetaBody):
    id: Id


class AclList(Paged, AssetRef):
    pass


class AclCheck(UserIdOrKey):
    asset_id: Id
    action: Permission
    agent_id: Id | None = None


# -- config -----------------------------------------------------------------------------------
class QuotaGet(MetaBody):
    pass


class ConfigGet(MetaBody):
    user_id: Id
    module: Name
    param_name: Name | None = None


class ConfigSet(MetaBody):
    user_id: Id
    module: Name
    params: Annotated[dict[Annotated[str, Field(min_length=1, max_length=256)], LongText], Field(max_length=100)]


# -- knowledge registry ---------------------------------------------------------------------
class KnowledgeChanges(MetaBody):
    """Fields knowledge/create and knowledge/update share."""

    summary: Annotated[str, Field(max_length=256)] | None = None
    repo_url: Annotated[str, Field(min_length=1, max_length=2048)] | None = None
    branch: Annotated[str, Field(max_length=256)] | None = None


class KnowledgeCreate(KnowledgeChanges):
    knowledge_id: Id
    type: KnowledgeType
    service_url: ServiceUrl
    name: Name
    team_id: Id
    user_id: Id | None = None


class KnowledgeGet(MetaBody):
    knowledge_id: Id
    team_id: Id | None = None


class KnowledgeUpdate(KnowledgeChanges, KnowledgeGet):
    name: Name | None = None
    service_url: ServiceUrl | None = None


class KnowledgeDelete(MetaBody):
    knowledge_ids: Annotated[list[Id], Field(min_length=1, max_length=100)]
    team_id: Id | None = None


class KnowledgePaging(MetaBody):
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)


class KnowledgeList(MetaBody):
    team_id: Id
    type: KnowledgeType | None = None
    knowledge_ids: Annotated[list[Id], Field(max_length=200)] | None = None
    pagination: KnowledgePaging = Field(default_factory=KnowledgePaging)
