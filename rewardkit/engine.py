"""Scoring several rewards over one batch: what the CLI and the service both call.

>>> from rewardkit.engine import FuncSpec, score_batch
>>> result = score_batch(
...     ["countdown", FuncSpec("format", weight=0.5)],
...     ["<think>6*4</think><answer>6 * 4</answer>", "<answer>6 + 4</answer>"],
...     {"target": [24, 24], "nums": [[4, 6], [4, 6]]},
... )
>>> result.rewards
[1.5, 0.0]
>>> result.errors
{'format': [None, 'missing:think']}
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import Completion, Reward, RewardError
from rewardkit.registry import get

__all__ = ["BatchResult", "FuncSpec", "resolve", "result_keys", "score_batch"]


@dataclass(frozen=True)
class FuncSpec:
    """One reward of a request: its registry name, parameters and weight in the summed reward."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0

    def __post_init__(self) -> None:
        w = self.weight
        if (
            isinstance(w, bool)
            or not isinstance(w, int | float)
            or w != w
            or w in (float("inf"), float("-inf"))
        ):
            raise RewardError(f"reward {self.name!r}: weight must be a finite number, got {w!r}")


@dataclass
class BatchResult:
    """Scores of several rewards over one batch.

    ``rewards[i]`` is the weighted sum over funcs ignoring ``None`` (``None`` when every func gave
    ``None``); ``scores`` and ``errors`` are keyed by func name, ``"name#2"`` for the second request of the
    same name; ``errors`` holds only the funcs that gave a reason for at least one item.
    """

    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]


def resolve(funcs: Sequence[str | FuncSpec | Reward]) -> list[tuple[str, Reward, float]]:
    """Build every requested reward (so a bad name or parameter fails before any scoring).

    Returns ``(key, reward, weight)`` triples with unique keys.
    """
    if not funcs:
        raise RewardError("no reward requested")
    built: list[tuple[Reward, float]] = []
    for func in funcs:
        if isinstance(func, Reward):
            built.append((func, 1.0))
        else:
            spec = FuncSpec(func) if isinstance(func, str) else func
            built.append((get(spec.name, **dict(spec.params)), float(spec.weight)))
    keys = result_keys([reward.reward_name for reward, _ in built])
    return [(key, reward, weight) for key, (reward, weight) in zip(keys, built, strict=True)]


def result_keys(names: Sequence[str]) -> list[str]:
    """The keys of ``scores``/``errors``: the name, then ``name#2``, ``name#3`` for repeats.

    >>> result_keys(["format", "countdown", "format"])
    ['format', 'countdown', 'format#2']
    """
    seen: dict[str, int] = {}
    keys = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return keys


def score_batch(
    funcs: Sequence[str | FuncSpec | Reward],
    completions: Sequence[Completion],
    columns: Mapping[str, Any],
) -> BatchResult:
    """Score ``completions`` with every reward in ``funcs`` and sum them with their weights.

    Raises:
        UnknownRewardError, RewardError: a bad func name, parameter or weight.
        ColumnError: a missing or misaligned column (naming the reward, the column and both lengths).
    """
    resolved = resolve(funcs)
    n = len(completions)
    scores: dict[str, list[float | None]] = {}
    errors: dict[str, list[str | None]] = {}
    timing: dict[str, float] = {}
    for key, reward, _ in resolved:
        start = time.perf_counter()
        scored = reward.score_detailed(completions, **columns)
        timing[key] = round((time.perf_counter() - start) * 1000.0, 3)
        scores[key] = scored.values
        if scored.has_reasons:
            errors[key] = scored.reasons
    rewards: list[float | None] = []
    for i in range(n):
        parts = [(scores[key][i], weight) for key, _, weight in resolved]
        present = [value * weight for value, weight in parts if value is not None]
        rewards.append(sum(present) if present else None)
    return BatchResult(rewards, scores, errors, timing)
