"""Rewards built on another reward (``cosine`` and ``length`` on a correctness reward): resolving the inner
reward from a name, a ``{"name", "params"}`` spec or a reward, and the columns that follow from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardkit.core import Reward
from rewardkit.registry import get

__all__ = ["inner_reward", "inner_name"]


def inner_reward(spec: Any, owner: str) -> Reward:
    """The reward ``spec`` names (in a service, the policy has already built it from the caller's spec)."""
    if isinstance(spec, Reward):
        return spec
    if isinstance(spec, str):
        return get(spec)
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        return get(spec["name"], **dict(spec.get("params") or {}))
    raise ValueError(
        f"{owner}: accuracy must be a reward name or {{'name': ..., 'params': {{...}}}}, got {spec!r}"
    )


def inner_name(spec: Any) -> Any:
    """What ``params()`` shows for an inner reward: its name, or its spec."""
    return spec.reward_name if isinstance(spec, Reward) else spec
