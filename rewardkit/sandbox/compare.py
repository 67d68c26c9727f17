"""Outputs compared as the code datasets' judges compare them (APPS, TACO, CodeContests, LiveCodeBench).

A program's printed output matches the expected one when, after ``\\r\\n`` became ``\\n``:

1. the texts are equal once each line's trailing whitespace and the trailing blank lines are dropped; or
2. they hold the same whitespace-separated tokens in the same order, two tokens being equal when they are
   the same text or the same number, where the *expected* token decides how numbers compare:

   - an expected **integer** (``7``, ``-12``, ``007``; digits alone) matches only the same integer,
     exactly, however large: ``7``, ``007``, ``+7``, or a decimal form of exactly that value (``7.0``,
     ``7.000``, ``7e0``; ``1e20`` for ``100000000000000000000``), compared as exact decimals, never as
     floats. ``7.0000001`` is not ``7``, and ``12345678901234567891.0`` is not ``12345678901234567890``;
   - an expected **decimal** (a number written with a decimal point or an exponent: ``0.5``, ``3.0``,
     ``1e-9``) matches any number within ``tol`` of it, relative or absolute (default ``1e-6``:
     ``math.isclose(a, b, rel_tol=tol, abs_tol=tol)``), an integer token included.

   Case matters; ``nan`` and ``inf`` are text.

Why the expected side decides: a problem whose answer is an integer is judged exactly (Codeforces' checkers
compare integer answers as words, and ask for a tolerance only for real-valued answers, which their
reference outputs print with a decimal point), while the training harnesses are laxer than that.
APPS's and TACO's ``testing_util`` accept any all-numeric line within ``np.allclose`` (so ``3.0000009``
passes for ``3``, and two 20-digit integers one apart are equal as floats); CodeContests' ``ValuesMatch``
compares two tokens exactly only when both parse as 32-bit integers, else as doubles within ``1e-5``.
A policy trained on those is paid for printing a float approximation of an integer answer, or for an
integer answer that is wrong in its last digits. LiveCodeBench compares numbers as exact ``Decimal``
values, with no tolerance: here, as there, ``3.0`` is ``3`` (the same value), but a decimal expected
output gets the tolerance real-valued problems are judged with.

A call's return value (its JSON) matches the expected value when they are equal with numbers compared by
the same rule (an expected ``int`` matches only a number equal to it exactly, ``3.0`` included; an expected
``float`` matches any number within ``tol``), lists element by element and dicts key by key; as in APPS
and TACO, a one-element list expected also matches its element (their call-based outputs wrap the return
value in a list).

>>> same_stdout("1 2\\n3\\n\\n", "1 2 \\n3")
True
>>> same_stdout("0.3333333", "0.333333333"), same_stdout("0.33", "0.333333333")
(True, False)
>>> same_stdout("12345678901234567890", "12345678901234567891")
False
>>> same_stdout("3.0", "3"), same_stdout("3.0000009", "3"), same_stdout("3", "3.0000009")
(True, False, True)
>>> same_value("[1, 2.0000000001]", [[1, 2.0]]), same_value("true", 1), same_value('"a"', "b")
(True, True, False)
>>> same_value("2.0000000001", 2), same_value("2.0", 2), same_value("1e20", 100000000000000000001)
(False, True, False)
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from rewardkit.jsontext import JSONTextError, read_json

__all__ = ["FLOAT_TOL", "same_stdout", "same_value"]

FLOAT_TOL = 1e-6
_INT = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MAX_DEPTH = 64


def _lines(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _integer(token: str) -> tuple[bool, str]:
    """An integer token as (negative, digits without leading zeros): exact at any length, no ``int()``."""
    digits = token.lstrip("+-").lstrip("0") or "0"
    return token.startswith("-") and digits != "0", digits


def _exactly(got: str, expected: str) -> bool:
    """Whether decimal token ``got`` has exactly the value of integer token ``expected`` (``3.0`` and
    ``3``; ``1e20`` and ``100000000000000000000``). Exponents past the decimal module's range are not."""
    try:
        return Decimal(got) == Decimal(expected)
    except InvalidOperation:
        return False


def _same_token(got: str, expected: str, tol: float) -> bool:
    if got == expected:
        return True
    if _INT.fullmatch(expected):  # an integer expected: the same integer, exactly, or nothing
        if _INT.fullmatch(got):
            return _integer(got) == _integer(expected)
        return _DECIMAL.fullmatch(got) is not None and _exactly(got, expected)
    if _DECIMAL.fullmatch(got) and _DECIMAL.fullmatch(expected):  # a decimal expected: within tol
        a, b = float(got), float(expected)
        return math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return False


def same_stdout(got: str, expected: str, tol: float = FLOAT_TOL) -> bool:
    """Whether printed output ``got`` matches ``expected`` (the rules of this module's docstring)."""
    if _lines(got) == _lines(expected):
        return True
    tokens, wanted = got.split(), expected.split()
    return len(tokens) == len(wanted) and all(
        _same_token(a, b, tol) for a, b in zip(tokens, wanted, strict=True)
    )


def _equal(got: Any, expected: Any, tol: float, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expected, float):  # a decimal expected: any number within tol
        if isinstance(got, int | float):
            try:
                return bool(got == expected or math.isclose(got, expected, rel_tol=tol, abs_tol=tol))
            except OverflowError:
                return False
        return False
    if isinstance(got, float):  # an int (or bool) expected: a float of exactly its value (== is exact)
        return isinstance(expected, int) and got == expected
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(
            _equal(a, b, tol, depth + 1) for a, b in zip(got, expected, strict=True)
        )
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(_equal(got[k], expected[k], tol, depth + 1) for k in got)
    if isinstance(got, list | dict) or isinstance(expected, list | dict):
        return False
    return bool(got == expected)


def same_value(got_json: str, expected: Any, tol: float = FLOAT_TOL) -> bool:
    """Whether a call's return value (its JSON text, as the sandbox reports it) matches ``expected``."""
    try:  # the sandbox's report, bounded by output_bytes; nested deeper than _equal looks is no match
        got = read_json(got_json, max_chars=None, max_depth=_MAX_DEPTH + 1)
    except JSONTextError:
        return False
    if _equal(got, expected, tol, 0):
        return True
    return isinstance(expected, list) and len(expected) == 1 and _equal(got, expected[0], tol, 0)
