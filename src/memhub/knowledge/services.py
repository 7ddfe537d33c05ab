"""The knowledge services of one gateway, wired over one store."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.knowledge.codegraph.service import CodeGraphConfig, CodeGraphService
from memhub.knowledge.offer import CREDENTIAL_ENV, KnowledgeOffer
from memhub.knowledge.toolcall import KnowledgeTools
from memhub.knowledge.tools import Language
from memhub.knowledge.wiki.service import WikiConfig, WikiService
from memhub.meta.config import ConfigParams
from memhub.meta.origins import KnowledgeOrigins
from memhub.store.meta import MetaStore


@dataclass(frozen=True, slots=True)
class KnowledgeServices:
    """Wikis, code graphs, tool dispatch and the `<knowledge_tools>` offer."""

    wikis: WikiService
    code_graphs: CodeGraphService
    tools: KnowledgeTools
    offer: KnowledgeOffer

    @classmethod
    def over(
        cls,
        store: MetaStore,
        config: ConfigParams,
        wiki: WikiConfig,
        code_graph: CodeGraphConfig,
        *,
        language: Language,
        open_tools: bool,
        origins: KnowledgeOrigins | None = None,
    ) -> KnowledgeServices:
        """All knowledge services; with open tools the prompt recipes carry no credential line.

        `origins` are where offered resources may live; by default only the wikis' public URL.
        """
        wikis = WikiService(store, wiki)
        code_graphs = CodeGraphService(store, code_graph)
        offer = KnowledgeOffer(
            store,
            config,
            credential_env=None if open_tools else CREDENTIAL_ENV,
            public_url=wiki.public_url,
            origins=origins or KnowledgeOrigins.of(wiki.public_url),
        )
        return cls(wikis, code_graphs, KnowledgeTools(wikis, code_graphs, language), offer)

    def resume(self) -> None:
        """Queue again the builds a previous process left queued or running."""
        self.wikis.resume()
        self.code_graphs.resume()

    def close(self) -> None:
        """Stop the build workers (a queued build resumes at the next start)."""
        self.wikis.close()
        self.code_graphs.close()
