"""DAPO's soft overlong punishment (ms-swift's ``soft_overlong``, TRL's ``get_soft_overlong_punishment``;
arXiv 2503.14476 eq. 13), on token counts.

0.0 up to ``max_length - cache_length`` tokens, then falling linearly to -1.0 at ``max_length``. Past
``max_length`` the line goes on, as in ms-swift 4.6's ``SoftOverlong`` (tested against it); TRL stops at -1.0
(``clip=True`` gives TRL's values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Reward, Verdict, check_deadline, completion_text
from rewardkit.lengths import TOKEN_COLUMNS, token_counts
from rewardkit.registry import register
from rewardkit.spec import CallerParam

__all__ = ["SoftOverlong"]


@register(
    "soft_overlong",
    columns=[],
    optional_columns=list(TOKEN_COLUMNS),
    caller_params={
        "max_length": CallerParam(cap=10_000_000),
        "cache_length": CallerParam(cap=10_000_000),
        "clip": CallerParam(),
    },
    required_params=["max_length", "cache_length"],
)
@dataclass(frozen=True)
class SoftOverlong(Reward):
    """Soft overlong punishment on token counts.

    Args:
        max_length: L_max, the longest a completion may be (ms-swift ``--soft_max_length``; TRL
            ``max_completion_len``): required.
        cache_length: L_cache, the length of the ramp before it (``--soft_cache_length``; TRL
            ``soft_punish_cache``): required, below ``max_length``.
        clip: stop at -1.0 past ``max_length`` (TRL) instead of going on (ms-swift).
    """

    max_length: int | None = None
    cache_length: int | None = None
    clip: bool = False

    def __post_init__(self) -> None:
        for name in ("max_length", "cache_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"soft_overlong: {name} is required: a positive number of tokens, got {value!r}"
                )
        if not (self.cache_length or 0) < (self.max_length or 0):
            raise ValueError("soft_overlong: cache_length must be smaller than max_length")
        if not isinstance(self.clip, bool):
            raise ValueError("soft_overlong: clip must be true or false")

    def params(self) -> dict[str, Any]:
        return {"max_length": self.max_length, "cache_length": self.cache_length, "clip": self.clip}

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict]:
        cache = float(self.cache_length or 1)
        expected = (self.max_length or 0) - cache
        out = []
        lengths = token_counts(columns, len(completions), "soft_overlong")
        for i, (completion, length) in enumerate(zip(completions, lengths, strict=True)):
            check_deadline(f"reward 'soft_overlong', item {i}")
            if completion_text(completion) is None:
                out.append(Verdict(0.0, "invalid_completion"))
                continue
            if length is None:
                out.append(Verdict(None, "missing_token_ids"))
                continue
            value = min(-(length - expected) / cache, 0.0)
            out.append(Verdict(max(value, -1.0) if self.clip else value))
        return out
