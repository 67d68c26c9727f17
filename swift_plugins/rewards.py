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
  or a JSON file named by ``REWARDKIT_CONFIG`` (read as every adapter reads them:
  :func:`rewardkit.adapters.env.reward_from_env`).
- One log line, when the plugin loads, says whether the rewards score locally or on the service at its URL.
- Remote mode: with ``REWARDKIT_URL`` set, every reward is an ``AsyncORM`` that scores through the service
  (token from ``REWARDKIT_API_TOKEN``); transient failures are retried, and a service that stays down fails
  the step loudly instead of training on made-up zeros.
"""

from __future__ import annotations

from typing import Any

from swift.rewards import ORM, AsyncORM, orms
from swift.utils import get_logger

import rewardkit
from rewardkit.adapters.env import reward_from_env, service_url

ALIASES = {"external_countdown": "countdown", "external_r1v_acc": "r1v_acc"}
logger = get_logger()  # ms-swift's own logger: the line shows where ms-swift's lines do
ASYNC_LOCAL = {"llm_judge"}  # rewards with an async face run as AsyncORM even locally


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


def _orm_class(key: str, name: str, remote: bool) -> type:
    """ms-swift's class for one reward: an ``AsyncORM`` on the service or for a reward with an async face, an
    ``ORM`` otherwise."""
    base = AsyncORM if remote or name in ASYNC_LOCAL else ORM

    def __init__(self: Any, args: Any = None, **kwargs: Any) -> None:
        base.__init__(self, args, **kwargs)
        # Remote: fails here, at start-up, if the service is not there, lacks the reward, or refuses a
        # parameter (a server setting, or over its cap). The columns are the configured reward's (a judge
        # template's own placeholders too), from the server when remote.
        self.reward = reward_from_env(name)

    def columns(self: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        needed, optional = self.reward.caller_columns()
        return pick_columns(key, needed, optional, kwargs)

    if base is AsyncORM:

        async def acall(self: Any, completions: list[str], **kwargs: Any) -> list[float | None]:
            return list(await self.reward.ascore(completions, **columns(self, kwargs)))

        return type(key, (AsyncORM,), {"__init__": __init__, "__call__": acall, "__module__": __name__})

    def call(self: Any, completions: list[str], **kwargs: Any) -> list[float | None]:
        return list(self.reward(completions, **columns(self, kwargs)))

    return type(key, (ORM,), {"__init__": __init__, "__call__": call, "__module__": __name__})


def register_all() -> list[str]:
    """Put every rewardkit reward (and the aliases) into ms-swift's ``orms``; returns the keys."""
    url = service_url()
    names = {f"rk_{info.name}": info.name for info in rewardkit.list_rewards()} | ALIASES
    for key, name in names.items():
        orms[key] = _orm_class(key, name, url is not None)
    where = f"on the service at {url}" if url else "locally, in this process (REWARDKIT_URL is not set)"
    logger.info(f"rewardkit {rewardkit.__version__}: its {len(names)} reward functions score {where}")
    return sorted(names)


REGISTERED = register_all()
