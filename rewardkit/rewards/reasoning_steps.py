"""Reasoning steps (open-r1's ``reasoning_steps_reward``, ``src/open_r1/rewards.py`` read at commit ed89dd9):
``min(1, markers / 3)``; markers are "Step N:", a numbered line start, a line starting with "-" or "*",
"First,", "Second,", "Next,", "Finally,"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rewardkit.core import ItemReward, Verdict
from rewardkit.registry import register

__all__ = ["ReasoningSteps"]

_STEP = re.compile(r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)")


@register("reasoning_steps")
@dataclass(frozen=True)
class ReasoningSteps(ItemReward):
    """Step markers, 1.0 from three on (open-r1's ``reasoning_steps_reward``).

    >>> ReasoningSteps()(["Step 1: a\\nStep 2: b\\nStep 3: c", "First, a. Finally, b."])
    [1.0, 0.6666666666666666]
    """

    def score_one(self, text: str, *values: Any) -> Verdict:
        return Verdict(min(1.0, len(_STEP.findall(text)) / 3))
