"""Request and response bodies of the service (pydantic)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field, field_validator

Completion = str | list[dict[str, Any]]


class FuncRequest(BaseModel):
    """A reward to apply: its registry name, parameters, and weight in the summed reward."""

    name: str = Field(min_length=1, examples=["countdown"])
    weight: float = 1.0
    params: dict[str, Any] = Field(default_factory=dict, examples=[{"format_score": 0.1}])

    @field_validator("weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("weight must be a finite number")
        return value


class ScoreRequest(BaseModel):
    funcs: list[str | FuncRequest] = Field(
        min_length=1, examples=[["countdown", {"name": "format", "weight": 0.5}]]
    )
    completions: list[Completion] = Field(examples=[["<think>...</think><answer>6 * 4</answer>"]])
    columns: dict[str, list[Any]] = Field(default_factory=dict, examples=[{"target": [24], "nums": [[4, 6]]}])


class ScoreResponse(BaseModel):
    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]


class RewardDescription(BaseModel):
    name: str
    columns: list[str]
    optional_columns: list[str]
    params: dict[str, Any]
    description: str


class RewardsResponse(BaseModel):
    rewards: list[RewardDescription]
    max_batch: int


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward model request (``--remote_rm_url http://host:port/get_reward``)."""

    query: list[str] = Field(description="prompt + response, per sample")
    prompts: list[str] | None = None
    labels: list[Any] | None = Field(default=None, description="the reference answers: the 'solution' column")


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class ErrorResponse(BaseModel):
    detail: str
    available: list[str] | None = None
