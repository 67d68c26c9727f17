"""Tag count (open-r1's ``tag_count_reward``, in ``src/open_r1/rewards.py`` read at commit ed89dd9): 0.25
for each of ``<think>\\n``, ``\\n</think>\\n``, ``\\n<answer>\\n``, ``\\n</answer>`` written exactly once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rewardkit.core import ItemReward, Verdict
from rewardkit.registry import register

__all__ = ["TagCount"]

_TAGS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")


@register("tag_count")
@dataclass(frozen=True)
class TagCount(ItemReward):
    """0.25 for each think/answer tag line written exactly once (open-r1's ``tag_count_reward``).

    >>> TagCount()(["<think>\\nhm\\n</think>\\n<answer>\\n4\\n</answer>", "<think>hm</think>"])
    [1.0, 0.0]
    """

    def score_one(self, text: str, *values: Any) -> Verdict:
        return Verdict(sum(0.25 for tag in _TAGS if text.count(tag) == 1))
