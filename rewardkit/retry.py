"""One retry policy for every remote call (the service client, the LLM judge), on tenacity.

Exponential backoff with jitter, a bounded number of retries, and a server's ``Retry-After`` honoured, in
seconds or as an HTTP date, capped at the longest backoff. What counts as transient is the caller's
business (``retry_on``); everything else is raised at once.

>>> retry_after_s("2", cap_s=30), retry_after_s("soon", cap_s=30), retry_after_s(None, cap_s=30)
(2.0, None, None)
>>> retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", cap_s=30)  # a date in the past: now
0.0
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from typing import Any

import tenacity

__all__ = ["Backoff", "retry_after_s", "retrying"]


def retry_after_s(value: str | None, *, cap_s: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), within ``[0, cap_s]``."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), cap_s)


class Backoff(tenacity.wait.wait_base):
    """``base_s * 2**n`` (at most ``cap_s``) times a jitter in [0.5, 1), unless the failure carries a
    ``Retry-After`` (``retry_after`` reads it from the failed attempt)."""

    def __init__(
        self, base_s: float, cap_s: float, retry_after: Callable[[BaseException | None], float | None]
    ) -> None:
        self.base_s, self.cap_s, self.retry_after = base_s, cap_s, retry_after

    def __call__(self, state: tenacity.RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        told = self.retry_after(failure)
        if told is not None:
            return told
        backoff = min(self.base_s * 2.0 ** (state.attempt_number - 1), self.cap_s)
        return backoff * (0.5 + random.random() / 2)


def retrying(
    *,
    max_retries: int,
    base_s: float,
    cap_s: float,
    retry_on: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException | None], float | None] = lambda _: None,
    asynchronous: bool = False,
) -> Any:
    """``for attempt in retrying(...): with attempt: ...`` (``async for`` with ``asynchronous=True``): a
    failure ``retry_on`` accepts is retried; the last failure is raised as itself."""
    kind = tenacity.AsyncRetrying if asynchronous else tenacity.Retrying
    return kind(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        wait=Backoff(base_s, cap_s, retry_after),
        retry=tenacity.retry_if_exception(retry_on),
        reraise=True,
    )
