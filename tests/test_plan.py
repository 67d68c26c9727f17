"""Pairs in tasks of several (rewardkit.verify.plan): the order, the sizes, and what happens to a task's
pairs when the task stops early, dies or is killed."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import math_verify  # noqa: F401 - make test installs it: a broken install fails, never skips
import pytest

from rewardkit.verify.plan import GROUP_MAX, RISKY, Plan  # noqa: E402

SLOW = "9^{9^{9^{9}}}"  # a tower: SymPy works on it until the alarm stops it


def tasks_of(plan: Plan) -> list[list[int]]:
    out = []
    while plan:
        out.append(plan.next())
    return out


def test_risky_pairs_go_alone_first_and_a_golds_pairs_share_tasks() -> None:
    golds = [f"{g}" for g in range(40) for _ in range(6)]  # 40 golds, 6 distinct answers each
    pairs = [(gold, f"{gold}+{k}") for k, gold in enumerate(golds)]
    pairs += [("1", SLOW), ("2", "(10^{7})!"), ("3", "1+" * 600 + "1")]
    tasks = tasks_of(Plan(pairs, workers=4))
    assert tasks[:3] == [[240], [241], [242]]  # the three risky ones, alone, the riskiest first
    flat = [i for task in tasks for i in task]
    assert sorted(flat) == list(range(len(pairs)))  # every pair once
    sizes = [len(task) for task in tasks[3:]]
    assert max(sizes) <= GROUP_MAX and sizes[-1] == 1 and sizes == sorted(sizes, reverse=True)
    # a gold's pairs are side by side: each task boundary splits at most one gold (here 240 pairs, 40 golds)
    incidences = sum(len({pairs[i][0] for i in task}) for task in tasks[3:])
    assert incidences <= 40 + len(tasks) - 3 < 240


def test_without_soft_limits_every_pair_goes_alone_riskiest_first() -> None:
    pairs = [("1", "1"), ("1", SLOW), ("1", "2")]
    assert tasks_of(Plan(pairs, workers=2, grouped=False)) == [[1], [0], [2]]


def test_pairs_sent_back_go_next_each_alone() -> None:
    plan = Plan([("1", str(k)) for k in range(8)], workers=1)
    first = plan.next()
    assert len(first) == 4
    plan.again(first[1:])
    assert [plan.next() for _ in range(3)] == [[first[1]], [first[2]], [first[3]]]


@pytest.mark.timeout(60)
def test_a_task_of_several_stops_at_a_pair_its_shared_limit_interrupts(alarm: None) -> None:
    from rewardkit.verify.guards import risk
    from rewardkit.verify.worker import check_many

    assert risk("x^2+2x+1") < RISKY
    # the first pair has the whole limit: its timeout is its verdict, and nothing after it runs
    assert check_many([("3", SLOW), ("x^2", "x*x")], 0.5) == [(False, "timeout")]
    # a later pair stopped by what the first left is no verdict: it is left out, to be checked again alone
    assert check_many([("(x+1)^2", "x^2+2x+1"), ("3", SLOW), ("x^2", "x*x")], 0.5) == [(True, None)]
    assert check_many([("(x+1)^2", "x^2+2x+1"), ("(x+1)^2", "x^2+1")], 5.0) == [(True, None), (False, None)]


class _InlinePool:
    """A main pool that runs each task here, at once; its first task, one of several pairs, fails with
    ``error`` instead (``TimeoutError``: killed at the hard limit)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.tasks: list[int] = []  # pairs a task, as scheduled

    def schedule(self, function: Any, args: Any = (), timeout: float | None = None) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        several = isinstance(args[0], list)
        self.tasks.append(len(args[0]) if several else 1)
        if several and len(self.tasks) == 1:
            future.set_exception(self.error)
        else:
            future.set_result(function(*args))
        return future


PAIRS = [("(x+1)^2", "x^2+2x+1"), ("(x+1)^2", "x^2+1"), ("(x+1)^2", "(1+x)^2")]


def run_with(error: BaseException, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, _InlinePool]:
    from rewardkit.verify.host import Scheduler

    main = _InlinePool(error)
    monkeypatch.setattr(Scheduler, "_start_pools", lambda self: self._up.set())
    monkeypatch.setattr(Scheduler, "pool", lambda self, kind="main": main)
    return Scheduler(1, 0, 0).run(PAIRS, 5.0, True, None), main


@pytest.mark.timeout(60)
def test_the_pairs_of_a_task_killed_under_them_are_checked_again_alone(
    alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardkit.verify.worker import check

    (status, results, counters), main = run_with(TimeoutError("killed at the hard limit"), monkeypatch)
    assert status == "ok"
    assert results == [check(*pair, 5.0) for pair in PAIRS] == [(True, None), (False, None), (True, None)]
    assert main.tasks == [2, 1, 1, 1]  # the killed task's two pairs, alone, then the third
    assert counters == {"timeouts": 0, "spilled": 0, "retried": 0}  # no pair's own limit passed


@pytest.mark.timeout(60)
def test_the_pairs_of_a_task_whose_worker_died_have_had_their_one_rerun(
    alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pebble import ProcessExpired

    died: BaseException = ProcessExpired("Abnormal termination")  # type: ignore[no-untyped-call]
    (status, results, counters), main = run_with(died, monkeypatch)
    assert status == "ok" and results == [(True, None), (False, None), (True, None)]
    assert main.tasks == [2, 1, 1, 1]
    assert counters["retried"] == 2  # a second death of either is worker_crashed, as for a pair alone


@pytest.mark.timeout(60)
def test_a_task_of_several_that_failed_otherwise_is_each_pairs_outcome(
    alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (status, results, _), main = run_with(RuntimeError("the pool is broken"), monkeypatch)
    assert status == "ok"
    assert results == [(False, "verify_error:RuntimeError")] * 2 + [(True, None)]
    assert main.tasks == [2, 1]  # not sent again to a broken pool
