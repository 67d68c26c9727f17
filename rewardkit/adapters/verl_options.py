"""veRL's ``custom_reward_function.reward_kwargs`` read as rewardkit options: parameters of the rewards the
data-source table routes to, and whether a data source the table lacks fails the batch.

veRL passes ``reward_kwargs`` to every call of ``compute_score`` (and ``compute_score_batch``). A key
that is a parameter (``extract: lenient``) applies to every reward of the table that has it; a key that is a
reward's name (``countdown: {format_score: 0.1}``) gives that reward's parameters; ``strict: true`` (or
``REWARDKIT_VERL_STRICT=1``) makes an unknown data source fail the batch. A key that is none of these
raises, naming it; the keys veRL's own managers read (:data:`VERL_OWN_KWARGS`) are left to them.

>>> read_options({"extract": "lenient", "countdown": {"format_score": 0.1}}, ["countdown", "math"]).table()
{'countdown': {'format_score': 0.1}, 'math': {'extract': 'lenient'}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import RewardError
from rewardkit.registry import info

__all__ = ["VERL_OWN_KWARGS", "Options", "read_options"]

#: ``reward_kwargs`` keys that veRL's own reward managers read (DAPO's overlong penalty, the reward router):
#: they reach ``compute_score`` too, and are not reward parameters
VERL_OWN_KWARGS = frozenset(
    {"overlong_buffer_cfg", "max_resp_len", "reward_router_address", "reward_model_tokenizer"}
)


@dataclass(frozen=True)
class Options:
    """What veRL's ``reward_kwargs`` ask of a call: parameters per reward (as JSON, so calls with the same
    ones share a coalescer and a built route) and whether an unknown data source fails the batch."""

    params: str = "{}"
    strict: bool = False

    def table(self) -> dict[str, dict[str, Any]]:
        loaded: dict[str, dict[str, Any]] = json.loads(self.params)
        return loaded


def _plain(value: Any) -> Any:
    """A value of veRL's config (OmegaConf's containers included) as plain JSON-able Python."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    return value


def read_options(kwargs: Mapping[str, Any], rewards: Sequence[str]) -> Options:
    """veRL's ``reward_kwargs`` (what reaches ``compute_score`` besides its own arguments) as
    :class:`Options`, for a table that routes to ``rewards``.

    ``RewardError`` naming a key that is neither a parameter of one of ``rewards`` nor one of their names;
    the values are checked when the rewards are built, as any parameter.

    >>> read_options({"extract": "lenient", "max_resp_len": 512}, ["countdown", "math"]).table()
    {'math': {'extract': 'lenient'}}
    >>> read_options({"extrct": "lenient"}, ["countdown", "math"])
    Traceback (most recent call last):
    ...
    rewardkit.core.RewardError: veRL reward_kwargs: 'extrct' is no parameter of the data-source table's \
rewards (countdown, math) nor one of their names (for parameters of one reward: {reward: {parameter: value}})
    """
    strict = os.environ.get("REWARDKIT_VERL_STRICT", "").strip().lower() in ("1", "true", "yes")
    rewards = sorted(set(rewards))
    params: dict[str, dict[str, Any]] = {}
    for key, value in kwargs.items():
        if key in VERL_OWN_KWARGS:
            continue
        if key == "strict":
            if not isinstance(value, bool):
                raise RewardError(f"veRL reward_kwargs: strict must be true or false, got {value!r}")
            strict = value
        elif key in rewards and isinstance(value, Mapping):
            params.setdefault(key, {}).update(_plain(value))
        else:
            takers = [name for name in rewards if key in info(name).params]
            if not takers:
                raise RewardError(
                    f"veRL reward_kwargs: {key!r} is no parameter of the data-source table's rewards "
                    f"({', '.join(rewards)}) nor one of their names (for parameters of one reward: "
                    "{reward: {parameter: value}})"
                )
            for name in takers:
                params.setdefault(name, {})[key] = _plain(value)
    try:
        return Options(json.dumps(params, sort_keys=True), strict)
    except (TypeError, ValueError) as exc:
        raise RewardError(f"veRL reward_kwargs: a value is not JSON data: {exc}") from None
