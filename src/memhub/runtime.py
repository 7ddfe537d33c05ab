"""The composition root: every long-lived part built from settings, for every entry point.

`memhub serve` (the HTTP app), the other CLI commands and the tests build what they need here and nowhere
else: entry points never construct a store, an embedder, a pipeline or a knowledge service themselves.
`open_store` opens the configured backend; `build_hub` wires the services over it into a `Hub` that an entry
point starts, uses and closes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memhub.context import ContextComposer, FinderSkills
from memhub.knowledge.build_queue import QueueLimits
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.codegraph.remote import RemotePolicy
from memhub.knowledge.codegraph.service import CodeGraphConfig
from memhub.knowledge.service import ResourceConfig
from memhub.knowledge.services import KnowledgeServices
from memhub.knowledge.skill.finder import SkillFinder
from memhub.knowledge.skill.kind import SKILL
from memhub.knowledge.skill.mining.miner import MinerConfig, SkillMiner
from memhub.knowledge.skill.mining.service import MiningService
from memhub.knowledge.skill.service import SkillService
from memhub.knowledge.wiki.kind import WIKI
from memhub.knowledge.wiki.service import WikiConfig
from memhub.llm.client import ChatClient
from memhub.memory.chat_memory import ChatMemoryService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.memory.prompt_access import PromptAccess
from memhub.memory.prompts import MemoryPromptService
from memhub.memory.services import MemoryServices
from memhub.meta.keys import KeyHasher, load_key_hasher
from memhub.meta.quotas import Quotas
from memhub.meta.services import MetaServices
from memhub.offload.service import OffloadService
from memhub.pipeline.generation_access import GenerationAccess
from memhub.pipeline.generation_log import GenerationLogService
from memhub.pipeline.runner import JobHandler, PipelineRunner
from memhub.pipeline.service import PipelineService
from memhub.pipeline.stages import LLMPersona, LLMScenes, RulePersona, RuleScenes, Stages
from memhub.pipeline.worker import PipelineWorker
from memhub.proxy.capture import SPOOL_DIR as CAPTURE_SPOOL_DIR
from memhub.proxy.capture import BackgroundCapture
from memhub.proxy.commands import MemCommands
from memhub.proxy.identity import KeyIdentityResolver
from memhub.proxy.injection import InjectorConfig, RecallConfig, build_injector, build_recaller
from memhub.proxy.offload import ProxyOffloadConfig, build_offloader
from memhub.proxy.service import ProxyService
from memhub.proxy.session_token import SessionTokens
from memhub.proxy.upstream import Endpoint, Upstream, UpstreamConfig
from memhub.retrieval.embed import build_embedder
from memhub.settings import Settings
from memhub.shutdown import StopClock, finish_within
from memhub.store import MemoryStore
from memhub.store.factory import StoreOptions
from memhub.store.factory import open_store as open_store_at

log = logging.getLogger("memhub.runtime")

WORKER_STOP_TIMEOUT_S = 10.0  # a stop without a budget (CLI commands, tests): the most it waits for each worker


def open_store(settings: Settings, *, synchronous: str = "FULL", exact_vector_limit: int | None = None) -> MemoryStore:
    """The configured store (`MEMHUB_STORE_URL`, or SQLite in the data dir), opened and migrated."""
    options = StoreOptions(
        busy_timeout_ms=settings.db_busy_timeout_ms,
        synchronous=synchronous,
        exact_vector_limit=exact_vector_limit,
        vector_snapshots=settings.vector_snapshots,
    )
    return open_store_at(settings.store_location(), options)


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
        query_focus_tokens=settings.embedding_query_focus_tokens,
    )


def dimension_known_offline(settings: Settings) -> bool:
    """Whether the model's dimension is known without asking the provider (so it can be checked at start)."""
    provider = settings.embedding_provider.strip().lower()
    return provider == "local" or (provider == "openai" and settings.embedding_dimensions is not None)


def chat_client(settings: Settings) -> ChatClient | None:
    """The configured LLM's client, shared by the pipeline and the wikis' AI index (thread-safe); None without one."""
    llm = settings.llm_config()
    return ChatClient(llm) if llm is not None else None


