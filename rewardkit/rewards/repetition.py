"""N-gram repetition penalty (ms-swift's ``repetition``, open-r1's ``get_repetition_penalty_reward``,
arXiv 2502.03373 appendix C.2).

The penalty is ``max_penalty * (1 - distinct n-grams / n-grams)``; 0.0 for an empty completion or one with
fewer words than ``ngram_size``. Words are the lower-cased whitespace-separated tokens, as in ms-swift 4.6's
``RepetitionPenalty`` (tested against it). Text without spaces (Chinese, Japanese) would be one "word" there
and never penalised; here each CJK character is a word of its own, so ``好好好好好`` repeats. On text with no
CJK character the values equal ms-swift's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rewardkit.core import ItemReward, Verdict, finite_number, number_error
from rewardkit.registry import register
from rewardkit.spec import CallerParam

__all__ = ["Repetition", "words"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_HAS_CJK = re.compile(rf"[{_CJK}]")


def words(text: str) -> list[str]:
    """Lower-cased words: whitespace-separated, with each CJK character a word of its own.

    >>> words("The cat, THE cat"), words("好好学习")
    (['the', 'cat,', 'the', 'cat'], ['好', '好', '学', '习'])
    """
    lowered = text.lower()
    return _WORD.findall(lowered) if _HAS_CJK.search(lowered) else lowered.split()


@register("repetition", caller_params={"ngram_size": CallerParam(cap=64), "max_penalty": CallerParam()})
@dataclass(frozen=True)
class Repetition(ItemReward):
    """Penalty for repeated n-grams: ``max_penalty`` times the share of repeated n-grams.

    Args:
        ngram_size: n (ms-swift ``--repetition_n_grams`` 3).
        max_penalty: the penalty of a completion that is one n-gram repeated (``--repetition_max_penalty``
            -1.0); must not be positive.
    """

    ngram_size: int = 3
    max_penalty: float = -1.0

    def __post_init__(self) -> None:
        n = self.ngram_size
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"repetition: ngram_size must be a positive integer, got {n!r}")
        p = self.max_penalty
        if not finite_number(p) or p > 0:
            raise number_error("repetition", "max_penalty", "a number <= 0", p)

    def params(self) -> dict[str, Any]:
        return {"ngram_size": self.ngram_size, "max_penalty": self.max_penalty}

    def score_one(self, text: str, *values: Any) -> Verdict:
        tokens = words(text)
        n = self.ngram_size
        if len(tokens) < n:
            return Verdict(0.0)
        ngrams = list(zip(*(tokens[i:] for i in range(n)), strict=False))
        return Verdict((1 - len(set(ngrams)) / len(ngrams)) * self.max_penalty)
