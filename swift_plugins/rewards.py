"""rewardkit's rewards as ms-swift reward functions (a thin adapter: the scoring lives in rewardkit).

    swift rlhf --rlhf_type grpo --external_plugins swift_plugins/rewards.py \\
        --reward_funcs rk_countdown rk_format ...

Every reward in rewardkit's registry becomes ``rk_<name>`` (``rk_countdown``, ``rk_format``, ``rk_math``,
``rk_r1v_acc``, ``rk_llm_judge``), plus the names ms-swift's GRPO examples use, ``external_countdown`` and
``external_r1v_acc``, with rewardkit's safer rules. ms-swift's own ``format``/``accuracy`` are left alone.

- Each class is named after its key, so ms-swift logs ``rewards/rk_countdown/mean``.
- Only the dataset columns a reward needs are taken from ms-swift's keyword arguments; a missing one fails
  at the first call, naming the column and the fields ms-swift passed.
- Parameters: ``REWARDKIT_PARAMS`` (JSON keyed by reward name, e.g. ``{"countdown": {"format_score": 0.1}}``)
  or a JSON file named by ``REWARDKIT_CONFIG``.
- Remote mode: with ``REWARDKIT_URL`` set, every reward is an ``AsyncORM`` that scores through the service
  (token from ``REWARDKIT_API_TOKEN``); transient failures are retried, and a service that stays down fails
  the step loudly instead of training on made-up zeros.
"""

from __future__ import annotations

import os
from typing import Any

from swift.rewards import ORM, AsyncORM, orms

import rewardkit
from rewardkit.engine import FuncSpec
from rewardkit.policy import load_params_table

ALIASES = {"external_countdown": "countdown", "external_r1v_acc": "r1v_acc"}
ASYNC_LOCAL = {"llm_judge"}  # rewards with an async face run as AsyncORM even locally


def reward_params(name: str) -> dict[str, Any]:
    """The parameters for ``name`` from REWARDKIT_PARAMS (JSON) or the JSON file named by REWARDKIT_CONFIG."""
    return load_params_table().get(name, {})


def pick_columns(
    key: str, needed: tuple[str, ...], optional: tuple[str, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The columns a reward needs, out of everything ms-swift passes."""
    missing = [c for c in needed if c not in kwargs]
    if missing:
        passed = ", ".join(sorted(k for k in kwargs if k != "trainer_state"))
        raise ValueError(
            f"{key}: the dataset has no column {missing[0]!r}, which this reward needs; "
            f"ms-swift passed: {passed}"
        )
    return {c: kwargs[c] for c in (*needed, *optional) if kwargs.get(c) is not None}


def _local_class(key: str, name: str) -> type:
    def __init__(self: Any, args: Any = None, **kwargs: Any) -> None:
        (AsyncORM if name in ASYNC_LOCAL else ORM).__init__(self, args, **kwargs)
        self.reward = rewardkit.get(name, **reward_params(name))

    def columns(self: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        needed, optional = self.reward.caller_columns()
        return pick_columns(key, needed, optional, kwargs)

    if name in ASYNC_LOCAL:

        async def acall(self: Any, completions: list[str], **kwargs: Any) -> list[float | None]:
            return list(await self.reward.ascore(completions, **columns(self, kwargs)))

        return type(key, (AsyncORM,), {"__init__": __init__, "__call__": acall, "__module__": __name__})

    def call(self: Any, completions: list[str], **kwargs: Any) -> list[float | None]:
        return list(self.reward(completions, **columns(self, kwargs)))

    return type(key, (ORM,), {"__init__": __init__, "__call__": call, "__module__": __name__})


def _remote_class(key: str, name: str, url: str) -> type:
    from rewardkit.client import AsyncRewardClient, RewardClient

    def __init__(self: Any, args: Any = None, **kwargs: Any) -> None:
        AsyncORM.__init__(self, args, **kwargs)
        # Fails here, at start-up, if the service is not there, lacks the reward, or refuses a parameter
        # (a server setting, or over its cap); a template file is read here and sent inline.
        # The columns are the configured reward's, from the server: a judge template's own placeholders too.
        with RewardClient(url) as client:
            (self.spec,) = client.check([FuncSpec(name, reward_params(name))])
            self.needed, self.optional = client.columns(self.spec)

    async def acall(self: Any, completions: list[str], **kwargs: Any) -> list[float | None]:
        columns = pick_columns(key, self.needed, self.optional, kwargs)
        async with AsyncRewardClient(
            url
        ) as client:  # a client per call: ms-swift may use a new loop per step
            result = await client.score([self.spec], completions, **columns)
        return list(result.scores[name])

    return type(key, (AsyncORM,), {"__init__": __init__, "__call__": acall, "__module__": __name__})


def register_all() -> list[str]:
    """Put every rewardkit reward (and the aliases) into ms-swift's ``orms``; returns the keys."""
    url = os.environ.get("REWARDKIT_URL")
    names = {f"rk_{info.name}": info.name for info in rewardkit.list_rewards()} | ALIASES
    for key, name in names.items():
        orms[key] = _remote_class(key, name, url) if url else _local_class(key, name)
    return sorted(names)


REGISTERED = register_all()
