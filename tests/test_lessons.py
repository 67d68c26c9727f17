"""Shared lessons (rewardkit.verify.lessons, in the worker host's Scheduler): the forms of answers a batch
brought, parsed by every worker of the pool while it is idle, so that each worker's parser tables know them
before the next batch.

Real pebble pools of two workers, real Math-Verify; the lessons' effect on speed is measured in
``bench/scaling.py --gap``, not here."""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import math_verify  # noqa: F401 - make test installs it: a broken install fails, never skips
import pebble  # noqa: F401 - as above
import pytest

from rewardkit.verify.host import Scheduler  # noqa: E402
from rewardkit.verify.lessons import LEARN_CHARS, Teacher, form  # noqa: E402
from rewardkit.verify.tasks import learn as lesson  # noqa: E402

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


def probe(texts: list[str]) -> tuple[int, int]:
    """In a worker: its pid, and how many of ``texts`` it had not learnt (holding it half a second)."""
    from rewardkit.verify.worker import learn

    return os.getpid(), learn(texts, 0.5, 0.5)


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
    # (the tower, the long sum and the unreadable gold have forms of their own, none of them remembered)
    assert scheduler.teacher.forms == {form(text) for text in taught}
    assert wait_until(lambda: not scheduler.teacher.untaught), "the lessons did not end"
    shared = Counter(form(text) for text in taught)
    lesson = [text for text in taught if shared[form(text)] == 1]  # each its form's one text
    assert len(lesson) >= 6
    # every worker has learnt them: one probe a worker (each holds its worker half a second, so the other
    # idle worker takes the other), and neither parses anything new
    pool = scheduler.pool("main")
    probes = [pool.schedule(probe, args=(lesson,), timeout=30) for _ in range(2)]
    answers = [p.result(timeout=60) for p in probes]
    assert len({pid for pid, _ in answers}) == 2 and [parsed for _, parsed in answers] == [0, 0]
    # and the verdicts after the lessons are the verdicts before them
    assert scheduler.run([*PAIRS, ("1", TOWER), ("1", LONG), ("}{", "3")], 5.0, True, None)[1] == results


@pytest.mark.timeout(180)
def test_a_batch_that_comes_in_stops_a_lesson_at_its_next_text(scheduler: Scheduler) -> None:
    texts = forms(3000)
    scheduler.teacher.busy.value = 0
    running = scheduler.pool("main").schedule(lesson, args=(texts, 0.5, 0.0, 60.0), timeout=90)
    assert wait_until(running.running, 30)
    time.sleep(0.2)
    batch = threading.Thread(target=scheduler.run, args=(PAIRS, 5.0, True, None))
    batch.start()  # a batch sets the pool busy as it starts
    assert running.result(timeout=30) == -1  # stopped before the 3,000 texts' end
    batch.join(60)
    assert not batch.is_alive()


@pytest.mark.timeout(180)
def test_a_readiness_check_stops_the_lessons_too(scheduler: Scheduler) -> None:
    texts = forms(3000, seed=3)
    scheduler.teacher.busy.value = 0
    pool = scheduler.pool("main")
    lessons = [pool.schedule(lesson, args=(texts, 0.5, 0.0, 60.0), timeout=90) for _ in range(2)]
    assert wait_until(lambda: all(given.running() for given in lessons), 30)
    assert scheduler.ping(30, None)  # it did not wait for 3,000 texts
    assert [given.result(timeout=30) for given in lessons] == [-1, -1]


@pytest.mark.timeout(60)
def test_learn_parses_what_its_worker_has_not_learnt_and_stops_when_the_pool_is_busy(
    alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardkit.verify import worker

    monkeypatch.setattr(worker, "_learnt", set())
    busy = multiprocessing.RawValue("b", 0)
    worker.init_worker(0, busy)
    try:
        texts = forms(40, seed=11)
        assert worker.learn(texts, 0.5) == 40
        assert worker.learn([*texts, "\\frac{a}{b}"], 0.5) == 1  # only the new one
        assert worker.learn(forms(5, seed=13), 0.5, budget_s=-1.0) == 0  # its time is up: it ends
        busy.value = 1
        assert worker.learn(forms(5, seed=12), 0.5) == -1  # a batch came in: nothing parsed
    finally:
        worker.init_worker(0)


def test_lessons_are_off_for_one_worker_or_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Teacher(2).teaches and not Teacher(1).teaches
    monkeypatch.setenv("REWARDKIT_MATH_LESSONS", "0")
    assert not Teacher(2).teaches


class Lessons:
    """A main pool whose lessons end as told: a number parsed, or an exception."""

    active = True

    def __init__(self, *ends: Any) -> None:
        self.ends = list(ends)

    def schedule(self, function: Any, args: Any = (), timeout: Any = None) -> Future[Any]:
        future: Future[Any] = Future()
        end = self.ends.pop(0)
        if isinstance(end, BaseException):
            future.set_exception(end)
        else:
            future.set_result(end)
        return future


def test_a_teacher_that_does_not_teach_remembers_nothing_and_none_teaches_while_a_batch_runs() -> None:
    one = Teacher(1)
    one.enter()
    one.leave([text for pair in PAIRS for text in pair], Lessons())  # no lesson: Lessons() has none to give
    assert one.forms == set() and one.untaught == []
    two = Teacher(2)
    two.enter()
    two.enter()
    two.leave(["x+1"], Lessons())  # another batch still runs: the form is remembered, no lesson yet
    assert two.untaught == ["x+1"] and two.busy.value == 1


@pytest.mark.parametrize(
    ("ends", "kept"),
    [
        ((3, 3), False),  # both lessons ran to their end: taught
        ((3, -1), True),  # a batch stopped one: sent again when the pool is next idle
        ((3, TimeoutError("Task timeout")), False),  # killed at its hard limit: never sent again
        ((RuntimeError("pool"), 3), False),  # failed: never sent again
    ],
)
def test_a_lessons_texts_are_kept_only_when_a_batch_stopped_it(ends: tuple[Any, ...], kept: bool) -> None:
    teacher = Teacher(2)
    teacher.enter()
    teacher.leave(["x+1", "y-2"], Lessons(*ends))
    assert teacher.busy.value == 0
    assert sorted(teacher.untaught) == (["x+1", "y-2"] if kept else [])


def test_a_pool_that_breaks_as_the_batch_ends_leaves_the_batch_alone() -> None:
    class Broken:
        active = True

        def schedule(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("Unexpected error within the Pool")

    teacher = Teacher(2)
    teacher.enter()
    teacher.leave(["x+1"], Broken())  # no exception: the batch's results stand
    assert teacher.untaught == ["x+1"]


def test_the_forms_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import rewardkit.verify.lessons as lessons

    monkeypatch.setattr(lessons, "LEARN_FORMS", 3)
    teacher = Teacher(2)
    teacher.enter()
    teacher.leave(forms(10, seed=5), Lessons(-1, -1))
    assert len(teacher.forms) <= 3 and len(teacher.untaught) == 3
