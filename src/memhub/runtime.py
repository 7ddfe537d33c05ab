"""Long-lived parts built from settings, shared by `memhub serve`, `memhub reembed` and tests."""

from __future__ import annotations

from memhub.memory.embedding import EmbeddingRuntime
from memhub.memory.prompts import MemoryPromptService
from memhub.memory.services import MemoryServices
from memhub.pipeline.generation_log import GenerationLogService
from memhub.pipeline.runner import PipelineRunner
from memhub.pipeline.stages import LLMPersona, LLMScenes, RulePersona, RuleScenes, Stages
from memhub.pipeline.worker import PipelineWorker
from memhub.retrieval.embed import build_embedder
from memhub.settings import Settings
from memhub.store import MemoryStore


def embedding_runtime(settings: Settings, store: MemoryStore) -> EmbeddingRuntime:
    """The configured embedder over a store; nothing is loaded or contacted yet.

    A remote provider gets a second client for queries with the shorter query timeout; a local
    model serves queries from its own instance already.
    """
    documents = build_embedder(settings.embedding_config())
    queries = documents
    if documents is not None and settings.embedding_provider.strip().lower() == "openai":
        queries = build_embedder(settings.embedding_config(for_queries=True))
    return EmbeddingRuntime(
        store,
        documents,
        provider=settings.embedding_provider.strip().lower(),
        query_embedder=queries,
        batch_size=settings.embedding_batch_size,
        lexical_weight=settings.search_lexical_weight,
    )


def dimension_known_offline(settings: Settings) -> bool:
    """Whether the model's dimension is known without asking the provider (so it can be checked at start)."""
    provider = settings.embedding_provider.strip().lower()
    return provider == "local" or (provider == "openai" and settings.embedding_dimensions is not None)


def pipeline_stages(settings: Settings) -> Stages:
    """An LLM's stages when one is configured, else the offline rule-based ones (the default: no key needed)."""
    config = settings.pipeline_config()
    llm = settings.llm_config()
    if llm is not None:
        from memhub.llm.client import ChatClient
        from memhub.pipeline.llm_stages import LLMDeduplicator, LLMExtractor, LLMPersonaWriter, LLMSceneWriter

        client = ChatClient(llm)
        return Stages(
            extractor=LLMExtractor(client),
            deduplicator=LLMDeduplicator(client),
            scenes=LLMScenes(LLMSceneWriter(client), config.max_scenes),
            persona=LLMPersona(LLMPersonaWriter(client), config.mode),
            generator=llm.model,
        )
    # Imported here: a process that never runs the pipeline does not build the rule tables.
    from memhub.pipeline.offline import OfflineDeduplicator, OfflineExtractor

    return Stages(
        extractor=OfflineExtractor(),
        deduplicator=OfflineDeduplicator(),
        scenes=RuleScenes(config.max_scenes),
        persona=RulePersona(config.mode),
        generator="offline",
    )


def pipeline_worker(settings: Settings, store: MemoryStore, memory: MemoryServices) -> PipelineWorker:
    """The background worker that turns conversations into memories; not started yet."""
    config = settings.pipeline_config()
    runner = PipelineRunner(
        store,
        memory,
        pipeline_stages(settings),
        config,
        prompts=MemoryPromptService(store.prompts),
        generations=GenerationLogService(store.prompts),
    )
    return PipelineWorker(store, runner, config)
