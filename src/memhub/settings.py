"""Settings from the environment: `MEMHUB_*`, with the original `TDAI_*` names accepted too."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memhub.retrieval.embed import EmbeddingConfig

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
    gateway_api_key: str | None = Field(None, validation_alias=_names("MEMHUB_GATEWAY_API_KEY", "TDAI_GATEWAY_API_KEY"))
    insecure_no_auth: bool = Field(False, validation_alias=_names("MEMHUB_INSECURE_NO_AUTH"))
    strict_isolation: bool = Field(False, validation_alias=_names("MEMHUB_STRICT_ISOLATION", "V3_STRICT_ISOLATION"))
    max_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES,
        ge=1024,
        validation_alias=_names("MEMHUB_MAX_BODY_BYTES", "MEMORY_MAX_BODY_BYTES"),
    )
    db_busy_timeout_ms: int = Field(10_000, ge=0, validation_alias=_names("MEMHUB_DB_BUSY_TIMEOUT_MS"))
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=_names("MEMHUB_CORS_ORIGINS", "TDAI_CORS_ORIGINS")
    )
    log_level: str = Field("info", validation_alias=_names("MEMHUB_LOG_LEVEL"))

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
    # Text beyond this is not embedded (BM25 still indexes all of it). Default: 2,000 characters for
    # a local model (e5 reads 512 tokens; longer texts cost seconds each), 5,000 for a remote one.
    # BM25's share of the fused hybrid score; unset = the value tuned for the embedding model.
    search_lexical_weight: float | None = Field(
        None, ge=0, le=1, validation_alias=_names("MEMHUB_SEARCH_LEXICAL_WEIGHT")
    )
    embedding_max_chars: int | None = Field(None, ge=100, validation_alias=_names("MEMHUB_EMBEDDING_MAX_CHARS"))

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @field_validator("strict_isolation", "insecure_no_auth", mode="before")
    @classmethod
    def _truthy(cls, value: object) -> object:
        # The original accepts 1/true/on/yes; anything else (including "") means off.
        if isinstance(value, str):
            return value.strip().lower() in {"1", "true", "on", "yes"}
        return value

    @field_validator("embedding_dimensions", mode="before")
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
            max_chars=max_chars,
        )
