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
``{"target", "numbers"}`` into ``target``/``nums``). Add your own with :func:`register_data_source`. A data
source the table lacks: a per-sample call raises, naming it and the table; in :func:`compute_score_batch` that
row alone scores ``None`` (reason ``unknown_data_source``, a warning logged once per source) unless strict
(``strict: true`` in ``reward_kwargs``, or ``REWARDKIT_VERL_STRICT=1``): then the batch raises. ``None`` ("not
applicable") is given to veRL as 0.0.

``custom_reward_function.reward_kwargs`` (veRL passes them to every call) are parameters of the routed
rewards (:mod:`rewardkit.adapters.verl_options`): ``extract: lenient`` applies to every reward of the table
that has an ``extract`` parameter (``math``), one keyed by a reward's name (``countdown: {format_score:
0.1}``) to that reward; a parameter no reward of the table has raises, naming it. They sit over
``REWARDKIT_PARAMS`` and under the table's own (``math_dapo``'s -1). The keys veRL's own managers read
(:data:`~rewardkit.adapters.verl_options.VERL_OWN_KWARGS`) are left alone.

A batch in which no row has its ``reward_model.ground_truth`` raises
:class:`~rewardkit.golds.MissingGoldError`; per-sample calls count across calls (after
:data:`GOLD_WINDOW` samples without any); a row missing it now and then scores ``None`` (0.0), reason
``missing_solution`` (``missing_target`` for countdown).

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
import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.adapters.env import env_params, reward_from_env, service_url
from rewardkit.adapters.verl_options import Options, read_options
from rewardkit.core import Reward, Scored
from rewardkit.golds import GoldCheck
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
GOLD_WINDOW = 8  # samples without any ground truth after which a call without one fails
_GOLD_HINT = (
    "veRL passes each row's reward_model.ground_truth (the dataset's reward_model column, "
    "{'ground_truth': ...}); the rows have none."
)
_log = logging.getLogger(__name__)


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


def tests_columns(ground_truth: Any) -> dict[str, Any]:
    """Code datasets: ``ground_truth`` holds the tests (``{"inputs", "outputs"}``, ``fn_name``; JSON text as
    veRL's parquet files keep it) -> the ``code`` reward's ``tests``."""
    return {"tests": ground_truth}


def schema_columns(ground_truth: Any) -> dict[str, Any]:
    """Structured-output rows: ``ground_truth`` is the JSON Schema (an object or JSON text) -> the
    ``json_schema`` reward's ``schema``."""
    return {"schema": ground_truth}


def tool_call_columns(ground_truth: Any) -> dict[str, Any]:
    """Tool-calling rows: ``ground_truth`` is the expected calls (BFCL's possible answers or plain calls,
    JSON text too), or ``{"ground_truth"|"calls"|"answers": <them>, "tools": <function schemas>}`` ->
    the ``tool_call`` reward's ``solution`` and ``tools``."""
    if isinstance(ground_truth, Mapping) and "tools" in ground_truth:
        calls = next(
            (ground_truth[k] for k in ("ground_truth", "calls", "answers") if k in ground_truth), None
        )
        return {"solution": calls, "tools": ground_truth["tools"]}
    if isinstance(ground_truth, Mapping) and "answers" in ground_truth:  # xLAM's rows
        return {"solution": ground_truth["answers"]}
    return {"solution": ground_truth}


@dataclass(frozen=True)
class DataSource:
    """How rows of one veRL data source are scored: a registry reward, its parameters, and how the row's
    ``ground_truth`` becomes the reward's columns."""

    reward: str
    params: Mapping[str, Any] = field(default_factory=dict)
    columns: Callable[[Any], dict[str, Any]] = solution_columns


_DAPO = {"correct": 1.0, "wrong": -1.0}  # veRL's math_dapo scorer: +1 / -1
_CODE_SOURCES = ("codecontests", "apps", "codeforces", "taco")
#: Search-R1's QA sets: its data names them bare, veRL's copy of its scorer prefixes them ``searchR1_``; both
#: score exact match on ``{"target": [...]}`` (rewardkit's qa_em reads that ground truth as it is)
_QA_SOURCES = ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle")
#: instruction following: IFEval, IFBench, open-instruct's RLVR sets (IFEval/IFBench ids + kwargs, func_name)
_IF_SOURCES = ("google/IFEval", "allenai/IFBench_test", "allenai/RLVR-IFeval",
               "allenai/IF_multi_constraints_upto5", "ifeval*", "ifbench*")  # fmt: skip
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
    # veRL's code sources: its prime_code scorer gives the share of tests passed (continuous=True)
    **{name: DataSource("code", {"mode": "fraction"}, tests_columns) for name in _CODE_SOURCES},
    **{name: DataSource("qa_em") for name in _QA_SOURCES},
    **{f"searchR1_{name}": DataSource("qa_em") for name in _QA_SOURCES},
    "json_schema": DataSource("json_schema", columns=schema_columns),
    # tool calling: BFCL's AST categories (parallel calls in any order), xLAM's function-calling rows
    "tool_call": DataSource("tool_call", columns=tool_call_columns),
    "gorilla-llm/Berkeley-Function-Calling-Leaderboard": DataSource("tool_call", columns=tool_call_columns),
    "bfcl_*": DataSource("tool_call", columns=tool_call_columns),
    "Salesforce/xlam-function-calling-60k": DataSource("tool_call", columns=tool_call_columns),
    **dict.fromkeys(_IF_SOURCES, DataSource("ifeval", columns=lambda truth: {"ground_truth": truth})),
}


