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


def fast_verdict(prediction: str, gold: str, places: int = DECIMAL_PLACES) -> bool | None:
    """``True``/``False`` when a sound exact check decides the pair, else ``None`` (ask SymPy).

    Two plain numbers compare exactly, except a decimal against an exact value (an integer or a fraction),
    which is equal when both agree to six decimal places, as in Math-Verify (``1.3333333333333333`` is
    ``\\frac{4}{3}``; ``0.33`` is not).

    >>> fast_verdict("1.3333333333333333", "\\\\frac{4}{3}"), fast_verdict("0.33", "1/3")
    (True, False)

    Other ``places`` (the math reward's ``precision``) are Math-Verify's ``float_rounding``: two plain
    numbers of which one at least is a decimal are equal when both round alike to that many places, two
    decimals too; a value that falls on a half there, or one written with a power of ten, is left to
    Math-Verify (``None``), whose rounding then decides.

    >>> fast_verdict("0.33", "1/3", places=2), fast_verdict("0.33", "0.333", places=2)
    (True, True)
    >>> fast_verdict("0.34", "1/3", places=2), fast_verdict("0.125", "1/8", places=2)
    (False, True)
    >>> fast_verdict("0.125", "0.13", places=2) is None
    True
    >>> fast_verdict("0.5", "0.50"), fast_verdict("0.5000001", "0.5")
    (True, False)

    A decimal comma is read as a point against a decimal written with one, and only then (``1,2`` against
    ``3/2`` or ``1, 2`` is a list, Math-Verify's to judge):

    >>> fast_verdict("2,74", "2.74"), fast_verdict("0,111", "0.111"), fast_verdict("1,5", "1.6")
    (True, True, False)
    """
    p, g = normalise(prediction), normalise(gold)
    if p == g or _same_layout(prediction, gold) or _same_set_builder(prediction, gold):
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
    if places != DECIMAL_PLACES and (_is_decimal(p) or _is_decimal(g)):
        return _rounded_alike(pn, gn, places) if not (_has_exponent(p) or _has_exponent(g)) else None
    if _is_decimal(p) != _is_decimal(g) and not (_has_exponent(p) or _has_exponent(g)):
        return round(pn, DECIMAL_PLACES) == round(gn, DECIMAL_PLACES)
    return False


def _rounded_alike(a: Fraction, b: Fraction, places: int) -> bool | None:
    """``a`` and ``b`` round to the same value at ``places`` decimal places; ``None`` when either falls on
    a half there (rounding a tie is the rounder's own rule: Math-Verify's to apply)."""
    scale = 10**places
    for value in (a, b):
        if (value * scale * 2).denominator == 1 and (value * scale * 2).numerator % 2:
            return None
    return bool(round(a * scale) == round(b * scale))


# a number with its base as a subscript, as number-theory answers write it: 31_7, 1011_{2}, 2A_{16}, 12_{(3)}
_BASED = re.compile(r"([0-9A-Z]*\d[0-9A-Z]*)_(?:\{\(?(\d{1,2})\)?\}|(\d))")


MAX_BASED_CHARS = 40  # a number written with its base is short; longer text is never read as one


def _based(text: str) -> re.Match[str] | None:
    """:data:`_BASED` of a short text with a subscript (a long run of digits would make the pattern
    backtrack: an answer of 10^5 digits must cost no more than reading it)."""
    if "_" not in text or len(text) > MAX_BASED_CHARS:
        return None
    return _BASED.fullmatch(text)


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
    p, g = _based(prediction), _based(gold)
    if p is None and g is None:
        return None
    if p is not None and g is not None:
        return p.group(1) == g.group(1) and (p.group(2) or p.group(3)) == (g.group(2) or g.group(3))
    based, other = (p, gold) if p is not None else (g, prediction)
    assert based is not None
    if re.fullmatch(r"[0-9A-Z]+", other):
        return based.group(1) == other
    return None


# -- equality up to layout: the same tokens in the same order, however braced and spaced

_LAYOUT_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.DOTALL)  # a digit is a token: x^12 is x^{1}2
_FUNCTIONS = frozenset(
    "\\" + name for name in "sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh ln log exp".split()
)
_AFTER_ATOM = frozenset(("+", "-", "=", ",", ")", "]", "}", "<", ">"))
MAX_LAYOUT_CHARS = 2000
_NOTHING = frozenset(("\\left", "\\right", "\\displaystyle", "\\,", "\\!", "\\;", "\\:", "\\ ", "$"))
# one spelling for fractions, and for text: \\text{Evelyn}, \\mathrm{Evelyn} and Evelyn are one answer
_SPELLING = {
    "\\dfrac": "\\frac",
    "\\tfrac": "\\frac",
    "\\mathrm": "\\text",
    "\\textrm": "\\text",
    "\\mbox": "\\text",
}


# what a layout may differ in; two texts that differ in more cannot share a layout (a cheap test first)
_LAYOUT_ONLY = re.compile(
    r"\s+|[{}()$]|\\(?:left|right|displaystyle|text|mathrm|textrm|mbox|[,!;: ])(?![A-Za-z])"
    r"|(?<=\\)[dt](?=frac)"
)


def _same_layout(prediction: str, gold: str) -> bool:
    """The two texts have one layout (:func:`_layout`), tested only when they agree once every character a
    layout may differ in is dropped."""
    if _LAYOUT_ONLY.sub("", prediction) != _LAYOUT_ONLY.sub("", gold):
        return False
    return _layout(prediction) == _layout(gold)


