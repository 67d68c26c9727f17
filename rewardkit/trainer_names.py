"""Reward names as a trainer logs them: TRL logs each reward of ``reward_funcs`` under its ``__name__``
(``rewards/<name>/mean``), so two different rewards of one trainer named alike share one metric, silently.

TRL passes its ``trainer_state`` to every reward of a trainer; each reward call notes its name against that
state (the latest one seen), and a second reward under a name logs one warning saying how to alias it.

>>> state = object()
>>> note_trainer_name({"trainer_state": state}, "math", owner="first")
>>> note_trainer_name({"trainer_state": state}, "math", owner="first")  # the same reward again: fine
>>> note_trainer_name({}, "math", owner="second")  # not a trainer's call: nothing to note
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["note_trainer_name"]

logger = logging.getLogger("rewardkit")


class _TrainerNames:
    """The names of the rewards called with the latest trainer state, and the names already warned about."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: int | None = None
        self._owners: dict[str, int] = {}
        self._warned: set[str] = set()

    def note(self, state: object, name: str, owner: object) -> None:
        with self._lock:
            if id(state) != self._state:
                self._state, self._owners, self._warned = id(state), {}, set()
            if self._owners.setdefault(name, id(owner)) == id(owner) or name in self._warned:
                return
            self._warned.add(name)
        logger.warning(
            "rewardkit: two different rewards of this trainer are both named %r, so TRL logs them as one "
            "metric (rewards/%s/mean); give one an alias: rewardkit.get(..., alias=...) or "
            "remote_reward(..., alias=...)",
            name,
            name,
        )


_trainer_names = _TrainerNames()


def note_trainer_name(columns: Mapping[str, Any], name: str, owner: object) -> None:
    """Called with each reward call's keyword arguments: when a trainer passes its ``trainer_state`` (TRL),
    log one warning if another reward of that trainer has the same ``name``."""
    state = columns.get("trainer_state")
    if state is not None:
        _trainer_names.note(state, name, owner)
