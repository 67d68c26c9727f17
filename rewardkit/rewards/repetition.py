"""N-gram repetition penalty (ms-swift's ``repetition``, open-r1's ``get_repetition_penalty_reward``,
arXiv 2502.03373 appendix C.2).

The penalty is ``max_penalty * (1 - distinct n-grams / n-grams)``; 0.0 for an empty completion or one with
fewer words than ``ngram_size``. Words are the lower-cased whitespace-separated tokens, as in ms-swift 4.6's
``RepetitionPenalty`` (tested against it). Text without spaces (Chinese, Japanese) would be one "word" there
and never penalised; here each CJK character is a word of its own, so ``好好好好好`` repeats. On text with no
CJK character the values equal ms-swift's.

Cost: linear in the text, whatever ``ngram_size`` (its cap is 64). N-grams are never built: words become
integer ids and each window of ``ngram_size`` ids one polynomial hash modulo the Mersenne prime 2**127 - 1
(rolling, so one multiplication a word), with a base drawn at random per process; distinct n-grams are
distinct hashes. Two different n-grams share a hash with probability at most ``(ngram_size - 1) / (2**127 -
1)`` (a nonzero polynomial of that degree has that many roots), so below 1e-21 for every pair of a 64 MiB
request: the count is exact in practice, and a collision could only lower one completion's penalty by one
n-gram's share. Memory is the text, one id per distinct word and one hash per distinct n-gram. The text is
read in chunks of about 64,000 characters, between which the request deadline is checked.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rewardkit.core import ItemReward, Verdict, check_deadline, reward_value
from rewardkit.registry import register
from rewardkit.spec import CallerParam

__all__ = ["Repetition", "ngram_counts", "words"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_HAS_CJK = re.compile(rf"[{_CJK}]")


def words(text: str) -> list[str]:
    """Lower-cased words: whitespace-separated, with each CJK character a word of its own.

    >>> words("The cat, THE cat"), words("好好学习")
    (['the', 'cat,', 'the', 'cat'], ['好', '好', '学', '习'])
    """
    lowered = text.lower()
    return _WORD.findall(lowered) if _HAS_CJK.search(lowered) else lowered.split()


CHUNK_CHARS = 1 << 16  # characters read between two deadline checks (at most ~33,000 words)
_CUT = re.compile(r"\s")
_CUT_CJK = re.compile(rf"[\s{_CJK}]")


def _word_chunks(text: str) -> Iterator[list[str]]:
    """:func:`words` of ``text``, a chunk of about :data:`CHUNK_CHARS` characters at a time: each chunk
    ends just after a white space (or a CJK character, a word of its own), so no word is cut."""
    lowered = text.lower()  # the whole text at once: lower-casing depends on the neighbours (final sigma)
    cjk = _HAS_CJK.search(lowered) is not None
    cut = _CUT_CJK if cjk else _CUT
    start = 0
    while start < len(lowered):
        found = cut.search(lowered, start + CHUNK_CHARS)
        end = len(lowered) if found is None else found.end()
        chunk = lowered[start:end]
        yield _WORD.findall(chunk) if cjk else chunk.split()
        start = end


_MODULUS = (1 << 127) - 1  # a Mersenne prime
_BASE = 2 + secrets.randbelow(_MODULUS - 3)  # per process: no text can be written to collide


def ngram_counts(text: str, n: int) -> tuple[int, int]:
    """``(distinct n-grams, n-grams)`` of the :func:`words` of ``text``, counted by rolling hash (see the
    module's docstring): linear in the text for every ``n``, and without building one n-gram.

    >>> ngram_counts("the cat the cat the cat", 2), ngram_counts("one two", 3)
    ((2, 5), (0, 0))
    """
    vocab: dict[str, int] = {}
    seen: set[int] = set()
    add, known = seen.add, vocab.get
    base, modulus, top = _BASE, _MODULUS, pow(_BASE, n - 1, _MODULUS)
    window: list[int] = []  # the ids of the last n words (fewer before the first n-gram)
    h, count = 0, 0
    for chunk in _word_chunks(text):
        check_deadline("repetition")
        ids = []
        for word in chunk:
            x = known(word)
            if x is None:
                x = vocab[word] = len(vocab)
            ids.append(x)
        count += len(ids)
        seq = window + ids
        k = len(window)
        while k < n and k < len(seq):  # the first n-gram, a word at a time
            h = (h * base + seq[k]) % modulus
            k += 1
            if k == n:
                add(h)
        for out, x in zip(seq[k - n :], seq[k:], strict=False):  # then: one in, one out
            h = ((h - out * top) * base + x) % modulus
            add(h)
        window = seq[-n:]
    return len(seen), max(0, count - n + 1)


@register("repetition", caller_params={"ngram_size": CallerParam(cap=64), "max_penalty": CallerParam()})
@dataclass(frozen=True)
class Repetition(ItemReward):
    """Penalty for repeated n-grams: ``max_penalty`` times the share of repeated n-grams.

    Args:
        ngram_size: n (ms-swift ``--repetition_n_grams`` 3).
        max_penalty: the penalty of a completion that is one n-gram repeated (``--repetition_max_penalty``
            -1.0); must not be positive.
    """

    ngram_size: int = 3
    max_penalty: float = -1.0

    def __post_init__(self) -> None:
        n = self.ngram_size
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"repetition: ngram_size must be a positive integer, got {n!r}")
        reward_value("repetition", "max_penalty", self.max_penalty)
        if self.max_penalty > 0:
            raise ValueError(f"repetition: max_penalty must be a number <= 0, got {self.max_penalty!r}")

    def params(self) -> dict[str, Any]:
        return {"ngram_size": self.ngram_size, "max_penalty": self.max_penalty}

    def score_one(self, text: str, *values: Any) -> Verdict:
        distinct, total = ngram_counts(text, self.ngram_size)
        if not total:  # empty, or fewer words than ngram_size
            return Verdict(0.0)
        return Verdict((1 - distinct / total) * self.max_penalty)
