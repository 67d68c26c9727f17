"""rewardkit as veRL's ``custom_reward_function``: no glue to write.

    reward.custom_reward_function.path=$(rewardkit plugin-path verl)     # .../adapters/verl_reward.py
    reward.custom_reward_function.name=compute_score_async     # or compute_score

veRL calls ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)`` once per sample (its
reward loop awaits ``async def`` functions and runs plain ones in a thread pool). This module gives it:

- :func:`compute_score`: one sample, a float;
- :func:`compute_score_async`: the same for the reward loop; concurrent calls on one event loop are
  coalesced into batches (one ``POST /score`` per batch in remote mode, one batched call to the rewards in
  process), so symbolic math is checked in batches instead of one item at a time;
- :func:`compute_score_batch`: a list of floats, for veRL's ``BatchRewardManager`` (older veRL);
- :func:`compute_score_detailed`: a dict ``{"score", "reason"}`` (veRL logs every key).

Each row is scored by the reward its ``data_source`` names in :data:`DATA_SOURCES` (through the ``route``
reward); the table turns veRL's ``ground_truth`` into that reward's columns (countdown's
``{"target", "numbers"}`` into ``target``/``nums``). Add your own with :func:`register_data_source`; an
unknown data source raises, naming it and the table. ``None`` ("not applicable") is given to veRL as 0.0.

Remote mode: with ``REWARDKIT_URL`` set (token in ``REWARDKIT_API_TOKEN``), scoring runs on the service.
Parameters of each reward come from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG`` as everywhere, under the
table's own (``math_dapo`` scores wrong answers -1, as veRL does); :mod:`rewardkit.adapters.env` reads
those variables for every adapter.

>>> compute_score("openai/gsm8k", "... so she has 72 left.\\n#### 72", "72")
1.0
>>> compute_score("countdown", "<answer>(6 - 2) * 6</answer>", {"target": 24, "numbers": [2, 6, 6]})
1.0
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.adapters.env import env_params, reward_from_env, service_url
from rewardkit.core import Reward, Scored
from rewardkit.registry import get
from rewardkit.rewards.route import KeyMatcher

__all__ = [
    "DATA_SOURCES",
    "DataSource",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "compute_score_detailed",
    "register_data_source",
]

#: coalescing of concurrent per-sample calls: most samples in one batch, and how long the first waits
MAX_BATCH = int(os.environ.get("REWARDKIT_VERL_MAX_BATCH", "1024"))
MAX_WAIT_S = float(os.environ.get("REWARDKIT_VERL_MAX_WAIT_MS", "10")) / 1000.0


def solution_columns(ground_truth: Any) -> dict[str, Any]:
    """A plain answer: the reward's ``solution`` column."""
    return {"solution": ground_truth}


def countdown_columns(ground_truth: Any) -> dict[str, Any]:
    """Countdown's ``{"target": 24, "numbers": [2, 6, 6]}`` (TinyZero's layout) as ``target`` and ``nums``;
    anything else gives ``None`` columns, which the countdown reward scores 0.0 with a reason."""
    if not isinstance(ground_truth, Mapping):
        return {"target": None, "nums": None}
    numbers = ground_truth.get("numbers", ground_truth.get("nums"))
    if hasattr(numbers, "tolist"):  # veRL's parquet rows hold numpy arrays
        numbers = numbers.tolist()
    target: Any = ground_truth.get("target")
    return {"target": target.item() if hasattr(target, "item") else target, "nums": numbers}


@dataclass(frozen=True)
class DataSource:
    """How rows of one veRL data source are scored: a registry reward, its parameters, and how the row's
    ``ground_truth`` becomes the reward's columns."""

    reward: str
    params: Mapping[str, Any] = field(default_factory=dict)
    columns: Callable[[Any], dict[str, Any]] = solution_columns


_DAPO = {"correct": 1.0, "wrong": -1.0}  # veRL's math_dapo scorer: +1 / -1
#: data source (or glob, tried after the exact names, in order) -> how its rows are scored
DATA_SOURCES: dict[str, DataSource] = {
    "openai/gsm8k": DataSource("math"),
    "lighteval/MATH": DataSource("math"),
    "DigitalLearningGmbH/MATH-lighteval": DataSource("math"),
    "HuggingFaceH4/MATH-500": DataSource("math"),
    "math_dapo": DataSource("math", _DAPO),
    "math_dapo_reasoning": DataSource("math", _DAPO),
    "aime*": DataSource("math", _DAPO),
    "countdown": DataSource("countdown", columns=countdown_columns),
    "hiyouga/geometry3k": DataSource("math"),
}


