"""Shared lessons (rewardkit.verify.host.Scheduler): the forms of answers a batch brought, parsed by every
worker of the pool while it is idle, so that each worker's parser tables know them before the next batch.

Real pebble pools of two workers, real Math-Verify; the lessons' effect on speed is measured in
``bench/scaling.py --gap``, not here."""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("math_verify")
pytest.importorskip("pebble")

from rewardkit.verify.host import _DIGITS, LEARN_CHARS, Scheduler, _worker_learn  # noqa: E402

PAIRS = [
    ("\\frac{3}{4}", "0.75"),
    ("\\frac{3}{4}", "\\frac{6}{8}"),
    ("(x+1)^2", "x^2+2x+1"),
    ("(x+1)^2", "x^2+1"),
    ("2\\sqrt{3}", "\\sqrt{12}"),
    ("[1,2)\\cup(3,\\infty)", "[1,2) \\cup (3, \\infty)"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("17", "18"),  # the same form as 42 or 3: one lesson text for all of them
    ("42", "42.0"),
]
TOWER = "9^{9^{9^{9}}}"  # a guard's risk: never taught
LONG = "+".join(["x"] * (LEARN_CHARS // 2 + 1))  # past LEARN_CHARS: its form is its own


def forms(count: int, seed: int = 7) -> list[str]:
    """``count`` expressions of different shapes (different token sequences, not only other digits)."""
    rng = random.Random(seed)
    atoms = ["x", "y", "\\pi", "2", "\\sqrt{3}", "\\frac{1}{2}", "e^{x}", "\\sin x", "|x|", "(x+1)"]
    ops = ["+", "-", "\\cdot ", "\\times ", "/"]
    out: set[str] = set()
    while len(out) < count:
        n = rng.randint(2, 6)
        parts = [rng.choice(atoms)]
        for _ in range(n):
            parts += [rng.choice(ops), rng.choice(atoms)]
        out.add("".join(parts))
    return sorted(out)


def wait_until(condition: Any, timeout_s: float = 60.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def scheduler() -> Iterator[Scheduler]:
    scheduler = Scheduler(2, 2048, 0)
    assert scheduler.ping(120, None), "the pools did not start"
    yield scheduler
    scheduler.close()


@pytest.mark.timeout(180)
def test_a_batchs_forms_are_taught_to_every_worker_once_the_pool_is_idle(scheduler: Scheduler) -> None:
    first = scheduler.run([*PAIRS, ("1", TOWER), ("1", LONG), ("}{", "3")], 5.0, True, None)
    assert first[0] == "ok"
    results = first[1]
    assert results[-1] == (None, "gold_unparseable")
    taught = {text for pair in PAIRS for text in pair}
    # one text a form (17, 18, 42 are one form: digits); nothing risky, overlong or out of a clean verdict
    assert scheduler._forms == {_DIGITS.sub("1", text) for text in taught}
    assert TOWER not in scheduler._untaught and LONG not in scheduler._untaught
    assert "}{" not in scheduler._untaught and "3" not in scheduler._untaught
    assert wait_until(lambda: not scheduler._untaught), "the lessons did not end"
    shared = Counter(_DIGITS.sub("1", text) for text in taught)
    lesson = [text for text in taught if shared[_DIGITS.sub("1", text)] == 1]  # each its form's one text
    assert len(lesson) >= 6
    # every worker has learnt them: a lesson of the same texts parses nothing new, whichever worker takes it
    pool = scheduler.pool("main")
    probes = [pool.schedule(_worker_learn, args=(lesson, 0.5, 0.2), timeout=30) for _ in range(4)]
    assert [probe.result(timeout=60) for probe in probes] == [0, 0, 0, 0]
    # and the verdicts after the lessons are the verdicts before them
    assert scheduler.run([*PAIRS, ("1", TOWER), ("1", LONG), ("}{", "3")], 5.0, True, None)[1] == results


@pytest.mark.timeout(180)
def test_a_batch_that_comes_in_stops_a_lesson_at_its_next_text(scheduler: Scheduler) -> None:
    texts = forms(3000)
    scheduler._busy.value = 0
    lesson = scheduler.pool("main").schedule(_worker_learn, args=(texts, 0.5, 0.0), timeout=60)
    assert wait_until(lesson.running, 30)
    time.sleep(0.2)
    batch = threading.Thread(target=scheduler.run, args=(PAIRS, 5.0, True, None))
    batch.start()  # a batch sets the pool busy as it starts
    assert lesson.result(timeout=30) == -1  # stopped before the 3,000 texts' end
    batch.join(60)
    assert not batch.is_alive()


@pytest.mark.timeout(60)
def test_learn_parses_what_its_worker_has_not_learnt_and_stops_when_the_pool_is_busy(alarm: None) -> None:
    from rewardkit.verify import worker

    busy = multiprocessing.RawValue("b", 0)
    worker.init_worker(0, busy)
    try:
        texts = forms(40, seed=11)
        assert worker.learn(texts, 0.5) == 40
        assert worker.learn([*texts, "\\frac{a}{b}"], 0.5) == 1  # only the new one
        busy.value = 1
        assert worker.learn(forms(5, seed=12), 0.5) == -1  # a batch came in: nothing parsed
    finally:
        worker.init_worker(0)


def test_lessons_are_off_for_one_worker_or_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Scheduler, "_start_pools", lambda self: None)
    assert Scheduler(2, 0, 0)._teaches and not Scheduler(1, 0, 0)._teaches
    monkeypatch.setenv("REWARDKIT_MATH_LESSONS", "0")
    assert not Scheduler(2, 0, 0)._teaches


def test_a_pool_that_does_not_teach_remembers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    scheduled: list[Any] = []

    class Pool:
        active = True

        def schedule(self, *args: Any, **kwargs: Any) -> Any:
            scheduled.append(args)
            raise AssertionError("no task expected")

    one = Scheduler.__new__(Scheduler)
    one.workers, one._lock, one._busy = 1, threading.Lock(), multiprocessing.RawValue("b", 0)
    one._teaches, one._batches, one._forms, one._untaught, one._pools = False, 1, set(), [], {"main": Pool()}
    one._leave([text for pair in PAIRS for text in pair])
    assert one._forms == set() and one._untaught == [] and scheduled == []
    two = Scheduler.__new__(Scheduler)
    two.workers, two._lock, two._busy = 2, threading.Lock(), multiprocessing.RawValue("b", 0)
    two._teaches, two._batches, two._forms, two._untaught, two._pools = True, 2, set(), [], {"main": Pool()}
    two._leave(["x+1"])  # another batch still runs: the form is remembered, no lesson yet
    assert two._untaught == ["x+1"] and scheduled == [] and two._batches == 1
