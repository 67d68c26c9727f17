"""IFBench's word and sentence constraints (``words:*``, ``sentence:*``): letters words start with, vowels,
consonant clusters, alliteration, palindromes, prime lengths, a leading verb, repeats, keywords in place,
syllable parity, chained sentences and paragraphs, growing sentences.

``rules="reference"`` follows IFBench's ``instructions.py`` at c94da02 (where it would raise on an odd
response, e.g. an empty first word, the verdict is ``False``); ``rules="robust"`` closes the hacks each spec's
``robust`` line names.

>>> from rewardkit.instructions.base import TABLE, Context
>>> check = TABLE["words:palindrome"].check
>>> honest = "level radar civic kayak refer rotor madam stats tenet racecar"
>>> check(honest, {}, Context(rules="robust")), check("level " * 10, {}, Context(rules="reference"))
(True, True)
>>> check("level " * 10, {}, Context(rules="robust"))  # one palindrome ten times
False
"""

from __future__ import annotations

import gc
import re
import string
import threading
import unicodedata
import warnings
from collections import Counter
from typing import Any

from rewardkit.instructions.args import integer, text
from rewardkit.instructions.base import Context, instruction
from rewardkit.instructions.ifbench_common import PUNCT, drop_punct, keyword_at, strip_punct, view
from rewardkit.instructions.text import sentences, split_sentences, word_tokens

__all__: list[str] = []

_SRC = "ifbench"
_ABC = string.ascii_lowercase


