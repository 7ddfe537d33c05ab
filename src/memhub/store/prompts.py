"""The store interface of custom memory prompts (`/v3/memory-prompt/*`) and of the memory generation log.

Prompts belong to an instance (service id) and, inside it, to one team (their owner) or to the
instance itself (no owner team). A setting points one target — the whole instance, a team, or one
agent of a team — at a prompt for one layer; every change of a setting is logged. The generation
log records what each L1/L2/L3 generation consumed and produced.

`owners`/`teams` arguments narrow a read or write to what one caller may touch, inside the query:
None means no restriction; a set of team ids excludes instance-level prompts and settings. A
`GenerationScope` narrows reads of the generation log the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence, Set
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


class PromptStore(ABC):
    """Custom memory prompts, their settings and setting log, and the generation log."""

    # -- prompts ---------------------------------------------------------------------------
    @abstractmethod
    def create_prompt(self, service_id: str, prompt: MemoryPrompt, max_prompts: int) -> bool:
        """Store a new prompt; False (nothing written) when the instance already holds `max_prompts`."""

    @abstractmethod
    def get_prompts(self, service_id: str, ids: Sequence[str]) -> list[MemoryPrompt]:
        """The prompts among `ids` that exist (in no particular order)."""

    @abstractmethod
    def list_prompts(
        self, service_id: str, layer: PromptLayer | None, page: Page, owners: Set[str] | None = None
    ) -> tuple[list[MemoryPrompt], int]:
        """A page of prompts (of these owner teams) in creation order, and how many match in all."""

    @abstractmethod
    def update_prompt(
        self,
        service_id: str,
        memory_prompt_id: str,
        name: str | None,
        prompt: str | None,
        now_ms: int,
        owners: Set[str] | None = None,
    ) -> MemoryPrompt | None:
        """Change a prompt's name and/or text and bump its version; None when it does not exist (among `owners`)."""

    @abstractmethod
    def delete_prompts(
        self, service_id: str, ids: Sequence[str], request_id: str, now_ms: int, owners: Set[str] | None = None
    ) -> list[PromptSetting] | None:
        """Delete every prompt of `ids` and clear (and log) the settings that used them.

        All or nothing: None, with nothing deleted, when any id does not exist (among `owners`).
        Returns the cleared settings.
        """

    # -- settings --------------------------------------------------------------------------
    @abstractmethod
    def apply_prompt(
        self,
        service_id: str,
        memory_prompt_id: str,
        targets: Sequence[PromptTarget],
        layer: PromptLayer,
        request_id: str,
        now_ms: int,
    ) -> int | None:
        """Point each target at the prompt for `layer`, logging apply or replace.

        Targets already on this prompt are left alone. Returns how many changed, or None when
        the prompt does not exist in that layer (checked in the same transaction).
        """

    @abstractmethod
    def clear_settings(
        self, service_id: str, targets: Sequence[PromptTarget], layer: PromptLayer, request_id: str, now_ms: int
    ) -> int:
        """Remove the targets' settings for `layer` (logging each); how many existed."""

    @abstractmethod
    def list_settings(self, service_id: str, flt: SettingFilter, page: Page) -> tuple[list[PromptSetting], int]:
        """A page of settings in update order, and how many match in all."""

    @abstractmethod
    def list_setting_logs(self, service_id: str, flt: SettingLogFilter, page: Page) -> tuple[list[SettingLog], int]:
        """A page of setting changes in time order, and how many match in all."""

    @abstractmethod
    def resolve(self, service_id: str, team_id: str, agent_id: str, layer: PromptLayer) -> ResolvedPrompt | None:
        """The effective custom prompt: the agent's, else the team's, else the instance's; None if none.

        A setting counts only when its prompt may serve its target: an instance-level prompt, or
        one owned by the target's team.
        """

    # -- generation log --------------------------------------------------------------------
    @abstractmethod
    def record_generation(self, log: GenerationLog, prune_before_ms: int) -> None:
        """Store one generation; logs created before `prune_before_ms` are deleted in the same write."""

    @abstractmethod
    def list_generations(
        self, service_id: str, flt: GenerationFilter, after: Position | None, limit: int
    ) -> tuple[list[GenerationLog], Position | None]:
        """Newest first, starting after `after`; the position to continue from, or None at the end."""

    @abstractmethod
    def get_generation(
        self,
        service_id: str,
        log_id: str | None = None,
        output: GenerationRef | None = None,
        visible: GenerationScope | None = None,
    ) -> GenerationLog | None:
        """One generation by its log id, or the newest one that produced `output` (among `visible`)."""
