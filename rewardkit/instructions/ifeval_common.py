"""What IFEval's checks share (:mod:`~rewardkit.instructions.ifeval`): the pattern of a keyword, the robust
rules' tests for content, repeated pieces and filler, and the keyword-argument readers.

>>> pieces_count(["* a point", "*", "A point."]), content("---"), compare(3, "less than", 4)
(1, False, True)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from rewardkit.instructions.args import integer, relation, text, texts
from rewardkit.instructions.base import BadKwargs, Context
from rewardkit.instructions.text import normalise

__all__ = [
    "CONSTRAINED_OPTIONS",
    "LANGUAGES",
    "LEAST",
    "LESS",
    "PLAIN",
    "SRC",
    "compare",
    "end_phrase_args",
    "language_args",
    "letter_args",
    "nth_paragraph_args",
    "postscript_args",
    "repeat_args",
    "content",
    "count_arg",
    "filler",
    "piece_key",
    "pattern",
    "pieces_count",
    "reader",
    "view_of",
    "word_arg",
    "words_arg",
]

SRC = "ifeval"
LESS, LEAST = "less than", "at least"

#: the three answers ``detectable_format:constrained_response`` accepts (IFEval's options)
CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

#: the language codes IFEval's ``language:response_language`` asks for (its LANGUAGE_CODES keys)
LANGUAGES = frozenset(
    "en es pt ar hi fr ru de ja it bn uk th ur ta te bg ko pl he fa vi ne sw kn mr gu pa ml fi".split()
)

_WORDCHAR = re.compile(r"\w")
# a keyword, marker or splitter the reference puts into a regular expression: read as one only when it cannot
# carry a quantifier, a group or a class (the dot stays a wildcard, as in the reference)
PLAIN = re.compile(r"[\w\s'.,:;!?&/-]*")


@lru_cache(maxsize=4096)
def pattern(word: str, *, whole: bool = False, raw: bool = True) -> re.Pattern[str]:
    """The case-insensitive pattern for ``word``: the reference's raw regular expression when ``raw`` and the
    word is plain (:data:`PLAIN`), else the escaped word; ``whole`` bounds it by non-word characters.

    >>> bool(pattern("cat", whole=True).search("concatenate")), bool(pattern("cat").search("concatenate"))
    (False, True)
    >>> pattern("a(b+)+").pattern
    'a\\\\(b\\\\+\\\\)\\\\+'
    """
    body = word if raw and PLAIN.fullmatch(word) else re.escape(word)
    if whole:
        body = r"(?<!\w)(?:" + body + r")(?!\w)"
    return re.compile(body, re.IGNORECASE)


def content(piece: str) -> bool:
    """Whether a piece of an answer holds a word character (a letter or a digit), not only marks."""
    return _WORDCHAR.search(piece) is not None


def piece_key(piece: str) -> str:
    return " ".join(re.findall(r"\w+", piece.casefold()))


def pieces_count(pieces: Iterable[str]) -> int:
    """The robust count of a list of pieces (bullets, sections, paragraphs, highlights): a piece counts when
    it holds a word character and is not a repeat (case, spacing and punctuation aside) of an earlier one.

    >>> pieces_count(["A point.", "", "***", "a point", "Another."])
    2
    """
    seen: set[str] = set()
    for piece in pieces:
        key = piece_key(piece)
        if key:
            seen.add(key)
    return len(seen)


def filler(t: str, *, least: int = 12) -> bool:
    """Whether ``t`` is repeated filler: at least ``least`` words, and under 30% of its runs of four words
    distinct or under 8% of its words distinct. Honest text stays far above both: among IFBench's 294 sample
    outputs the lowest are 55% (a templated list) and 19% (a long one); a word or a sentence said over and
    over falls far below.

    >>> filler("word " * 50), filler("The cat sat. " * 10), filler("a quick brown fox jumped over a dog")
    (True, True, False)
    """
    words = re.findall(r"\w+", t.casefold())
    n = len(words)
    if n < least:
        return False
    grams = {tuple(words[i : i + 4]) for i in range(n - 3)}
    return len(grams) < 0.3 * (n - 3) or len(set(words)) < 0.08 * n


def compare(n: int, rel: str, threshold: int) -> bool:
    return n < threshold if rel == LESS else n >= threshold


def view_of(t: str, ctx: Context) -> str:
    return normalise(t) if ctx.robust else t


# --- argument readers -------------------------------------------------------------------------------------


def reader(**fields: Callable[[dict[str, Any], str], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def read(args: dict[str, Any]) -> dict[str, Any]:
        return {name: get(args, name) for name, get in fields.items()}

    return read


def count_arg(lo: int = 0) -> Callable[[dict[str, Any], str], int]:
    return lambda a, n: integer(a, n, lo=lo)


def word_arg(a: dict[str, Any], n: str) -> str:
    return text(a, n).strip()


def words_arg(a: dict[str, Any], n: str) -> list[str]:
    return [w.strip() for w in texts(a, n)]


def letter_args(args: dict[str, Any]) -> dict[str, Any]:
    letter = args.get("letter")
    if not isinstance(letter, str) or len(letter) != 1 or not ("a" <= letter.lower() <= "z"):
        raise BadKwargs(f"letter must be one ASCII letter, got {letter!r}")
    return {
        "letter": letter.lower(),
        "let_frequency": integer(args, "let_frequency"),
        "let_relation": relation(args, "let_relation"),
    }


def language_args(args: dict[str, Any]) -> dict[str, Any]:
    code = text(args, "language").strip()
    if code not in LANGUAGES:
        raise BadKwargs(
            f"language must be one of IFEval's codes ({', '.join(sorted(LANGUAGES))}), got {code!r}"
        )
    return {"language": code}


def nth_paragraph_args(args: dict[str, Any]) -> dict[str, Any]:
    num = integer(args, "num_paragraphs", lo=1)
    nth = integer(args, "nth_paragraph", lo=1)
    if nth > num:
        raise BadKwargs(f"nth_paragraph ({nth}) must be at most num_paragraphs ({num})")
    return {"num_paragraphs": num, "nth_paragraph": nth, "first_word": text(args, "first_word").lower()}


def postscript_args(args: dict[str, Any]) -> dict[str, Any]:
    return {"postscript_marker": text(args, "postscript_marker").strip()}


def end_phrase_args(args: dict[str, Any]) -> dict[str, Any]:
    return {"end_phrase": text(args, "end_phrase").strip()}


def repeat_args(args: dict[str, Any]) -> dict[str, Any]:
    # a missing prompt_to_repeat is an error in the reference (it raises); the robust rules fall back on the
    # row's prompt, so the check decides (see _repeat_prompt)
    if "prompt_to_repeat" in args:
        return {"prompt_to_repeat": text(args, "prompt_to_repeat")}
    return {}