class _State:
    """What this module changes as it runs, in one place (one per process: veRL loads the file once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.version = 0  # bumped by register_data_source: what was built from the table is built again
        self.snapshot: _Table | None = None  # the data-source table last used (see _table)
        #: (service URL, table version, user params) -> the route reward, in process or on the service
        self.built: dict[tuple[Any, ...], Reward] = {}
        #: each event loop's coalescer of per-sample calls
        self.coalescers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Coalescer] = (
            weakref.WeakKeyDictionary()
        )


_state = _State()


def register_data_source(
    name: str,
    reward: str,
    params: Mapping[str, Any] | None = None,
    columns: Callable[[Any], dict[str, Any]] = solution_columns,
) -> None:
    """Score rows whose ``data_source`` is ``name`` (or matches it, a glob like ``my_math*``) with ``reward``.
    In process a bad name or parameter fails here; in remote mode the service says so at the first batch.

    >>> register_data_source("my_gsm8k", "math", {"extract": "lenient"})
    >>> compute_score("my_gsm8k", "I think it is 12", "12")
    1.0
    >>> del DATA_SOURCES["my_gsm8k"]
    """
    if service_url() is None:
        get(reward, **dict(params or {}))
    with _state.lock:
        DATA_SOURCES[name] = DataSource(reward, dict(params or {}), columns)
        _state.version += 1


class _Table:
    """One consistent view of :data:`DATA_SOURCES`, matched as the ``route`` reward matches its keys."""

    def __init__(self, sources: dict[str, DataSource], version: tuple[Any, ...]) -> None:
        self.sources, self.version = sources, version
        self.matcher = KeyMatcher(sources)

    def match(self, data_source: str) -> str:
        """The table key for ``data_source``; ``ValueError`` naming it and the table when there is none."""
        key = self.matcher.match(data_source)
        if key is not None:
            return key
        raise ValueError(
            f"rewardkit: no reward for data_source {data_source!r}; known: {', '.join(self.sources)}. Add "
            "one with rewardkit.adapters.verl.register_data_source(name, reward, params)."
        )

    def routes(self, user: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """The ``route`` reward's routes: per data source, its reward with ``user``'s settings under the
        table's (remote: ``user`` is empty; the service applies its operator's)."""
        return {
            name: {"name": s.reward, "params": {**user.get(s.reward, {}), **s.params}}
            for name, s in self.sources.items()
        }

    def rows(
        self, data_sources: Sequence[Any], ground_truths: Sequence[Any]
    ) -> tuple[list[str], dict[str, Any]]:
        """The batch as the route reward's columns (``ValueError`` for a data source the table lacks)."""
        n = len(data_sources)
        columns: dict[str, Any] = {}
        names = [str(source) for source in data_sources]
        for i, (name, truth) in enumerate(zip(names, ground_truths, strict=True)):
            for column, value in self.sources[self.match(name)].columns(truth).items():
                columns.setdefault(column, [None] * n)[i] = value
        return names, columns


def _table() -> _Table:
    """The table as it is now, made again only when it changed (veRL calls once per sample)."""
    with _state.lock:
        version = (_state.version, tuple(DATA_SOURCES))  # a `del DATA_SOURCES[...]` changes the names
        if _state.snapshot is None or _state.snapshot.version != version:
            _state.snapshot = _Table(dict(DATA_SOURCES), version)
        return _state.snapshot


def _router(table: _Table) -> Reward:
    """The ``route`` reward over the table: in process with the user's parameters under the table's, or on
    the service (``REWARDKIT_URL``) with the table's alone (the service applies its operator's)."""
    url = service_url()
    user = {} if url else env_params()
    key = (url, table.version, repr(sorted(user.items())))
    with _state.lock:
        built = _state.built.get(key)
    if built is None:
        built = reward_from_env("route", {"column": "data_source", "routes": table.routes(user)}, check=False)
        with _state.lock:
            _state.built.clear()  # one table in use at a time
            _state.built[key] = built
    return built


def _as_float(value: float | None) -> float:
    return 0.0 if value is None else float(value)


