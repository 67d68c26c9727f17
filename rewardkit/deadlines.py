"""The deadline of a batch: a context that bounds the scoring inside it, and what slow parts ask of it.

>>> with deadline(5.0):
...     0 < remaining_s() <= 5.0
True
>>> remaining_s() is None
True
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["DeadlineExceeded", "check_deadline", "deadline", "deadline_at", "remaining_s"]


class DeadlineExceeded(TimeoutError):
    """The batch ran past its deadline (see :func:`deadline`); its slow parts were cancelled."""


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("rewardkit_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Bound the scoring done inside the block (and the threads and tasks it starts with this context).

    Rewards with slow parts (math worker pools, judge calls) check :func:`remaining_s` and raise
    :class:`DeadlineExceeded` after cancelling their work. ``None`` leaves an outer deadline in force.
    """
    if seconds is None:
        yield
        return
    end = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(end if outer is None else min(end, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


def deadline_at() -> float | None:
    """The current deadline as a ``time.monotonic()`` reading, or ``None`` (for loops checking per item)."""
    return _deadline.get()


def remaining_s() -> float | None:
    """Seconds left before the current deadline (never below 0), or ``None`` when there is none."""
    end = _deadline.get()
    return None if end is None else max(0.0, end - time.monotonic())


def check_deadline(what: str) -> None:
    """Raise :class:`DeadlineExceeded` when the current deadline has passed."""
    left = remaining_s()
    if left is not None and left <= 0.0:
        raise DeadlineExceeded(f"{what}: the request deadline passed")
