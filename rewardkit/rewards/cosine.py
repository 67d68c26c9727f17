"""Cosine length scaling of a correctness reward (ms-swift's ``cosine``, arXiv 2502.03373).

Short right answers earn most, long right ones less; long wrong ones are penalised less than short wrong ones.
Same values as ms-swift 4.6 ``swift.rewards.orm.CosineReward`` on the same token counts and settings
(tested against it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Verdict, reward_value
from rewardkit.lengths import TOKEN_COLUMNS, token_counts
from rewardkit.registry import register
from rewardkit.rewards._composed import ComposedReward, inner_name
from rewardkit.spec import CallerParam

__all__ = ["Cosine", "cosine_value"]


def cosine_value(length: int, max_len: int, at_zero: float, at_max: float) -> float:
    """``at_zero`` at length 0, ``at_max`` at ``max_len``, along half a cosine (ms-swift's ``cosfn``).

    >>> cosine_value(0, 100, 1.0, 0.5), cosine_value(100, 100, 1.0, 0.5)
    (1.0, 0.5)
    >>> round(cosine_value(50, 100, 1.0, 0.5), 3)
    0.75
    """
    return at_zero - (at_zero - at_max) * (1 - math.cos(length * math.pi / max_len)) / 2


@register(
    "cosine",
    columns=["solution"],
    optional_columns=list(TOKEN_COLUMNS),
    caller_params={
        "min_len_value_wrong": CallerParam(),
        "max_len_value_wrong": CallerParam(),
        "min_len_value_correct": CallerParam(),
        "max_len_value_correct": CallerParam(),
        "max_len": CallerParam(cap=1_000_000),
        "accuracy": CallerParam(reward_spec=True),
    },
    required_params=["max_len"],
)
@dataclass(frozen=True)
class Cosine(ComposedReward):
    """Cosine-scaled correctness: the correctness reward's verdict, scaled by the completion's token count.

    Args:
        min_len_value_wrong, max_len_value_wrong: reward of a wrong answer at length 0 and at ``max_len``
            (ms-swift ``--cosine_min_len_value_wrong`` -0.5, ``--cosine_max_len_value_wrong`` 0.0).
        min_len_value_correct, max_len_value_correct: the same for a right answer (1.0, 0.5).
        max_len: the length the schedule ends at (ms-swift ``--cosine_max_len``, by default its
            ``max_completion_length``): required.
        accuracy: the correctness reward (a name or ``{"name", "params"}``); a value of 1.0 or more is right.
    """

    min_len_value_wrong: float = -0.5
    max_len_value_wrong: float = 0.0
    min_len_value_correct: float = 1.0
    max_len_value_correct: float = 0.5
    max_len: int | None = None
    accuracy: Any = "math"
    extra_columns = TOKEN_COLUMNS

    def __post_init__(self) -> None:
        if isinstance(self.max_len, bool) or not isinstance(self.max_len, int) or self.max_len < 1:
            raise ValueError(
                f"cosine: max_len (the token length the schedule ends at, ms-swift's --cosine_max_len) is "
                f"required and must be a positive integer, got {self.max_len!r}"
            )
        for name in (
            "min_len_value_wrong",
            "max_len_value_wrong",
            "min_len_value_correct",
            "max_len_value_correct",
        ):
            reward_value("cosine", name, getattr(self, name))
        self._set_inner()

    def params(self) -> dict[str, Any]:
        return {
            "min_len_value_wrong": self.min_len_value_wrong,
            "max_len_value_wrong": self.max_len_value_wrong,
            "min_len_value_correct": self.min_len_value_correct,
            "max_len_value_correct": self.max_len_value_correct,
            "max_len": self.max_len,
            "accuracy": inner_name(self.accuracy),
        }

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict]:
        lengths = token_counts(columns, len(completions), "cosine")
        judged = self.judge_inner(completions, columns)
        out = []
        for length, value, reason in zip(lengths, judged.values, judged.reasons, strict=True):
            if length is None:
                out.append(Verdict(None, "missing_token_ids"))
            elif value is None:
                out.append(Verdict(None, reason))
            elif value >= 1.0:
                out.append(
                    Verdict(
                        cosine_value(
                            length, self.max_len or 1, self.min_len_value_correct, self.max_len_value_correct
                        ),
                        reason,
                    )
                )
            else:
                out.append(
                    Verdict(
                        cosine_value(
                            length, self.max_len or 1, self.min_len_value_wrong, self.max_len_value_wrong
                        ),
                        reason,
                    )
                )
        return out
