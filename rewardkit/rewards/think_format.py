"""Think format (TRL 0.29's ``think_format_reward``, ``trl/rewards/format_rewards.py``): 1.0 when the
completion opens with one ``<think>...</think>`` block (no second ``<think>``), whatever follows. Tested
against TRL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rewardkit.core import ItemReward, Verdict
from rewardkit.registry import register

__all__ = ["ThinkFormat"]

_THINK = re.compile(r"^<think>(?!.*<think>)(.*?)</think>.*$", re.DOTALL | re.MULTILINE)


@register("think_format")
@dataclass(frozen=True)
class ThinkFormat(ItemReward):
    """1.0 when the completion opens with one ``<think>...</think>`` block, then free text (TRL's
    ``think_format_reward``).

    >>> ThinkFormat()(["<think>\\nhm\\n</think>\\nIt is 4.", "It is 4.", "<think>a</think><think>b</think>"])
    [1.0, 0.0, 0.0]
    """

    def score_one(self, text: str, *values: Any) -> Verdict:
        return Verdict(1.0 if _THINK.match(text) else 0.0)
