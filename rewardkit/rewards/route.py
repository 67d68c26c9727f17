"""Route: each row is scored by the reward its ``column`` names (mixed datasets: math rows, countdown rows).

>>> import rewardkit
>>> route = rewardkit.get("route", column="task", routes={"cd": "countdown", "gsm8k": "math"})
>>> route(
...     ["<answer>6 * 4</answer>", "3 + 4, so the answer is 7."],
...     task=["cd", "gsm8k"],
...     target=[24, None], nums=[[4, 6], None],   # the countdown row's columns
...     solution=[None, "7"],                      # the math row's
... )
[1.0, 1.0]

A route is a reward name, or ``{"name": ..., "params": {...}, "columns": {...}}``; a key may be a glob
(``aime*``), tried after the exact keys in the order given. Rows of one route need only that route's
columns. A row whose key has no route raises (``unknown="none"``: it scores ``None``, reason ``no_route``);
a row whose key is ``None`` scores ``None``, reason ``no_route``.

On an event loop (the service), :meth:`Route.ascore_detailed` awaits the async faces of the rewards it routes
to (a routed judge waits on the loop and holds no thread) and runs the others in threads, the routes at once.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import Completion, Explained, Reward, RewardError, Scored
from rewardkit.registry import register
from rewardkit.rewards._composed import inner_name, inner_reward
from rewardkit.spec import CallerParam

__all__ = ["MAX_KEY", "KeyMatcher", "Route", "ascore_reward"]

MAX_KEY = 256  # characters in a route key


class KeyMatcher:
    """Values to keys: a key equal to the value first, then the glob keys (``aime*``) in their order. The
    globs are compiled here, once (fnmatch's own cache is process-wide and would keep callers' patterns)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.keys = list(keys)
        self._exact = set(self.keys)
        self._globs = [(k, re.compile(fnmatch.translate(k))) for k in self.keys if any(c in k for c in "*?[")]

    def match(self, value: str) -> str | None:
        if value in self._exact:
            return value
        return next((key for key, pattern in self._globs if pattern.match(value)), None)


