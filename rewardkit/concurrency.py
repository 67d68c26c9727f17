"""A concurrency limit shared by every event loop and thread of the process.

``asyncio.Semaphore`` belongs to one event loop, but a batch judged synchronously runs on a loop of its own
(one per call), so a per-loop bound does not hold across requests. :class:`SharedLimit` does: its slots are
counted under a thread lock, and a waiter on any loop is woken on its own loop.

>>> import asyncio
>>> limit = SharedLimit(1)
>>> async def twice():
...     async with limit:
...         return limit.in_use
>>> asyncio.run(twice()), limit.in_use
(1, 0)
"""

from __future__ import annotations

import asyncio
import collections
import threading
from types import TracebackType

__all__ = ["SharedLimit"]


class SharedLimit:
    """At most ``size`` holders at once, across threads and event loops. Use ``async with limit:``."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a limit needs at least one slot, got {size}")
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._waiters: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = (
            collections.deque()
        )

    @property
    def in_use(self) -> int:
        return self.size - self._free

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                if (loop, waiter) in self._waiters:  # never granted: just leave the queue
                    self._waiters.remove((loop, waiter))
                    raise
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: hand the slot on
                self.release()
            raise  # a grant still in flight sees the cancelled waiter and hands the slot on itself

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, waiter)
                    return
                except RuntimeError:  # that loop is closed: its waiter is gone
                    continue
            self._free += 1

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # cancelled meanwhile
            self.release()
        else:
            waiter.set_result(None)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
