"""Service settings, read from ``REWARDKIT_*`` environment variables (pydantic-settings).

A setting that cannot work is one line naming the variable and the problem (:class:`SettingsError`, a
``ValueError``), raised where the settings are read, before anything starts: a value of the wrong type, JSON
that does not parse (``REWARDKIT_PARAMS: is not valid JSON (Expecting property name enclosed in double
quotes at line 1, column 2)``), a reward or parameter the policy does not know. ``rewardkit serve`` prints
it and exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from rewardkit.policy import RemotePolicy, load_params_table
from rewardkit.redact import clip, redact_secrets

ENV_PREFIX = "REWARDKIT_"
SECRET_FIELDS = frozenset({"api_token"})  # their values are never quoted in an error


class SettingsError(ValueError):
    """A ``REWARDKIT_*`` setting that cannot work: one line naming the variable and the problem."""


class Settings(BaseSettings):
    """Every setting can be given as ``REWARDKIT_<NAME>``; tests build ``Settings(...)`` directly."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError(one_line(exc)) from None
        except SourceError as exc:  # a source that could not be read at all: the message names the field
            raise SettingsError(redact_secrets(" ".join(str(exc).split()))) from None

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
    params: Annotated[dict[str, dict[str, Any]], NoDecode] = Field(
        default_factory=dict,
        description="Server settings of each reward, JSON {reward: {parameter: value}}: the only way to set "
        "parameters callers may not (judge base_url, math workers, ...) and the defaults of the rest.",
    )
    config: Path | None = Field(
        default=None,
        description="A JSON file of the same shape as REWARDKIT_PARAMS (used when that is empty).",
    )
    caps: Annotated[dict[str, dict[str, float]], NoDecode] = Field(
        default_factory=dict,
        description="Caps on caller-set numbers, JSON {reward: {parameter: cap}}, replacing the defaults.",
    )

    @field_validator("openrlhf_funcs", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return _json(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @field_validator("params", "caps", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        """The JSON text of an environment variable, parsed here, so that its error says what is wrong."""
        if not isinstance(value, str):
            return value
        return _json(value) if value.strip() else {}

    @model_validator(mode="after")
    def _policy_builds(self) -> Settings:
        """The policy these settings make (an unknown reward or parameter is an error now, not when the
        app is built inside uvicorn)."""
        self.policy()
        return self

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


def _json(text: str) -> Any:
    """``text`` parsed as JSON; a ``ValueError`` that says where it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None


def one_line(exc: ValidationError) -> str:
    """What a failed validation says, on one line: each failing setting as its variable's name and the
    problem (``REWARDKIT_MAX_BATCH: Input should be a valid integer (got 'ten')``); a check of the whole
    (the policy) says its own message, which names its variable. Values are cut and their secrets masked;
    a secret setting's value is never quoted."""
    said = []
    for error in exc.errors():
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        loc = [str(part) for part in error.get("loc", ())]
        if not loc:
            said.append(message)
            continue
        name = ENV_PREFIX + loc[0].upper()
        where = ".".join(loc[1:])
        value = error.get("input")
        shown = ""
        if (
            loc[0] not in SECRET_FIELDS
            and isinstance(value, str | int | float)
            and error.get("type") != "value_error"
        ):
            shown = f" (got {clip(repr(value), 80)})"
        said.append(f"{name}: {where + ': ' if where else ''}{message}{shown}")
    return redact_secrets(" ".join("; ".join(said).split()))
