"""Service settings, read from ``REWARDKIT_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting can be given as ``REWARDKIT_<NAME>``; tests build ``Settings(...)`` directly."""

    model_config = SettingsConfigDict(env_prefix="REWARDKIT_", extra="ignore")

    api_token: SecretStr | None = Field(
        default=None, description="When set, every route but /healthz needs 'Authorization: Bearer <token>'."
    )
    max_batch: int = Field(default=16_384, ge=1, description="Most completions in one request (413 above).")
    max_body_mb: float = Field(default=64.0, gt=0, description="Largest request body in MiB (413 above).")
    openrlhf_funcs: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["math"],
        description="Rewards applied by POST /get_reward (comma-separated or a JSON list).",
    )
    ready_timeout_s: float = Field(default=30.0, gt=0, description="How long /readyz waits for a worker.")

    @field_validator("openrlhf_funcs", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)