def pipeline_stages(settings: Settings, client: ChatClient | None) -> Stages:
    """The LLM's stages over `client` when one is configured, else the offline rule-based ones (the default)."""
    config = settings.pipeline_config()
    if client is not None:
        from memhub.pipeline.llm_stages import LLMDeduplicator, LLMExtractor, LLMPersonaWriter, LLMSceneWriter

        return Stages(
            extractor=LLMExtractor(client),
            deduplicator=LLMDeduplicator(client),
            scenes=LLMScenes(LLMSceneWriter(client), config.max_scenes),
            persona=LLMPersona(LLMPersonaWriter(client), config.mode),
            generator=client.model,
        )
    # Imported here: a process that never runs the pipeline does not build the rule tables.
    from memhub.pipeline.offline import OfflineExtractor
    from memhub.pipeline.offline_dedup import OfflineDeduplicator

    return Stages(
        extractor=OfflineExtractor(),
        deduplicator=OfflineDeduplicator(),
        scenes=RuleScenes(config.max_scenes),
        persona=RulePersona(config.mode),
        generator="offline",
    )


def offload_service(settings: Settings, store: MemoryStore, client: ChatClient | None) -> OffloadService:
    """Context offload over `store`: its stages through the LLM when one is configured, else offline."""
    from memhub.offload.stages_factory import llm_stages, offline_stages

    stages = llm_stages(client) if client is not None else offline_stages()
    return OffloadService(store, stages, triggers=settings.offload_triggers())


def pipeline_worker(
    settings: Settings,
    store: MemoryStore,
    memory: MemoryServices,
    client: ChatClient | None,
    prompts: MemoryPromptService,
    generations: GenerationLogService,
    skills: SkillService | None = None,
    offload: OffloadService | None = None,
) -> PipelineWorker:
    """The background worker that turns conversations into memories (and, given the skill service, archives of
    agent work into skills); not started yet."""
    config = settings.pipeline_config()
    handlers: dict[str, JobHandler] = {}
    if skills is not None:
        handlers["skill"] = SkillMiner(store, skills, client, MinerConfig(lease_ms=config.lease_ms))
    if offload is not None:
        handlers.update(offload.job_handlers())
    runner = PipelineRunner(
        store,
        memory,
        pipeline_stages(settings, client),
        config,
        prompts=prompts,
        generations=generations,
        handlers=handlers,
    )
    return PipelineWorker(store, runner, config)


def knowledge_configs(settings: Settings, client: ChatClient | None = None) -> dict[str, ResourceConfig]:
    """Each knowledge kind's service config, by kind name (memhub.knowledge.services)."""
    files_root, public_url = settings.data_dir / "knowledge", settings.knowledge_url()
    wiki = WikiConfig(
        files_root=files_root,
        public_url=public_url,
        source_roots=tuple(p.resolve() for p in settings.wiki_source_roots),
        builds=QueueLimits(
            settings.wiki_build_workers,
            settings.wiki_build_timeout_seconds,
            settings.knowledge_build_queue_per_tenant,
            "MEMHUB_WIKI_BUILD_TIMEOUT_SECONDS",
        ),
        chat=client,
    )
    code_graph = CodeGraphConfig(
        files_root=files_root,
        public_url=public_url,
        source_roots=tuple(p.resolve() for p in settings.code_source_roots),
        builds=QueueLimits(
            settings.code_graph_build_workers,
            settings.code_graph_build_timeout_seconds,
            settings.knowledge_build_queue_per_tenant,
            "MEMHUB_CODE_GRAPH_BUILD_TIMEOUT_SECONDS",
        ),
        git_timeout=settings.code_graph_git_timeout_seconds,
        remotes=RemotePolicy(settings.code_graph_allow_ssh, tuple(settings.code_graph_host_allowlist)),
    )
    return {WIKI.name: wiki, CODE_GRAPH.name: code_graph}


def knowledge_services(
    settings: Settings,
    store: MemoryStore,
    meta: MetaServices,
    skills: SkillService,
    client: ChatClient | None = None,
) -> KnowledgeServices:
    """Every registered knowledge kind's service, tool dispatch and the `<knowledge_tools>` offer, from settings;
    the skill kind's tools read through the skill service."""
    return KnowledgeServices.over(
        store.meta,
        meta.config,
        {**knowledge_configs(settings, client), SKILL.name: skills},
        public_url=settings.knowledge_url(),
        language=settings.knowledge_language,
        open_tools=settings.knowledge_tools_auth == "open",
        origins=settings.knowledge_origins(),
    )


