"""Countdown: combine the given numbers, each exactly once, with + - * / to reach the target.

Extract, then compare. The last ``<answer>`` block is found (extraction); its text is tokenised, its
integer literals are checked against ``nums``, and a shunting-yard loop parses and evaluates it in exact
rational arithmetic (never ``eval``). Nothing recurses, and answers over 1,000 characters are not parsed.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rewardkit.core import Completion, ItemReward, Verdict, binary_values, finite_number
from rewardkit.extract import last_tag_block
from rewardkit.jsontext import JSONTextError, read_json
from rewardkit.registry import named, register

__all__ = [
    "Countdown",
    "countdown",
    "evaluate",
    "evaluate_tokens",
    "judge",
    "parse_nums",
    "parse_target",
    "tokenize",
]

MAX_ANSWER_CHARS = 1000
#: The longest ``nums`` read as JSON text (far more numbers than an answer of MAX_ANSWER_CHARS can use).
MAX_NUMS_CHARS = 100_000

_LATEX = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"))
_UNICODE = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-"})
_ALLOWED = re.compile(r"[0-9+\-*/()\s]*")
_TOKEN = re.compile(r"\d+|[-+*/()]", re.ASCII)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII)

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}
_CORRECT = Verdict(1.0)
_INVALID_TARGET = Verdict(None, "invalid_target")
_MISSING_TARGET = Verdict(None, "missing_target")  # absent or empty: the gold is missing (rewardkit.golds)


class ExpressionError(ValueError):
    """The answer is not an expression of the countdown grammar."""


def normalise_operators(text: str) -> str:
    """Map the accepted spellings of operators onto ``+ - * /``.

    >>> normalise_operators("3 \\\\times (4 − 1) ÷ 2")
    '3 * (4 - 1) / 2'
    """
    if "\\" in text:
        for latex, op in _LATEX:
            text = text.replace(latex, op)
    return text if text.isascii() else text.translate(_UNICODE)


def tokenize(text: str) -> list[str]:
    """Split an expression into integer literals, operators and parentheses (checking the alphabet).

    >>> tokenize("12*(3 - 4)")
    ['12', '*', '(', '3', '-', '4', ')']
    """
    if not _ALLOWED.fullmatch(text):
        raise ExpressionError("characters outside the countdown grammar")
    tokens: list[str] = _TOKEN.findall(text)
    if not tokens:
        raise ExpressionError("empty expression")
    return tokens


def evaluate(text: str) -> Fraction:
    """Exact value of an expression of the countdown grammar (operators already normalised).

    Grammar: non-negative integer literals, binary ``+ - * /``, unary minus, parentheses, whitespace.
    Anything else raises :class:`ExpressionError`; division by zero raises ``ZeroDivisionError``.

    >>> evaluate("8 / (3 - 8 / 3)")
    Fraction(24, 1)
    >>> evaluate("2 ** 3")
    Traceback (most recent call last):
    ...
    rewardkit.rewards.countdown.ExpressionError: unexpected '*' at token 3
    """
    numerator, denominator = evaluate_tokens(tokenize(text))
    if denominator == 0:
        raise ZeroDivisionError("division by zero in the expression")
    return Fraction(numerator, denominator)


def evaluate_tokens(tokens: list[str]) -> tuple[int, int]:
    """Parse and evaluate in one shunting-yard loop: no recursion, so no nesting can exhaust the stack.

    Values are exact, unreduced ``(numerator, denominator)`` pairs of ints, several times faster than
    ``Fraction`` at every step. A division by zero gives denominator 0, which every later operation keeps,
    so the whole expression is still checked against the grammar before the caller sees it.
    """
    values: list[tuple[int, int]] = []
    pending: list[str] = []  # operators and open parentheses not yet applied
    expect_operand = True
    for position, token in enumerate(tokens, start=1):
        if expect_operand:
            if token >= "0":  # in ASCII every digit sorts after every operator and parenthesis
                values.append((int(token), 1))
                expect_operand = False
            elif token == "-":
                pending.append("neg")  # prefix: binds tighter than any binary operator
            elif token == "(":
                pending.append("(")
            else:
                raise ExpressionError(f"unexpected {token!r} at token {position}")
        elif token == ")":
            while pending and pending[-1] != "(":
                _apply(values, pending.pop())
            if not pending:
                raise ExpressionError(f"unbalanced ')' at token {position}")
            pending.pop()
        elif token >= "0" or token == "(":
            raise ExpressionError(f"unexpected {token!r} at token {position}")
        else:
            precedence = _PRECEDENCE[token]
            while pending and pending[-1] != "(" and _PRECEDENCE[pending[-1]] >= precedence:
                _apply(values, pending.pop())
            pending.append(token)
            expect_operand = True
    if expect_operand:
        raise ExpressionError("expression ends early")
    while pending:
        op = pending.pop()
        if op == "(":
            raise ExpressionError("unbalanced '('")
        _apply(values, op)
    return values[0]


def _apply(values: list[tuple[int, int]], op: str) -> None:
    """Apply ``op`` to the top of the value stack, in place."""
    if op == "neg":
        n, d = values[-1]
        values[-1] = (-n, d)
        return
    c, d = values.pop()
    a, b = values[-1]
    if op == "+":
        values[-1] = (a * d + c * b, b * d)
    elif op == "-":
        values[-1] = (a * d - c * b, b * d)
    elif op == "*":
        values[-1] = (a * c, b * d)
    else:  # a/b ÷ c/d; a zero divisor gives denominator 0, an undefined divisor stays undefined
        values[-1] = (a * d, b * c) if d else (1, 0)


def parse_target(value: object) -> Fraction | None:
    """``target`` as an exact number: an int, a finite float, or a numeric string; else ``None``.

    >>> parse_target("24"), parse_target(24), parse_target(" 2.5 "), parse_target("abc")
    (Fraction(24, 1), Fraction(24, 1), Fraction(5, 2), None)
    """
    if type(value) is int:
        return Fraction(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = normalise_operators(value.strip())
        return Fraction(text) if _NUMBER.fullmatch(text) else None
    try:
        return Fraction(operator.index(value))  # type: ignore[arg-type]  # numpy integers
    except TypeError:
        return None


_cached_target = functools.lru_cache(maxsize=4096, typed=True)(parse_target)  # typed: True is not 1


def parse_nums(value: object) -> list[int] | None:
    """``nums`` as a list of ints: a list of ints (or int-valued floats / digit strings) or a JSON string
    (read within bounds: :data:`MAX_NUMS_CHARS`, :func:`rewardkit.jsontext.read_json`'s nesting); ``None``
    for anything else.

    >>> parse_nums([3, 5, 7]), parse_nums("[3, 5, 7]"), parse_nums("3 5 7")
    ([3, 5, 7], [3, 5, 7], None)
    """
    if type(value) is list and all(type(item) is int for item in value):
        return value  # the common case, checked cheaply
    if isinstance(value, str):
        try:
            value = read_json(value, max_chars=MAX_NUMS_CHARS)
        except JSONTextError:  # not JSON, too long, or nested too deep (a RecursionError before)
            return None
    if hasattr(value, "tolist") and not isinstance(value, list | tuple):
        value = value.tolist()  # numpy arrays
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return None
    out: list[int] = []
    for item in value:
        if isinstance(item, bool):
            return None
        if isinstance(item, float):
            if not item.is_integer():
                return None
            out.append(int(item))
        elif isinstance(item, str) and item.strip().isdigit():
            out.append(int(item.strip()))
        else:
            try:
                out.append(operator.index(item))
            except TypeError:
                return None
    return out


def _equals_target(number: str, target: int | Fraction) -> bool:
    if number.isascii() and number.isdigit():  # the common case, without Fraction's string parser
        return target.denominator == 1 and int(number) == target.numerator
    return _NUMBER.fullmatch(number) is not None and Fraction(number) == target


def judge(
    answer: str,
    target: int | Fraction,
    nums: list[int],
    format_score: float,
    correct: float = 1.0,
    wrong: float = 0.0,
) -> Verdict:
    """Judge the content of an ``<answer>`` block (the compare step): ``correct`` when right,
    ``format_score`` when present but wrong, ``wrong`` when empty."""
    answer = answer.strip()
    if not answer:
        return Verdict(wrong, "empty_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return Verdict(format_score, "answer_too_long")
    answer = normalise_operators(answer)
    if answer.count("=") > 1:
        return Verdict(format_score, "multiple_equals")
    expression, _, rhs = answer.partition("=")
    rhs = rhs.strip()
    if rhs and not _equals_target(rhs, target):
        return Verdict(format_score, "rhs_not_target")
    try:
        tokens = tokenize(expression)
        # Rule 4 before parsing: cheap, and most wrong answers stop here.
        if sorted([int(t) for t in tokens if t >= "0"]) != sorted(nums):
            return Verdict(format_score, "wrong_numbers")
        numerator, denominator = evaluate_tokens(tokens)
    except ExpressionError:
        return Verdict(format_score, "invalid_expression")
    if denominator == 0:
        return Verdict(format_score, "division_by_zero")
    if numerator * target.denominator == target.numerator * denominator:  # exact: n/d == p/q
        return _CORRECT if correct == 1.0 else Verdict(correct)
    return Verdict(format_score)


@register("countdown", columns=["target", "nums"], caller_params=["format_score", "correct", "wrong"])
@dataclass(frozen=True)
class Countdown(ItemReward):
    """Countdown accuracy: 1.0 when the last <answer> uses every number once and equals the target.

    Args:
        format_score: reward for an answer that is present but wrong, in [0, 1]; ``None`` (the default):
            such an answer is worth ``wrong``.
        correct, wrong: what a right answer, and a wrong or missing one, are worth (1.0 and 0.0).
    """

    format_score: float | None = None
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        fs = self.format_score
        if fs is not None:
            if not finite_number(fs) or not 0.0 <= fs <= 1.0:
                raise ValueError(f"countdown: format_score must be a number in [0, 1], got {fs!r}")
            object.__setattr__(self, "format_score", float(fs))
        binary_values("countdown", self.correct, self.wrong)

    def params(self) -> dict[str, Any]:
        return {"format_score": self.format_score, "correct": self.correct, "wrong": self.wrong}

    def score_one(self, text: str, *values: Any) -> Verdict:
        raw = values[0]
        target: int | Fraction | None
        if type(raw) is int:
            target = raw  # ints have .numerator and .denominator too: no Fraction needed
        else:
            try:
                target = _cached_target(raw)
            except TypeError:  # unhashable: not a target anyway, but let parse_target say so
                target = parse_target(raw)
        if target is None:
            return (
                _MISSING_TARGET
                if raw is None or (isinstance(raw, str) and not raw.strip())
                else _INVALID_TARGET
            )
        nums = parse_nums(values[1])
        if nums is None:
            return Verdict(None, "invalid_nums")
        answer = last_tag_block(text, "answer")
        if answer is None:
            return Verdict(self.wrong, "no_answer")
        present = self.wrong if self.format_score is None else self.format_score
        return judge(answer, target, nums, present, self.correct, self.wrong)


@named("countdown")
def countdown(
    completions: Sequence[Completion],
    target: Sequence[Any],
    nums: Sequence[Any],
    *,
    format_score: float | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Countdown accuracy of each completion (the registry's ``countdown``).

    The last ``<answer>`` block must hold an expression over ``+ - * /`` and parentheses that uses each of
    ``nums`` exactly once and equals ``target`` (an optional ``= target`` may follow). ``×``, ``·``,
    ``\\times``, ``\\cdot``, ``÷``, ``\\div`` and ``−`` are read as operators; anything else (``**``,
    decimals, letters) makes the answer wrong. Nothing is ever ``eval``-ed.

    Args:
        completions: strings or chat message lists.
        target: one target per completion (int or numeric string).
        nums: one list of ints per completion (or a JSON string of one).
        format_score: reward for a present but wrong answer.

    Returns:
        1.0 for a correct answer, ``format_score`` for a wrong one, 0.0 without a non-empty ``<answer>``,
        ``None`` when ``target`` or ``nums`` cannot be read (``missing_target`` when the target is absent or
        empty, ``invalid_target`` when it is no number).

    >>> countdown(["<answer>(6 - 2) * 6</answer>", "<answer>90**50**3**2</answer>"],
    ...           target=[24, 24], nums=[[2, 6, 6], [90, 50, 3, 2]], format_score=0.1)
    [1.0, 0.1]
    """
    return Countdown(format_score=format_score)(completions, target=target, nums=nums, **kwargs)
