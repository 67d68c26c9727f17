"""Rewards built on another reward (``cosine`` and ``length`` on a correctness reward): resolving the inner
reward from a name, a ``{"name", "params"}`` spec or a reward, and the columns that follow from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rewardkit.core import Completion, Reward, Scored
from rewardkit.registry import get
from rewardkit.spec import RewardSpec

__all__ = ["ComposedReward", "inner_name", "inner_reward"]


def inner_reward(spec: Any, owner: str) -> Reward:
    """The reward ``spec`` names (in a service, the policy has already built it from the caller's spec)."""
    if isinstance(spec, Reward):
        return spec
    nested = RewardSpec.nested(spec, owner)
    return get(nested.name, columns=nested.columns, **dict(nested.params))


def inner_name(spec: Any) -> Any:
    """What ``params()`` shows for an inner reward: its name, or its spec."""
    return spec.reward_name if isinstance(spec, Reward) else spec


class ComposedReward(Reward):
    """A reward built on the correctness reward its ``accuracy`` parameter names: it needs that reward's
    columns, plus its own ``extra_columns``. Subclasses call :meth:`_set_inner` in ``__post_init__``."""

    extra_columns: ClassVar[tuple[str, ...]] = ()
    accuracy: Any

    def _set_inner(self) -> None:
        object.__setattr__(self, "_inner", inner_reward(self.accuracy, self.reward_name))

    @property
    def inner(self) -> Reward:
        inner: Reward = object.__getattribute__(self, "_inner")
        return inner

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self.inner.caller_columns()[0]  # under the inner reward's own column map, if it has one

    @property
    def optional(self) -> tuple[str, ...]:
        return (*self.inner.caller_columns()[1], *self.extra_columns)

    def judge_inner(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        """The correctness reward's verdicts on the batch (given only its own columns)."""
        required, optional = self.inner.caller_columns()
        own: dict[str, Any] = {k: v for k, v in columns.items() if k in required or k in optional}
        return self.inner.score_detailed(completions, **own)
