"""Custom memory prompts, their settings and change log, and the memory generation log, as records."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from typing import Literal

from memhub.scope import MemoryScope, ProfileScope

PromptLayer = Literal["l1", "l2", "l3"]
PromptSource = Literal["agent", "team", "instance", "system"]  # "system" = the built-in prompt
TargetType = Literal["instance", "team", "agent"]
SettingAction = Literal["apply", "replace", "clear"]
GenerationStatus = Literal["succeeded", "failed"]
RefLayer = Literal["l0", "l1", "l2", "l3"]
Position = tuple[int, int]  # (created_ms, seq) of a generation log row: where a page ends


@dataclass(frozen=True, slots=True)
class MemoryPrompt:
    """One custom prompt of an instance."""

    memory_prompt_id: str
    name: str
    layer: PromptLayer
    prompt: str
    version: int
    created_ms: int
    updated_ms: int
    owner_team_id: str = ""  # the team it belongs to; "" for an instance-level prompt

    @property
    def instance_level(self) -> bool:
        """True when no team owns the prompt (only instance administrators manage it)."""
        return not self.owner_team_id


@dataclass(frozen=True, slots=True)
class PromptTarget:
    """Where a setting applies: the instance (no ids), a team, or an agent of a team."""

    team_id: str = ""
    agent_id: str = ""

    @property
    def type(self) -> TargetType:
        """instance, team or agent."""
        if self.agent_id:
            return "agent"
        return "team" if self.team_id else "instance"


@dataclass(frozen=True, slots=True)
class PromptSetting:
    """The prompt a target uses for one layer."""

    target: PromptTarget
    layer: PromptLayer
    memory_prompt_id: str
    updated_ms: int


@dataclass(frozen=True, slots=True)
class SettingLog:
    """One change of one setting (`memory_prompt_id` is the new prompt, or the cleared one)."""

    seq: int
    action: SettingAction
    memory_prompt_id: str | None
    target: PromptTarget
    layer: PromptLayer
    request_id: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class ResolvedPrompt:
    """The prompt a generation uses for a (team, agent, layer), and where it came from."""

    memory_prompt_id: str
    prompt: str
    layer: PromptLayer
    source: PromptSource
    version: int


@dataclass(frozen=True, slots=True)
class Page:
    """Offset paging in creation (or update) order."""

    limit: int = 20
    offset: int = 0
    newest_first: bool = True


@dataclass(frozen=True, slots=True)
class SettingFilter:
    """Which settings to list; None means any."""

    memory_prompt_id: str | None = None
    target_type: TargetType | None = None
    team_id: str | None = None
    agent_id: str | None = None
    layer: PromptLayer | None = None
    teams: Set[str] | None = None  # only targets of these teams (never the instance's); None: every target


@dataclass(frozen=True, slots=True)
class SettingLogFilter:
    """Which setting changes to list; the window is inclusive."""

    start_ms: int
    end_ms: int
    memory_prompt_id: str | None = None
    team_id: str | None = None
    agent_id: str | None = None
    action: SettingAction | None = None
    teams: Set[str] | None = None  # only changes of these teams' targets; None: every change


# -- generation log ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GenerationRef:
    """A record a generation read or wrote."""

    layer: RefLayer
    record_id: str


@dataclass(frozen=True, slots=True)
class PromptRef:
    """Which prompt a generation ran with; the text itself is not kept, only its SHA-256."""

    memory_prompt_id: str
    version: int
    source: PromptSource
    sha256: str


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens an LLM reported for one generation."""

    prompt: int
    completion: int


@dataclass(frozen=True, slots=True)
class GenerationLog:
    """One L1/L2/L3 generation: inputs, outputs, prompt, model, latency and outcome."""

    log_id: str
    service_id: str
    layer: PromptLayer
    status: GenerationStatus
    team_id: str
    agent_id: str
    user_id: str
    task_id: str
    session_id: str
    prompt: PromptRef | None
    input_refs: tuple[GenerationRef, ...]
    output_refs: tuple[GenerationRef, ...]
    model: str
    latency_ms: int
    tokens: TokenUsage | None
    error: str | None
    created_ms: int


@dataclass(frozen=True, slots=True)
class GenerationScope:
    """The generations one caller may read, matched on the ids each record keeps.

    L1 generations of `memory` scopes (team, user, agent, task), L2/L3 generations of `profiles`
    (team, agent), and every generation of a team through the listed agents of `team_agents`.
    """

    memory: tuple[MemoryScope, ...] = ()
    profiles: tuple[ProfileScope, ...] = ()
    team_agents: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (team id, agent ids)


@dataclass(frozen=True, slots=True)
class GenerationFilter:
    """Which generations to list; the window is inclusive, None means any."""

    start_ms: int
    end_ms: int
    layer: PromptLayer | None = None
    status: GenerationStatus | None = None
    team_id: str | None = None
    agent_id: str | None = None
    visible: GenerationScope | None = None  # only what one caller may read; None: every generation
