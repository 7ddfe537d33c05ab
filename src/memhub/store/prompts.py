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

from memhub.model.prompts import (
    GenerationFilter,
    GenerationLog,
    GenerationRef,
    GenerationScope,
    MemoryPrompt,
    Page,
    Position,
    PromptLayer,
    PromptSetting,
    PromptTarget,
    ResolvedPrompt,
    SettingFilter,
    SettingLog,
    SettingLogFilter,
)


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