class _State:
    """What this module changes as it runs, in one place (one per process: veRL loads the file once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.version = 0  # bumped by register_data_source: what was built from the table is built again
        self.snapshot: _Table | None = None  # the data-source table last used (see _table)
        #: (service URL, table version, user params) -> the route reward, in process or on the service
        self.built: dict[tuple[Any, ...], Reward] = {}
        #: each event loop's coalescers of per-sample calls, one per set of options
        self.coalescers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Options, Coalescer]] = (
            weakref.WeakKeyDictionary()
        )
        self.warned: set[str] = set()  # unknown data sources already logged
        self.golds = GoldCheck(_GOLD_HINT, GOLD_WINDOW)


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
        table's (remote: only ``reward_kwargs``; the service applies its operator's)."""
        return {
            name: {"name": s.reward, "params": {**user.get(s.reward, {}), **s.params}}
            for name, s in self.sources.items()
        }

    def rows(
        self, data_sources: Sequence[Any], ground_truths: Sequence[Any]
    ) -> tuple[list[str], dict[str, Any], list[int]]:
        """The batch as the route reward's columns, and the rows whose data source the table lacks."""
        n = len(data_sources)
        columns: dict[str, Any] = {}
        names = [str(source) for source in data_sources]
        unknown = []
        for i, (name, truth) in enumerate(zip(names, ground_truths, strict=True)):
            key = self.matcher.match(name)
            if key is None:
                unknown.append(i)
                continue
            for column, value in self.sources[key].columns(truth).items():
                columns.setdefault(column, [None] * n)[i] = value
        return names, columns, unknown


def _table() -> _Table:
    """The table as it is now, made again only when it changed (veRL calls once per sample)."""
    with _state.lock:
        version = (_state.version, tuple(DATA_SOURCES))  # a `del DATA_SOURCES[...]` changes the names
        if _state.snapshot is None or _state.snapshot.version != version:
            _state.snapshot = _Table(dict(DATA_SOURCES), version)
        return _state.snapshot


def _router(table: _Table, opts: Options) -> Reward:
    """The ``route`` reward over the table: in process with the user's parameters (``REWARDKIT_PARAMS``, then
    ``reward_kwargs``) under the table's, or on the service (``REWARDKIT_URL``) with ``reward_kwargs`` under
    the table's (the service applies its operator's). Rows no route matches score ``None``."""
    url = service_url()
    env = {} if url else env_params()
    extra = opts.table()
    user = {name: {**env.get(name, {}), **extra.get(name, {})} for name in {*env, *extra}}
    key = (url, table.version, repr(sorted(env.items())), opts.params)
    with _state.lock:
        built = _state.built.get(key)
    if built is None:
        params = {"column": "data_source", "routes": table.routes(user), "unknown": "none"}
        built = reward_from_env("route", params, check=False)
        with _state.lock:
            if len(_state.built) >= 8 or any(k[1] != table.version for k in _state.built):
                _state.built.clear()  # one table in use at a time, and a few sets of reward_kwargs
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


def _prepare(
    data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any], opts: Options
) -> tuple[Reward, dict[str, Any], list[int]]:
    """The route reward and its columns for a batch, and the rows whose data source the table lacks (strict:
    ``ValueError`` naming the first; else a warning once per data source)."""
    _check_lengths(data_sources, solution_strs, ground_truths)
    table = _table()
    names, columns, unknown = table.rows(data_sources, ground_truths)
    if unknown and opts.strict:
        table.match(names[unknown[0]])
    for name in dict.fromkeys(names[i] for i in unknown):
        with _state.lock:
            first = name not in _state.warned
            _state.warned.add(name)
        if first:
            _log.warning(
                "rewardkit: no reward for data_source %r (known: %s): its rows score None (0.0 to veRL), "
                "reason unknown_data_source. Add one with register_data_source, or set strict: true in "
                "reward_kwargs (REWARDKIT_VERL_STRICT=1) to fail the batch.",
                name,
                ", ".join(table.sources),
            )
    return _router(table, opts), {"data_source": names, **columns}, unknown


