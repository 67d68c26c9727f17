"""Scoring several rewards over one batch: what the CLI and the service both call.

>>> from rewardkit.engine import RewardSpec, score_batch
>>> result = score_batch(
...     ["countdown", RewardSpec("format", weight=0.5)],
...     ["<think>6*4</think><answer>6 * 4</answer>", "<answer>6 + 4</answer>"],
...     {"target": [24, 24], "nums": [[4, 6], [4, 6]]},
... )
>>> result.rewards
[1.5, 0.0]
>>> result.errors
{'format': [None, 'missing:think']}
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import (
    MAX_REWARD_VALUE,
    Completion,
    Reward,
    RewardError,
    Scored,
    check_deadline,
    deadline,
)
from rewardkit.golds import GoldCheck
from rewardkit.registry import get
from rewardkit.spec import MAX_FUNCS, MAX_WEIGHT, RewardSpec

__all__ = [
    "MAX_FUNCS",
    "MAX_WEIGHT",
    "BatchResult",
    "BudgetExceeded",
    "FuncSpec",
    "GoldCheck",
    "RewardSpec",
    "ascore_batch",
    "check_budget",
    "resolve",
    "result_keys",
    "score_batch",
]

#: Builds a configured reward from a name and parameters: ``rewardkit.get`` in-process, a
#: :class:`rewardkit.policy.RemotePolicy`'s ``build`` for remote callers.
Builder = Callable[[str, Mapping[str, Any]], Reward]


def _get(name: str, params: Mapping[str, Any]) -> Reward:
    return get(name, **dict(params))


#: The spec of one reward of a request (the name it had before :mod:`rewardkit.spec` held it).
FuncSpec = RewardSpec


@dataclass
class BatchResult:
    """Scores of several rewards over one batch.

    ``rewards[i]`` is the weighted sum over funcs ignoring ``None`` (``None`` when every func gave
    ``None``); ``scores`` and ``errors`` are keyed by func name (its alias when it has one), ``"name#2"`` for
    the second request of the same name; ``errors`` holds only the funcs that gave a reason for at least one
    item. ``names`` gives each key's registry name (what metrics are labelled by).
    """

    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]
    names: dict[str, str] = field(default_factory=dict)


def resolve(
    funcs: Sequence[str | RewardSpec | Reward], build: Builder = _get
) -> list[tuple[str, Reward, float]]:
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
            spec = RewardSpec(func) if isinstance(func, str) else func
            reward = build(spec.name, spec.params)
            if spec.alias is not None or spec.columns is not None:
                try:
                    reward.configure(alias=spec.alias, columns=spec.columns)
                except ValueError as exc:
                    raise RewardError(f"reward {spec.name!r}: {exc}") from None
            built.append((reward, float(spec.weight)))
    keys = result_keys([reward.__name__ for reward, _ in built])
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
    funcs: Sequence[str | RewardSpec | Reward],
    completions: Sequence[Completion],
    columns: Mapping[str, Any],
    *,
    build: Builder = _get,
    deadline_s: float | None = None,
    golds: GoldCheck | None = None,
    max_chars: int | None = None,
) -> BatchResult:
    """Score ``completions`` with every reward in ``funcs`` and sum them with their weights.

    Args:
        build: how a name and parameters become a reward (a remote policy's ``build`` in a service).
        deadline_s: bound on the whole batch; past it :class:`~rewardkit.core.DeadlineExceeded` is raised
            and the rewards' slow parts (math workers, judge calls) are cancelled.
        golds: the check for a batch in which no item has its gold (by default this batch on its own;
            per-sample callers keep one across calls, :mod:`rewardkit.golds`).
        max_chars: the most characters the rewards may read in all: the batch's text (completions and
            string columns) times the number of rewards (the service's ``REWARDKIT_MAX_REQUEST_CHARS``).

    Raises:
        UnknownRewardError, RewardError: a bad func name, parameter or weight.
        ColumnError: a missing or misaligned column (naming the reward, the column and both lengths);
            :class:`~rewardkit.golds.MissingGoldError` when a reward found no item's gold.
        BudgetExceeded: the rewards would read more than ``max_chars`` characters; a weighted sum that
            overflows (a custom reward's huge value) is a :class:`RewardError`.
    """
    resolved = resolve(funcs, build)
    check_budget(len(resolved), completions, columns, max_chars)
    with deadline(deadline_s):
        scored = _score_each([(key, reward) for key, reward, _ in resolved], completions, columns)
    return _combine(resolved, scored, len(completions), golds or GoldCheck())


async def ascore_batch(
    funcs: Sequence[str | RewardSpec | Reward],
    completions: Sequence[Completion],
    columns: Mapping[str, Any],
    *,
    build: Builder = _get,
    deadline_s: float | None = None,
    offload: Callable[..., Awaitable[Any]] = asyncio.to_thread,
    golds: GoldCheck | None = None,
    max_chars: int | None = None,
) -> BatchResult:
    """:func:`score_batch` on an event loop: rewards with an async face (the judge) run on the loop and hold
    no thread while they wait; consecutive others run together through ``offload`` (a thread pool)."""
    resolved = resolve(funcs, build)
    check_budget(len(resolved), completions, columns, max_chars)
    scored: dict[str, tuple[Scored, float]] = {}
    waiting: list[tuple[str, Reward]] = []  # sync rewards not yet run: they go to one thread together

    async def run_waiting() -> None:
        if waiting:
            scored.update(await offload(_score_each, list(waiting), completions, columns))
            waiting.clear()

    with deadline(deadline_s):
        for key, reward, _ in resolved:
            detailed = getattr(reward, "ascore_detailed", None)
            if detailed is None:
                waiting.append((key, reward))
                continue
            await run_waiting()
            start = time.perf_counter()
            scored[key] = (await detailed(completions, **columns), time.perf_counter() - start)
            check_deadline(key)
        await run_waiting()
    return _combine(resolved, scored, len(completions), golds or GoldCheck())


class BudgetExceeded(RewardError):
    """A request would have its rewards read more characters than the budget allows."""


def check_budget(
    rewards: int, completions: Sequence[Completion], columns: Mapping[str, Any], max_chars: int | None
) -> None:
    """:class:`BudgetExceeded` when ``rewards`` rewards reading the batch's text exceed ``max_chars``.

    The text is every string in the completions (chat contents included) and in the columns, counted to a
    depth of three containers (a row's list of options, a chat's messages). Counting is linear in the
    input and stops as soon as the budget is spent.

    >>> check_budget(2, ["x" * 60], {"solution": ["y" * 40]}, 199)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardkit.engine.BudgetExceeded: 2 rewards over 100+ characters of text need a budget of 200+ ...
    """
    if max_chars is None:
        return
    per_reward = max_chars // max(rewards, 1)
    chars = _chars(completions, 3, per_reward + 1)
    for column in columns.values():
        if chars > per_reward:
            break
        chars += _chars(column, 3, per_reward + 1 - chars)
    if chars > per_reward:
        raise BudgetExceeded(
            f"{rewards} rewards over {chars}+ characters of text need a budget of {rewards * chars}+ "
            f"characters read; this server allows {max_chars} (REWARDKIT_MAX_REQUEST_CHARS): send fewer or "
            "shorter completions, or fewer rewards"
        )


def _chars(value: Any, depth: int, limit: int) -> int:
    """Characters of the strings in ``value`` (to ``depth`` containers), counted up to ``limit``."""
    if isinstance(value, str):
        return len(value)
    if depth == 0 or not isinstance(value, Sequence | Mapping) or isinstance(value, bytes):
        return 0
    items = value.values() if isinstance(value, Mapping) else value
    total = 0
    for item in items:
        total += _chars(item, depth - 1, limit - total)
        if total >= limit:
            break
    return total


def _score_each(
    rewards: list[tuple[str, Reward]], completions: Sequence[Completion], columns: Mapping[str, Any]
) -> dict[str, tuple[Scored, float]]:
    """Each reward's detailed result and its time in seconds, checking the deadline after each."""
    scored: dict[str, tuple[Scored, float]] = {}
    for key, reward in rewards:
        start = time.perf_counter()
        scored[key] = (reward.score_detailed(completions, **columns), time.perf_counter() - start)
        check_deadline(key)
    return scored


def _combine(
    resolved: list[tuple[str, Reward, float]],
    scored: dict[str, tuple[Scored, float]],
    n: int,
    golds: GoldCheck,
) -> BatchResult:
    for key, reward, _ in resolved:
        golds.check(key, scored[key][0].reasons, reward)
    keys = [key for key, _, _ in resolved]  # the request's order
    scores = {key: scored[key][0].values for key in keys}
    errors = {key: scored[key][0].reasons for key in keys if scored[key][0].has_reasons}
    timing = {key: round(scored[key][1] * 1000.0, 3) for key in keys}
    rewards: list[float | None] = []
    for i in range(n):
        present = [(scores[key][i], weight) for key, _, weight in resolved]
        weighted = [value * weight for value, weight in present if value is not None]
        total = sum(weighted) if weighted else None
        if total is not None and not math.isfinite(total):  # only a custom reward's value can do this
            raise RewardError(
                f"item {i}: the weighted sum of {', '.join(keys)} is not a finite number; keep reward "
                f"values and weights within +-{MAX_REWARD_VALUE:g}"
            )
        rewards.append(total)
    names = {key: reward.reward_name for key, reward, _ in resolved}
    return BatchResult(rewards, scores, errors, timing, names)
