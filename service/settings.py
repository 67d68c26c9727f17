"""Service settings, read from ``REWARDKIT_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from rewardkit.policy import RemotePolicy, load_params_table
from rewardkit.redact import redact_secrets


class Settings(BaseSettings):
    """Every setting can be given as ``REWARDKIT_<NAME>``; tests build ``Settings(...)`` directly."""

    model_config = SettingsConfigDict(env_prefix="REWARDKIT_", extra="ignore")

    api_token: SecretStr | None = Field(
        default=None,
        description="When set, every route but /healthz needs 'Authorization: Bearer <token>' (and "
        "/get_reward takes it as ?token= too), checked on the headers before the body is read.",
    )
    max_batch: int = Field(default=16_384, ge=1, description="Most completions in one request (413 above).")
    max_body_mb: float = Field(default=64.0, gt=0, description="Largest request body in MiB (413 above).")
    max_request_chars: int = Field(
        default=256_000_000,
        ge=1,
        description="Most characters the rewards of one request may read in all: the text of its completions "
        "and columns times the number of rewards (422 above). With the request deadline it bounds the work "
        "one request can ask for (the cost model in service/README.md).",
    )
    openrlhf_funcs: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["math"],
        description="Rewards applied by POST /get_reward (comma-separated or a JSON list).",
    )
    ready_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="How long /readyz waits for a reward's resources (start-up waits for them too, at most "
        "10 s of it: the math worker host is up before the first request).",
    )
    request_timeout_s: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="Longest time one scoring request may take; past it the caller gets 504 and the "
        "request's slow parts (math workers, judge calls) are cancelled.",
    )
    body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Longest time a request's body may take to arrive (408 and the connection closed past "
        "it): 64 MiB at 2.2 MB/s, while a client that trickles its body holds nothing longer.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Longest time a connection may take to send a request's head (from connecting, or from "
        "its first byte after a kept-alive response); past it the connection is closed ('rewardkit serve').",
    )
    max_connections: int = Field(
        default=1024,
        ge=1,
        description="Connections a process holds at once; a request that finds this many open gets 503 "
        "('rewardkit serve', per worker process).",
    )
    shutdown_timeout_s: int = Field(
        default=310,
        ge=0,
        description="On SIGTERM, how long requests in flight may finish before they are cancelled (idle "
        "connections close at once): keep it under the pod's terminationGracePeriodSeconds ('rewardkit "
        "serve'; Ray Serve's graceful_shutdown_timeout_s).",
    )
    docs_public: bool = Field(
        default=False,
        description="Serve /docs, /redoc and /openapi.json without the token (they describe every route and "
        "setting name; by default they need it like every route but /healthz).",
    )
    metrics_public: bool = Field(
        default=False,
        description="Serve /metrics without the token (for Prometheus scrapes by pod annotation). The "
        "figures are counts and latencies; nothing a caller sent appears in them.",
    )
    params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Server settings of each reward, JSON {reward: {parameter: value}}: the only way to set "
        "parameters callers may not (judge base_url, math workers, ...) and the defaults of the rest.",
    )
    config: Path | None = Field(
        default=None,
        description="A JSON file of the same shape as REWARDKIT_PARAMS (used when that is empty).",
    )
    caps: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Caps on caller-set numbers, JSON {reward: {parameter: cap}}, replacing the defaults.",
    )

    @field_validator("openrlhf_funcs", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    def policy(self) -> RemotePolicy:
        """The trust boundary for this server's callers (ValueError for a bad configuration)."""
        params = self.params
        if not params and self.config is not None:
            params = load_params_table({"REWARDKIT_CONFIG": str(self.config)})
        return RemotePolicy(params, self.caps)

    def redacted(self) -> dict[str, Any]:
        """The effective settings for the start-up log: the token is never shown."""
        shown = self.model_dump(mode="json")
        shown["api_token"] = "(set)" if self.api_token is not None else None
        # a URL's user:password or ?api-key= (a judge base_url, say) is a secret too
        redacted: dict[str, Any] = json.loads(redact_secrets(json.dumps(shown)))
        return redacted
