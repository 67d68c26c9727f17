"""Rewards whose work is awaited (judge calls, sandboxes): one async core, its sync and async faces.

A subclass of :class:`AsyncReward` implements ``_judge(completions, columns)``, a coroutine giving the
batch's :class:`~rewardkit.core.Scored`. The service awaits it on its event loop (``ascore_detailed``,
holding no thread); trainers calling the reward synchronously get it through :func:`run_coroutine`.

>>> import asyncio
>>> run_coroutine(lambda: asyncio.sleep(0, result=7))
7
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from rewardkit.core import Completion, Explained, Reward, Scored

__all__ = ["AsyncReward", "run_coroutine"]

_T = TypeVar("_T")


def run_coroutine(work: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine from synchronous code: on a loop of our own, in a thread of its own when called from
    inside a running loop (the deadline goes along in the context). The work runs outside the ``except``:
    its errors would otherwise carry "no running event loop" as their context."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        looping = False
    else:
        looping = True
    if not looping:
        return asyncio.run(work())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, lambda: asyncio.run(work())).result()


class AsyncReward(Reward):
    """A reward judged by a coroutine over the whole batch: implement :meth:`_judge`."""

    @abc.abstractmethod
    async def _judge(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        """Judge a batch whose columns are checked and aligned: values, reasons and details."""

    # -- sync face: the base class binds the columns and calls _score
    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        scored = run_coroutine(lambda: self._judge(completions, columns))
        return [Explained(*item) for item in zip(scored.values, scored.reasons, scored.details, strict=True)]

    # -- async face: the service (and the ms-swift plugin's AsyncORM) awaits it on its own loop
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Judge on the caller's event loop: values, reasons and details."""
        return await self._judge(completions, self.bind_columns(completions, columns))

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values
