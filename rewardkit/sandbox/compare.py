"""Outputs compared as the code datasets' judges compare them (APPS, TACO, CodeContests, LiveCodeBench).

A program's printed output matches the expected one when, after ``\\r\\n`` became ``\\n``:

1. the texts are equal once each line's trailing whitespace and the trailing blank lines are dropped; or
2. they hold the same whitespace-separated tokens in the same order, two tokens being equal when they are
   the same text, the same integer (``007`` and ``7``; exactly, however large), or two decimal numbers
   within ``tol`` of each other, relative or absolute (default ``1e-6``: ``math.isclose(a, b,
   rel_tol=tol, abs_tol=tol)``). Case matters; ``nan`` and ``inf`` are text.

A call's return value (its JSON) matches the expected value when they are equal with numbers compared as
above, lists element by element and dicts key by key; as in APPS and TACO, a one-element list expected
also matches its element (their call-based outputs wrap the return value in a list).

>>> same_stdout("1 2\\n3\\n\\n", "1 2 \\n3")
True
>>> same_stdout("0.3333333", "0.333333333"), same_stdout("0.33", "0.333333333")
(True, False)
>>> same_stdout("12345678901234567890", "12345678901234567891")
False
>>> same_value("[1, 2.0000000001]", [[1, 2]]), same_value("true", 1), same_value('"a"', "b")
(True, True, False)
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

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


def _same_token(got: str, expected: str, tol: float) -> bool:
    if got == expected:
        return True
    if _INT.fullmatch(got) and _INT.fullmatch(expected):
        return _integer(got) == _integer(expected)
    if _DECIMAL.fullmatch(got) and _DECIMAL.fullmatch(expected):
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
    if isinstance(got, float) or isinstance(expected, float):
        if isinstance(got, int | float) and isinstance(expected, int | float):
            try:
                return bool(got == expected or math.isclose(got, expected, rel_tol=tol, abs_tol=tol))
            except OverflowError:
                return False
        return False
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
    try:
        got = json.loads(got_json)
    except (ValueError, RecursionError):
        return False
    if _equal(got, expected, tol, 0):
        return True
    return isinstance(expected, list) and len(expected) == 1 and _equal(got, expected[0], tol, 0)
