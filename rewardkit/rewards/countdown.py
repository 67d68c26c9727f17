"""Countdown: combine the given numbers, each exactly once, with + - * / to reach the target.

Parse, then compare. The answer text is tokenised and parsed by a small recursive-descent parser into
postfix order (never ``eval``), its integer literals are checked against ``nums``, and only then is it
evaluated in exact rational arithmetic.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rewardkit.core import Completion, ItemReward, Verdict
from rewardkit.extract import last_tag_block
from rewardkit.registry import register

__all__ = ["Countdown", "countdown", "parse_expression", "parse_nums", "parse_target"]

MAX_ANSWER_CHARS = 1000
MAX_DEPTH = 100  # nesting of parentheses and unary minus; deeper answers are wrong, not a RecursionError

_LATEX = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"))
_UNICODE = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-"})
_ALLOWED = re.compile(r"[0-9+\-*/()\s]*")
_TOKEN = re.compile(r"\d+|[-+*/()]", re.ASCII)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII)

_OPS: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}

# A parsed expression in postfix order: int literals, "neg" for unary minus, and binary operators.
Postfix = list[int | str]


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
    return text.translate(_UNICODE)


def parse_expression(text: str) -> Postfix:
    """Parse an expression of the countdown grammar into postfix order.

    Grammar: non-negative integer literals, binary ``+ - * /``, unary minus, parentheses, whitespace
    (operators already normalised). Anything else raises :class:`ExpressionError`.

    >>> parse_expression("(1 + 2) * -3")
    [1, 2, '+', 3, 'neg', '*']
    >>> parse_expression("2 ** 3")
    Traceback (most recent call last):
    ...
    rewardkit.rewards.countdown.ExpressionError: unexpected '*' at token 3
    """
    if not _ALLOWED.fullmatch(text):
        raise ExpressionError("characters outside the countdown grammar")
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise ExpressionError("empty expression")
    parser = _Parser(tokens)
    parser.expression(0)
    if parser.pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[parser.pos]!r} at token {parser.pos + 1}")
    return parser.out


class _Parser:
    """Recursive descent over the tokens; recursion only follows nesting, capped at ``MAX_DEPTH``."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.out: Postfix = []

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expression(self, depth: int) -> None:
        self.term(depth)
        while (op := self._peek()) in ("+", "-"):
            self.pos += 1
            self.term(depth)
            self.out.append(op)

    def term(self, depth: int) -> None:
        self.factor(depth)
        while (op := self._peek()) in ("*", "/"):
            self.pos += 1
            self.factor(depth)
            self.out.append(op)

    def factor(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ExpressionError("nested too deeply")
        token = self._peek()
        if token is None:
            raise ExpressionError("expression ends early")
        self.pos += 1
        if token == "-":
            self.factor(depth + 1)
            self.out.append("neg")
        elif token == "(":
            self.expression(depth + 1)
            if self._peek() != ")":
                raise ExpressionError("unbalanced parentheses")
            self.pos += 1
        elif token.isdigit():
            self.out.append(int(token))
        else:
            raise ExpressionError(f"unexpected {token!r} at token {self.pos}")


def literals(postfix: Postfix) -> list[int]:
    """The integer literals of a parsed expression, left to right."""
    return [item for item in postfix if isinstance(item, int)]


def evaluate(postfix: Postfix) -> Fraction:
    """Exact value of a parsed expression; raises ``ZeroDivisionError`` on division by zero.

    >>> evaluate(parse_expression("7 / (1 - 3/4)"))
    Fraction(28, 1)
    """
    stack: list[Fraction] = []
    for item in postfix:
        if isinstance(item, int):
            stack.append(Fraction(item))
        elif item == "neg":
            stack.append(-stack.pop())
        else:
            right = stack.pop()
            stack.append(_OPS[item](stack.pop(), right))
    return stack[0]


def parse_target(value: object) -> Fraction | None:
    """``target`` as an exact number: an int, a finite float, or a numeric string; else ``None``.

    >>> parse_target("24"), parse_target(24), parse_target(" 2.5 "), parse_target("abc")
    (Fraction(24, 1), Fraction(24, 1), Fraction(5, 2), None)
    """
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


def parse_nums(value: object) -> list[int] | None:
    """``nums`` as a list of ints: a list of ints (or int-valued floats / digit strings) or a JSON string.

    >>> parse_nums([3, 5, 7]), parse_nums("[3, 5, 7]"), parse_nums("3 5 7")
    ([3, 5, 7], [3, 5, 7], None)
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
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


def judge(answer: str, target: Fraction, nums: list[int], format_score: float) -> Verdict:
    """Judge the content of an ``<answer>`` block (the compare step)."""
    answer = answer.strip()
    if not answer:
        return Verdict(0.0, "empty_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return Verdict(format_score, "answer_too_long")
    answer = normalise_operators(answer)
    if answer.count("=") > 1:
        return Verdict(format_score, "multiple_equals")
    expression, _, rhs = answer.partition("=")
    rhs = rhs.strip()
    if rhs and not (_NUMBER.fullmatch(rhs) and Fraction(rhs) == target):
        return Verdict(format_score, "rhs_not_target")
    try:
        postfix = parse_expression(expression)
    except ExpressionError:
        return Verdict(format_score, "invalid_expression")
    if Counter(literals(postfix)) != Counter(nums):
        return Verdict(format_score, "wrong_numbers")
    try:
        value = evaluate(postfix)
    except ZeroDivisionError:
        return Verdict(format_score, "division_by_zero")
    return Verdict(1.0 if value == target else format_score)


@register("countdown", columns=["target", "nums"])
@dataclass(frozen=True)
class Countdown(ItemReward):
    """Countdown accuracy: 1.0 when the last <answer> uses every number once and equals the target.

    Args:
        format_score: reward for an answer that is present but wrong (default 0.0), in [0, 1].
    """

    format_score: float = 0.0

    def __post_init__(self) -> None:
        fs = self.format_score
        if isinstance(fs, bool) or not isinstance(fs, int | float) or not 0.0 <= fs <= 1.0:
            raise ValueError(f"countdown: format_score must be a number in [0, 1], got {fs!r}")
        object.__setattr__(self, "format_score", float(fs))

    def params(self) -> dict[str, Any]:
        return {"format_score": self.format_score}

    def score_one(self, text: str, **row: Any) -> Verdict:
        target = parse_target(row["target"])
        if target is None:
            return Verdict(None, "invalid_target")
        nums = parse_nums(row["nums"])
        if nums is None:
            return Verdict(None, "invalid_nums")
        answer = last_tag_block(text, "answer")
        if answer is None:
            return Verdict(0.0, "no_answer")
        return judge(answer, target, nums, self.format_score)


def countdown(
    completions: Sequence[Completion],
    target: Sequence[Any],
    nums: Sequence[Any],
    *,
    format_score: float = 0.0,
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
        ``None`` when ``target`` or ``nums`` cannot be read.

    >>> countdown(["<answer>(6 - 2) * 6</answer>", "<answer>90**50**3**2</answer>"],
    ...           target=[24, 24], nums=[[2, 6, 6], [90, 50, 3, 2]], format_score=0.1)
    [1.0, 0.1]
    """
    return Countdown(format_score=format_score)(completions, target=target, nums=nums, **kwargs)
