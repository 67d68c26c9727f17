"""Fast exact paths: what can be decided soundly without SymPy, in microseconds.

Identical normalised strings are equal; two plain numbers (integers, decimals, simple fractions, numbers in
scientific notation) compare as exact rationals, a decimal comma (``2,74``) as a point against a decimal
written with one. Anything else is left to Math-Verify (``None``).

>>> from rewardkit.verify.fastpath import fast_verdict
>>> fast_verdict("\\\\dfrac{1}{2}", "\\\\frac{1}{2}"), fast_verdict("0.5", "1/2"), fast_verdict("x+1", "1+x")
(True, True, None)
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewardkit.verify.normalise import canonical, normalise, units_agree

__all__ = ["fast_verdict", "plain_number", "within_tolerance"]

_PLAIN_NUMBER = re.compile(r"([+-]?)(?:(\d+(?:\.\d+)?|\.\d+)|(\d+)/(\d+)|\\frac\{(\d+)\}\{(\d+)\})")
# a power of ten after a decimal, as canonical() writes scientific notation (4.5e33 -> 4.5\times10^{33})
_EXPONENT = re.compile(r"(?:\\times|\\cdot|\*)10\^(?:\{([+-]?\d{1,4})\}|(\d))")
_POWER_OF_TEN = re.compile(r"([+-]?)10\^(?:\{([+-]?\d{1,4})\}|(\d))")
MAX_EXPONENT = 400
DECIMAL_PLACES = 6  # Math-Verify's tolerance for a decimal against an exact value


def plain_number(answer: str) -> Fraction | None:
    """An integer, decimal or simple fraction (``3``, ``-0.25``, ``7/2``, ``\\frac{7}{2}``), or a decimal
    times a power of ten (``6.02\\times10^{23}``, ``10^{-3}``), as a Fraction.

    >>> plain_number("4.5\\\\times10^{33}") == plain_number("45\\\\cdot10^{32}"), plain_number("10^{-3}")
    (True, Fraction(1, 1000))
    """
    if len(answer) > 200:
        return None
    power = _POWER_OF_TEN.fullmatch(answer)
    if power is not None:
        exponent = int(power.group(2) or power.group(3))
        if abs(exponent) > MAX_EXPONENT:
            return None
        ten_to = Fraction(10) ** exponent
        return -ten_to if power.group(1) == "-" else ten_to
    times = _EXPONENT.search(answer)
    if times is not None:
        mantissa = plain_number(answer[: times.start()]) if times.end() == len(answer) else None
        power_of = int(times.group(1) or times.group(2))
        if mantissa is None or abs(power_of) > MAX_EXPONENT:
            return None
        return mantissa * Fraction(10) ** power_of
    match = _PLAIN_NUMBER.fullmatch(answer)
    if match is None:
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

    A decimal comma is read as a point against a decimal written with one, and only then (``1,2`` against
    ``3/2`` or ``1, 2`` is a list, Math-Verify's to judge):

    >>> fast_verdict("2,74", "2.74"), fast_verdict("0,111", "0.111"), fast_verdict("1,5", "1.6")
    (True, True, False)
    """
    p, g = normalise(prediction), normalise(gold)
    if p == g:
        return True
    based = _base_verdict(p, g)
    if based is not None:
        return based
    p, g = _decimal_comma(p, g), _decimal_comma(g, p)
    pn, gn = plain_number(p), plain_number(g)
    if pn is None or gn is None:
        return None
    if pn == gn:
        return True
    if _is_decimal(p) != _is_decimal(g) and not (_has_exponent(p) or _has_exponent(g)):
        return round(pn, DECIMAL_PLACES) == round(gn, DECIMAL_PLACES)
    return False


# a number with its base as a subscript, as number-theory answers write it: 31_7, 1011_{2}, 2A_{16}, 12_{(3)}
_BASED = re.compile(r"([0-9A-Z]*\d[0-9A-Z]*)_(?:\{\(?(\d{1,2})\)?\}|(\d))")


def _base_verdict(prediction: str, gold: str) -> bool | None:
    """A number written with its base on either side: the base is part of the number, so the same digits in
    two bases are two numbers, and a value in another base than the one asked for is wrong even when equal
    (``31_7`` is not ``31_4``; ``16_{10}`` is not ``121_3``). Against plain digits the digits are compared
    (``1011`` for ``1011_2``: the base was asked for). ``None`` when neither side is such a number.

    >>> _base_verdict("31_7", "31_4"), _base_verdict("31_{4}", "31_4"), _base_verdict("1011", "1011_2")
    (False, True, True)
    >>> _base_verdict("x_1", "x_2") is None, _base_verdict("16_{10}", "121_3")
    (True, False)
    """
    p, g = _BASED.fullmatch(prediction), _BASED.fullmatch(gold)
    if p is None and g is None:
        return None
    if p is not None and g is not None:
        return p.group(1) == g.group(1) and (p.group(2) or p.group(3)) == (g.group(2) or g.group(3))
    based, other = (p, gold) if p is not None else (g, prediction)
    assert based is not None
    if re.fullmatch(r"[0-9A-Z]+", other):
        return based.group(1) == other
    return None


def within_tolerance(prediction: str, gold: str, rel_tol: float) -> bool | None:
    """``True``/``False`` when both are plain numbers (as :func:`plain_number` reads them, after
    normalisation): equal within ``rel_tol`` of the gold, as physics golds are graded; else ``None``.

    >>> within_tolerance("1.07e16", "1.1\\\\times 10^{16}", 0.05), within_tolerance("2", "1", 0.05)
    (True, False)
    """
    p, g = canonical(prediction), canonical(gold)
    if not units_agree(p, g):
        return False
    pn, gn = plain_number(normalise(p.text)), plain_number(normalise(g.text))
    if pn is None or gn is None:
        return None
    return abs(pn - gn) <= Fraction(rel_tol) * abs(gn)


# "2,74" as much of Europe writes 2.74: one comma between digits (a group of thousands, 1,234, was read as
# such before); it is a decimal point only against a decimal written with one, else it stays a list (1,2)
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")
_POINT_DECIMAL = re.compile(r"[+-]?\d*\.\d+")


def _decimal_comma(text: str, other: str) -> str:
    """``text`` with its decimal comma read as a point, when ``other`` is a decimal written with a point
    (``1000,99`` against ``1000.99``, ``0,111`` against ``0.111``); else ``text`` as it is."""
    if _DECIMAL_COMMA.fullmatch(text) and _POINT_DECIMAL.fullmatch(other):
        return text.replace(",", ".")
    return text


def _is_decimal(text: str) -> bool:
    return "." in text


def _has_exponent(text: str) -> bool:
    return "10^" in text
