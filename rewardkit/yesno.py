"""Yes/no questions answered in words (:mod:`rewardkit.choices` asks these when a row's options are Yes and
No and the completion names no option): a reply that opens with Yes or No, and a short statement that
implies one (``Teal is not the largest slice.`` is No).

>>> _leading_yes_no("Yes, the bus is behind the car.", {"A": "Yes", "B": "No"})
'A'
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rewardkit.extract.markers import TAKEN_BACK

_SPACES = re.compile(r"\s+")
_MATH_MARKS = re.compile(r"\$|\\[,;:! ]|\\left|\\right|\\text\s*\{([^{}]*)\}|\*\*")

# words that make a sentence a guess rather than a choice: "Maybe it is D.", "It could be B or it could be C."
_HEDGE = re.compile(
    r"\b(?:maybe|might|could|perhaps|possibly|either|not sure|unsure|guess|any of them|one of them)\b",
    re.IGNORECASE,
)


def _plain(text: str) -> str:
    text = _MATH_MARKS.sub(lambda m: m.group(1) or "", text)
    return _SPACES.sub(" ", text).strip().rstrip(".").strip().casefold()


_LEADING_YES_NO = re.compile(r"""[\s*#"']*(yes|no)\b(?=[*"']*(?:\s*[,.!;:]|\s*$))""", re.IGNORECASE)


_TAKEN_BACK = re.compile(rf"\b(?:{TAKEN_BACK})\b", re.IGNORECASE)


def _leading_yes_no(text: str, options: Mapping[str, str]) -> str | None:
    """The Yes or No option when the text opens with that word (``Yes, the bus is behind the car.``), as
    models answer a yes/no question and as yes/no benchmarks read them (MME reads the first word); only for
    options that include both Yes and No, and only when nothing later named an option, the other word
    never stands alone, and the text neither hedges nor takes it back (``Yes. Or no.``, ``Yes, let me
    check. Actually, ...``)."""
    letters = {_plain(option): letter for letter, option in options.items()}
    if "yes" not in letters or "no" not in letters:
        return None
    match = _LEADING_YES_NO.match(text)
    if match is None or _HEDGE.search(text) or _TAKEN_BACK.search(text):
        return None
    word = match.group(1).casefold()
    other = "no" if word == "yes" else "yes"
    if re.search(rf"\b{other}\b", text[match.end() :], re.IGNORECASE):
        return None
    return letters[word]


MAX_STATEMENT_CHARS = 300  # a yes/no answered by a statement: a sentence or two, no working
_NEGATION = re.compile(r"\b(?:not|never|neither|nor|none|no)\b|n[’']t\b", re.IGNORECASE)
_YES_NO_WORD = re.compile(r"\b(?:yes|no)\b", re.IGNORECASE)
# a statement that declines or doubts is no answer ("I cannot tell whether ...", "It is unclear ...", "The
# text does not provide ..."), nor one about the question or its options ("The correct option letter is D.")
_DECLINES = re.compile(
    r"\b(?:cannot|can[’']t|unable|impossible|unclear|not clear|not possible|not sure|uncertain|sorry"
    r"|determine|difficult|hard to|depends|information|provided?|question|options?|letter|answer|choice"
    r"|not (?:visible|shown|given)|as an ai|determin\w*|enough|tell|access|available|load\w*|see|make out"
    r"|detail|resolution)\b",
    re.IGNORECASE,
)


# where a statement says it looked ("Based on the image, ...", "According to the graph, ..."): a frame, not a
# doubt about the image (what _DECLINES looks for in the rest)
_FRAMING = re.compile(
    r"\A(?:based on|according to|from|in|looking at)\s+(?:the|this)\s+(?:given\s+|provided\s+)?"
    r"(?:image|picture|photo|graph|chart|plot|figure|table|diagram|map)\b(?:\s+(?:alone|above|shown))?\s*,\s*",
    re.IGNORECASE,
)


# a statement about the picture itself describes it ("The image shows a dog.", "This chart does not give
# the values."): it restates no question; the picture as a place ("the roughest color in the image") is fine
_DESCRIBES = re.compile(
    r"(?:the|this)\s+(?:image|picture|photo|graph|chart|plot|figure|diagram|table|map)\s+"
    r"(?:shows?|depicts?|displays?|is|was|contains?|has|does|did|illustrates?|presents?|gives?|provides?"
    r"|includes?|features?|appears?|seems?|lacks?)\b",
    re.IGNORECASE,
)


# a statement that sets two things against each other ("The larger window is a rectangle, while the smaller
# is an octagon.") answers "Are they alike?" with No and "Is one a rectangle?" with Yes: without the
# question it implies neither
_CONTRASTS = re.compile(r"\b(?:while|whereas|but|unlike|however|on the other hand)\b", re.IGNORECASE)


def _implied_yes_no(text: str, options: Mapping[str, str]) -> str | None:
    """The Yes or No option a short statement implies when the text answers a yes/no question by
    restating it (``Teal is not the largest slice.`` for "Is Teal the largest?" is No; ``There are fewer
    red trucks than blue bicycles.`` is Yes), as MathVista's extraction reads such answers: No when its
    first sentence is negated, else Yes. Only for options that include both Yes and No, a statement of at
    most :data:`MAX_STATEMENT_CHARS` with neither word, no question, and nothing declining or doubting (``I
    cannot tell from the image``, ``It is unclear``, hedges), describing the picture itself (``The image
    shows a dog.``) or contrasting two things (``A is round, while B is square.``: the polarity depends on
    the question). A frame such as ``Based on the image,`` is read past.

    >>> yes_no = {"A": "Yes", "B": "No"}
    >>> [_implied_yes_no(t, yes_no) for t in ("Teal is not the largest slice.", "There are fewer cars.",
    ...                                       "I cannot tell from the picture.", "Maybe it is larger.")]
    ['B', 'A', None, None]
    """
    letters = {_plain(option): letter for letter, option in options.items()}
    if "yes" not in letters or "no" not in letters:
        return None
    statement = _FRAMING.sub("", text.strip().strip("*").strip(), count=1)
    if (
        not statement
        or len(statement) > MAX_STATEMENT_CHARS
        or not statement.endswith(".")
        or "?" in statement
        or _YES_NO_WORD.search(statement)
        or _DECLINES.search(statement)
        or _DESCRIBES.match(statement)
        or _CONTRASTS.search(statement)
        or _HEDGE.search(statement)
        or any(c.isdigit() for c in statement)
    ):
        return None
    first = re.split(r"(?<=[.!])\s", statement, maxsplit=1)[0]
    return letters["no" if _NEGATION.search(first) else "yes"]
