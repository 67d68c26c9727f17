"""Shared lessons: the forms of answers one math worker met, taught to every worker while the pool is idle.

latex2sympy's ANTLR parser learns its prediction tables one form of answer at a time (1.5-4 ms a form), in
each process on its own: sixteen workers learnt the common forms sixteen times, and with tasks dealt to
whichever worker is free they went on learning for several batches. After a batch, once no batch runs, the
worker host (:class:`rewardkit.verify.host.Scheduler`) sends each main worker a lesson: one text of each
form the batches brought (:func:`rewardkit.verify.worker.learn` parses the ones that worker has not), as in
training between two steps, while the trainer generates.

* A text's form is the text with each run of digits as ``1`` (the tables see tokens, not values). Only
  short texts (``LEARN_CHARS``) a guard finds no risk in (:func:`rewardkit.verify.guards.risk`), from pairs
  judged within their limits, are taught.
* A batch, a read or a readiness check that comes in sets a shared byte (``busy``): a lesson stops at its
  next text, and one still waiting for a worker ends at once, so nothing is killed and nothing waits long.
* A lesson is best effort: ``LEARN_SOFT_S`` a parse, ``LEARN_BUDGET_S`` in all, hard limit ``LEARN_HARD_S``.
  Its texts are sent again only when a batch stopped it, never when it failed or was killed.
* The host remembers ``LEARN_FORMS`` forms, then forgets them all and starts again (a flood of junk forms
  cannot end the lessons for good; a text a worker knows costs it nothing).

``REWARDKIT_MATH_LESSONS=0`` turns them off; a pool of one worker has none (it learns everything itself).

>>> form("12\\\\cdot\\\\left(\\\\frac{3}{40}\\\\right)") == form("5\\\\cdot\\\\left(\\\\frac{7}{8}\\\\right)")
True
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from rewardkit.verify.guards import risk
from rewardkit.verify.plan import RISKY
from rewardkit.verify.tasks import learn

__all__ = ["LEARN_CHARS", "LEARN_FORMS", "LEARN_TEXTS", "Teacher", "form", "gives_way", "teaches"]

LEARN_TEXTS = 1024  # texts a lesson at most (the oldest not yet taught)
LEARN_CHARS = 300  # a longer text is not taught (its form is its own)
LEARN_FORMS = 20_000  # forms the host remembers; when full it forgets them all and starts again
LEARN_SOFT_S = 0.25  # a text's parse in a lesson (a form slower to parse is not worth teaching)
LEARN_BUDGET_S = 10.0  # a lesson's time; then it ends as if done (best effort: never sent again)
LEARN_HARD_S = 15.0  # a lesson's hard limit, past its budget (a parse stuck in C code): killed, not resent
LEARN_HOLD_S = 0.02  # a lesson keeps its worker at least this long, so each idle worker takes one

_DIGITS = re.compile(r"\d+")
_F = TypeVar("_F", bound=Callable[..., Any])


def form(text: str) -> str:
    """What the parser's tables see of ``text``: each run of digits as ``1``."""
    return _DIGITS.sub("1", text)


class Teacher:
    """The host's side of the lessons: which batches run, the forms met, the texts not yet taught."""

    def __init__(self, workers: int, context: Any = multiprocessing) -> None:
        self.workers = workers
        self.teaches = workers > 1 and os.environ.get("REWARDKIT_MATH_LESSONS", "1").strip() != "0"
        # 1 while a batch runs: a shared byte, not an Event (whose semaphores the resource tracker reports
        # as leaked when the host exits with os._exit)
        self.busy = context.RawValue("b", 0)
        self._lock = threading.Lock()
        self._batches = 0
        self.forms: set[str] = set()
        self.untaught: list[str] = []

    def enter(self) -> None:
        """A batch, read or readiness check starts: lessons give way at once."""
        with self._lock:
            self._batches += 1
            self.busy.value = 1

    def leave(self, texts: Sequence[str], main: Any) -> None:
        """It ended (``texts``: those of its pairs judged within their limits; none for a read or a check):
        remember their forms not met before, and once nothing runs, send a lesson to each worker of the
        ``main`` pool (the oldest ``LEARN_TEXTS`` texts not yet taught)."""
        new: dict[str, str] = {}
        if self.teaches:
            for text in set(texts):
                if len(text) <= LEARN_CHARS and (shape := form(text)) not in self.forms and shape not in new:
                    if risk(text) < RISKY:
                        new[shape] = text
        with self._lock:
            for shape, text in new.items():
                if len(self.forms) >= LEARN_FORMS:
                    self.forms.clear()
                if shape not in self.forms:
                    self.forms.add(shape)
                    self.untaught.append(text)
            del self.untaught[:-LEARN_FORMS]
            self._batches -= 1
            if self._batches or not texts or not self.untaught:
                return
            self.busy.value = 0
            lesson = self.untaught[:LEARN_TEXTS]
        # sent outside the lock (pebble's threads call back into it); a batch that comes in meanwhile sets
        # busy again, and these lessons end at once, to be sent again
        args = (lesson, LEARN_SOFT_S, LEARN_HOLD_S, LEARN_BUDGET_S)
        try:
            if main is None or not main.active:
                return
            lessons = [main.schedule(learn, args=args, timeout=LEARN_HARD_S) for _ in range(self.workers)]
        except Exception:  # the pool broke as the batch ended: no lessons; the batch's results stand
            return
        state = {"left": len(lessons), "stopped": False}

        def taught(done: Future[Any]) -> None:  # all ended, none stopped by a batch: taught
            with self._lock:
                state["left"] -= 1
                state["stopped"] |= done.cancelled() or (done.exception() is None and done.result() < 0)
                if state["left"] == 0 and not state["stopped"] and self.untaught[: len(lesson)] == lesson:
                    del self.untaught[: len(lesson)]

        for future in lessons:
            future.add_done_callback(taught)


def gives_way(method: _F) -> _F:
    """A Scheduler method during which lessons give way (a read, a readiness check)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.teacher.enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.teacher.leave((), None)

    return wrapper  # type: ignore[return-value]


def teaches(method: _F) -> _F:
    """Scheduler.run: lessons give way while it runs; after it, the texts of its pairs judged within their
    limits (no reason) are remembered and, once nothing runs, taught."""

    @functools.wraps(method)
    def wrapper(self: Any, pairs: Sequence[tuple[str, str]], *args: Any) -> Any:
        self.teacher.enter()
        clean: list[str] = []
        try:
            status, results, counters = method(self, pairs, *args)
            if status == "ok" and self.teacher.teaches:  # (a pool that does not teach needs no texts)
                judged = zip(pairs, results, strict=True)
                clean = [text for pair, (_, why) in judged if why is None for text in pair[:2]]
            return status, results, counters
        finally:
            self.teacher.leave(clean, self._pools.get("main"))

    return wrapper  # type: ignore[return-value]
