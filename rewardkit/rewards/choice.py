"""Multiple-choice accuracy (MMLU-Pro, GPQA, MathVista-style rows): the option chosen against the gold's.

Extract, then compare letters. The answer is read as :func:`rewardkit.extract.math_answer` reads a final
answer (answer blocks, boxes, "The answer is (B)", a finished final sentence), then mapped to an option by
:mod:`rewardkit.choices`: a letter (``B``, ``(B)``, ``\\boxed{B}``), a letter with its text (``(B) No``),
or an option's text (``No``), with the row's ``choices`` when it has them. The gold is a letter or an
option's text. A completion that states more than two different options as its answer chooses none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.choices import gold_letter, read_choice, read_choices
from rewardkit.core import Completion, Explained, ItemReward, Verdict, binary_values, revalue
from rewardkit.extract import EXTRACT_MODES, gold_answer
from rewardkit.registry import named, register

__all__ = ["Choice", "choice_accuracy"]

_MISSING_SOLUTION = Verdict(None, "missing_solution")


@register(
    "choice",
    columns=["solution"],
    optional_columns=["choices"],
    caller_params=["extract", "correct", "wrong"],
)
@dataclass(frozen=True)
class Choice(ItemReward):
    """Multiple-choice accuracy: 1.0 when the option chosen is the gold's.

    Args:
        extract: how the final answer is read (``"standard"``; ``"strict"``: only answer blocks, boxes
            and answer phrases; ``"lenient"``: also the last value of the final lines).
        correct, wrong: what a right and a wrong choice are worth (1.0 and 0.0).
    """

    extract: str = "standard"
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        if self.extract not in EXTRACT_MODES:
            raise ValueError(
                f"choice: extract must be one of {', '.join(EXTRACT_MODES)}, got {self.extract!r}"
            )
        binary_values("choice", self.correct, self.wrong)

    def params(self) -> dict[str, Any]:
        return {"extract": self.extract, "correct": self.correct, "wrong": self.wrong}

    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        solution, raw_choices = values
        gold = gold_answer(solution)
        if gold is None:
            return _MISSING_SOLUTION
        options = read_choices(raw_choices)
        want = gold_letter(gold, options)
        if want is None:  # a gold that names no option cannot be judged as a choice
            return Explained(None, "gold_not_a_choice", {"gold": gold})
        got, why = read_choice(text, options, mode=self.extract)
        if got is None:
            return Explained(0.0, why or "no_choice", {"answer": None, "gold": want})
        return Explained(float(got == want), None, {"answer": got, "gold": want})

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        return revalue(super()._score(completions, columns, raise_on_error), self.correct, self.wrong)


@named("choice")
def choice_accuracy(
    completions: Sequence[Completion],
    solution: Sequence[Any],
    choices: Sequence[Any] | None = None,
    *,
    extract: str = "standard",
    **kwargs: Any,
) -> list[float | None]:
    """Multiple-choice accuracy of each completion (the registry's ``choice``).

    Args:
        completions: strings or chat message lists.
        solution: the gold per completion: a letter (``"B"``) or an option's text.
        choices: per completion, the option texts in letter order or ``{letter: text}``; without them
            only letters are compared.
        extract: ``"standard"``, ``"strict"`` or ``"lenient"`` (how the final answer is read).

    Returns:
        1.0 when the chosen option is the gold's, 0.0 otherwise, ``None`` when the gold names no option.

    >>> choice_accuracy(["The answer is (B).", "(A) Yes", "I pick C"], solution=["No", "No", "C"],
    ...                 choices=[["Yes", "No"], ["Yes", "No"], None])
    [1.0, 0.0, 0.0]
    """
    columns: dict[str, Any] = {"solution": solution}
    if choices is not None:
        columns["choices"] = choices
    return Choice(extract=extract)(completions, **columns, **kwargs)