@register(
    "route",
    columns=[],
    caller_params={
        "column": CallerParam(),
        "routes": CallerParam(reward_spec_map=True),
        "unknown": CallerParam(),
    },
    required_params=["routes"],
)
@dataclass(frozen=True)
class Route(Reward):
    """Route: each row scored by the reward its ``column`` value names (``routes``: value -> reward).

    Args:
        column: the column whose value picks the route (``task``, veRL's ``data_source``...).
        routes: ``{value or glob: reward name or {"name", "params", "columns"}}``.
        unknown: ``"raise"`` (default) for a row no route matches, or ``"none"`` to score it ``None``.
    """

    column: str = "task"
    routes: Mapping[str, Any] = field(default_factory=dict)
    unknown: str = "raise"

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"route: column must be a column name, got {self.column!r}")
        if not isinstance(self.routes, Mapping) or not self.routes:
            raise ValueError('route: routes must map values to rewards, e.g. {"gsm8k": "math"}')
        if self.unknown not in ("raise", "none"):
            raise ValueError(f"route: unknown must be 'raise' or 'none', got {self.unknown!r}")
        built: dict[str, Reward] = {}
        for key, spec in self.routes.items():
            if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY:
                raise ValueError(f"route: route keys are strings of 1 to {MAX_KEY} characters, got {key!r}")
            built[key] = inner_reward(spec, f"route {key!r}")
        object.__setattr__(self, "_built", built)
        object.__setattr__(self, "_matcher", KeyMatcher(built))

    @property
    def required_columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def optional(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for reward in self._rewards().values():
            required, optional = reward.caller_columns()
            names.update(dict.fromkeys((*required, *optional)))
        names.pop(self.column, None)
        return tuple(names)

    def _rewards(self) -> dict[str, Reward]:
        built: dict[str, Reward] = object.__getattribute__(self, "_built")
        return built

    # -- lifecycle: a route holds the rewards it routes to
    def ready(self, timeout_s: float) -> bool | None:
        answers = [r.ready(timeout_s) for r in self._rewards().values()]
        known = [a for a in answers if a is not None]
        return all(known) if known else None

    def stats(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for reward in self._rewards().values():
            out.update(reward.stats())
        return out

    def close(self) -> None:
        for reward in self._rewards().values():
            reward.close()

    def params(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "routes": {k: inner_name(v) for k, v in self.routes.items()},
            "unknown": self.unknown,
        }

    def route_of(self, value: Any) -> str | None:
        """The route key that ``value`` takes (an exact key first, then the globs in order), or ``None``."""
        matcher: KeyMatcher = object.__getattribute__(self, "_matcher")
        return matcher.match(value if isinstance(value, str) else str(value))

    def _groups(self, columns: dict[str, list[Any]]) -> dict[str, list[int]]:
        """The rows of each route key, in order (rows without a route in none; raises per ``unknown``)."""
        groups: dict[str, list[int]] = {}
        for i, value in enumerate(columns[self.column]):
            key = None if value is None else self.route_of(value)
            if key is None:
                if self.unknown == "raise" and value is not None:  # a row without a key: no_route
                    known = ", ".join(self._rewards())
                    raise RewardError(
                        f"reward {self.__name__!r}: row {i} has {self.column}={value!r}, which no route "
                        f"matches; routes: {known} (unknown='none' scores such rows None)"
                    )
                continue
            groups.setdefault(key, []).append(i)
        return groups

    def _share(
        self, key: str, rows: list[int], completions: Sequence[Completion], columns: dict[str, list[Any]]
    ) -> tuple[Reward, list[Completion], dict[str, list[Any]]]:
        """A route's reward, its rows' completions and those rows of the columns that reward reads."""
        reward = self._rewards()[key]
        required, optional = reward.caller_columns()
        sub = {name: [columns[name][i] for i in rows] for name in (*required, *optional) if name in columns}
        return reward, [completions[i] for i in rows], sub

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        out: list[Explained] = [Explained(None, "no_route")] * len(completions)
        for key, rows in self._groups(columns).items():
            reward, shared, sub = self._share(key, rows, completions, columns)
            scored = reward.score_detailed(shared, raise_on_error=raise_on_error, **sub)
            for j, i in enumerate(rows):
                out[i] = Explained(scored.values[j], scored.reasons[j], scored.details[j])
        return out

    # -- async face: the service awaits it (rewardkit.engine.ascore_batch)
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Score on the caller's event loop: each route's rewards at once, through their own async face
        when they have one (the judge: no thread held while it waits), else in a thread."""
        bound = self.bind_columns(completions, columns)
        groups = self._groups(bound)
        shares = [self._share(key, rows, completions, bound) for key, rows in groups.items()]
        tasks = [
            asyncio.ensure_future(ascore_reward(reward, shared, **sub)) for reward, shared, sub in shares
        ]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:  # one route failed (the deadline, a missing column): stop the others
            for task in tasks:
                task.cancel()
            raise
        n = len(completions)
        values: list[float | None] = [None] * n
        reasons: list[str | None] = ["no_route"] * n
        details: list[Any] = [None] * n
        for rows, scored in zip(groups.values(), results, strict=True):
            for j, i in enumerate(rows):
                values[i], reasons[i], details[i] = scored.values[j], scored.reasons[j], scored.details[j]
        return Scored(values, reasons, details)

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values


async def ascore_reward(reward: Reward, completions: Sequence[Completion], **columns: Any) -> Scored:
    """``reward``'s detailed scores from an event loop: awaited through its async face
    (``ascore_detailed``) when it has one, else computed in a thread (which carries the request deadline).

    >>> import rewardkit
    >>> asyncio.run(ascore_reward(rewardkit.get("format"), ["<think>a</think><answer>b</answer>"])).values
    [1.0]
    """
    face = getattr(reward, "ascore_detailed", None)
    if face is not None:
        scored: Scored = await face(completions, **columns)
        return scored
    return await asyncio.to_thread(lambda: reward.score_detailed(completions, **columns))
