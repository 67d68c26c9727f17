"""The order in which the worker host sends a batch's pairs to its workers, and how many a task.

One pair a task costs a round trip through the pool (the task out, its start and its result back, each
pickled) for every pair, and a worker idles through each one; sixteen workers spread one gold's pairs
over as many processes, each parsing the gold again. So pairs go in tasks of several:

* a prediction that may be slow (:func:`rewardkit.verify.guards.risk` of ``RISKY`` or more) goes alone,
  the riskiest first, so that it starts early and overlaps the rest of the batch, and a hard kill stops it
  and nothing else;
* the others go in tasks of pairs that share a gold (and the options it is compared under: a pair's third
  item, :class:`rewardkit.verify.options.Options`) where they can (each gold parsed once a batch), at
  most ``GROUP_MAX`` a task, each task taking what is left over ``TASKS_A_WORKER`` x the workers (guided
  self-scheduling): large tasks while much is left, single pairs at the end, so no worker finishes long
  after the others;
* a pair sent back (its task stopped early, or its worker died or was killed under a task of several)
  goes next, alone, with a limit of its own. So a pair that hangs where no soft limit reaches (in C code)
  and that ``risk`` did not flag costs two hard limits, not one: the task's and its own.

Without soft time limits every pair goes alone: the only way to stop a slow pair is then to kill its
worker, and a kill would take the pairs that share its task down with it.

>>> plan = Plan([("1", "1"), ("2", "2"), ("1", "x"), ("1", "9^{9^{9}}")], workers=1)
>>> plan.next(), plan.next(), plan.next()
([3], [0, 2], [1])
>>> plan.again([2]); plan.next(), bool(plan)
([2], False)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from rewardkit.verify.guards import risk
from rewardkit.verify.options import Pair

__all__ = ["GROUP_MAX", "RISKY", "TASKS_A_WORKER", "Plan"]

GROUP_MAX = 16  # pairs a task at most (a typical pair takes milliseconds: a task, tens of them)
RISKY = 5.0  # guards.risk() from which a pair goes alone (a tower, a factorial, deep nesting, 1,000 chars)
TASKS_A_WORKER = 2  # a task takes what is left over this many tasks a worker


class Plan:
    """Tasks of pair indices, in the order they are to be sent (see the module's docstring)."""

    def __init__(self, pairs: Sequence[Pair], workers: int, grouped: bool = True) -> None:
        scores = [risk(pair[1]) for pair in pairs]
        alone = [i for i in range(len(pairs)) if not grouped or scores[i] >= RISKY]
        alone.sort(key=lambda i: -scores[i])
        # a gold under other options (Math-Verify's verify options, a pair's third item) is another group
        by_gold: dict[tuple[object, ...], list[int]] = {}
        for i, pair in enumerate(pairs):
            if grouped and scores[i] < RISKY:
                by_gold.setdefault((pair[0], *pair[2:]), []).append(i)
        self._first: deque[int] = deque(alone)
        self._rest = [i for same in by_gold.values() for i in same]
        self._at = 0
        self._share = TASKS_A_WORKER * max(workers, 1)

    def __bool__(self) -> bool:
        return bool(self._first) or self._at < len(self._rest)

    def next(self) -> list[int]:
        """The next task's pairs (call only while the plan is true)."""
        if self._first:
            return [self._first.popleft()]
        left = len(self._rest) - self._at
        size = max(1, min(GROUP_MAX, -(-left // self._share)))
        task = self._rest[self._at : self._at + size]
        self._at += size
        return task

    def again(self, pairs: Sequence[int]) -> None:
        """Send these pairs next, each alone."""
        self._first.extendleft(reversed(pairs))
