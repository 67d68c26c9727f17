"""Request and response bodies of the service (pydantic)."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from rewardkit.core import ALIAS_RE, MAX_ALIAS
from rewardkit.engine import MAX_FUNCS, MAX_WEIGHT, RewardSpec

Completion = str | list[dict[str, Any]]
#: The longest reward name a request may hold (registered names are short; a longer one is a 422 at once).
MAX_NAME = 128


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes. What a caller sent and an error message echoes may hold lone surrogates
    (which UTF-8 cannot encode) or non-finite numbers (which JSON cannot hold): they go out as U+FFFD and as
    strings, instead of turning a 422 into a 500."""

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except ValueError:  # NaN or infinity echoed from the input (scores are always finite)
            text = json.dumps(_finite(content), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8", errors="replace")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _valid_text(value: Any, where: str) -> None:
    """Refuse strings UTF-8 cannot encode anywhere in a (nested) value: names and parameters are
    configuration, not model output, so broken text there is a caller's error."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{where} hold text that is not valid Unicode (a lone surrogate)") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


class FuncRequest(BaseModel):
    """A reward to apply: its registry name, parameters, and weight in the summed reward."""

    # The JSON form of rewardkit.spec.RewardSpec (to_spec gives the spec); this docstring is the schema's
    # description in /openapi.json.

    name: str = Field(min_length=1, max_length=MAX_NAME, examples=["countdown"])
    weight: float = 1.0
    params: dict[str, Any] = Field(default_factory=dict, examples=[{"format_score": 0.1}])
    alias: str | None = Field(
        default=None,
        max_length=MAX_ALIAS,
        pattern=ALIAS_RE.pattern,
        description="The key of this func's scores and errors (two configurations of one reward apart).",
    )
    columns: dict[str, str] | None = Field(
        default=None,
        max_length=64,
        description="Where the reward's columns are in this request: {reward's column: request's column}.",
        examples=[{"solution": "answer"}],
    )

    @field_validator("weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value) or abs(value) > MAX_WEIGHT:
            raise ValueError(f"weight must be a finite number within +-{MAX_WEIGHT:g}")
        return value

    def to_spec(self) -> RewardSpec:
        """This func as the spec the engine, the policy and the client share."""
        return RewardSpec(self.name, self.params, self.weight, self.alias, self.columns)

    @field_validator("name")
    @classmethod
    def _name_text(cls, value: str) -> str:
        _valid_text(value, "func names")
        return value

    @field_validator("params")
    @classmethod
    def _params_text(cls, value: dict[str, Any]) -> dict[str, Any]:
        _valid_text(value, "params")
        return value


class ScoreRequest(BaseModel):
    funcs: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME)] | FuncRequest] = Field(
        min_length=1, max_length=MAX_FUNCS, examples=[["countdown", {"name": "format", "weight": 0.5}]]
    )
    completions: list[Completion] = Field(examples=[["<think>...</think><answer>6 * 4</answer>"]])
    columns: dict[str, list[Any]] = Field(default_factory=dict, examples=[{"target": [24], "nums": [[4, 6]]}])

    @field_validator("funcs")
    @classmethod
    def _names_text(cls, value: list[str | FuncRequest]) -> list[str | FuncRequest]:
        _valid_text([f for f in value if isinstance(f, str)], "func names")
        return value


class ScoreResponse(BaseModel):
    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]


class ParamPolicy(BaseModel):
    """What a caller may do with one parameter on this server."""

    settable: bool = Field(description="A caller may set it; otherwise it is a server setting (422 if sent).")
    default: Any = Field(default=None, description="The server's value when the caller sends none.")
    cap: float | None = Field(default=None, description="Largest value a caller may send (422 above).")
    inline_file: bool = Field(default=False, description="Clients read a file named here and send its text.")
    reward_spec: bool = Field(
        default=False, description="The value names another reward, checked the same way."
    )
    reward_spec_map: bool = Field(
        default=False, description="The value maps keys to other rewards, each checked the same way."
    )


class RewardDescription(BaseModel):
    name: str
    columns: list[str]
    optional_columns: list[str]
    params: dict[str, ParamPolicy]
    description: str


class ColumnsResponse(BaseModel):
    columns: list[str] = Field(description="Required: a batch without one of them gets 422.")
    optional_columns: list[str] = Field(description="Read when given.")


class RewardsResponse(BaseModel):
    rewards: list[RewardDescription]
    max_batch: int
    max_body_mb: float
    max_request_chars: int
    request_timeout_s: float
    version: str


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward model request (``--remote_rm_url http://host:port/get_reward``)."""

    query: list[str] = Field(description="prompt + response, per sample")
    prompts: list[str] | None = None
    labels: list[Any] | None = Field(
        default=None,
        description="per sample: the 'solution' column, or a JSON object (or a string holding one) of "
        "columns",
    )


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class FieldError(BaseModel):
    """One reason a request's body is invalid: where, and what (never the value sent)."""

    loc: list[str | int] = Field(description="Where: 'body', then keys and indexes.")
    msg: str
    type: str = Field(description="Pydantic's error type, e.g. 'missing', 'string_too_long'.")


class ErrorResponse(BaseModel):
    """Every error answer: ``detail`` says what went wrong (at most 2,000 characters, secrets in URLs
    masked)."""

    detail: str
    available: list[str] | None = Field(
        default=None, description="422 for an unknown reward: the known ones."
    )
    errors: list[FieldError] | None = Field(
        default=None, description="422 for an invalid body: each failure."
    )


class ReadyResponse(BaseModel):
    """``/readyz``: ``ready`` when every reward's resources answer (200), else ``starting`` (503)."""

    status: str = Field(examples=["ready"])
    rewards: dict[str, str] = Field(description="Per reward: ready, starting, or why it is not built here.")
    notes: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per reward, how it runs here (code's memory_bound: a cgroup, or rlimits and seccomp).",
    )
