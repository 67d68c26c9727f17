"""Fast exact paths: what can be decided soundly without SymPy, in microseconds.

Identical normalised strings are equal; two plain numbers (integers, decimals, simple fractions) compare as
exact rationals. Anything else is left to Math-Verify (``None``).

>>> from rewardkit.verify.fastpath import fast_verdict
>>> fast_verdict("\\\\dfrac{1}{2}", "\\\\frac{1}{2}"), fast_verdict("0.5", "1/2"), fast_verdict("x+1", "1+x")
(True, True, None)
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewardkit.verify.normalise import normalise

__all__ = ["fast_verdict", "plain_number"]

_PLAIN_NUMBER = re.compile(r"([+-]?)(?:(\d+(?:\.\d+)?)|(\d+)/(\d+)|\\frac\{(\d+)\}\{(\d+)\})")
DECIMAL_PLACES = 6  # Math-Verify's tolerance for a decimal against an exact value


def plain_number(answer: str) -> Fraction | None:
    """An integer, decimal or simple fraction (``3``, ``-0.25``, ``7/2``, ``\\frac{7}{2}``) as a Fraction."""
    match = _PLAIN_NUMBER.fullmatch(answer)
    if match is None or len(answer) > 200:
        return None
    sign, decimal, num, den, fnum, fden = match.groups()
    if decimal is not None:
        value = Fraction(decimal)
    else:
        denominator = int(den or fden)
        if denominator == 0:
            return None
        value = Fraction(int(num or fnum), denominator)
    return -value if sign == "-" else value


def fast_verdict(prediction: str, gold: str) -> bool | None:
    """``True``/``False`` when a sound exact check decides the pair, else ``None`` (ask SymPy).

    Two plain numbers compare exactly, except a decimal against an exact value (an integer or a fraction),
    which is equal when both agree to six decimal places, as in Math-Verify (``1.3333333333333333`` is
    ``\\frac{4}{3}``; ``0.33`` is not).

    >>> fast_verdict("1.3333333333333333", "\\\\frac{4}{3}"), fast_verdict("0.33", "1/3")
    (True, False)
    >>> fast_verdict("0.5", "0.50"), fast_verdict("0.5000001", "0.5")
    (True, False)
    """
    p, g = normalise(prediction), normalise(gold)
    if p == g:
        return True
    pn, gn = plain_number(p), plain_number(g)
    if pn is None or gn is None:
        return None
    if pn == gn:
        return True
    if _is_decimal(p) != _is_decimal(g):
        return round(pn, DECIMAL_PLACES) == round(gn, DECIMAL_PLACES)
    return False


def _is_decimal(text: str) -> bool:
    return "." in text
