"""The trainers' adapters configured from the environment: a reward in process, or the same on the service.

Every adapter (the ms-swift plugin, veRL, OpenRLHF's file form) reads the same variables:

- ``REWARDKIT_URL``: when set, rewards score on the service there (:class:`rewardkit.client.RemoteReward`),
  with the token in ``REWARDKIT_API_TOKEN``; when not, in this process (:func:`rewardkit.get`);
- ``REWARDKIT_PARAMS`` (JSON keyed by reward name, ``{"countdown": {"format_score": 0.1}}``) or the JSON
  file named by ``REWARDKIT_CONFIG``: each reward's parameters.

>>> reward = reward_from_env("countdown", {"format_score": 0.1})   # REWARDKIT_URL is not set here
>>> reward(["<answer>4 + 6</answer>"], target=[24], nums=[[4, 6]])
[0.1]
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

from rewardkit.core import Reward
from rewardkit.policy import load_params_table
from rewardkit.registry import get

__all__ = ["env_params", "reward_from_env", "service_url"]


def service_url() -> str | None:
    """``REWARDKIT_URL``, or ``None`` when rewards score in this process."""
    return os.environ.get("REWARDKIT_URL") or None


def env_params() -> dict[str, dict[str, Any]]:
    """``{reward: {parameter: value}}`` from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``, read once per value
    of those variables (per-sample callers ask often). Treat it as read-only."""
    return _params_table(os.environ.get("REWARDKIT_PARAMS", ""), os.environ.get("REWARDKIT_CONFIG", ""))


@functools.lru_cache(maxsize=8)
def _params_table(params: str, config: str) -> dict[str, dict[str, Any]]:
    return load_params_table({"REWARDKIT_PARAMS": params, "REWARDKIT_CONFIG": config})


def reward_from_env(name: str, params: Mapping[str, Any] | None = None, *, check: bool = True) -> Reward:
    """The reward ``name`` as the adapters configure it: on the service at ``REWARDKIT_URL`` when that is set
    (token ``REWARDKIT_API_TOKEN``; ``check``: against the server's policy now), else in this process.

    Args:
        params: the reward's parameters; by default its entry in ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``.
    """
    params = env_params().get(name, {}) if params is None else params
    url = service_url()
    if url is None:
        return get(name, **params)
    return _remote(name, url, os.environ.get("REWARDKIT_API_TOKEN") or None, params, check)


_remote_lock = threading.Lock()
_remote_rewards: dict[tuple[str, str, str | None, str], Reward] = {}


def _remote(name: str, url: str, token: str | None, params: Mapping[str, Any], check: bool) -> Reward:
    """One remote reward (and so one HTTP client) per configuration, for adapters that ask per call or per
    sample; closed at exit. Configurations come from the operator's environment, so they are few."""
    from rewardkit.client import RemoteReward

    key = (name, url, token, json.dumps(params, sort_keys=True, default=repr))
    with _remote_lock:
        found = _remote_rewards.get(key)
    if found is None:
        made = RemoteReward(name, url, token, connect=check, **params)  # outside the lock: it may call
        with _remote_lock:
            found = _remote_rewards.setdefault(key, made)
        if found is not made:  # another thread made it first
            made.close()
    return found


@atexit.register
def _close_remote() -> None:
    for reward in list(_remote_rewards.values()):  # at exit: a later call would reopen its connection
        reward.close()