@dataclass(frozen=True, slots=True)
class Hub:
    """Every long-lived part of one memhub process, built over one store.

    `worker` is None when the pipeline is off (`MEMHUB_PIPELINE_ENABLED=false`, or a knowledge-only
    process); `embedding` is None when search is BM25 only. The hub owns all of them: `close` stops the
    workers and closes the store.
    """

    settings: Settings
    store: MemoryStore
    key_hasher: KeyHasher
    meta: MetaServices
    memory: MemoryServices
    knowledge: KnowledgeServices
    embedding: EmbeddingRuntime | None
    chat: ChatClient | None  # the configured LLM, if any
    worker: PipelineWorker | None
    pipeline: PipelineService
    prompts: MemoryPromptService
    prompt_access: PromptAccess
    generations: GenerationLogService
    generation_access: GenerationAccess
    chat_memory: ChatMemoryService
    skills: SkillService
    skill_finder: SkillFinder  # skill search, the <available_skills> listing and the composer's skill notes
    skill_mining: MiningService  # agent work buffered and archived; the pipeline's `skill` jobs mine it
    offload: OffloadService  # context offload; the pipeline's `offload-*` jobs run its stages
    composer: ContextComposer
    knowledge_only: bool = False
    proxy: ProxyService | None = None  # the memory proxy's turn handler (`/proxy/{space_id}/v1/...`)
    session_tokens: SessionTokens | None = None  # the memory tools' tokens, checked by the memory bridge

    def start(self, *, pipeline: bool = True, knowledge: bool = True) -> None:
        """Start the background workers; the pipeline's only when `pipeline` (tests drain it on demand), the
        knowledge builds only when `knowledge` (a proxy-only process leaves them to the gateway). With an embedder,
        the vector indexes of the latest scopes load in the background (`MEMHUB_VECTOR_WARM_SCOPES`;
        `store.wait_warm` waits for them)."""
        if self.embedding is not None:
            self.store.warm_vectors(self.settings.vector_warm_scopes)
            self.embedding.start()
        if self.worker is not None and pipeline:
            self.worker.start()
        if knowledge:
            self.knowledge.resume()  # builds a previous process left queued or running
        if self.proxy is not None:
            self.proxy.start()  # replays the turns a previous process left in the capture spool

    def request_stop(self) -> None:
        """Ask the embedding and pipeline workers to stop, without waiting: they wind down while the rest of a
        stop (the proxy's flush) runs."""
        if self.embedding is not None:
            self.embedding.request_stop()
        if self.worker is not None:
            self.worker.request_stop()

    def close(self, clock: StopClock | None = None, *, still_running: Sequence[str] = ()) -> None:
        """Stop every worker, then close the store (a queued build or job resumes at the next start).

        The workers are all asked to stop first, then each is waited for: with a stop clock (`memhub serve` on
        SIGTERM) with what is left of its budget, else up to WORKER_STOP_TIMEOUT_S each (knowledge builds
        wholly). One still busy then (a build, a pipeline job, a provider call), or anything in `still_running`
        (what the caller left: requests, the proxy's capture), may still use the models, the LLM client and the
        store, so those are left open to the process's exit; the work is durable and resumes at the next start,
        as after a crash (memhub.shutdown).
        """
        self.request_stop()
        wait = clock.remaining if clock is not None else lambda: WORKER_STOP_TIMEOUT_S
        left = list(still_running)
        if not finish_within(clock, "knowledge builds", self.knowledge.close):
            left.append("knowledge builds")
        if self.worker is not None and not self.worker.close(wait()):
            left.append("a pipeline job")
        if self.embedding is not None and not self.embedding.stop(wait()):
            left.append("an embedding provider call")
        if left:
            log.warning(
                "stopping with %s not finished: left to the process's exit, the store open (what they leave "
                "resumes at the next start)",
                ", ".join(left),
            )
            return
        if self.embedding is not None:
            self.embedding.close()  # the models: its worker has stopped
        if self.chat is not None:
            self.chat.close()
        self.store.close()
        if clock is not None:
            log.info("stopped within the stop budget: the workers are done and the store is closed")


def upstream_config(settings: Settings) -> UpstreamConfig:
    """Where the memory proxy forwards each protocol, with the provider keys and timeouts from settings."""
    return UpstreamConfig(
        openai=Endpoint(settings.proxy_openai_base_url, settings.proxy_openai_api_key),
        anthropic=Endpoint(settings.proxy_anthropic_base_url, settings.proxy_anthropic_api_key),
        connect_timeout=settings.proxy_connect_timeout_seconds,
        read_timeout=settings.proxy_read_timeout_seconds,
        max_response_bytes=settings.proxy_max_response_bytes,
        max_response_seconds=settings.proxy_max_response_seconds,
    )


