"""Guards: answers refused without SymPy because computing them would not finish (or not fit).

Every check here runs in the parent process on text a caller chose, so each is linear in the text's length.

>>> from rewardkit.verify.guards import guard
>>> guard("9^{9^{9^{9}}}", max_chars=1000), guard("(10^{7})!", max_chars=1000), guard("x^2", max_chars=1000)
('huge_power', 'huge_factorial', None)
"""

from __future__ import annotations

import math
import re

__all__ = ["MAX_DEPTH", "MAX_FACTORIAL", "MAX_POWER_DIGITS", "encodable", "guard", "risk"]

MAX_POWER_DIGITS = 100_000  # a power with more digits than this is refused, not computed
MAX_FACTORIAL = 1_000
MAX_DEPTH = 40  # brace nesting

# A numeric power not itself raised further (the top of a chain a^b^c, or the innermost of a^{b^{c}}).
# Every pattern that starts with a digit run starts only where the run starts ((?<!\d)) and cannot
# backtrack into it ((?>...)): each is linear in the text, not quadratic in a run of digits.
_SMALL_POWER = re.compile(r"(?<!\d)((?>\d+))\s*+\^\s*+(?:\{\s*+((?>\d+))\s*+\}|(\d))(?!\s*+\^)")
_BIG = "\u2603"  # stands for an already-large power, so a tower built on it is refused
_BIG_EXPONENT = re.compile(r"\^\s*+\{?\s*+" + _BIG)
_FACTORIAL = re.compile(r"(?<!\d)((?>\d+)|" + _BIG + r")\s*+\)?\s*+\}?\s*+!")


def _max_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "{(":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "})":
            depth -= 1
    return deepest


def _exceeds(digits: str, limit: int) -> bool:
    """``int(digits) > limit`` without converting a long run of digits (which Python refuses)."""
    digits = digits.lstrip("0") or "0"
    return len(digits) > len(str(limit)) or int(digits) > limit


def _power_digits(base: str, exponent: str) -> float:
    """About how many digits ``base ** exponent`` has (both runs of decimal digits, of any length)."""
    base = base.lstrip("0") or "0"
    if base in ("0", "1"):
        return 1.0
    exponent = exponent.lstrip("0") or "0"
    if len(exponent) > 12:
        return math.inf
    log10_base = math.log10(int(base[:15])) + max(0, len(base) - 15)
    return int(exponent) * log10_base


def guard(prediction: str, *, max_chars: int) -> str | None:
    """A reason to refuse ``prediction`` without SymPy, or ``None``.

    Numeric powers are folded innermost first: ``b^{e}`` with at most 15 digits becomes its value, a
    larger one a marker; a power whose exponent is a marker, or with more than ``MAX_POWER_DIGITS``
    digits, is a ``huge_power``. Factorials of more than ``MAX_FACTORIAL`` are ``huge_factorial``.
    """
    if len(prediction) > max_chars:
        return "answer_too_long"
    if not encodable(prediction):  # lone surrogates: a model emitted broken text, not an answer
        return "invalid_unicode"
    if _max_depth(prediction) > MAX_DEPTH:
        return "too_deep"
    text = prediction
    if "^" in text:
        text = text.replace("\\left", "").replace("\\right", "")
        for _ in range(64):
            if _BIG_EXPONENT.search(text) or _big_in_exponent(text):
                return "huge_power"
            match = _SMALL_POWER.search(text)
            if match is None:
                break
            base, exponent = match.group(1), match.group(2) or match.group(3)
            digits = _power_digits(base, exponent)
            if digits > MAX_POWER_DIGITS:
                return "huge_power"
            value = str(int(base.lstrip("0") or "0") ** int(exponent[-12:])) if digits <= 15 else _BIG
            if text[: match.start()].rstrip().endswith("^"):  # an exponent itself: keep it one group
                value = "{" + value + "}"
            text = text[: match.start()] + value + text[match.end() :]
    if "!" in text:
        for match in _FACTORIAL.finditer(text):
            token = match.group(1)
            if token == _BIG or _exceeds(token, MAX_FACTORIAL):
                return "huge_factorial"
    return None


def _big_in_exponent(text: str) -> bool:
    """An already-large power inside an exponent group (``2^{3+10^{20}}``); one inside any other group
    (``\\frac{1}{10^{20}}``, scientific notation) is a large number, not a tower. Linear: one pass with a
    stack of the open groups, marking the exponent groups."""
    if _BIG not in text:
        return False
    stack: list[bool] = []  # per open brace: is it an exponent group (or inside one)?
    previous = ""  # the last character that is not white space
    for char in text:
        if char == "{":
            stack.append(previous == "^" or (bool(stack) and stack[-1]))
        elif char == "}":
            if stack:
                stack.pop()
        elif char == _BIG and stack and stack[-1]:
            return True
        if not char.isspace():
            previous = char
    return False


def encodable(text: str) -> bool:
    """False for text UTF-8 cannot encode (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def risk(prediction: str) -> float:
    """How likely a prediction is to be slow in SymPy: powers of powers, factorials, nesting, length."""
    towers = len(_TOWER.findall(prediction))  # an exponent that holds a power
    return 10 * towers + 10 * prediction.count("!") + _max_depth(prediction) + len(prediction) / 200


_TOWER = re.compile(r"\^\s*\{[^{}]*\^")
