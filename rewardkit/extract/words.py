r"""Whole numbers written as words: the one rule every reader of an answer applies (the prose readers of
:mod:`rewardkit.extract` and the comparison's normalisation, :mod:`rewardkit.verify.normalise`).

Written for how models write a whole number in words: ``twelve``, ``twenty-one`` / ``twenty one``, ``one
hundred and five`` / ``one hundred five``, ``a hundred``, ``twelve hundred``, ``two thousand three hundred
forty``, ``a dozen`` / ``three dozen``, with ``negative`` or ``minus`` before it. What is not a whole
number in words stays text: ordinals (``third``, ``twenty-first``: a position, or a fraction), fractions
(``two thirds``, ``one half``, ``two and a half``), decimals (``three point five``), plurals of scales
(``hundreds``, ``dozens``) and a word glued to another by a hyphen (``three-year-old``).

Two uses, one grammar:

- :func:`number_value`: the whole text is a number in words (a box, an answer block, "the answer is ..."):
  its value, ``one`` included.
- :func:`number_phrases`: the numbers in words inside a sentence, where a digit would have been read. A lone
  ``one`` is left out there (``the one on the left``, ``no one``; ``one hundred`` is read). The final
  sentence's value (:func:`~rewardkit.extract.values.sentence_answer`) and the lenient last value are the
  last of them when a sentence holds no digit or math; an answer phrase's value (``the answer is twelve,
  which is more than ten``) is read with them written in digits (:func:`with_digits`), so "twelve or
  thirteen" is a list, as "12 or 13" is.

>>> [number_value(t) for t in ("Twelve", "twenty-one", "one hundred and five", "a dozen", "minus five")]
['12', '21', '105', '12', '-5']
>>> [number_value(t) for t in ("third", "two thirds", "three point five", "twelve apples", "one")]
[None, None, None, None, '1']
>>> [value for _, _, value in number_phrases("Of the twenty-one boys, one hundred and five marbles.")]
['21', '105']
>>> number_phrases("The one on the left has two and a half, not three-year-olds.")
[]
"""

from __future__ import annotations

import re

__all__ = ["MAX_WORDS_CHARS", "number_phrases", "number_value", "with_digits"]

_SMALL = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
        " sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * n for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_SIGNS = ("negative", "minus")
#: every word a number in words is made of ("and" and "a" only where the grammar allows them)
_PARTS = frozenset((*_SMALL, *_TENS, *_SCALES, "hundred", "dozen", "and", "a"))
MAX_WORDS_CHARS = 200  # a longer text is no number in words


def _value(words: list[str]) -> int | None:
    """The whole number ``words`` (lower case) write, or ``None`` when they write none.

    A group below a thousand (``three hundred and forty-two``) times a scale, scales descending; ``and``
    only after ``hundred`` or a scale and before the rest; ``a`` only before ``hundred``, a scale or
    ``dozen``; ``dozen`` last, after a number below a hundred; ``zero`` alone."""
    total, group, last, scale = 0, 0, "", 10**15
    for i, word in enumerate(words):
        if word == "a":
            if i != 0 or len(words) == 1 or words[1] not in ("hundred", "dozen", *_SCALES):
                return None
            group, last = 1, "a"
        elif word == "and":
            if last not in ("hundred", "scale") or i == len(words) - 1:
                return None
            last = "and"
        elif word in _SMALL or word in _TENS:
            n = _SMALL.get(word, _TENS.get(word, 0))
            if word == "zero" and len(words) > 1:
                return None
            if last == "tens" and (word in _TENS or not 0 < n < 10):
                return None  # "twenty thirty", "twenty twelve"
            if last in ("small", "a", "dozen"):
                return None  # "twelve three": two numbers, not one
            group += n
            last = "tens" if word in _TENS else "small"
        elif word == "hundred":
            if last not in ("small", "tens", "a") or not 0 < group < 100:
                return None
            group, last = group * 100, "hundred"
        elif word in _SCALES:
            if last not in ("small", "tens", "hundred", "a") or not 0 < group < 1000:
                return None
            if _SCALES[word] >= scale:  # "a thousand thousand": scales descend
                return None
            total, group, last, scale = total + group * _SCALES[word], 0, "scale", _SCALES[word]
        elif word == "dozen":
            if last not in ("small", "tens", "a") or not 0 < group < 100 or total or i != len(words) - 1:
                return None
            group, last = group * 12, "dozen"
        else:
            return None
    return total + group if last and last not in ("and", "a") else None


_WORD = re.compile(r"[A-Za-z]+")
_WRAPPED = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{([^{}]*)\}")
_WHOLE = re.compile(r"[A-Za-z]+(?:(?:[ \t]+|-)[A-Za-z]+)*")


