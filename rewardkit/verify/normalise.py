"""Answer text to a canonical form, on both sides of a comparison, before any judging.

What models and datasets write differently for the same value: unicode roots and pi (``2√3``, ``√{3}``,
``sqrt(3)``, ``4 * pi``), unicode operators (``×``, ``÷``, ``·``, ``−``), thousands separators (``12,345``),
and a trailing degree sign or unit on a bare quantity (``40°``, ``40^\\circ``, ``9米``, ``12 cm``,
``9πcm^{2}``, ``50\\%``). A unit is split off only where what stays is a plain quantity (digits, operators,
roots, pi), so ``\\sin 30^\\circ`` and ``2m`` next to other letters keep their meaning. Units are compared,
never converted: ``12 cm`` is not ``0.12 m``.

>>> canonical("2√3 cm")
Canonical(text='2\\\\sqrt{3}', unit='cm')
>>> canonical("40^{\\\\circ}"), canonical("9πcm^{2}")
(Canonical(text='40', unit='°'), Canonical(text='9\\\\pi', unit='cm^2'))
>>> canonical("\\\\sin 30^\\\\circ").unit is None
True
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

from rewardkit.extract.words import number_value
from rewardkit.lru import LRUCache, text_digest

__all__ = [
    "CACHE_BYTES",
    "Canonical",
    "canonical",
    "clear_cache",
    "has_unparsed",
    "normalise",
    "prepared",
    "units_agree",
]

# White space goes, except between two digits: "2 3/4" (a mixed number) is not "23/4", "1 2" is not 12.
_SPACING = re.compile(r"\\[!,;: ]|\\left\b|\\right\b|\\displaystyle\b|\\\$|\$|(?<!\d)\s++|\s++(?!\d)")


def normalise(answer: str) -> str:
    """Drop what never changes a value: spacing commands, ``\\left``/``\\right``, dollar signs, white space,
    ``\\dfrac``/``\\tfrac`` spellings and a trailing full stop.

    >>> normalise("\\\\$32 , \\\\!348.")
    '32,348'
    >>> normalise("2 3/4")
    '2 3/4'
    """
    text = _SPACING.sub("", answer).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return text[:-1] if text.endswith(".") else text


class Canonical(NamedTuple):
    """An answer's value as text Math-Verify reads, and the unit split off it (``None``: none written)."""

    text: str
    unit: str | None = None

    def __str__(self) -> str:
        return self.text if self.unit is None else f"{self.text} [{self.unit}]"


_OPERATORS = str.maketrans({"−": "-", "×": "\\times ", "÷": "\\div ", "·": "\\cdot ", "∙": "\\cdot "})
_SUPERSCRIPTS = {"²": "^2", "³": "^3"}
_PI = re.compile(r"π|(?<![A-Za-z\\])pi(?![A-Za-z])")
_SQRT_WORD = re.compile(r"(?<![A-Za-z\\])sqrt\s*(?=[({])")
_ROOT_ATOM = re.compile(r"\s*(\d+(?:\.\d+)?|[A-Za-z]|\\pi\b)")
# a group of thousands starts with 1-9: "0,111" is a decimal comma or a list, never 111
# and with a decimal part after them: 1,000.99 (one point after comma groups is a decimal point)
_THOUSANDS = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d,]|\.\d)")
_SPACED_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_LATEX_COMMA = re.compile(r"(?<=\d)\s*+\{\s*+,\s*+\}\s*+(?=\d)")  # 14{,}916, 14 {, }916
# 4.5e33, 1e-3, 1.07E+16: scientific notation as programs write it, in the spelling Math-Verify reads
_E_NOTATION = re.compile(r"(?<![\w.\\])(\d+(?:\.\d+)?)[eE]([+-]?)0*(\d{1,4})(?![\w.])")

