"""The knowledge services of one gateway, wired over one store: one service per registered kind, tool
dispatch and the `<knowledge_tools>` offer.

A new kind adds its service class to `KIND_SERVICES` (in the order of memhub.knowledge.kinds.KINDS) and its
config to the mapping `KnowledgeServices.over` is given (the skill kind's "config" is the skill service its tools
read through).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.codegraph.service import CodeGraphService
from memhub.knowledge.kind import KindService
from memhub.knowledge.kinds import KINDS
from memhub.knowledge.offer import CREDENTIAL_ENV, KnowledgeOffer
from memhub.knowledge.service import ResourceConfig
from memhub.knowledge.skill.service import SkillService
from memhub.knowledge.skill.toolcall import SkillTools
from memhub.knowledge.toolcall import KnowledgeTools
from memhub.knowledge.tools import Language
from memhub.knowledge.wiki.kind import WIKI
from memhub.knowledge.wiki.service import WikiService
from memhub.meta.config import ConfigParams
from memhub.meta.origins import KnowledgeOrigins
from memhub.store.meta import MetaStore

KIND_SERVICES: tuple[type[Any], ...] = (WikiService, CodeGraphService, SkillTools)


@dataclass(frozen=True, slots=True)
class KnowledgeServices:
    """The service of every registered kind (by kind name), tool dispatch and the `<knowledge_tools>` offer."""

    kinds: Mapping[str, KindService]
    tools: KnowledgeTools
    offer: KnowledgeOffer

    @classmethod
    def over(
        cls,
        store: MetaStore,
        config: ConfigParams,
        configs: Mapping[str, ResourceConfig | SkillService],
        *,
        public_url: str,
        language: Language,
        open_tools: bool,
        origins: KnowledgeOrigins | None = None,
    ) -> KnowledgeServices:
        """All knowledge services, from each kind's config (by kind name); with open tools the prompt recipes
        carry no credential line.

        `public_url` is where agents reach this server's resources; `origins` are where offered resources may
        live, by default only `public_url`.
        """
        kinds: dict[str, KindService] = {
            service.KIND.name: service(store, configs[service.KIND.name]) for service in KIND_SERVICES
        }
        offer = KnowledgeOffer(
            store,
            config,
            credential_env=None if open_tools else CREDENTIAL_ENV,
            public_url=public_url,
            origins=origins or KnowledgeOrigins.of(public_url),
        )
        return cls(kinds, KnowledgeTools(kinds, language), offer)

    def documents(self) -> WikiService:
        """The service whose documents feed the composer's knowledge blocks (the kind whose context role is
        "documents")."""
        (name,) = [k.name for k in KINDS if k.context == "documents"]
        return cast(WikiService, self.kinds[name])

    @property
    def wikis(self) -> WikiService:
        """The wiki service (the wiki routes' handle on it)."""
        return cast(WikiService, self.kinds[WIKI.name])

    @property
    def code_graphs(self) -> CodeGraphService:
        """The code-graph service (the code-graph routes' handle on it)."""
        return cast(CodeGraphService, self.kinds[CODE_GRAPH.name])

    def resume(self) -> None:
        """Queue again the builds a previous process left queued or running."""
        for service in self.kinds.values():
            service.resume()

    def close(self) -> None:
        """Stop the build workers (a queued build resumes at the next start)."""
        for service in self.kinds.values():
            service.close()