@instruction(
    "words:alphabet",
    rule="each word starts with the letter after the previous word's first letter, Z looping to A",
    robust="normalised text; at least two words",
    source=_SRC,
)
def _alphabet(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = drop_punct(view(t, ctx)).strip(PUNCT + " ").split()
    if not words or (ctx.robust and len(words) < 2):
        return False
    letter = words[0][0].lower()
    if letter not in _ABC:
        return False
    for word in words[1:]:
        w = strip_punct(word).lower()
        if not w:
            continue
        letter = _ABC[(_ABC.index(letter) + 1) % 26]
        if w[0] != letter:
            return False
    return True


def _plain_vowels(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


@instruction(
    "words:vowel",
    rule="one paragraph (no line break) using at most three of the vowels a e i o u",
    robust="normalised text with accents dropped ('é' is an 'e'); at least five words",
    source=_SRC,
)
def _vowel(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust:
        t = _plain_vowels(view(t, ctx))
    paragraphs = t.strip().split("\n")
    if len(paragraphs) != 1 or (ctx.robust and len(paragraphs[0].split()) < 5):
        return False
    return len(set(paragraphs[0].lower()) & set("aeiou")) <= 3


_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")


@instruction(
    "words:consonants",
    rule="every whitespace word has two adjacent consonants",
    source=_SRC,
)
def _consonants(t: str, a: dict[str, Any], ctx: Context) -> bool:
    for word in t.lower().split():
        if not any(x in _CONSONANTS and y in _CONSONANTS for x, y in zip(word, word[1:], strict=False)):
            return False
    return True


def _alliteration(sentence: str) -> int:
    words = [w for w in (w.lstrip(PUNCT + " ") for w in sentence.lower().split()) if w]
    score, run = 0, False
    for x, y in zip(words, words[1:], strict=False):
        if x[0] == y[0]:
            score += 1 if run else 2
            run = True
        else:
            run = False
    return score


@instruction(
    "sentence:alliteration_increment",
    rule="each sentence has more words in alliterative runs than the one before",
    robust="normalised text; at least two sentences (one sentence passes the reference vacuously)",
    source=_SRC,
)
def _alliteration_increment(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(view(t, ctx))
    if ctx.robust and len(parts) < 2:
        return False
    previous = -1
    for s in parts:
        score = _alliteration(s)
        if score <= previous:
            return False
        previous = score
    return True


@instruction(
    "words:palindrome",
    rule="at least 10 words (punctuation removed) that read the same reversed, each of 5 or more characters",
    robust="10 distinct palindromes of letters, not one letter repeated ('level' ten times or 'aaaaa' fail)",
    source=_SRC,
)
def _palindrome(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = drop_punct(view(t, ctx)).lower().split()
    found = [w for w in words if len(w) >= 5 and w == w[::-1]]
    if ctx.robust:
        found = list({w for w in found if w.isalpha() and len(set(w)) > 1})
    return len(found) >= 10


# IFBench's list stops at 97: a longer word is never of prime length there
_PRIMES = frozenset(n for n in range(2, 98) if all(n % d for d in range(2, n)))


@instruction(
    "words:prime_lengths",
    rule="every whitespace word (punctuation removed) has a prime number of characters",
    robust="normalised text; at least one word (the reference passes a response of punctuation alone)",
    source=_SRC,
)
def _prime_lengths(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = drop_punct(view(t, ctx)).split()
    if ctx.robust and not words:
        return False
    return all(len(w) in _PRIMES for w in words)


_tag_lock = threading.Lock()
_tagger: list[Any] = []


def _first_tag(s: str) -> str:
    """The part-of-speech tag of the first word of ``s`` by TextBlob's pattern tagger (a Brill-style tagger
    whose lexicon ships in the ``textblob`` wheel; NLTK's perceptron tagger data is in no package)."""
    if not _tagger:
        with _tag_lock:
            if not _tagger:
                # the first call loads the lexicon files, which TextBlob leaves to the collector to close
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ResourceWarning)
                    from textblob.en import tag

                    tag("Warm the tagger up.")
                    gc.collect()
                _tagger.append(tag)
    tagged = _tagger[0](s)
    return str(tagged[0][1]) if tagged else ""


@instruction(
    "words:start_verb",
    rule="the first word is tagged as a verb (VB*) by TextBlob's pattern tagger (NLTK's tagger data is in "
    "no package; see bench/README.md)",
    source=_SRC,
)
def _start_verb(t: str, a: dict[str, Any], ctx: Context) -> bool:
    head = t.strip()[:1000]  # the first word depends on the text's start only
    tokens = word_tokens(head)
    if not tokens or not tokens[0][:1].isalpha():
        return False
    first = sentences(head)[0]
    return "VB" in _first_tag(" ".join(first.split()[:12]))  # the tagger's context rules look a few words on


@instruction(
    "words:repeats",
    rule="no lower-cased word (punctuation removed) appears more than small_n times",
    read=lambda a: {"small_n": integer(a, "small_n", lo=1)},
    robust="normalised text (a look-alike letter does not make a second word)",
    source=_SRC,
)
def _repeats(t: str, a: dict[str, Any], ctx: Context) -> bool:
    counts = Counter(drop_punct(view(t, ctx).lower()).split())
    return all(c <= a["small_n"] for c in counts.values())


def _word_n(a: dict[str, Any]) -> dict[str, Any]:
    return {"word": text(a, "word"), "N": integer(a, "N", lo=1)}


@instruction(
    "sentence:keyword",
    rule="the N-th sentence (IFEval's splitter) contains word (case-insensitive substring)",
    read=_word_n,
    robust="normalised text; the keyword as a whole word",
    source=_SRC,
)
def _sentence_keyword(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(view(t, ctx))
    if len(parts) < a["N"]:
        return False
    target, word = parts[a["N"] - 1].lower(), a["word"].lower()
    if ctx.robust:
        return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", target) is not None
    return word in target


@instruction(
    "words:odd_even_syllables",
    rule="consecutive words (punctuation removed) alternate odd and even syllable counts (syllapy)",
    robust="normalised text; at least two words",
    source=_SRC,
)
def _odd_even(t: str, a: dict[str, Any], ctx: Context) -> bool:
    import syllapy

    words = drop_punct(view(t, ctx)).lower().split()
    if ctx.robust and len(words) < 2:
        return False
    parity = [syllapy.count(w) % 2 for w in words]
    return all(x != y for x, y in zip(parity, parity[1:], strict=False))


@instruction(
    "words:last_first",
    rule="each sentence's last word is the next sentence's first word (case-insensitive)",
    source=_SRC,
)
def _last_first(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(t)
    for here, after in zip(parts, parts[1:], strict=False):
        last = here.rstrip(PUNCT + " ").split()
        first = after.lstrip(PUNCT + " ").split()
        if not last or not first or last[-1].lower() != first[0].lower():
            return False
    return True


@instruction(
    "words:paragraph_last_first",
    rule="each non-empty line starts and ends with the same word (case-insensitive, punctuation stripped)",
    robust="each such line has at least two words, and there is one (a one-word line passes trivially)",
    source=_SRC,
)
def _paragraph_last_first(t: str, a: dict[str, Any], ctx: Context) -> bool:
    seen = False
    for paragraph in t.split("\n"):
        words = strip_punct(paragraph.strip().lower()).split()
        if not words:
            continue
        if words[0] != words[-1] or (ctx.robust and len(words) < 2):
            return False
        seen = True
    return seen or not ctx.robust


def _count(sentence: str) -> int:
    return len(drop_punct(sentence).strip().split())


@instruction(
    "sentence:increment",
    rule="each sentence has exactly small_n more words (punctuation removed) than the one before",
    read=lambda a: {"small_n": integer(a, "small_n")},
    robust="at least two sentences",
    source=_SRC,
)
def _increment(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(t)
    if not parts or (ctx.robust and len(parts) < 2):
        return False
    counts = [_count(s) for s in parts]
    return all(y == x + a["small_n"] for x, y in zip(counts, counts[1:], strict=False))


@instruction(
    "words:no_consecutive",
    rule="no two consecutive words (punctuation removed) start with the same letter",
    robust="normalised text (a look-alike first letter is that letter)",
    source=_SRC,
)
def _no_consecutive(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = drop_punct(view(t, ctx).lower()).split()
    return all(x[0] != y[0] for x, y in zip(words, words[1:], strict=False))


def _kw_nm(a: dict[str, Any]) -> dict[str, Any]:
    return {"keyword": text(a, "keyword").strip(), "n": integer(a, "n", lo=1), "m": integer(a, "m", lo=1)}


@instruction(
    "words:keywords_specific_position",
    rule="the m-th NLTK word token of the n-th sentence (IFEval's splitter) is keyword (case-sensitive)",
    read=_kw_nm,
    source=_SRC,
)
def _specific_position(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return keyword_at(t, a)


@instruction(
    "words:words_position",
    rule="the second and the second-to-last NLTK word tokens are keyword (case-sensitive)",
    read=lambda a: {"keyword": text(a, "keyword").strip()},
    source=_SRC,
)
def _words_position(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = word_tokens(t)
    return len(words) >= 2 and words[1] == words[-2] == a["keyword"]