_DEGREE = r"°|\^\s*+\{?\s*+\\circ\s*+\}?|\\degree|\\text\{\s*+degrees?\s*+\}|degrees?|度"
_UNITS = (
    # CJK units (longest first, so 平方米 is one unit, not 米)
    "平方厘米|平方分米|平方千米|平方米|立方厘米|立方米|厘米|毫米|分米|千米|公里|海里|米|千克|公斤|克|元|角|分钟|小时|秒|个|块|只|人|度"
    # English words
    "|square\\s+(?:centimeters|meters|feet|inches|units)|centimeters?|millimeters?|kilometers?|meters?"
    "|inches|inch|feet|foot|yards?|miles?|units?|dollars?|cents?|hours?|minutes?|seconds?"
    "|kilograms?|grams?|liters?|litres?|degrees?"
    # symbols, the sciences' among them (Minerva: 700 nm, 300 km/s)
    "|km/s|m/s|°C|°F|℃|℉|nm|μm|cm|mm|km|dm|m|ft|in|yd|mi|kg|mg|g|ml|mL|L|s|h|min"
    "|keV|MeV|GeV|eV|kJ|mol|kHz|MHz|GHz|Hz|kPa|Pa|atm|AU|kpc|Mpc|pc|yr|€|£|¥"
)
_UNIT = re.compile(
    r"(?:\\(?:text|textbf|textnormal|textrm|mbox|mathrm|mathbf|operatorname)\s*+\{[\s~]*+("
    + _UNITS
    + r")\s*+\}|("
    + _UNITS
    + r"))"
    r"\s*+(?:\^\s*+\{?\s*+(\d)\s*+\}?|([²³]))?\s*+$"
)
# any unit written as text after a quantity: "300 \\text{ km/s}", "5\\,\\mathrm{kg\\,m^{-1}}"
_TEXT_UNIT = re.compile(
    r"\\(?:text|textnormal|textrm|mbox|mathrm)\s*+\{([A-Za-zμΩ°/·.\s~\\,^\-\d]{1,30})\}"
    r"(?:\s*+\^\s*+\{?\s*+(-?\d)\s*+\}?)?\s*+$"
)
_DEGREE_END = re.compile(r"(?:" + _DEGREE + r")\s*+$")
_PERCENT_END = re.compile(r"\\?%\s*+$")
# What may stay once a unit is split off: a plain quantity, no letters beyond roots, pi and fractions.
_QUANTITY_COMMANDS = re.compile(r"\\(?:sqrt|pi|frac|dfrac|tfrac|cdot|times|div)\b")
_QUANTITY = re.compile(r"[\d\s+\-*/^(){}.,:]*")  # 4:15 (a time, a ratio) too
# One spelling per unit, so that "12 cm" and "12 centimeters" (or 12厘米) agree; this is spelling, not
# conversion: no unit ever becomes another.
_UNIT_NAMES = {
    **dict.fromkeys(("degree", "degrees", "度"), "°"),
    **dict.fromkeys(("℃",), "°C"),
    **dict.fromkeys(("℉",), "°F"),
    **dict.fromkeys(("centimeter", "centimeters", "厘米"), "cm"),
    **dict.fromkeys(("millimeter", "millimeters", "毫米"), "mm"),
    **dict.fromkeys(("meter", "meters", "米"), "m"),
    **dict.fromkeys(("kilometer", "kilometers", "千米", "公里"), "km"),
    **dict.fromkeys(("分米",), "dm"),
    **dict.fromkeys(("inch", "inches"), "in"),
    **dict.fromkeys(("foot", "feet"), "ft"),
    **dict.fromkeys(("yard", "yards"), "yd"),
    **dict.fromkeys(("mile", "miles"), "mi"),
    **dict.fromkeys(("hour", "hours", "小时"), "h"),
    **dict.fromkeys(("minute", "minutes", "分钟"), "min"),
    **dict.fromkeys(("second", "seconds", "秒"), "s"),
    **dict.fromkeys(("kilogram", "kilograms", "千克", "公斤"), "kg"),
    **dict.fromkeys(("gram", "grams", "克"), "g"),
    **dict.fromkeys(("liter", "liters", "litre", "litres"), "L"),
    **dict.fromkeys(("unit",), "units"),
    **dict.fromkeys(("dollar",), "dollars"),
    **dict.fromkeys(("cent",), "cents"),
    **dict.fromkeys(("平方米",), "m^2"),
    **dict.fromkeys(("平方厘米",), "cm^2"),
    **dict.fromkeys(("立方米",), "m^3"),
    **dict.fromkeys(("立方厘米",), "cm^3"),
}


def _roots(text: str) -> str:
    """``√x``, ``√{x}``, ``√(x)``, ``sqrt(x)`` -> ``\\sqrt{x}``."""
    text = _SQRT_WORD.sub("√", text)
    closing = _closing_brackets(text)
    out: list[str] = []
    i = 0
    while True:
        j = text.find("√", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j] + "\\sqrt")
        k = j + 1
        while k < len(text) and text[k] == " ":
            k += 1
        if k < len(text) and text[k] in "({":
            close = closing.get(k)
            if close is not None:
                out.append("{" + text[k + 1 : close] + "}")
                i = close + 1
                continue
        atom = _ROOT_ATOM.match(text, j + 1)
        if atom is not None:
            out.append("{" + atom.group(1) + "}")
            i = atom.end()
        else:
            i = j + 1


def _closing_brackets(text: str) -> dict[int, int]:
    """Where each ``(`` and ``{`` closes, in one pass (so many unclosed ones stay linear)."""
    stacks: dict[str, list[int]] = {"(": [], "{": []}
    pairs = {")": "(", "}": "{"}
    found: dict[int, int] = {}
    for position, char in enumerate(text):
        if char in stacks:
            stacks[char].append(position)
        elif char in pairs and stacks[pairs[char]]:
            found[stacks[pairs[char]].pop()] = position
    return found


