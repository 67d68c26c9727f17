"""R1-V visual counting accuracy: the last ``<answer>`` holds the count.

Fixes R1-V's own rule, which fell back to searching the whole completion (``<answer>4</answer> Actually
it is 5`` scored 1.0 against gold 5) and took any digit it found (``3 or 4`` matched gold 3).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rewardkit.core import (
    Completion,
    Explained,
    ItemReward,
    Verdict,
    binary_values,
    check_deadline,
    completion_text,
    revalue,
)
from rewardkit.extract import final_text, gold_answer, last_tag_block
from rewardkit.registry import named, register

__all__ = ["R1VAccuracy", "extract_numbers", "r1v_accuracy", "states_a_count"]

_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()
_WORD_VALUE = {w: i for i, w in enumerate(_WORDS)}
_NUMBER = re.compile(r"(-?)(\d+(?:\.\d+)?)|\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)
_WHOLE = re.compile(r"[+-]?\d+(?:\.0*)?")
_SIGN_CONTEXT = " \t\n$({[="  # a '-' right after one of these (or at the start) is a sign


MAX_DIGITS = 1_000  # a longer number is no count (and may have more digits than Python converts)


def _number(digits: str) -> int | Fraction | float:
    """``3`` -> 3, ``3.50`` -> Fraction(7, 2); ints and equal Fractions hash alike, so sets dedupe them. A
    number longer than :data:`MAX_DIGITS` characters reads as infinity, which equals no count."""
    if len(digits) > MAX_DIGITS:
        return math.inf
    return int(digits) if "." not in digits else Fraction(digits)


def extract_numbers(text: str, most: int | None = None) -> set[int | Fraction | float]:
    """The distinct numbers in ``text``: digits (``3``, ``3.0``, ``-2``) and English words zero to twenty;
    with ``most``, the reading stops once more than ``most`` different numbers are found.

    >>> extract_numbers("There are $3$ (three) cubes.")
    {3}
    >>> sorted(extract_numbers("between 2 and 5.5")), len(extract_numbers("1, 2, 3, 4", most=1))
    ([2, Fraction(11, 2)], 2)
    """
    found: set[int | Fraction | float] = set()
    values: dict[str, int | Fraction | float] = {}  # each spelling read once (a text may repeat one)
    for match in _NUMBER.finditer(text):
        sign, digits, word = match.groups()
        if word is not None:
            found.add(_WORD_VALUE[word.lower()])
        else:
            value = values.get(digits)
            if value is None:
                value = values[digits] = _number(digits)
            start = match.start()
            if sign and (start == 0 or text[start - 1] in _SIGN_CONTEXT):
                value = -value
            found.add(value)
        if most is not None and len(found) > most:
            break
    return found


# Next to one of these, a number is part of a calculation, not a count: "2√2", "2^2", "2/2", "\\frac{6}{6}".
_MATH_CONTEXT = set("√^/%*×÷·\\_!{}+=<>")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def states_a_count(answer: str) -> bool:
    """True when every number in ``answer`` stands alone ("There are 5 objects.", "$3$"), False when one is
    part of a calculation (``2√2``, ``2^2``, ``2/2``, ``3x``, ``5-3``): then its value is what is written.
    Linear in the answer: the neighbours of a number are found without copying the text around it.

    >>> states_a_count("There are $3$ (three) cubes."), states_a_count("2√2"), states_a_count("-2")
    (True, False, True)
    """
    for match in _DIGITS.finditer(answer):
        start, end = match.span()
        left = _nonspace_before(answer, start)
        before = answer[left] if left >= 0 else ""
        after = _NEXT_NONSPACE.match(answer, end).group(1)  # type: ignore[union-attr]  # always matches
        if before in _MATH_CONTEXT or after in _MATH_CONTEXT:
            return False
        if answer[end : end + 1].isalpha() or answer[start - 1 : start].isalpha():
            return False  # "3x", "x3"
        if after == "-" or (before == "-" and _digit_at(answer, _nonspace_before(answer, left))):
            return False  # "5-3"
    return True


_NEXT_NONSPACE = re.compile(r"\s*+(\S?)")


def _digit_at(text: str, position: int) -> bool:
    return position >= 0 and text[position].isdigit()


def _nonspace_before(text: str, position: int) -> int:
    """The index of the last character before ``position`` that is not white space (-1: none)."""
    position -= 1
    while position >= 0 and text[position].isspace():
        position -= 1
    return position


def _answer(text: str) -> str | None:
    """The last ``<answer>`` block after the reasoning (never inside an unclosed ``<think>``)."""
    after = final_text(text)
    return None if after is None else last_tag_block(after, "answer")


def _gold(solution: object) -> tuple[str | None, int | Fraction | float | None]:
    """The gold text, and its value when it is a whole number (a count)."""
    gold = gold_answer(solution)
    if gold is None:
        return None, None
    bare = gold.strip("$ ")
    return gold, (_number(bare) if len(bare) <= MAX_DIGITS and _WHOLE.fullmatch(bare) else None)


# Golds repeat across a GRPO group (and across epochs): parse each distinct one once.
_cached_gold = functools.lru_cache(maxsize=4096, typed=True)(_gold)
_RIGHT, _WRONG = Verdict(1.0), Verdict(0.0)
_NO_ANSWER, _NO_NUMBER = Verdict(0.0, "no_answer"), Verdict(0.0, "no_number")
_SEVERAL_NUMBERS, _MISSING_SOLUTION = Verdict(0.0, "several_numbers"), Verdict(None, "missing_solution")
_TEXT_MISMATCH = Verdict(0.0)  # a distinct object: these items get the symbolic check
SYMBOLIC_TIMEOUT_S = 5.0


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


@register("r1v_acc", columns=["solution"], caller_params=["correct", "wrong"])
@dataclass(frozen=True)
class R1VAccuracy(ItemReward):
    """R1-V counting accuracy: the last <answer> must state exactly one number, equal to the gold count.

    Args:
        correct, wrong: what a right and a wrong answer are worth (1.0 and 0.0; DAPO: 1 and -1).
    """

    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        binary_values("r1v_acc", self.correct, self.wrong)

    def params(self) -> dict[str, Any]:
        return {"correct": self.correct, "wrong": self.wrong}

    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        try:
            gold, count = _cached_gold(values[0])
        except TypeError:  # unhashable solution
            gold, count = _gold(values[0])
        if gold is None:
            return _MISSING_SOLUTION
        answer = _answer(text)
        verdict = self._judge(answer, gold, count)
        if verdict is _TEXT_MISMATCH:
            return verdict  # judged again, with its detail, by the math rules in _score
        return Explained(verdict.value, verdict.reason, {"answer": answer, "gold": gold})

    @staticmethod
    def _judge(answer: str | None, gold: str, count: int | Fraction | float | None) -> Verdict:
        if answer is None:
            return _NO_ANSWER
        if count is not None:
            if "%" in answer:  # a share is not a count
                return _WRONG
            if not states_a_count(answer):  # math around a number: what is written is evaluated
                return _TEXT_MISMATCH
            numbers = extract_numbers(answer, most=1)  # one number, or several: no need for more
            if not numbers:
                return _NO_NUMBER
            if len(numbers) > 1:
                return _SEVERAL_NUMBERS
            return _RIGHT if numbers.pop() == count else _WRONG
        return _RIGHT if _normalise(answer) == _normalise(gold) else _TEXT_MISMATCH

    def close(self) -> None:
        if importlib.util.find_spec("pebble") is not None:
            from rewardkit.verify import close_verifier

            close_verifier()

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        """Rule 4: answers that differ from a non-count gold as text get a symbolic check (Math-Verify)."""
        verdicts = super()._score(completions, columns, raise_on_error)
        pending = [i for i, v in enumerate(verdicts) if v is _TEXT_MISMATCH]
        if not pending or importlib.util.find_spec("math_verify") is None:
            return revalue(verdicts, self.correct, self.wrong)  # without rewardkit[math] the text stands
        from rewardkit.verify import Check, get_verifier

        checks = []
        for i in pending:
            check_deadline(f"reward 'r1v_acc', item {i}")
            text = completion_text(completions[i]) or ""
            gold = gold_answer(columns["solution"][i]) or ""
            checks.append(Check(gold, (_answer(text) or "").strip()))
        results = get_verifier().verify_many(checks, timeout_s=SYMBOLIC_TIMEOUT_S)
        for i, check, (equal, reason) in zip(pending, checks, results, strict=True):
            detail = {"answer": check.prediction, "gold": check.gold}
            verdicts[i] = Explained(1.0 if equal else 0.0, reason, detail)
        return revalue(verdicts, self.correct, self.wrong)


@named("r1v_acc")
def r1v_accuracy(
    completions: Sequence[Completion], solution: Sequence[Any], **kwargs: Any
) -> list[float | None]:
    """R1-V visual counting accuracy of each completion (the registry's ``r1v_acc``).

    The prediction is the content of the last ``<answer>`` block (never the whole completion). For a
    whole-number gold it must state exactly one number, in digits or as a word from zero to twenty; several
    different numbers score 0.0. Other golds compare as case-insensitive, whitespace-normalised strings,
    then, when those differ and ``rewardkit[math]`` is installed, by symbolic equivalence (Math-Verify).

    Args:
        completions: strings or chat message lists.
        solution: the gold per completion, e.g. ``"<answer> 3 </answer>"`` or ``3``.

    Returns:
        1.0 when right, 0.0 when wrong or without an ``<answer>`` block, ``None`` without a gold.

    >>> r1v_accuracy(["<answer>There are three cubes.</answer>", "<answer>3 or 4</answer>"],
    ...              solution=["<answer> 3 </answer>", 3])
    [1.0, 0.0]
    """
    return R1VAccuracy()(completions, solution=solution, **kwargs)
