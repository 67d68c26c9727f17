"""Short-answer QA rewards: ``qa_em`` (exact match, or Search-R1's substring match) and ``qa_f1`` (SQuAD's
token F1), the answer a completion states against the row's golds.

Extract, then compare: :func:`rewardkit.qa.read_answer` reads the answer (the last ``<answer>`` block after
the reasoning, without query and retrieval blocks; else a box, an ``Answer:`` line, the final line);
:func:`rewardkit.qa.read_golds` reads the ``solution`` column (a text, a list, a JSON text of a list,
``{"target": [...]}``); :mod:`rewardkit.qa.score` compares them after SQuAD's normalisation, best gold
first. Reasons: ``unclosed_think``, ``unclosed_answer``, ``no_answer``, ``empty_answer`` (an answer that
normalises to nothing: never a match), ``answer_too_long`` and ``hedged_answer`` (substring mode's defence
against listed candidates) score ``wrong``/0.0; ``missing_solution`` (no gold), ``invalid_gold`` (unreadable
or over the bounds) and ``empty_gold`` (every gold normalises to nothing) are ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Explained, ItemReward, Verdict, binary_values, finite_number
from rewardkit.qa import GoldError, best_f1, exact_match, read_answer, read_golds
from rewardkit.qa.score import DEFAULT_MAX_RATIO, usable_golds
from rewardkit.registry import named, register
from rewardkit.spec import CallerParam

__all__ = ["QAExactMatch", "QAF1", "qa_em", "qa_f1"]

_MISSING = Verdict(None, "missing_solution")
_EMPTY_GOLD = Verdict(None, "empty_gold")
#: the largest ``max_ratio`` (words of the answer per word of the longest gold) a caller may set
MAX_RATIO_CAP = 100.0


def _golds(value: Any) -> tuple[tuple[str, ...] | None, Verdict | Explained | None]:
    """The row's golds, or why it has none to judge by (the gold is checked before the answer is read)."""
    try:
        golds = read_golds(value)
    except GoldError as exc:
        return None, Explained(None, "invalid_gold", str(exc))
    if not golds:
        return None, _MISSING
    return (golds, None) if usable_golds(golds) else (None, _EMPTY_GOLD)


@register(
    "qa_em",
    columns=["solution"],
    caller_params={
        "substring": CallerParam(),
        "max_ratio": CallerParam(cap=MAX_RATIO_CAP),
        "correct": CallerParam(),
        "wrong": CallerParam(),
    },
)
@dataclass(frozen=True)
class QAExactMatch(ItemReward):
    """Short-answer exact match: 1.0 when the answer equals a gold once both are normalised as SQuAD does.

    Args:
        substring: Search-R1's sub-EM: a normalised gold held in the normalised answer counts, for an answer
            of at most ``max_ratio`` times the longest gold's words and no more ``or`` than that gold.
        max_ratio: substring mode's length bound (words of the answer per word of the longest gold), >= 1.
        correct, wrong: what a match, and anything else, are worth (1.0 and 0.0).
    """

    substring: bool = False
    max_ratio: float = DEFAULT_MAX_RATIO
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.substring, bool):
            raise ValueError(f"qa_em: substring must be true or false, got {self.substring!r}")
        ratio = self.max_ratio
        if not finite_number(ratio) or not 1.0 <= ratio <= MAX_RATIO_CAP:
            raise ValueError(f"qa_em: max_ratio must be a number in [1, {MAX_RATIO_CAP:g}], got {ratio!r}")
        object.__setattr__(self, "max_ratio", float(ratio))
        binary_values("qa_em", self.correct, self.wrong)

    def params(self) -> dict[str, Any]:
        return {
            "substring": self.substring,
            "max_ratio": self.max_ratio,
            "correct": self.correct,
            "wrong": self.wrong,
        }

    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        golds, refused = _golds(values[0])
        if golds is None:
            return refused or _MISSING
        answer, reason = read_answer(text)
        if answer is None:
            return Verdict(self.wrong, reason)
        value, why, gold = exact_match(answer, golds, substring=self.substring, max_ratio=self.max_ratio)
        if value is None:
            return Verdict(None, why)
        return Explained(self.correct if value == 1.0 else self.wrong, why, {"answer": answer, "gold": gold})


@register("qa_f1", columns=["solution"])
@dataclass(frozen=True)
class QAF1(ItemReward):
    """Short-answer token F1 (SQuAD's): the best F1 of the answer's words against a gold's, normalised."""

    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        golds, refused = _golds(values[0])
        if golds is None:
            return refused or _MISSING
        answer, reason = read_answer(text)
        if answer is None:
            return Verdict(0.0, reason)
        value, why, gold = best_f1(answer, golds)
        if value is None:
            return Verdict(None, why)
        return Explained(value, why, {"answer": answer, "gold": gold})


@named("qa_em")
def qa_em(
    completions: Sequence[Completion],
    solution: Sequence[Any],
    *,
    substring: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """Short-answer exact match of each completion (the registry's ``qa_em``).

    Args:
        completions: strings or chat message lists.
        solution: the golds per completion: a text, a list of texts, a JSON text of a list, or
            ``{"target": [...]}`` (Search-R1, veRL).
        substring: Search-R1's sub-EM (a gold held in a short answer counts).

    Returns:
        1.0 when the answer matches a gold, 0.0 otherwise, ``None`` when the row has no usable gold.

    >>> qa_em(["<answer>The Eiffel Tower</answer>", "<answer>Paris, London, Berlin, Rome</answer>"],
    ...       solution=[["Eiffel Tower"], '["Paris"]'], substring=True)
    [1.0, 0.0]
    """
    return QAExactMatch(substring=substring)(completions, solution=solution, **kwargs)


@named("qa_f1")
def qa_f1(completions: Sequence[Completion], solution: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """SQuAD token F1 of each completion's answer against its best gold (the registry's ``qa_f1``).

    >>> qa_f1(["<answer>the Eiffel Tower</answer>", "Answer: Paris"],
    ...       solution=["Eiffel Tower, Paris", "Lyon"])
    [0.8, 0.0]
    """
    return QAF1()(completions, solution=solution, **kwargs)