def _finish(scored: Scored, unknown: list[int]) -> Scored:
    """The rows of unknown data sources said so; a batch without any ground truth raises."""
    reasons = list(scored.reasons)
    for i in unknown:
        reasons[i] = "unknown_data_source"
    _state.golds.check("veRL", reasons, column="reward_model.ground_truth")
    return Scored(scored.values, reasons, scored.details)


def score_rows(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    opts: Options | None = None,
) -> Scored:
    """Values and reasons of a batch of veRL rows, in process or (``REWARDKIT_URL``) on the service.

    Raises:
        MissingGoldError: no row has its ground truth (per-sample callers: after :data:`GOLD_WINDOW`).
        ValueError: a data source the table lacks, when ``opts`` is strict.
    """
    router, columns, unknown = _prepare(data_sources, solution_strs, ground_truths, opts or Options())
    return _finish(router.score_detailed(list(solution_strs), **columns), unknown)


async def ascore_rows(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    opts: Options | None = None,
) -> Scored:
    """:func:`score_rows` on an event loop (remote: an async client for the batch; here: a thread)."""
    if service_url() is None:
        return await asyncio.to_thread(score_rows, data_sources, solution_strs, ground_truths, opts)
    router, columns, unknown = _prepare(data_sources, solution_strs, ground_truths, opts or Options())
    from rewardkit.client import RemoteReward

    assert isinstance(router, RemoteReward)
    return _finish(await router.ascore_detailed(list(solution_strs), **columns), unknown)


# ---------------------------------------------------------------- coalescing concurrent per-sample calls


class Coalescer:
    """Gathers the per-sample calls made on one event loop within ``max_wait_s`` (or until ``max_batch``)
    into one batch; each caller gets its own item's result, or the batch's exception."""

    def __init__(
        self, max_batch: int = MAX_BATCH, max_wait_s: float = MAX_WAIT_S, opts: Options | None = None
    ) -> None:
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self.opts = opts or Options()
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
            scored = await ascore_rows(sources, texts, truths, self.opts)
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


def coalescer(opts: Options | None = None) -> Coalescer:
    """The coalescer of the running event loop for calls with ``opts`` (``reward_kwargs``)."""
    opts = opts or Options()
    loop = asyncio.get_running_loop()
    mine = _state.coalescers.get(loop)
    if mine is None:
        mine = _state.coalescers[loop] = {}
    found = mine.get(opts)
    if found is None:
        found = mine[opts] = Coalescer(opts=opts)
    return found


# ---------------------------------------------------------------- veRL's entry points


def options(kwargs: Mapping[str, Any]) -> Options:
    """veRL's ``reward_kwargs`` for the rewards of the table as it is now
    (:func:`rewardkit.adapters.verl_options.read_options`)."""
    with _state.lock:
        rewards = [source.reward for source in DATA_SOURCES.values()]
    return read_options(kwargs, rewards)


def _one_sample(kwargs: Mapping[str, Any]) -> Options:
    """A per-sample call's options: an unknown data source fails that call (it is the only row)."""
    return Options(options(kwargs).params, strict=True)


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> float:
    """One sample's reward (veRL's ``compute_score`` convention); ``kwargs`` are veRL's ``reward_kwargs``:
    parameters of the routed rewards (:func:`options`)."""
    opts = _one_sample(kwargs)
    return _as_float(score_rows([data_source], [solution_str], [ground_truth], opts).values[0])


def compute_score_detailed(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, Any]:
    """One sample's reward and why: ``{"score": float, "reason": str}`` (``"ok"`` when judged normally),
    the same keys for every sample, as veRL needs to log them."""
    scored = score_rows([data_source], [solution_str], [ground_truth], _one_sample(kwargs))
    return {"score": _as_float(scored.values[0]), "reason": scored.reasons[0] or "ok"}


async def compute_score_async(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> float:
    """:func:`compute_score` for veRL's reward loop: concurrent calls are scored together in batches. A data
    source the table lacks fails this call only, not the batch it would have joined."""
    opts = options(kwargs)
    _table().match(str(data_source))
    value, _ = await coalescer(opts).submit(data_source, solution_str, ground_truth)
    return _as_float(value)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float]:
    """A batch's rewards (veRL's ``BatchRewardManager`` convention; ``kwargs``: its ``reward_kwargs``). A row
    whose data source the table lacks scores 0.0 (reason ``unknown_data_source``, a warning once per
    source), unless ``strict``."""
    scored = score_rows(list(data_sources), list(solution_strs), list(ground_truths), options(kwargs))
    return [_as_float(v) for v in scored.values]
