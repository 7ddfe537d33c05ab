"""Settings from the environment: `MEMHUB_*`, with the original `TDAI_*` names accepted too."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

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

    @field_validator("gateway_api_key", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value
