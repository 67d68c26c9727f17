"""SQuAD's answer normalisation and its three comparisons: exact match, substring match, token F1.

The rules are SQuAD v1.1's official evaluation script's (``normalize_answer``, ``exact_match_score``,
``f1_score``, ``metric_max_over_ground_truths``), written here from that definition:

1. lower case (``str.lower``);
2. every ASCII punctuation character (``string.punctuation``) removed, not replaced: ``U.S.`` is ``us``,
   ``rock-n-roll`` is ``rocknroll``; other punctuation (``’``, ``–``) stays, as it does there;
3. the words ``a``, ``an``, ``the`` (whole words, by ``\\b``) replaced by a space;
4. white space collapsed: the words joined by one space.

Exact match is equality of the normalised texts; token F1 is over the normalised words as multisets
(``Counter`` intersection: a word counts at most as often as the other side has it), 0 when no word is
shared. Search-R1's sub-EM (veRL's ``subem_check``) is "the normalised gold is a substring of the normalised
answer" (characters, not words: ``paris`` is in ``parisian``). Over several golds each is the best one.

Where rewardkit departs from the official script (both on purpose, both in :mod:`rewardkit.qa`): an answer
that normalises to nothing scores 0 in every mode (the script's EM gives 1 when a gold normalises to
nothing too, and sub-EM's empty gold is in every answer), and a gold that normalises to nothing is not a
gold (dropped; a row with none left cannot be judged).

>>> normalise("The  U.S. Army's   1st-Division!")
'us armys 1stdivision'
>>> exact("Paris", "paris."), contains("in Paris, France", "Paris")
(True, True)
>>> f1("the Eiffel tower", "Eiffel Tower, Paris")
0.8
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

__all__ = ["contains", "exact", "f1", "normalise"]

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalise(text: str) -> str:
    """SQuAD's ``normalize_answer``: lower case, ASCII punctuation removed, articles removed, white space
    collapsed (in that order)."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


#: golds repeat across a GRPO group (one row, many completions): their normal forms are kept
normalise_gold = functools.lru_cache(maxsize=8192)(normalise)


def exact(answer: str, gold: str) -> bool:
    """Whether the two texts are equal once normalised (nothing equals an empty normal form here)."""
    a = normalise(answer)
    return bool(a) and a == normalise(gold)


def contains(answer: str, gold: str) -> bool:
    """Search-R1's sub-EM: the normalised gold is a substring of the normalised answer (both non-empty)."""
    a, g = normalise(answer), normalise(gold)
    return bool(a) and bool(g) and g in a


def f1(answer: str, gold: str) -> float:
    """Token F1 of the normalised texts (SQuAD's ``f1_score``); 0.0 when they share no word."""
    return token_f1(normalise(answer).split(), normalise(gold).split())


def token_f1(answer: list[str], gold: list[str]) -> float:
    """Token F1 of two word lists, as multisets."""
    if not answer or not gold:
        return 0.0
    same = sum((Counter(answer) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(answer), same / len(gold)
    return 2 * precision * recall / (precision + recall)
