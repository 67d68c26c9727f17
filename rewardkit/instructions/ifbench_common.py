"""What the IFBench checks share: the punctuation IFBench strips, the robust rules' view of a text, and the
robust test for a response that is only filler.

IFBench (``allenai/IFBench`` at c94da02, ``instructions.py``) strips ASCII punctuation (Python's
``string.punctuation``) and splits on whitespace far more often than it tokenises; these helpers name those
steps once.

>>> strip_punct("'hello,' "), drop_punct("it's 3.5!")
('hello', 'its 35')
>>> filler("word " * 40), filler("a quick brown fox jumps over the lazy dog again and again")
(True, False)
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import Any

from rewardkit.instructions.args import integer, text
from rewardkit.instructions.base import Context
from rewardkit.instructions.text import normalise, split_sentences, word_tokens

__all__ = [
    "PUNCT",
    "count_word",
    "drop_punct",
    "filler",
    "keyword_at",
    "letters",
    "other_words",
    "span_args",
    "strip_punct",
    "view",
]

#: ASCII punctuation, as IFBench's ``''.join(string.punctuation)``
PUNCT = string.punctuation
_STRIP = PUNCT + " "
_DROP = str.maketrans("", "", PUNCT)


def strip_punct(word: str) -> str:
    """``word`` without leading and trailing ASCII punctuation and spaces."""
    return word.strip(_STRIP)


def drop_punct(text: str) -> str:
    """``text`` with every ASCII punctuation character removed."""
    return text.translate(_DROP)


def view(text: str, ctx: Context) -> str:
    """The text a word or letter check reads: as given under the reference rules, normalised (NFKC, invisible
    characters removed, Cyrillic/Greek look-alikes folded) under the robust rules."""
    return normalise(text) if ctx.robust else text


def letters(text: str) -> bool:
    """Whether ``text`` holds a letter or a digit (a word, not only marks)."""
    return any(c.isalnum() for c in text)


def filler(text: str, *, least: int = 10, ratio: float = 0.2) -> bool:
    """Whether ``text`` is repeated filler: at least ``least`` words of which under ``ratio`` are distinct
    (honest prose of a few hundred words keeps well over a third of its words distinct)."""
    words = [w for w in (w.strip(_STRIP) for w in text.lower().split()) if w]
    return len(words) >= least and len(set(words)) < ratio * len(words)


@lru_cache(maxsize=1024)
def _word_re(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)


def count_word(text: str, word: str) -> int:
    """How often ``word`` occurs in ``text`` as a whole word (not inside a longer word), ignoring case.

    >>> count_word("Cat, cat! concatenate", "cat")
    2
    """
    return len(_word_re(word).findall(text))


def other_words(text: str, skip: set[str] | frozenset[str], enough: int | None = None) -> int:
    """How many words of ``text`` (letters, punctuation stripped, lower-cased) are not in ``skip``: what a
    response says besides the words a constraint asks for (``skip`` lower-case); counting stops at ``enough``
    (a check asks whether there are at least that many).

    >>> other_words("Emma and Liam met at noon.", {"emma", "liam"}), other_words("a b c d", set(), enough=2)
    (4, 2)
    """
    n = 0
    for w in text.lower().split():
        b = w.strip(_STRIP)
        if b and b not in skip and any(map(str.isalpha, b)):
            n += 1
            if n == enough:
                break
    return n


def span_args(a: dict[str, Any]) -> dict[str, Any]:
    """A span of the request: ``prompt_to_repeat``, ``n_start`` (default 0) and ``n_end``."""
    return {
        "prompt_to_repeat": text(a, "prompt_to_repeat"),
        "n_start": integer(a, "n_start", default=0),
        "n_end": integer(a, "n_end"),
    }


def keyword_at(t: str, a: dict[str, Any]) -> bool:
    """Whether the ``m``-th NLTK word token of the ``n``-th sentence (IFEval's splitter) is ``keyword``."""
    parts = split_sentences(t)
    if len(parts) < a["n"]:
        return False
    words = word_tokens(parts[a["n"] - 1])
    return len(words) >= a["m"] and bool(words[a["m"] - 1] == a["keyword"])
