"""What the memory proxy injects into a turn, and where: block renderers, agent profiles (slot splicing), the
injection budget, the per-session block cache and the `Injector` (memhub.proxy.ports) over the hub's services,
and per-turn recall (the `TurnRecaller`).

`build_injector` and `build_recaller` are the calls the composition root makes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from memhub.knowledge.services import KnowledgeServices
from memhub.knowledge.skill.finder import SkillFinder
from memhub.memory.services import MemoryServices
from memhub.meta.services import MetaServices
from memhub.proxy.injection.blocks import RECALL_TAG, SkillRecipe
from memhub.proxy.injection.budget import TRUNCATION_MARKER
from memhub.proxy.injection.injector import BlockInjector, InjectionSources, InjectorConfig
from memhub.proxy.injection.recall import RecallConfig, Recaller
from memhub.proxy.injection.sources import (
    KnowledgeSource,
    MetaCapabilities,
    ProfileMemorySource,
    RecallSource,
    SessionContextSource,
    SkillListingSource,
)
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.session_token import BRIDGE_PATH, SESSION_HEADER


class HubParts(Protocol):
    """The parts of the hub (memhub.runtime.Hub) the injector reads."""

    @property
    def meta(self) -> MetaServices: ...

    @property
    def memory(self) -> MemoryServices: ...

    @property
    def knowledge(self) -> KnowledgeServices: ...

    @property
    def skill_finder(self) -> SkillFinder: ...


def hub_sources(hub: HubParts, bridge_url: str) -> InjectionSources:
    """The block readers over the hub's services; the knowledge recipes call `bridge_url`."""
    return InjectionSources(
        capabilities=MetaCapabilities(hub.meta.config),
        profile_memory=ProfileMemorySource(hub.meta.store, hub.memory.core, hub.memory.scenario),
        skills=SkillListingSource(hub.skill_finder, hub.meta.store),
        knowledge=KnowledgeSource(hub.knowledge.offer, bridge_url),
        session_context=SessionContextSource(hub.meta.agents, hub.meta.tasks),
    )


def build_injector(
    hub: HubParts,
    config: InjectorConfig,
    session_token: Callable[[ProxyIdentity], str],
    *,
    clock: Callable[[], float] | None = None,
) -> BlockInjector:
    """The proxy's injector over the hub; `session_token` mints the memory tools' `x-memhub-session` value
    (memhub.proxy.session_token.SessionTokens.mint)."""
    bridge_url = config.proxy_url.rstrip("/") + BRIDGE_PATH

    def skill_recipe(identity: ProxyIdentity) -> SkillRecipe:
        return SkillRecipe(bridge_url, identity.service_id, session_token(identity))

    extra = {"clock": clock} if clock is not None else {}
    return BlockInjector(hub_sources(hub, bridge_url), config, session_token, skill_recipe, **extra)


def build_recaller(hub: HubParts, config: RecallConfig) -> Recaller:
    """Per-turn recall over the hub's `/v3/recall` service, as the turn's user."""
    return Recaller(RecallSource(hub.memory.recall, hub.meta.config), config)


__all__ = [
    "RECALL_TAG",
    "SESSION_HEADER",
    "TRUNCATION_MARKER",
    "BlockInjector",
    "HubParts",
    "InjectionSources",
    "InjectorConfig",
    "RecallConfig",
    "Recaller",
    "build_injector",
    "build_recaller",
    "hub_sources",
]
