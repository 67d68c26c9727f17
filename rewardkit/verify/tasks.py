"""The tasks the worker host (:mod:`rewardkit.verify.host`) schedules on its pebble pools. Each imports the
worker's side (:mod:`rewardkit.verify.worker`, :mod:`rewardkit.verify.rows`) when it runs, in the worker:
the host itself never imports SymPy or Math-Verify."""

from __future__ import annotations

import pickle
from typing import Any

from rewardkit.verify.options import DEFAULT_OPTIONS, Options, Pair

#: (equal, reason) for one pair: a verdict (``None``: no verdict) and why.
Result = tuple[bool | None, str | None]


def init(memory_mb: int, busy: Any = None) -> None:
    from rewardkit.verify.worker import init_worker

    init_worker(memory_mb, busy)


def check(gold: str, prediction: str, soft_timeout_s: float, options: Options = DEFAULT_OPTIONS) -> Result:
    from rewardkit.verify.worker import check as check_pair

    return check_pair(gold, prediction, soft_timeout_s, options)


def check_many(pairs: list[Pair], soft_timeout_s: float) -> list[Result]:
    from rewardkit.verify.worker import check_many as check_pairs

    return check_pairs(pairs, soft_timeout_s)


def read(
    chunk: bytes, mode: str, rel_tol: float, max_chars: int, options: Options = DEFAULT_OPTIONS
) -> bytes:
    """A pickled chunk of rows (from the parent, which the host trusts) read, pickled for the parent."""
    from rewardkit.verify.rows import read_rows

    read = read_rows(pickle.loads(chunk), mode, rel_tol, max_chars, options)
    return pickle.dumps(read, pickle.HIGHEST_PROTOCOL)


def ping() -> bool:
    return True


def ready() -> bool:
    from rewardkit.verify.worker import judges

    return judges()


def learn(texts: list[str], soft_timeout_s: float, hold_s: float, budget_s: float) -> int:
    """A lesson (:mod:`rewardkit.verify.lessons`)."""
    from rewardkit.verify.worker import learn as parse_unlearnt

    return parse_unlearnt(texts, soft_timeout_s, hold_s, budget_s)
