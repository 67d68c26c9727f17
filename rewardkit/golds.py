"""Missing golds: when a batch without any gold answer is a configuration error rather than wrong answers.

A reward that compares with a gold says ``missing_solution`` (``math``, ``choice``, ``r1v_acc``,
``math_or_judge``) or ``missing_target`` (``countdown``) for an item whose gold is absent or empty, and scores
it ``None``: one such item is a gap in the data. When no item has its gold, the trainer or client is not
passing the column at all (OpenRLHF without ``--data.label_key``, a veRL dataset without
``reward_model.ground_truth``, a ``/score`` request without ``solution``), and every reward would be ``None``
(0.0 to a trainer): a :class:`MissingGoldError` says so, naming the column and what supplies it.

Callers that send whole batches check each batch on its own (``GoldCheck()``). Callers that send one sample a
call (OpenRLHF's requests, veRL's ``compute_score``) keep one :class:`GoldCheck` with a ``window``: the call
fails once ``window`` items have come without any gold (or one call brings that many, none with its gold),
while a missing gold now and then stays a per-item ``None``.

>>> GoldCheck().check("math", ["missing_solution", None])          # one gold missing: that item is None
>>> GoldCheck().check("math", ["missing_solution", "missing_solution"])
Traceback (most recent call last):
...
rewardkit.golds.MissingGoldError: math: no item has its gold (none of the 2 items has a 'solution'; \
reason missing_solution). Pass the gold answers as the 'solution' column.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rewardkit.core import ColumnError, Reward

__all__ = ["MISSING_GOLD", "GoldCheck", "MissingGoldError", "gold_column"]

#: the reasons that say an item's gold is absent or empty, and the column the reward reads it from
MISSING_GOLD = {"missing_solution": "solution", "missing_target": "target"}


class MissingGoldError(ColumnError):
    """No item of a batch has the gold answer a reward compares with: the column is not being passed (a
    configuration error; a 422 in the service)."""


def gold_column(reward: Reward, column: str) -> str:
    """``reward``'s gold column ``column`` under the name the caller's data has it (after ``columns=``)."""
    return dict(zip(reward.required_columns, reward.caller_columns()[0], strict=True)).get(column, column)


class GoldCheck:
    """Raises :class:`MissingGoldError` for a batch in which no item has its gold.

    Args:
        hint: what supplies the gold in the caller's setup, said at the end of the error (by default: pass
            the gold answers as the column).
        window: items a caller may send without any gold before it is an error. 1 for a batch checked on its
            own; more for one check kept across the calls of a per-sample caller.
    """

    def __init__(self, hint: str | None = None, window: int = 1) -> None:
        self.hint, self.window = hint, window
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}  # reward key -> items seen
        self._found: set[str] = set()  # reward keys that had at least one gold

    def check(
        self, key: str, reasons: Sequence[str | None], reward: Reward | None = None, column: str | None = None
    ) -> None:
        """Check one reward's reasons over a batch. The error names ``column`` (what the caller calls the
        gold), else the gold's column of ``reward`` as the caller's data names it."""
        n = len(reasons)
        missing = [r for r in reasons if r in MISSING_GOLD]
        with self._lock:
            seen = self._seen[key] = self._seen.get(key, 0) + n
            if len(missing) < n:
                self._found.add(key)
            fails = n > 0 and len(missing) == n
            fails = fails and (n >= self.window or (key not in self._found and seen >= self.window))
        if not fails:
            return
        reason = str(missing[0])
        if column is None:
            column = MISSING_GOLD[reason] if reward is None else gold_column(reward, MISSING_GOLD[reason])
        count = f"{n} items" if n >= self.window else f"{seen} items since the start"
        hint = self.hint or f"Pass the gold answers as the {column!r} column."
        raise MissingGoldError(
            f"{key}: no item has its gold (none of the {count} has a {column!r}; reason {reason}). {hint}"
        )