def build_proxy(settings: Settings, hub: Hub) -> tuple[ProxyService, SessionTokens]:
    """The memory proxy over a hub's services, and the session tokens its memory tools carry."""
    tokens = SessionTokens(hub.key_hasher.secret, settings.proxy_session_ttl_seconds, hub.meta.users)
    injector = build_injector(
        hub,
        InjectorConfig(
            proxy_url=settings.proxy_url(),
            language=settings.knowledge_language,
            budget_chars=settings.proxy_injection_budget_chars,
            session_ttl_seconds=settings.proxy_session_ttl_seconds,
        ),
        tokens.mint,
    )
    recall = RecallConfig(
        max_tokens=settings.proxy_turn_recall_max_tokens,
        timeout_seconds=settings.proxy_turn_recall_timeout_ms / 1000,
        language=settings.knowledge_language,
    )
    offloader = build_offloader(
        hub.offload,
        hub.meta.agents,
        ProxyOffloadConfig(
            enabled=settings.proxy_offload,
            timeout_seconds=settings.proxy_offload_timeout_ms / 1000,
            context_window=settings.proxy_offload_context_window,
        ),
        tokens.mint,
        proxy_url=settings.proxy_url(),
        language=settings.knowledge_language,
    )
    capture = (
        BackgroundCapture(
            hub.memory.conversation, hub.skill_mining, hub.meta, spool_dir=settings.data_dir / CAPTURE_SPOOL_DIR
        )
        if settings.proxy_capture
        else None
    )
    commands = MemCommands(
        hub.skill_mining, injector.forget_session, flush_capture=capture.drain if capture is not None else None
    )
    service = ProxyService(
        KeyIdentityResolver(hub.meta),
        Upstream(upstream_config(settings)),
        injector=injector,
        recaller=build_recaller(hub, recall),
        recall_default=settings.proxy_turn_recall,
        offloader=offloader,
        capture=capture,
        commands=commands,
        flush=capture.close if capture is not None else None,
        resume=capture.resume if capture is not None else None,
    )
    return service, tokens


def build_hub(
    settings: Settings,
    store: MemoryStore | None = None,
    *,
    embedding: EmbeddingRuntime | None = None,
    key_hasher: KeyHasher | None = None,
    knowledge_only: bool = False,
) -> Hub:
    """Every service over `store` (by default the configured one), nothing started yet.

    Without an embedding runtime search is BM25 only (`embedding_runtime` builds the configured one). A
    `knowledge_only` hub runs no pipeline: it serves the wiki, code-graph and tools routes alone.
    """
    store = store if store is not None else open_store(settings)
    hasher = key_hasher or load_key_hasher(settings.data_dir, settings.key_secret)
    quotas = Quotas(settings.max_users_per_instance, settings.max_teams_per_instance, settings.max_active_keys_per_user)
    meta = MetaServices.over(store.meta, hasher, quotas, settings.knowledge_origins())
    memory = MemoryServices.over(store, embedding)
    chat = chat_client(settings)
    pipeline_on = settings.pipeline_enabled and not knowledge_only
    prompts, generations = MemoryPromptService(store.prompts), GenerationLogService(store.prompts)
    skills = SkillService(store.skills, store.meta, settings.skill_config())
    offload = offload_service(settings, store, chat)
    worker = (
        pipeline_worker(settings, store, memory, chat, prompts, generations, skills, offload) if pipeline_on else None
    )
    generator = worker.runner.stages.generator if worker is not None else "none"
    skill_finder = SkillFinder(skills, embedding)
    knowledge = knowledge_services(settings, store, meta, skills, chat)
    hub = Hub(
        settings=settings,
        store=store,
        key_hasher=hasher,
        meta=meta,
        memory=memory,
        knowledge=knowledge,
        embedding=embedding,
        chat=chat,
        worker=worker,
        pipeline=PipelineService(store, worker, generator),
        prompts=prompts,
        prompt_access=PromptAccess(store.meta),
        generations=generations,
        generation_access=GenerationAccess(store.meta),
        chat_memory=ChatMemoryService(store),
        skills=skills,
        skill_finder=skill_finder,
        skill_mining=MiningService(store.skills, on_archive=worker.nudge if worker is not None else None),
        offload=offload,
        composer=ContextComposer(
            knowledge,
            memory.conversation,
            meta.access,
            meta.config,
            skills=FinderSkills(skill_finder),
            recall=memory.recall,
        ),
        knowledge_only=knowledge_only,
    )
    if knowledge_only:
        return hub
    proxy, tokens = build_proxy(settings, hub)
    return replace(hub, proxy=proxy, session_tokens=tokens)
