"""Statistics of one reward within GRPO groups: how many groups, their spread, and how many are constant.

A group is the completions of one prompt at one step (or rows sharing a ``group`` field). A group whose
completions all score alike gives GRPO no advantage; ``rewardkit diagnose`` and ``rewardkit score`` both
count such groups here.

>>> stats = GroupStats()
>>> stats.add([1.0, 1.0], ["a", "b"], step=1)
>>> stats.add([0.0, 1.0], ["c", "d"], step=1)
>>> stats.groups, stats.constant, stats.constant_share, stats.examples
(2, 1, 0.5, ['a'])
>>> tracker = GroupTracker()
>>> for row in [{"prompt": "p", "completion": "x", "scores": {"f": 0.0}},
...             {"prompt": "p", "completion": "y", "scores": {"f": 0.0}}]:
...     tracker.add(group_key(row) or "", row["scores"], row["completion"])
>>> tracker.stats()["f"].constant
1
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import finite_number
from rewardkit.lengths import group_text

__all__ = ["GroupStats", "GroupTracker", "finite", "group_key"]

EPS = 1e-6
EXAMPLES = 3  # completions quoted per constant reward
EXAMPLE_CHARS = 160


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite int or float (not a bool), else ``None``."""
    return float(value) if finite_number(value) else None


def _snippet(completion: Any) -> str:
    """The start of a completion on one line, for quoting (a chat completion as its JSON)."""
    text = completion if isinstance(completion, str) else json.dumps(completion, ensure_ascii=False)
    return text[:EXAMPLE_CHARS].replace("\n", "\\n")


@dataclass
class GroupStats:
    """One reward over the groups of completions (same ``group``, else same prompt and step)."""

    groups: int = 0
    constant: int = 0
    values: Counter[float] = field(default_factory=Counter)  # the value of each constant group
    examples: list[str] = field(default_factory=list)  # completions of constant groups
    std_sum: float = 0.0
    by_step: dict[int, list[int]] = field(default_factory=dict)  # step -> [groups, constant groups]

    def within(self, steps: set[int]) -> tuple[int, int]:
        """(groups, constant groups) of the given steps."""
        pairs = [v for s, v in self.by_step.items() if s in steps]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    @property
    def constant_share(self) -> float:
        return self.constant / self.groups if self.groups else 0.0

    @property
    def mean_std(self) -> float:
        return self.std_sum / self.groups if self.groups else 0.0

    def add(self, values: Sequence[Any], completions: Sequence[Any], step: int | None = None) -> None:
        known = [float(v) for v in values if finite(v) is not None]
        if len(known) < 2:  # a group of one says nothing about variance
            return
        mean = sum(known) / len(known)
        spread = sum((v - mean) ** 2 for v in known)
        self.add_moments(len(known), spread, max(known) - min(known), known[0], completions[:1], step)

    def add_moments(
        self, n: int, squares: float, width: float, first: float, example: Sequence[Any], step: int | None
    ) -> None:
        """One group from its size, sum of squared deviations, max - min and first value."""
        if n < 2:
            return
        self.groups += 1
        self.std_sum += math.sqrt(max(squares, 0.0) / (n - 1))  # the sample std, as TRL and ms-swift log
        counts = self.by_step.setdefault(step, [0, 0]) if step is not None else None
        if counts is not None:
            counts[0] += 1
        if width <= EPS:
            self.constant += 1
            if counts is not None:
                counts[1] += 1
            self.values[round(first, 6)] += 1
            if len(self.examples) < EXAMPLES and example:
                self.examples.append(_snippet(example[0]))


def group_key(row: dict[str, Any]) -> str | None:
    """The GRPO group of a scored row: its ``group``, else its ``prompt``, within its ``step`` when it has one
    (``None`` when it has neither)."""
    value = row.get("group")
    if value is None:
        value = row.get("prompt")
    if value is None:
        return None
    text = group_text(value)
    step = row.get("step")
    return text if step is None else f"{step}\x00{text}"


class GroupTracker:
    """Groups of rows seen in any order (a scored JSONL): running moments per group and reward (Welford),
    and a short first completion per group; memory grows with groups, not rows."""

    def __init__(self) -> None:
        self._moments: dict[tuple[str, str], list[float]] = {}  # n, mean, squares, min, max, first
        self._first: dict[str, str] = {}

    def add(self, key: str, scores: dict[str, Any], completion: Any) -> None:
        if key not in self._first:
            self._first[key] = _snippet(completion)
        for func, value in scores.items():
            number = finite(value)
            if number is None:
                continue
            m = self._moments.get((key, func))
            if m is None:
                self._moments[(key, func)] = [1.0, number, 0.0, number, number, number]
                continue
            m[0] += 1
            delta = number - m[1]
            m[1] += delta / m[0]
            m[2] += delta * (number - m[1])
            m[3], m[4] = min(m[3], number), max(m[4], number)

    def stats(self) -> dict[str, GroupStats]:
        out: dict[str, GroupStats] = {}
        for (key, func), (n, _, squares, low, high, first) in self._moments.items():
            out.setdefault(func, GroupStats()).add_moments(
                int(n), squares, high - low, first, [self._first[key]], None
            )
        return out