def _thousands(text: str) -> str:
    """``12,345`` -> ``12345``, outside brackets only: ``(12,102)`` is an interval or a point."""
    out: list[str] = []
    depth, last = 0, 0
    for match in _THOUSANDS.finditer(text):
        before = text[last : match.start()]
        depth += sum(before.count(c) for c in "([{") - sum(before.count(c) for c in ")]}")
        out += [before, match.group(0).replace(",", "") if depth <= 0 else match.group(0)]
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _is_quantity(text: str) -> bool:
    """A plain quantity: digits, operators, roots, pi, fractions; not one that ends in an operator
    (``2^m`` is a power of m, not 2^ metres)."""
    if text.rstrip()[-1:] in ("+", "-", "*", "/", "^", "(", "{", ","):
        return False
    text = _QUANTITY_COMMANDS.sub(" 1 ", text)
    return bool(_QUANTITY.fullmatch(text)) and any(char.isdigit() for char in text)


def _unwrap(text: str) -> str:
    """``$x$``, ``$$x$$``, ``\\(x\\)``, ``\\[x\\]`` -> ``x``."""
    if len(text) > 1 and text[0] == "$" and text[-1] == "$":
        return text.strip("$").strip()
    if text[:2] in ("\\(", "\\[") and text[-2:] in ("\\)", "\\]"):
        return text[2:-2].strip()
    return text


def canonical(answer: str) -> Canonical:
    """The canonical form of one answer. Linear in its length, and cached (golds repeat, in a group and
    across batches): keyed by the answer's digest, within ``CACHE_BYTES`` whatever the answers' length."""
    key = text_digest(answer)
    form = _cache.get(key)
    if form is None:
        form = _canonical(answer)
        _cache.put(key, form)
    return form


CACHE_BYTES = 8 << 20  # the canonical forms held, together
_ENTRY_BYTES = 300  # what an entry costs besides its texts: the digest, the tuples, the LRU's links


def _form_bytes(form: Canonical) -> int:
    return _ENTRY_BYTES + sys.getsizeof(form.text) + (sys.getsizeof(form.unit) if form.unit else 0)


_cache: LRUCache[bytes, Canonical] = LRUCache(65_536, max_total=CACHE_BYTES, sizeof=_form_bytes)


def clear_cache() -> None:
    """Forget the cached canonical forms."""
    _cache.clear()


def _canonical(answer: str) -> Canonical:
    return _split_unit(prepared(answer))


# "2 & 3" outside a matrix is a list, never a cell Math-Verify may keep alone
_AMPERSAND = re.compile(r"(?<!\\)&")
_DOLLARS = re.compile(r"\\?\$")


def prepared(answer: str) -> str:
    """An answer's canonical text with its unit, if any, left on (what :func:`canonical` splits)."""
    text = _unwrap(answer.strip())
    if "$" in text:  # "$125$ miles": math marks inside an answer, and \$ for dollars
        text = _DOLLARS.sub("", text).strip()
    in_words = number_value(text)  # "twelve", "twenty-one": the extraction's rule (rewardkit.extract.words)
    if in_words is not None:
        return in_words
    text = text.translate(_OPERATORS)
    for sup, power in _SUPERSCRIPTS.items():
        text = text.replace(sup, power)
    text = _LATEX_COMMA.sub("", text)
    if "e" in text or "E" in text:
        text = _E_NOTATION.sub(
            lambda m: f"{m.group(1)}\\times 10^{{{m.group(2).replace('+', '')}{m.group(3)}}}", text
        )
    text = _thousands(text)
    if _SPACED_THOUSANDS.fullmatch(text):  # "1 000": thousands grouped by spaces (the whole answer only)
        text = text.replace(" ", "")
    if "√" in text or "sqrt" in text:
        text = _roots(text)
    if "π" in text or "pi" in text:
        text = _PI.sub(r"\\pi ", text)
    if "&" in text and "\\begin" not in text:
        text = _AMPERSAND.sub(",", text)
    if "st" in text or "nd" in text or "rd" in text or "th" in text:
        text = _ORDINAL.sub(r"\1", text)
    return text.strip().rstrip(".").strip()


# "3^{\\mathrm{rd}}", "2^{nd}", "4\\textsuperscript{th}", "21st": an ordinal is its number (the place asked)
_ORDINAL = re.compile(
    r"(?<![\w.])(\d+)\s*(?:\^\s*\{?\s*(?:\\(?:mathrm|text|textrm)\s*\{\s*)?(?:st|nd|rd|th)\s*\}?\s*\}?"
    r"|\\textsuperscript\s*\{\s*(?:st|nd|rd|th)\s*\}|(?:st|nd|rd|th)\b)"
)


