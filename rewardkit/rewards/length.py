"""Kimi 1.5's length reward (open-r1's ``len_reward``, ``src/open_r1/rewards.py`` read at commit ed89dd9;
arXiv 2501.12599), relative within each GRPO group.

Within a group, with ``L`` the completion's length in characters and ``min``/``max`` the group's shortest and
longest: ``lam = 0.5 - (L - min) / (max - min)``; a right answer gets ``lam``, a wrong one ``min(0, lam)``;
all 0.0 when every completion of the group has the same length. open-r1 compares a whole batch; here the
group is the completions sharing a ``group`` value, else the same ``prompt``, whatever batch a client sent.
A completion whose gold cannot be read counts as right (open-r1: "to avoid penalizing").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Verdict, completion_text
from rewardkit.lengths import GROUP_COLUMNS, group_keys
from rewardkit.registry import register
from rewardkit.rewards._composed import ComposedReward, inner_name
from rewardkit.spec import CallerParam

__all__ = ["Length"]


@register(
    "length",
    columns=["solution"],
    optional_columns=list(GROUP_COLUMNS),
    caller_params={"accuracy": CallerParam(reward_spec=True)},
)
@dataclass(frozen=True)
class Length(ComposedReward):
    """Kimi 1.5 length reward within each group: shorter right answers earn more, long wrong ones lose.

    Args:
        accuracy: the correctness reward (a name or ``{"name", "params"}``); 1.0 or more is right.
    """

    accuracy: Any = "math"
    extra_columns = GROUP_COLUMNS

    def __post_init__(self) -> None:
        self._set_inner()

    def params(self) -> dict[str, Any]:
        return {"accuracy": inner_name(self.accuracy)}

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict]:
        n = len(completions)
        groups = group_keys(columns, n, "length")
        judged = self.judge_inner(completions, columns)
        lengths = [len(completion_text(c) or "") for c in completions]
        members: dict[int, list[int]] = defaultdict(list)
        for i, key in enumerate(groups):
            members[key].append(i)
        out = [Verdict(0.0, reason) for reason in judged.reasons]  # the correctness reward's reasons
        for indices in members.values():
            shortest = min(lengths[i] for i in indices)
            longest = max(lengths[i] for i in indices)
            if shortest == longest:
                continue
            for i in indices:
                lam = 0.5 - (lengths[i] - shortest) / (longest - shortest)
                right = judged.values[i] is None or judged.values[i] >= 1.0  # type: ignore[operator]
                out[i] = Verdict(lam if right else min(0.0, lam), judged.reasons[i])
        return out
