"""Settings from the environment: `MEMHUB_*`, with the original `TDAI_*` names accepted too."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memhub.knowledge.codegraph.remote import allowlist_entry
from memhub.knowledge.skill.config import SkillConfig
from memhub.llm.client import LLMConfig
from memhub.meta.origins import KnowledgeOrigins, origin_of, parse_allowlist_entry
from memhub.model.offload import OffloadTriggers
from memhub.pipeline.config import PipelineConfig
from memhub.pipeline.schedule import Schedule
from memhub.retrieval.embed import EmbeddingConfig
from memhub.store.factory import split_url

DEFAULT_DATA_DIR = Path.home() / ".memhub"
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


def _names(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """Everything the gateway reads at start-up."""

    model_config = SettingsConfigDict(env_prefix="MEMHUB_", extra="ignore", populate_by_name=True)

    host: str = Field("127.0.0.1", validation_alias=_names("MEMHUB_HOST", "TDAI_GATEWAY_HOST"))
    port: int = Field(8420, ge=1, le=65535, validation_alias=_names("MEMHUB_PORT", "TDAI_GATEWAY_PORT"))
    data_dir: Path = Field(
        DEFAULT_DATA_DIR,
        validation_alias=_names("MEMHUB_DATA_DIR", "TDAI_DATA_DIR", "MEMORY_TENCENTDB_ROOT"),
    )
    # Where memories are kept: `sqlite:///<dir>` (the default is SQLite in the data dir). Knowledge files, the
    # key secret and other local files stay in the data dir whatever the store.
    store_url: str | None = Field(None, validation_alias=_names("MEMHUB_STORE_URL"))
    gateway_api_key: str | None = Field(None, validation_alias=_names("MEMHUB_GATEWAY_API_KEY", "TDAI_GATEWAY_API_KEY"))
    insecure_no_auth: bool = Field(False, validation_alias=_names("MEMHUB_INSECURE_NO_AUTH"))
    strict_isolation: bool = Field(False, validation_alias=_names("MEMHUB_STRICT_ISOLATION", "V3_STRICT_ISOLATION"))
    max_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES,
        ge=1024,
        validation_alias=_names("MEMHUB_MAX_BODY_BYTES", "MEMORY_MAX_BODY_BYTES"),
    )
    # How long a client may take to send a request body once its headers are in (408 after that).
    body_read_timeout_seconds: float = Field(30.0, gt=0, validation_alias=_names("MEMHUB_BODY_READ_TIMEOUT_SECONDS"))
    # The most a stop signal takes to exit `memhub serve`/`memhub proxy`: requests in flight get up to half of it,
    # the background workers what is left; the work they leave is durable and resumes at the next start.
    shutdown_timeout_seconds: float = Field(
        4.0, gt=0, le=600, validation_alias=_names("MEMHUB_SHUTDOWN_TIMEOUT_SECONDS")
    )
    db_busy_timeout_ms: int = Field(10_000, ge=0, validation_alias=_names("MEMHUB_DB_BUSY_TIMEOUT_MS"))
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_CORS_ORIGINS", "TDAI_CORS_ORIGINS")
    )
    log_level: str = Field("info", validation_alias=_names("MEMHUB_LOG_LEVEL"))
    # `/mcp`: the Host and Origin headers it accepts (comma lists; `host:*` any port, `*` anything). Empty: loopback
    # (and, for hosts, those of the configured public URLs) only, so a web page cannot reach a local gateway's MCP
    # endpoint through DNS rebinding.
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_MCP_ALLOWED_HOSTS")
    )
    mcp_allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_MCP_ALLOWED_ORIGINS")
    )

    # Management plane. `user_key` makes every data-plane request carry a user key; `gateway` (the
    # original's behaviour) lets the gateway key act as the service administrator.
    data_plane_auth: Literal["gateway", "user_key"] = Field(
        "gateway", validation_alias=_names("MEMHUB_DATA_PLANE_AUTH")
    )
    # The HMAC secret under which user keys are stored; default: `<data_dir>/key-secret`, created on
    # first start. Gateways that share one database must share it.
    key_secret: str | None = Field(None, min_length=32, validation_alias=_names("MEMHUB_KEY_SECRET"))
    max_users_per_instance: int = Field(500, ge=1, validation_alias=_names("MEMHUB_MAX_USERS_PER_INSTANCE"))
    max_teams_per_instance: int = Field(100, ge=1, validation_alias=_names("MEMHUB_MAX_TEAMS_PER_INSTANCE"))
    max_active_keys_per_user: int = Field(
        20, ge=1, validation_alias=_names("MEMHUB_USER_KEY_MAX_ACTIVE", "TDAI_USER_KEY_MAX_ACTIVE")
    )

    # Embeddings: a local model by default (no key, no network); `openai` = any compatible endpoint.
    embedding_provider: str = Field(
        "local", validation_alias=_names("MEMHUB_EMBEDDING_PROVIDER", "TDAI_EMBEDDING_PROVIDER")
    )
    embedding_model: str = Field("", validation_alias=_names("MEMHUB_EMBEDDING_MODEL", "TDAI_EMBEDDING_MODEL"))
    embedding_base_url: str = Field("", validation_alias=_names("MEMHUB_EMBEDDING_BASE_URL", "TDAI_EMBEDDING_BASE_URL"))
    embedding_api_key: str = Field("", validation_alias=_names("MEMHUB_EMBEDDING_API_KEY", "TDAI_EMBEDDING_API_KEY"))
    embedding_dimensions: int | None = Field(
        None, ge=1, le=16_384, validation_alias=_names("MEMHUB_EMBEDDING_DIMENSIONS", "TDAI_EMBEDDING_DIMENSIONS")
    )
    embedding_timeout_ms: int = Field(
        10_000, ge=100, validation_alias=_names("MEMHUB_EMBEDDING_TIMEOUT_MS", "TDAI_EMBEDDING_TIMEOUT_MS")
    )
    # A search waits at most this long for its query vector before answering from BM25.
    embedding_query_timeout_ms: int = Field(
        2_000, ge=50, validation_alias=_names("MEMHUB_EMBEDDING_QUERY_TIMEOUT_MS", "TDAI_EMBEDDING_RECALL_TIMEOUT_MS")
    )
    embedding_batch_size: int = Field(32, ge=1, le=2048, validation_alias=_names("MEMHUB_EMBEDDING_BATCH_SIZE"))
    embedding_threads: int = Field(1, ge=1, le=64, validation_alias=_names("MEMHUB_EMBEDDING_THREADS"))
    embedding_query_threads: int = Field(1, ge=1, le=64, validation_alias=_names("MEMHUB_EMBEDDING_QUERY_THREADS"))
    # Text beyond this is not embedded (BM25 still indexes all of it). Default: 2,000 characters for
    # a local model (e5 reads 512 tokens; longer texts cost seconds each), 5,000 for a remote one.
    # BM25's share of the fused hybrid score; unset = the value tuned for the embedding model.
    search_lexical_weight: float | None = Field(
        None, ge=0, le=1, validation_alias=_names("MEMHUB_SEARCH_LEXICAL_WEIGHT")
    )
    embedding_max_chars: int | None = Field(None, ge=100, validation_alias=_names("MEMHUB_EMBEDDING_MAX_CHARS"))
    # A search query longer than a question (a whole prompt) is embedded from its likeliest ask, in at most this
    # many estimated tokens; 0 embeds the head of any query instead (see memhub.retrieval.query_focus).
    embedding_query_focus_tokens: int = Field(
        24, ge=0, le=128, validation_alias=_names("MEMHUB_EMBEDDING_QUERY_FOCUS_TOKENS")
    )

    # At start, the vector indexes of this many scopes (those written last) load in the background, from their
    # snapshots where they have one; 0 loads none (each scope then loads on its first vector search).
    vector_warm_scopes: int = Field(4, ge=0, le=10_000, validation_alias=_names("MEMHUB_VECTOR_WARM_SCOPES"))
    # Large scopes' vector indexes (with their HNSW graphs) are saved beside the database and loaded from there
    # after a restart; off, they are always read from the SQL rows (and their graphs rebuilt).
    vector_snapshots: bool = Field(True, validation_alias=_names("MEMHUB_VECTOR_SNAPSHOTS"))

    # The memory pipeline (L0 → L1 → L2 → L3). Without an LLM it runs the offline rule-based extractor.
    pipeline_enabled: bool = Field(True, validation_alias=_names("MEMHUB_PIPELINE_ENABLED"))
    pipeline_mode: Literal["chat", "code"] = Field(
        "chat", validation_alias=_names("MEMHUB_PIPELINE_MODE", "TDAI_PROMPT_MODE")
    )
    pipeline_every_n_rounds: int = Field(
        5,
        ge=1,
        le=1000,
        validation_alias=_names("MEMHUB_PIPELINE_EVERY_N_ROUNDS", "TDAI_PIPELINE_EVERY_N_CONVERSATIONS"),
    )
    pipeline_warmup: bool = Field(
        True, validation_alias=_names("MEMHUB_PIPELINE_WARMUP", "TDAI_PIPELINE_ENABLE_WARMUP")
    )
    pipeline_idle_seconds: float = Field(
        600, ge=0, validation_alias=_names("MEMHUB_PIPELINE_IDLE_SECONDS", "TDAI_PIPELINE_L1_IDLE_TIMEOUT_SECONDS")
    )
    pipeline_l2_delay_seconds: float = Field(
        90, ge=0, validation_alias=_names("MEMHUB_PIPELINE_L2_DELAY_SECONDS", "TDAI_PIPELINE_L2_DELAY_AFTER_L1_SECONDS")
    )
    pipeline_l2_min_interval_seconds: float = Field(
        900,
        ge=0,
        validation_alias=_names("MEMHUB_PIPELINE_L2_MIN_INTERVAL_SECONDS", "TDAI_PIPELINE_L2_MIN_INTERVAL_SECONDS"),
    )
    pipeline_persona_every: int = Field(
        50, ge=1, validation_alias=_names("MEMHUB_PIPELINE_PERSONA_EVERY", "TDAI_PERSONA_TRIGGER_EVERY_N")
    )
    pipeline_max_scenes: int = Field(
        15, ge=2, le=200, validation_alias=_names("MEMHUB_PIPELINE_MAX_SCENES", "TDAI_PERSONA_MAX_SCENES")
    )
    pipeline_max_attempts: int = Field(5, ge=1, le=100, validation_alias=_names("MEMHUB_PIPELINE_MAX_ATTEMPTS"))
    pipeline_poll_ms: int = Field(500, ge=10, validation_alias=_names("MEMHUB_PIPELINE_POLL_MS"))
    # A job whose worker died (kill -9, power loss) is taken over by another worker after this.
    pipeline_lease_seconds: float = Field(300, gt=0, validation_alias=_names("MEMHUB_PIPELINE_LEASE_SECONDS"))
    # An OpenAI-compatible /chat/completions endpoint for extraction, scenes and persona. Unset: offline rules.
    llm_base_url: str = Field("", validation_alias=_names("MEMHUB_LLM_BASE_URL", "TDAI_LLM_BASE_URL"))
    llm_api_key: str = Field("", validation_alias=_names("MEMHUB_LLM_API_KEY", "TDAI_LLM_API_KEY"))
    llm_model: str = Field("", validation_alias=_names("MEMHUB_LLM_MODEL", "TDAI_LLM_MODEL"))
    llm_timeout_ms: int = Field(60_000, ge=100, validation_alias=_names("MEMHUB_LLM_TIMEOUT_MS", "TDAI_LLM_TIMEOUT_MS"))
    llm_max_tokens: int = Field(
        4096, ge=16, le=200_000, validation_alias=_names("MEMHUB_LLM_MAX_TOKENS", "TDAI_LLM_MAX_TOKENS")
    )

    # The knowledge service (wikis, /v3/tools). The URL agents reach it at, with /v3 (written into the
    # <knowledge_tools> block and the registry); default: this server's own address.
    knowledge_public_url: str | None = Field(
        None, validation_alias=_names("MEMHUB_KNOWLEDGE_PUBLIC_URL", "KNOWLEDGE_PUBLIC_BASE_URL")
    )
    # Other origins (`https://kb.example.com`, comma list) whose knowledge services may be registered and offered to
    # agents with their key; none by default, so only this gateway's own public origin is trusted.
    knowledge_url_allowlist: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_KNOWLEDGE_URL_ALLOWLIST")
    )
    # `key`: /v3/tools/* need the gateway key or a user key like every route. `open`: the reference's
    # trust model, where the tenant header alone reads knowledge (only behind a trusted network).
    knowledge_tools_auth: Literal["key", "open"] = Field("key", validation_alias=_names("MEMHUB_KNOWLEDGE_TOOLS_AUTH"))
    # `memhub serve --knowledge-only` listens here (the reference knowledge service's port).
    knowledge_port: int = Field(8421, ge=1, le=65535, validation_alias=_names("MEMHUB_KNOWLEDGE_PORT"))
    knowledge_language: Literal["en", "zh"] = Field("en", validation_alias=_names("MEMHUB_KNOWLEDGE_LANGUAGE"))
    # The memory proxy (`/proxy/{space_id}/v1/...`): where each protocol's turns are forwarded, and the provider key
    # used when the caller sends none of its own (`x-provider-api-key`, or a non-memhub Anthropic `x-api-key`).
    proxy_openai_base_url: str = Field(
        "https://api.openai.com/v1", validation_alias=_names("MEMHUB_PROXY_OPENAI_BASE_URL")
    )
    proxy_openai_api_key: str = Field("", validation_alias=_names("MEMHUB_PROXY_OPENAI_API_KEY"))
    proxy_anthropic_base_url: str = Field(
        "https://api.anthropic.com", validation_alias=_names("MEMHUB_PROXY_ANTHROPIC_BASE_URL")
    )
    proxy_anthropic_api_key: str = Field("", validation_alias=_names("MEMHUB_PROXY_ANTHROPIC_API_KEY"))
    # Connecting to the upstream, and the longest wait for its next byte (a model may think for minutes).
    proxy_connect_timeout_seconds: float = Field(
        10, gt=0, le=600, validation_alias=_names("MEMHUB_PROXY_CONNECT_TIMEOUT_SECONDS")
    )
    proxy_read_timeout_seconds: float = Field(
        600, gt=0, le=3600, validation_alias=_names("MEMHUB_PROXY_READ_TIMEOUT_SECONDS")
    )
    # The address the model's memory-tool recipes call (`<url>/memory-bridge/v3/...`); default: this server's own.
    proxy_public_url: str | None = Field(None, validation_alias=_names("MEMHUB_PROXY_PUBLIC_URL"))
    # `memhub proxy` (the proxy alone, next to a gateway) listens here (the reference proxy's port).
    proxy_port: int = Field(8096, ge=1, le=65535, validation_alias=_names("MEMHUB_PROXY_PORT"))
    # Characters all injected blocks together may take; later blocks are dropped, the last one kept is cut.
    proxy_injection_budget_chars: int = Field(
        24_000, ge=1_000, le=400_000, validation_alias=_names("MEMHUB_PROXY_INJECTION_BUDGET_CHARS")
    )
    # Context offload's stages run on the pipeline's jobs: summaries once this many pairs wait (or the oldest has
    # waited this long), the task graph a moment after this many entries wait (or the oldest has waited this long).
    offload_summary_batch: int = Field(4, ge=1, le=1000, validation_alias=_names("MEMHUB_OFFLOAD_SUMMARY_BATCH"))
    offload_summary_max_age_seconds: float = Field(
        30.0, ge=0, le=86_400, validation_alias=_names("MEMHUB_OFFLOAD_SUMMARY_MAX_AGE_SECONDS")
    )
    offload_graph_batch: int = Field(6, ge=1, le=1000, validation_alias=_names("MEMHUB_OFFLOAD_GRAPH_BATCH"))
    offload_graph_delay_seconds: float = Field(
        1.0, ge=0, le=3600, validation_alias=_names("MEMHUB_OFFLOAD_GRAPH_DELAY_SECONDS")
    )
    offload_graph_max_age_seconds: float = Field(
        30.0, ge=0, le=86_400, validation_alias=_names("MEMHUB_OFFLOAD_GRAPH_MAX_AGE_SECONDS")
    )
    # Per-turn recall (`/v3/recall`'s ranking for the user's message) in the turn's last user message, after the
    # request's last cache breakpoint, so the provider's prompt cache still hits; `x-memhub-recall` per request.
    proxy_turn_recall: bool = Field(True, validation_alias=_names("MEMHUB_PROXY_TURN_RECALL"))
    proxy_turn_recall_max_tokens: int = Field(
        1000, ge=50, le=32_000, validation_alias=_names("MEMHUB_PROXY_TURN_RECALL_MAX_TOKENS")
    )
    # How long a turn waits for its recall before it goes on without it.
    proxy_turn_recall_timeout_ms: int = Field(
        1500, ge=10, le=60_000, validation_alias=_names("MEMHUB_PROXY_TURN_RECALL_TIMEOUT_MS")
    )
    # Context offload in the proxy: tool pairs ingested as they pass, and a request past half its model's window
    # sent compacted. Off by default; an agent's `metadata_json` `{"memhub": {"offload": "on"}}` and a request's
    # `x-memhub-offload: on|off` decide for themselves.
    proxy_offload: bool = Field(False, validation_alias=_names("MEMHUB_PROXY_OFFLOAD"))
    # How long a request waits for its offload before it goes on uncompacted.
    proxy_offload_timeout_ms: int = Field(
        3000, ge=10, le=60_000, validation_alias=_names("MEMHUB_PROXY_OFFLOAD_TIMEOUT_MS")
    )
    # One context window (tokens) for every model instead of the built-in table by model name.
    proxy_offload_context_window: int | None = Field(
        None, ge=1000, le=100_000_000, validation_alias=_names("MEMHUB_PROXY_OFFLOAD_CONTEXT_WINDOW")
    )
    # An upstream answer larger than this, or still running this long after the request went out, is cut.
    proxy_max_response_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, le=4 * 1024**3, validation_alias=_names("MEMHUB_PROXY_MAX_RESPONSE_BYTES")
    )
    proxy_max_response_seconds: float = Field(
        900, gt=0, le=86_400, validation_alias=_names("MEMHUB_PROXY_MAX_RESPONSE_SECONDS")
    )
    # How long a session's injected blocks (and the memory tools' session token) stay valid.
    proxy_session_ttl_seconds: int = Field(
        86_400, ge=60, le=30 * 86_400, validation_alias=_names("MEMHUB_PROXY_SESSION_TTL_SECONDS")
    )
    # Write each main turn to L0 and the skills buffer after the response.
    proxy_capture: bool = Field(True, validation_alias=_names("MEMHUB_PROXY_CAPTURE"))
    # Local folders (or git working trees) a wiki may read its sources from; none by default.
    wiki_source_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_WIKI_SOURCE_ROOTS")
    )
    wiki_build_workers: int = Field(1, ge=1, le=16, validation_alias=_names("MEMHUB_WIKI_BUILD_WORKERS"))
    # A wiki or code-graph build running longer than this fails and its worker moves on.
    wiki_build_timeout_seconds: float = Field(
        1800, gt=0, le=86_400, validation_alias=_names("MEMHUB_WIKI_BUILD_TIMEOUT_SECONDS")
    )
    # Builds one tenant (service id) may have waiting in each build queue; one more is refused with 429.
    knowledge_build_queue_per_tenant: int = Field(
        20, ge=1, le=10_000, validation_alias=_names("MEMHUB_KNOWLEDGE_BUILD_QUEUE_PER_TENANT")
    )
    # Local directories (or git working trees, or bare repositories for file:// URLs) a code graph may
    # index; none by default, so no user can have the server read its own disk.
    code_source_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_CODE_SOURCE_ROOTS")
    )
    code_graph_build_workers: int = Field(1, ge=1, le=16, validation_alias=_names("MEMHUB_CODE_GRAPH_BUILD_WORKERS"))
    code_graph_build_timeout_seconds: float = Field(
        1800, gt=0, le=86_400, validation_alias=_names("MEMHUB_CODE_GRAPH_BUILD_TIMEOUT_SECONDS")
    )
    # One git command (clone, fetch) of a code-graph build gives up after this long.
    code_graph_git_timeout_seconds: float = Field(
        600, gt=0, le=86_400, validation_alias=_names("MEMHUB_CODE_GRAPH_GIT_TIMEOUT_SECONDS")
    )
    # ssh://, git:// and scp-style (host:path) repository URLs; off: they use the server's SSH identity.
    code_graph_allow_ssh: bool = Field(False, validation_alias=_names("MEMHUB_CODE_GRAPH_ALLOW_SSH"))
    # Hosts, addresses or CIDRs a repository URL may reach although they are not public (an internal forge).
    code_graph_host_allowlist: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_CODE_GRAPH_HOST_ALLOWLIST")
    )

    # Skills: non-head versions older than this many days are unreadable (41002) and purged; 0 keeps them.
    skill_version_ttl_days: float = Field(0, ge=0, le=36_500, validation_alias=_names("MEMHUB_SKILL_VERSION_TTL_DAYS"))
    skill_max_resource_bytes: int = Field(
        5_000_000, ge=1, le=1_000_000_000, validation_alias=_names("MEMHUB_SKILL_MAX_RESOURCE_BYTES")
    )
    skill_max_total_bytes: int = Field(
        50_000_000, ge=1, le=10_000_000_000, validation_alias=_names("MEMHUB_SKILL_MAX_TOTAL_BYTES")
    )
    # The skill routes that carry files (create, files/write) take bodies up to this size: one 5 MB file
    # sent as base64 is 6.7 MB, more than the data plane's 1 MiB.
    skill_max_body_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, le=1_000_000_000, validation_alias=_names("MEMHUB_SKILL_MAX_BODY_BYTES")
    )
    skill_search_mode: Literal["bm25", "embedding", "hybrid"] = Field(
        "bm25", validation_alias=_names("MEMHUB_SKILL_SEARCH_MODE")
    )
    skill_listing_mode: Literal["bm25", "embedding", "hybrid"] = Field(
        "hybrid", validation_alias=_names("MEMHUB_SKILL_LISTING_MODE")
    )
    skill_search_top_k: int = Field(20, ge=1, le=50, validation_alias=_names("MEMHUB_SKILL_SEARCH_TOP_K"))

    @field_validator(
        "cors_origins",
        "mcp_allowed_hosts",
        "mcp_allowed_origins",
        "wiki_source_roots",
        "code_source_roots",
        "knowledge_url_allowlist",
        "code_graph_host_allowlist",
        mode="before",
    )
    @classmethod
    def _split_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @field_validator("code_graph_host_allowlist", mode="after")
    @classmethod
    def _code_graph_hosts(cls, value: list[str]) -> list[str]:
        return [allowlist_entry(entry) for entry in value]

    @field_validator("knowledge_public_url", "proxy_public_url", mode="after")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")) or any(c in value for c in " \"'<>`"):
            raise ValueError("must be an http(s) URL without spaces or quotes")
        if origin_of(value) is None:
            raise ValueError("must be an http(s) URL with a plain host (no user@ part) and a valid port")
        return value

    @field_validator("knowledge_url_allowlist", mode="after")
    @classmethod
    def _knowledge_origins(cls, value: list[str]) -> list[str]:
        for entry in value:
            parse_allowlist_entry(entry)
        return value

    @field_validator("store_url")
    @classmethod
    def _known_backend(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        split_url(value.strip())  # raises, naming the backends there are
        return value.strip()

    def store_location(self) -> str:
        """The store's URL: `MEMHUB_STORE_URL`, or SQLite in the data dir."""
        return self.store_url or f"sqlite://{self.data_dir}"

    def knowledge_url(self) -> str:
        """Where agents reach /v3/tools: the configured public URL, else this server's address."""
        return self.knowledge_public_url or f"{self.own_url()}/v3"

    def own_url(self) -> str:
        """This server's address as a local client reaches it (a wildcard bind is reached on loopback)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def proxy_url(self) -> str:
        """Where the model's memory-tool recipes reach this proxy: the configured public URL, else this server."""
        return self.proxy_public_url or self.own_url()

    def knowledge_origins(self) -> KnowledgeOrigins:
        """The origins a knowledge service_url may use: this server's public URL and the allow-list."""
        return KnowledgeOrigins.of(self.knowledge_url(), self.knowledge_url_allowlist)

    @field_validator(
        "strict_isolation",
        "insecure_no_auth",
        "pipeline_enabled",
        "pipeline_warmup",
        "code_graph_allow_ssh",
        "proxy_turn_recall",
        "proxy_offload",
        "proxy_capture",
        "vector_snapshots",
        mode="before",
    )
    @classmethod
    def _truthy(cls, value: object) -> object:
        # The original accepts 1/true/on/yes; anything else (including "") means off.
        if isinstance(value, str):
            return value.strip().lower() in {"1", "true", "on", "yes"}
        return value

    @field_validator("embedding_dimensions", "proxy_offload_context_window", mode="before")
    @classmethod
    def _blank_dimensions(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("data_plane_auth", mode="before")
    @classmethod
    def _auth_mode(cls, value: object) -> object:
        return value.strip().lower() or "gateway" if isinstance(value, str) else value

    @field_validator("gateway_api_key", "key_secret", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def llm_config(self) -> LLMConfig | None:
        """The LLM the pipeline uses, or None for the offline rules."""
        if not (self.llm_base_url.strip() and self.llm_model.strip()):
            return None
        return LLMConfig(
            base_url=self.llm_base_url.strip(),
            model=self.llm_model.strip(),
            api_key=self.llm_api_key,
            timeout_ms=self.llm_timeout_ms,
            max_tokens=self.llm_max_tokens,
        )

    def offload_triggers(self) -> OffloadTriggers:
        """When context offload's stages become due."""
        return OffloadTriggers(
            summary_batch=self.offload_summary_batch,
            summary_max_age_ms=int(self.offload_summary_max_age_seconds * 1000),
            graph_batch=self.offload_graph_batch,
            graph_delay_ms=int(self.offload_graph_delay_seconds * 1000),
            graph_max_age_ms=int(self.offload_graph_max_age_seconds * 1000),
        )

    def pipeline_config(self) -> PipelineConfig:
        """The pipeline's schedule and limits."""
        schedule = Schedule(
            every_n_rounds=self.pipeline_every_n_rounds,
            warmup=self.pipeline_warmup,
            idle_ms=int(self.pipeline_idle_seconds * 1000),
            l2_delay_ms=int(self.pipeline_l2_delay_seconds * 1000),
            l2_min_interval_ms=int(self.pipeline_l2_min_interval_seconds * 1000),
        )
        return PipelineConfig(
            schedule=schedule,
            mode=self.pipeline_mode,
            persona_every=self.pipeline_persona_every,
            max_scenes=self.pipeline_max_scenes,
            max_attempts=self.pipeline_max_attempts,
            poll_ms=self.pipeline_poll_ms,
            lease_ms=int(self.pipeline_lease_seconds * 1000),
        )

    def skill_config(self) -> SkillConfig:
        """The skill service's limits and defaults."""
        return SkillConfig(
            max_resource_bytes=self.skill_max_resource_bytes,
            max_skill_total_bytes=self.skill_max_total_bytes,
            max_export_bytes=self.skill_max_total_bytes,
            version_ttl_days=self.skill_version_ttl_days,
            search_mode=self.skill_search_mode,
            listing_mode=self.skill_listing_mode,
            search_top_k=self.skill_search_top_k,
        )

    def embedding_config(self, *, for_queries: bool = False) -> EmbeddingConfig:
        """The embedder settings; queries get the shorter timeout so a slow provider never stalls a search."""
        timeout = min(self.embedding_timeout_ms, self.embedding_query_timeout_ms) if for_queries else None
        max_chars = self.embedding_max_chars or (2_000 if self.embedding_provider.strip().lower() == "local" else 5_000)
        return EmbeddingConfig(
            provider=self.embedding_provider,
            model=self.embedding_model,
            base_url=self.embedding_base_url,
            api_key=self.embedding_api_key,
            dimensions=self.embedding_dimensions,
            timeout_ms=timeout or self.embedding_timeout_ms,
            batch_size=self.embedding_batch_size,
            threads=self.embedding_threads,
            query_threads=self.embedding_query_threads,
            max_chars=max_chars,
        )