def _split_unit(text: str) -> Canonical:
    for pattern, unit in ((_DEGREE_END, "°"), (_PERCENT_END, "%")):
        match = pattern.search(text)
        if match is not None and _is_quantity(text[: match.start()]):
            return Canonical(text[: match.start()].strip(), unit)
    match = _UNIT.search(text)
    if match is not None and match.start() > 0:
        before = text[: match.start()]
        value = _SPACING_END.sub("", before)
        name = match.group(1) or match.group(2)
        glued = match.group(2) is not None and not _set_apart(before, name)
        if (not _is_quantity(value) or glued) and not (
            len(text) <= MAX_NOUN_CHARS and _NOUN_UNIT.fullmatch(text)
        ):
            return Canonical(text)  # "\\frac{37}{4}m": a variable glued to a value, not a unit
        if _is_quantity(value) and not glued:
            name = _UNIT_NAMES.get(name, name)
            power = match.group(3) or {"²": "2", "³": "3"}.get(match.group(4) or "", "")
            return Canonical(value.strip(), name + (f"^{power}" if power else ""))
    written = _TEXT_UNIT.search(text)
    if written is not None and written.start() > 0 and _unit_words(written.group(1)):
        value = _SPACING_END.sub("", text[: written.start()])
        if _is_quantity(value):
            name = re.sub(r"[\s~]|\\[,;: !]", "", written.group(1))
            return Canonical(value.strip(), name + (f"^{written.group(2)}" if written.group(2) else ""))
    noun = _NOUN_UNIT.fullmatch(text) if len(text) <= MAX_NOUN_CHARS else None
    if noun is not None and _is_quantity(noun.group(1)) and _unit_words(noun.group(2)):
        return Canonical(noun.group(1).strip(), _noun(noun.group(2)))
    return Canonical(text)


# a noun after a quantity, as a unit: "7 crates", "8 meals", "3 red marbles" (two words at most, each of
# two letters or more, none a word of a sentence); compared as units are, singular and plural alike
MAX_NOUN_CHARS = 200  # a quantity with a noun after it is short
_NOUN_UNIT = re.compile(r"(.*?\d\}?)\s+([A-Za-z]{2,15}(?:\s+[A-Za-z]{2,15})?)")


def _noun(words: str) -> str:
    name = " ".join(words.lower().split())
    if name in ("percent", "per cent", "percentage", "pct"):
        return "%"
    if name.endswith(("xes", "ches", "shes", "sses")):
        return name[:-2]
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


# what \\text{} after a quantity holds when it is not a unit: a number word, i or e, or words of a sentence
_NOT_UNITS = frozenset(
    "million billion trillion thousand thousands hundred hundreds dozen dozens i e or and is not no "
    "more less than only times each per wrong right correct total of to the in at for by with from as".split()
)


def _unit_words(text: str) -> bool:
    """``km/s``, ``nm``, ``kg m^2``, ``apples``: one to three short words, none a number word or a word of
    a sentence (``\\text{ million}``, ``\\text{ or more}``, ``\\mathrm{i}`` are not units)."""
    words = [w for w in re.split(r"[\s~/·.,]|\\[,;: !]|\^-?\d", text) if w]
    return 0 < len(words) <= 3 and all(
        re.fullmatch(r"[A-Za-zμΩ°]{1,12}", w) and w.lower() not in _NOT_UNITS for w in words
    )


_SEPARATOR_END = re.compile(r"(?:\s|\\[,;: ]|~)$")
_SPACING_END = re.compile(r"(?:\s|\\[,;:! ]|~)+$")


def _set_apart(before: str, name: str) -> bool:
    """A bare unit written as a unit: after a space or a spacing command (``5 m``, ``5\\,m``), glued to a
    number (``10.8m``, ``12cm``, ``10米``), or a unit of several letters after a group (``4\\sqrt{3}cm``);
    never a single letter glued to a fraction or a group (``\\frac{37}{4}m``: a variable)."""
    if _SEPARATOR_END.search(before) or before[-1:].isdigit() or not name.isascii():
        return True
    return len(name) > 1 and not before[-1:].isalpha()


def units_agree(a: Canonical, b: Canonical) -> bool:
    """Two answers' units allow comparing their values: the same unit, or none written on one side."""
    return a.unit is None or b.unit is None or a.unit == b.unit


def has_unparsed(text: str) -> bool:
    """Text still holding symbols no normalisation read (non-ASCII); it is not equal to a plain number,
    whatever a parser that drops unknown symbols would make of it."""
    return not text.isascii()