def _layout(text: str) -> tuple[str, ...] | str:
    """``text`` as the tokens it is read as, without what only lays it out: spacing, braces around one
    token (``x^{2}``, ``\\cos{\\phi_i}``), and a function's argument written in braces, in parentheses
    or bare (``\\cos\\phi_i``, ``\\cos{\\phi_i}`` and ``\\cos(\\phi_i)`` are one reading). Two answers
    with the same layout are equal without asking SymPy (``\\arccos(0.7 \\cos \\phi_i)`` and
    ``\\arccos{0.7\\cos{\\phi_i}}``, which SymPy can take seconds to decide). A space between two digits
    stays (``2 3/4`` is not ``23/4``); a text too long or with unbalanced braces is its own layout.

    >>> _layout("\\\\arccos(0.7 \\\\cos \\\\phi_i)") == _layout("\\\\arccos{0.7\\\\cos{\\\\phi_i}}")
    True
    >>> _layout("\\\\frac{4}{s^{2}+4s+5}") == _layout("\\\\frac4{s^2+4 s+5}")
    True
    >>> _layout("x^{12}") == _layout("x^12"), _layout("2 3/4") == _layout("23/4")
    (False, False)
    """
    if len(text) > MAX_LAYOUT_CHARS:
        return text
    found = [_SPELLING.get(t, t) for t in _LAYOUT_TOKEN.findall(text) if t not in _NOTHING]
    tokens = [
        " " if t.isspace() else t
        for k, t in enumerate(found)
        if not t.isspace()
        or 0 < k < len(found) - 1
        and found[k - 1][-1:].isdigit()
        and found[k + 1][:1].isdigit()
    ]
    tree = _groups(tokens)
    return text if tree is None else tuple(_laid_out(tree))


def _groups(tokens: list[str]) -> list[object] | None:
    """The tokens with each ``{...}`` made a nested list; ``None`` when the braces do not balance."""
    stack: list[list[object]] = [[]]
    for token in tokens:
        if token == "{":
            stack.append([])
        elif token == "}":
            if len(stack) == 1:
                return None
            group = stack.pop()
            stack[-1].append(group)
        else:
            stack[-1].append(token)
    return stack[0] if len(stack) == 1 else None


def _laid_out(items: list[object]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        following = items[i + 1] if i + 1 < len(items) else None
        if item == "\\text" and isinstance(following, list):
            out += _laid_out(following)  # \\text{Evelyn} is the word Evelyn
            i += 2
            continue
        if isinstance(item, list):
            inner = _laid_out(item)
            out += inner if len(inner) == 1 else ["{", *inner, "}"]
            i += 1
            continue
        out.append(str(item))
        i += 1
        if item in _FUNCTIONS and i < len(items):
            argument, i = _argument(items, i)
            if argument is not None:
                out += ["(", *argument, ")"]
    return out


def _argument(items: list[object], i: int) -> tuple[list[str] | None, int]:
    """A function's argument starting at ``items[i]``, laid out, and where it ends: a brace group, a
    parenthesised group, or one atom (a letter, number or command, with a subscript) that ends the term."""
    item = items[i]
    if isinstance(item, list):
        return _laid_out(item), i + 1
    if item == "(":
        depth = 0
        for j in range(i, len(items)):
            depth += (items[j] == "(") - (items[j] == ")")
            if depth == 0:
                return _laid_out(items[i + 1 : j]), j + 1
        return None, i
    if not isinstance(item, str) or item in _FUNCTIONS or not (item[:1].isalnum() or item[:1] == "\\"):
        return None, i
    end = i + 1
    if end + 1 < len(items) and items[end] == "_":
        end += 2
    if end < len(items) and (isinstance(items[end], list) or items[end] not in _AFTER_ATOM):
        return None, i
    return _laid_out(items[i:end]), end


# a set in set-builder notation: \\{x \\mid x > 0\\}, or {x|x>0} in golds that lost their backslashes
_SET_BUILDER = re.compile(
    r"\s*(?:\\left)?\s*\\?\{\s*([A-Za-z])\s*(?:\||\\mid|\\vert)\s*(.+?)\s*(?:\\right)?\s*\\?\}\s*", re.DOTALL
)


def _same_set_builder(prediction: str, gold: str) -> bool:
    """Two sets in set-builder notation with the same variable and the same condition up to layout, the
    condition's restatement of the variable aside: ``\\{x \\mid x = 3k, k \\in \\mathbb{Z}\\}`` is
    ``{x|3k,k\\in\\mathbb{Z}}``, and ``\\{x \\mid -2 \\le x < 1\\}`` is ``\\{x|-2\\leq x<1\\}``.

    >>> _same_set_builder("\\\\{x \\\\mid x = 3k, k \\\\in \\\\mathbb{Z}\\\\}", "{x|3k,k\\\\in\\\\mathbb{Z}}")
    True
    >>> _same_set_builder("\\\\{x \\\\mid -2 \\\\le x < 1\\\\}", "\\\\{x|-2\\\\leq x<1\\\\}")
    True
    >>> _same_set_builder("\\\\{x | x = 3k+1\\\\}", "{x|3k,k\\\\in\\\\mathbb{Z}}")
    False
    """
    if len(prediction) > MAX_LAYOUT_CHARS or len(gold) > MAX_LAYOUT_CHARS:
        return False
    p, g = _SET_BUILDER.fullmatch(prediction), _SET_BUILDER.fullmatch(gold)
    if p is None or g is None or p.group(1) != g.group(1):
        return False
    return _condition(p.group(1), p.group(2)) == _condition(g.group(1), g.group(2))


def _condition(variable: str, condition: str) -> tuple[str, ...] | str:
    restated = re.match(rf"\s*{variable}\s*=(?!=)", condition)
    if restated is not None:
        condition = condition[restated.end() :]
    return _layout(re.sub(r"\\(le|ge)(?![A-Za-z])", r"\\\1q", condition))


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