def _check_lengths(*columns: Sequence[Any]) -> int:
    sizes = {len(c) for c in columns}
    if len(sizes) != 1:
        raise ValueError(
            f"rewardkit: data_sources, solution_strs and ground_truths differ in length: {sizes}"
        )
    return sizes.pop()


# ---------------------------------------------------------------- scoring a batch, here or on the service


def score_rows(
    data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any]
) -> Scored:
    """Values and reasons of a batch of veRL rows, in process or (``REWARDKIT_URL``) on the service."""
    _check_lengths(data_sources, solution_strs, ground_truths)
    table = _table()
    names, columns = table.rows(data_sources, ground_truths)
    return _router(table).score_detailed(list(solution_strs), data_source=names, **columns)


async def ascore_rows(
    data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any]
) -> Scored:
    """:func:`score_rows` on an event loop (remote: an async client for the batch; here: a thread)."""
    if service_url() is None:
        return await asyncio.to_thread(score_rows, data_sources, solution_strs, ground_truths)
    _check_lengths(data_sources, solution_strs, ground_truths)
    table = _table()
    names, columns = table.rows(data_sources, ground_truths)
    router = _router(table)
    from rewardkit.client import RemoteReward

    assert isinstance(router, RemoteReward)
    return await router.ascore_detailed(list(solution_strs), data_source=names, **columns)


# ---------------------------------------------------------------- coalescing concurrent per-sample calls


class Coalescer:
    """Gathers the per-sample calls made on one event loop within ``max_wait_s`` (or until ``max_batch``)
    into one batch; each caller gets its own item's result, or the batch's exception."""

    def __init__(self, max_batch: int = MAX_BATCH, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self._pending: list[tuple[tuple[Any, str, Any], asyncio.Future[tuple[float | None, str | None]]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0  # batches sent (for tests and benchmarks)

    async def submit(
        self, data_source: Any, solution_str: str, ground_truth: Any
    ) -> tuple[float | None, str | None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[float | None, str | None]] = loop.create_future()
        self._pending.append(((data_source, solution_str, ground_truth), future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait_s, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._run(batch))
            self._tasks.add(task)  # held until done: a task nobody references may be collected
            task.add_done_callback(self._tasks.discard)

    async def _run(
        self, batch: list[tuple[tuple[Any, str, Any], asyncio.Future[tuple[float | None, str | None]]]]
    ) -> None:
        self.batches += 1
        try:
            sources, texts, truths = (
                list(column) for column in zip(*(item for item, _ in batch), strict=True)
            )
            scored = await ascore_rows(sources, texts, truths)
            for i, (_, future) in enumerate(batch):
                if not future.done():  # a caller may have been cancelled
                    future.set_result((scored.values[i], scored.reasons[i]))
        except BaseException as exc:  # cancelled too: no caller may wait forever
            for _, future in batch:
                if not future.done():
                    if isinstance(exc, asyncio.CancelledError):
                        future.cancel()
                    else:
                        future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise


def coalescer() -> Coalescer:
    """The coalescer of the running event loop."""
    loop = asyncio.get_running_loop()
    found = _state.coalescers.get(loop)
    if found is None:
        found = _state.coalescers[loop] = Coalescer()
    return found


# ---------------------------------------------------------------- veRL's entry points


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> float:
    """One sample's reward (veRL's ``compute_score`` convention); extra keyword arguments are ignored."""
    return _as_float(score_rows([data_source], [solution_str], [ground_truth]).values[0])


def compute_score_detailed(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, Any]:
    """One sample's reward and why: ``{"score": float, "reason": str}`` (``"ok"`` when judged normally),
    the same keys for every sample, as veRL needs to log them."""
    scored = score_rows([data_source], [solution_str], [ground_truth])
    return {"score": _as_float(scored.values[0]), "reason": scored.reasons[0] or "ok"}


async def compute_score_async(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> float:
    """:func:`compute_score` for veRL's reward loop: concurrent calls are scored together in batches. A data
    source the table lacks fails this call only, not the batch it would have joined."""
    _table().match(str(data_source))
    value, _ = await coalescer().submit(data_source, solution_str, ground_truth)
    return _as_float(value)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float]:
    """A batch's rewards (veRL's ``BatchRewardManager`` convention)."""
    return [
        _as_float(v) for v in score_rows(list(data_sources), list(solution_strs), list(ground_truths)).values
    ]