def number_value(text: str) -> str | None:
    """The whole number ``text`` writes in words, as digits (``"twenty-one"`` -> ``"21"``); ``None`` when
    it is anything else. Case, surrounding ``$``, bold marks, ``\\text{}`` and a full stop do not matter.

    >>> number_value("$\\\\text{Twelve}$."), number_value("**one thousand two hundred**")
    ('12', '1200')
    >>> number_value("twelve three"), number_value("the answer"), number_value("12")
    (None, None, None)
    """
    if len(text) > MAX_WORDS_CHARS:
        return None
    stripped = _WRAPPED.sub(r"\1", text.strip().strip("$*").strip()).strip().rstrip(".").strip().strip("$*")
    if not _WHOLE.fullmatch(stripped):
        return None
    words = _WORD.findall(stripped.lower())
    sign = ""
    if words and words[0] in _SIGNS:
        sign, words = "-", words[1:]
    value = _value(words)
    if value is None:
        return None
    return f"{sign}{value}" if value else "0"


# what follows a number in words that makes it part of something else than a whole number: a fraction ("two
# thirds", "two and a half"), a decimal ("three point five"), a plural scale ("two hundreds"); and a word
# glued on by a hyphen or an apostrophe ("three-year-old", "one's")
_NOT_WHOLE_AFTER = re.compile(
    r"[\w'’-]|[ \t]+(?:and[ \t]+[A-Za-z]+[ \t]+)?(?:half|halves|thirds?|quarters?|hundreds|thousands|millions"
    r"|billions|dozens|point|(?:four|fif|six|seven|eigh|nin|ten|eleven|twelf|(?:thir|four|fif|six|seven|eigh|"
    r"nine)teen|(?:twen|thir|for|fif|six|seven|eigh|nine)tie|hundred|thousand|million|billion)ths?)\b",
    re.IGNORECASE,
)
_NOT_WHOLE_BEFORE = re.compile(r"(?:[\w'’-]|\bpoint[ \t]+)\Z", re.IGNORECASE)
_SIGN_BEFORE = re.compile(r"\b(?:negative|minus)[ \t]+\Z", re.IGNORECASE)
_GAP = re.compile(r"[ \t]+|-")  # between two words of one number
MAX_PHRASES = 64  # numbers in words read from one text (a sentence rarely holds more)
MAX_RUN = 16  # words of one number at most ("two thousand three hundred and forty-five" is 7): linear time


def number_phrases(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, digits)`` of each whole number written in words in ``text``, in order: the longest
    run of number words that makes one number, then the next (``twelve three`` is two numbers). A lone
    ``one`` is no number here (a pronoun, mostly), nor is a run that :data:`_NOT_WHOLE_AFTER` follows.

    >>> number_phrases("So a dozen eggs and minus three, twelve three.")
    [(3, 10, '12'), (20, 31, '-3'), (33, 39, '12'), (40, 45, '3')]
    """
    words = [m for m in _WORD.finditer(text) if m.group().lower() in _PARTS]
    found: list[tuple[int, int, str]] = []
    i = 0
    while i < len(words) and len(found) < MAX_PHRASES:
        run = [words[i]]  # the words joined to words[i] by spacing or a hyphen only
        while (
            len(run) < MAX_RUN
            and i + len(run) < len(words)
            and _GAP.fullmatch(text, run[-1].end(), words[i + len(run)].start())
        ):
            run.append(words[i + len(run)])
        lowered = [m.group().lower() for m in run]
        for size in range(len(run), 0, -1):  # the longest start of the run that writes one number
            value = _value(lowered[:size])
            if value is not None:
                break
        else:
            i += 1
            continue
        start, end = run[0].start(), run[size - 1].end()
        i += size
        if lowered[:size] == ["one"] or _NOT_WHOLE_BEFORE.search(text, max(0, start - 16), start):
            continue
        if _NOT_WHOLE_AFTER.match(text, end):
            continue
        sign = _SIGN_BEFORE.search(text, max(0, start - 12), start)
        if sign is not None and value:
            found.append((sign.start(), end, f"-{value}"))
        else:
            found.append((start, end, str(value)))
    return found


def with_digits(text: str) -> str:
    """``text`` with each number in words (:func:`number_phrases`) written in digits, so that the rules for
    digits read it (an answer phrase's value: ``twelve, which is more than ten``, ``twelve or thirteen``).

    >>> with_digits("twelve, which is more than ten"), with_digits("one hundred and five or the one left")
    ('12, which is more than 10', '105 or the one left')
    """
    found = number_phrases(text)
    if not found:
        return text
    parts, at = [], 0
    for start, end, digits in found:
        parts += [text[at:start], digits]
        at = end
    return "".join(parts) + text[at:]
