"""A program's score from its tests' results: the scoring modes of the ``code`` reward.

- ``all`` (the default): 1.0 when every test passes, else 0.0 (open-r1's ``pass_fail``);
- ``fraction``: the share of tests passed (open-r1's ``partial``, veRL's ``prime_code``);
- ``weighted_sum``: open-r1's Codeforces score (``cf_scoring.py``, ``score_submission``): the pass/fail
  score plus 0.1 x the share passed, so 1.1 for a program passing everything, ``0.1 * k / n`` for one passing
  ``k`` of ``n``; a program that does not compile gets -0.1 (open-r1's ``no_compile_reward``) and a
  completion without a program -1.0 (``no_submission_reward``). open-r1 gives -0.1 for a compile error in
  its other modes too; here ``all`` and ``fraction`` give 0.0 (their range stays [0, 1]);
- ``subtasks`` and ``subtask_points``: IOI's subtasks (open-r1's ``ioi_scoring.py``: a subtask's score is
  the lowest of its tests' scores times its points; a test passes or fails here, so a subtask earns its
  points when all of its tests pass and nothing otherwise). ``subtask_points`` is the sum of the points
  earned; ``subtasks`` the same divided by the points of all subtasks, in [0, 1]. A test may belong to more
  than one subtask (IOI shares tests between subtasks); a subtask none of whose tests ran (``max_tests`` cut
  them) counts neither way. open-r1 rounds a subtask's score to its ``score_precision``; nothing is rounded
  here. open-r1's IOI rows (one subtask a row, a ``score`` of points, tests in a dataset of their own,
  programs compiled with the problem's grader files) are not read as such: with a row's tests given as
  above, a row of one subtask scores 1.0 or 0.0 in ``subtasks``, as open-r1's ``SubtaskResult.score``.

>>> score("weighted_sum", [True, True, False, True])
0.075
>>> score("weighted_sum", [True] * 4), score("fraction", [True, False]), score("all", [True, False])
(1.1, 0.5, 0.0)
>>> tasks = read_subtasks([1, 1, 2, [2, 3]], {"1": 30, "2": 50, "3": 20})
>>> score("subtask_points", [True, True, False, True], tasks), score("subtasks", [True] * 4, tasks)
(50.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MODES",
    "Subtasks",
    "compile_error_score",
    "no_program_score",
    "read_subtasks",
    "score",
    "stops_at_first_failure",
]

MODES = ("all", "fraction", "weighted_sum", "subtasks", "subtask_points")
_SUBTASK_MODES = ("subtasks", "subtask_points")
MAX_SUBTASKS = 1000


class SubtaskError(ValueError):
    """A row's subtasks cannot be read (the caller turns it into ``bad_tests``)."""


@dataclass(frozen=True)
class Subtasks:
    """Which subtasks each test belongs to (``of_test[i]``), and each subtask's points, in order."""

    of_test: tuple[tuple[str, ...], ...]
    points: tuple[tuple[str, float], ...]

    def cut(self, n: int) -> Subtasks:
        """The subtasks of the first ``n`` tests."""
        return Subtasks(self.of_test[:n], self.points)


def _ids(value: Any, index: int) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    if not items or len(items) > MAX_SUBTASKS:
        raise SubtaskError(f"test {index} belongs to no subtask")
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int) or str(item) == "":
            raise SubtaskError(f"test {index}'s subtask must be a name or a number, got {item!r:.40}")
        out.append(str(item))
    return tuple(out)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise SubtaskError(f"subtask {name!r:.40}'s points must be a number >= 0, got {value!r:.40}")
    return float(value)


def read_subtasks(per_test: Sequence[Any], points: Any = None) -> Subtasks:
    """Each test's subtask (a name or number, or a list of them) and the subtasks' points (a mapping from
    subtask to points, or a list of points for subtasks ``0, 1, ...`` or ``1, 2, ...`` as the tests name
    them; ``None``: one point each). Raises ``SubtaskError`` (a ``ValueError``) naming what is wrong: a
    test's subtask without points, or points summing to 0.

    >>> read_subtasks(["a", "b"], None).points
    (('a', 1.0), ('b', 1.0))
    >>> read_subtasks([0, 1, 1], [0, 100]).points  # IOI's samples as subtask 0, worth nothing
    (('0', 0.0), ('1', 100.0))
    >>> read_subtasks([1, 3], {"1": 10})
    Traceback (most recent call last):
    ...
    rewardkit.sandbox.scoring.SubtaskError: test 1's subtask '3' has no points
    """
    of_test = tuple(_ids(value, i) for i, value in enumerate(per_test))
    named = list(dict.fromkeys(name for names in of_test for name in names))
    if len(named) > MAX_SUBTASKS:
        raise SubtaskError(f"more than {MAX_SUBTASKS} subtasks")
    if points is None:
        table = {name: 1.0 for name in named}
    elif isinstance(points, Mapping):
        table = {str(name): _number(value, str(name)) for name, value in points.items()}
    elif isinstance(points, list | tuple):
        base = 0 if "0" in named else 1
        table = {str(base + i): _number(value, str(base + i)) for i, value in enumerate(points)}
    else:
        raise SubtaskError(f"subtask points must be a mapping or a list, got {type(points).__name__}")
    for i, names in enumerate(of_test):
        for name in names:
            if name not in table:
                raise SubtaskError(f"test {i}'s subtask {name!r:.40} has no points")
    if not sum(table[name] for name in named) > 0:
        raise SubtaskError("the subtasks' points sum to 0")
    return Subtasks(of_test, tuple((name, table[name]) for name in named))


def stops_at_first_failure(mode: str) -> bool:
    """Whether a run may stop at its first failing test (the score cannot rise after it)."""
    return mode == "all"


def compile_error_score(mode: str) -> float:
    """A program that does not compile: -0.1 in ``weighted_sum`` (open-r1's ``no_compile_reward``), else 0."""
    return -0.1 if mode == "weighted_sum" else 0.0


def no_program_score(mode: str) -> float:
    """No program in the completion: -1.0 in ``weighted_sum`` (open-r1's ``no_submission_reward``), else 0."""
    return -1.0 if mode == "weighted_sum" else 0.0


def score(mode: str, passed: Sequence[bool], subtasks: Subtasks | None = None) -> float:
    """The score of a program whose tests passed or not (``passed[i]``; a test never run did not pass).

    Raises ``ValueError`` for an unknown mode, no tests, or a subtask mode without ``subtasks``.

    >>> score("subtasks", [True, False], read_subtasks([1, 2], {"1": 1, "2": 3}))
    0.25
    >>> score("fraction", [])
    Traceback (most recent call last):
    ...
    ValueError: a score over no tests
    """
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; known: {', '.join(MODES)}")
    if not passed:
        raise ValueError("a score over no tests")
    share = sum(map(bool, passed)) / len(passed)
    if mode == "all":
        return float(share == 1)
    if mode == "fraction":
        return share
    if mode == "weighted_sum":
        return round(float(share == 1) + 0.1 * share, 12)  # open-r1's pass_fail_score + 0.1 * partial
    if subtasks is None:
        raise ValueError(f"mode {mode!r} needs each test's subtask")
    earned = total = 0.0
    for name, points in subtasks.points:
        tests = [i for i, names in enumerate(subtasks.of_test[: len(passed)]) if name in names]
        if not tests:
            continue  # none of its tests ran (cut by max_tests)
        total += points
        earned += points if all(passed[i] for i in tests) else 0.0
    if mode == "subtask_points":
        return earned
    return earned / total if total > 0 else 0.0
