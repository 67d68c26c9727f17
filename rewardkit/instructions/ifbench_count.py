"""IFBench's counting and ratio constraints (``count:*``, ``ratio:*``): words, unique words, stop words,
sentence types, conjunctions, person names, trigram overlap, numbers, punctuation, pronouns, keywords.

``rules="reference"`` follows IFBench's ``instructions.py`` at c94da02 (a division by zero there is ``False``
here); ``rules="robust"`` reads the normalised text and closes the hacks each spec's ``robust`` line names.

>>> from rewardkit.instructions.base import TABLE, Context
>>> check = TABLE["count:keywords_multiple"].check
>>> kw = {"keyword1": "cat", "keyword2": "dog", "keyword3": "owl", "keyword4": "bee", "keyword5": "ant"}
>>> text = "My cat met a dog, a dog, an owl, owl, owl, " + "bee " * 5 + "ant " * 7
>>> check(text, kw, Context(rules="reference")), check(text, kw, Context(rules="robust"))
(True, True)
>>> stuffed = text + " concatenate"  # 'cat' inside another word
>>> check(stuffed, kw, Context(rules="reference")), check(stuffed, kw, Context(rules="robust"))
(False, True)
"""

from __future__ import annotations

import re
from typing import Any

from rewardkit.instructions.args import integer, number, text
from rewardkit.instructions.base import Context, instruction
from rewardkit.instructions.ifbench_common import drop_punct, filler, letters, other_words, strip_punct, view
from rewardkit.instructions.text import count_words, split_sentences, stopwords

__all__: list[str] = []

_SRC = "ifbench"


def _n(name: str, lo: int = 0) -> Any:
    return lambda a: {name: integer(a, name, lo=lo)}


def _words(a: dict[str, Any]) -> dict[str, Any]:
    lo = integer(a, "min_words")
    hi = integer(a, "max_words")
    return {"min_words": lo, "max_words": hi}


@instruction(
    "count:word_count_range",
    rule="between min_words and max_words words (\\w+ runs)",
    read=_words,
    robust="repeated filler (under a fifth of the words distinct) fails; an underscore separates words "
    "(words joined by '_' are not one)",
    source=_SRC,
)
def _word_count_range(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = view(t, ctx).replace("_", " ") if ctx.robust else t
    if ctx.robust and filler(t):
        return False
    return bool(a["min_words"] <= count_words(t) <= a["max_words"])


@instruction(
    "count:unique_word_count",
    rule="at least N distinct lower-cased whitespace words, punctuation stripped",
    read=_n("N"),
    robust="a token of punctuation alone is not a word (the reference counts the empty word)",
    source=_SRC,
)
def _unique_word_count(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = {strip_punct(w) for w in view(t, ctx).lower().split()}
    if ctx.robust:
        words = {w for w in words if letters(w)}
    return len(words) >= int(a["N"])


@instruction(
    "ratio:stop_words",
    rule="stop words (NLTK's English list) are at most percentage% of the \\w+ words",
    read=lambda a: {"percentage": number(a, "percentage", lo=0, hi=100)},
    robust="repeated filler fails",
    source=_SRC,
)
def _stop_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = view(t, ctx)
    tokens = re.findall(r"\w+", t)
    if not tokens or (ctx.robust and filler(t)):
        return False
    stop = stopwords()
    share = sum(1 for w in tokens if w.lower() in stop) / len(tokens) * 100
    return bool(share <= a["percentage"])


def _kinds(t: str) -> tuple[int, int, int]:
    parts = split_sentences(t)
    return (
        sum(1 for s in parts if s.endswith(".")),
        sum(1 for s in parts if s.endswith("?")),
        sum(1 for s in parts if s.endswith("!")),
    )


@instruction(
    "ratio:sentence_type",
    rule="sentences ending in '.' are exactly twice those ending in '?' (IFEval's splitter)",
    robust="at least one question (the reference passes a text with no '.' or '?' sentence at all)",
    source=_SRC,
)
def _sentence_type(t: str, a: dict[str, Any], ctx: Context) -> bool:
    dot, ask, _ = _kinds(t)
    return dot == 2 * ask and (ask > 0 or not ctx.robust)


@instruction(
    "ratio:sentence_balance",
    rule="as many sentences end in '.' as in '?' as in '!'",
    robust="at least one of each (the reference passes a text with none)",
    source=_SRC,
)
def _sentence_balance(t: str, a: dict[str, Any], ctx: Context) -> bool:
    dot, ask, bang = _kinds(t)
    return dot == ask == bang and (dot > 0 or not ctx.robust)


_CONJUNCTIONS = ("and", "but", "for", "nor", "or", "so", "yet")
_CONJUNCTION_SET = frozenset(_CONJUNCTIONS)


@instruction(
    "count:conjunctions",
    rule="at least small_n distinct coordinating conjunctions (and but for nor or so yet)",
    read=_n("small_n"),
    robust="a conjunction counts once whatever its case and punctuation (the reference counts 'and', 'And,' "
    "and 'and.' as three), and the response says something else (at least 3 other words)",
    source=_SRC,
)
def _conjunctions(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = set()
    for word in view(t, ctx).split():
        bare = strip_punct(word).lower()
        if bare in _CONJUNCTIONS:
            found.add(bare if ctx.robust else word)
    if ctx.robust and other_words(view(t, ctx), _CONJUNCTION_SET, enough=3) < 3:
        return False
    return len(found) >= int(a["small_n"])


# IFBench's fixed list of person names (the prompt names them; re-typed from its instructions.py)
_NAMES = (
    "Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte Alexander Amelia "
    "Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen Abigail Gabriel Ella Jacob Scarlett "
    "Nathan Victoria Elijah Layla Nicholas Audrey David Hannah Christopher Penelope Thomas Nora Andrew Aria "
    "Joseph Claire Ryan Stella Jonathan"
).split()
_NAME_SET = frozenset(n.lower() for n in _NAMES)
_NAME_WORD = re.compile(rf"(?<![^\W_])({'|'.join(_NAMES)})(?![^\W_])")


@instruction(
    "count:person_names",
    rule="at least N distinct names from IFBench's list of 50 appear",
    read=_n("N"),
    robust="a name counts as a whole word ('Ava' in 'Avalanche' or 'Mia' in 'Miami' is not a name), and a "
    "bare list of names fails (at least 3 other words)",
    source=_SRC,
)
def _person_names(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = view(t, ctx)
    if ctx.robust:
        if other_words(t, _NAME_SET, enough=3) < 3:
            return False
        return len(set(_NAME_WORD.findall(t))) >= int(a["N"])
    return sum(1 for n in _NAMES if n in t) >= int(a["N"])


def _overlap_args(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "reference_text": text(a, "reference_text"),
        "percentage": number(a, "percentage", lo=0, hi=100),
    }


def _trigrams(s: str) -> set[str]:
    return {s[i : i + 3] for i in range(len(s) - 2)}


@instruction(
    "ratio:overlap",
    rule="character trigrams shared with reference_text are percentage% (±2) of the response's trigrams",
    read=_overlap_args,
    source=_SRC,
)
def _overlap(t: str, a: dict[str, Any], ctx: Context) -> bool:
    mine = _trigrams(t)
    if not mine:
        return False
    share = len(mine & _trigrams(a["reference_text"])) / len(mine) * 100
    return bool(a["percentage"] - 2 <= share <= a["percentage"] + 2)


@instruction(
    "count:numbers",
    rule="exactly N runs of digits once ASCII punctuation is removed (3.14 and 1,000 are one number each)",
    read=_n("N"),
    robust="the numbers alone fail (a word besides them)",
    source=_SRC,
)
def _numbers(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust and other_words(view(t, ctx), frozenset(), enough=1) < 1:
        return False
    return len(re.findall(r"\d+", drop_punct(view(t, ctx)))) == int(a["N"])


@instruction(
    "count:punctuation",
    rule="uses . , ! ? ; : and an interrobang (?!, !? or ‽); the interrobang's marks do not count for . ! ?",
    robust="the marks punctuate words: a response of marks alone fails (at least 3 words)",
    source=_SRC,
)
def _punctuation(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not ("!?" in t or "?!" in t or "‽" in t) or (ctx.robust and other_words(t, frozenset(), enough=3) < 3):
        return False
    rest = t.replace("?!", "", 1)
    if len(rest) == len(t):
        rest = t.replace("!?", "", 1)
    return {".", ",", "!", "?", ";", ":"} <= set(rest)


_PRONOUNS = frozenset(
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she "
    "her hers herself it its itself they them their theirs themselves".split()
)


@instruction(
    "count:pronouns",
    rule="at least N personal pronouns (a '/' separates words; punctuation removed)",
    read=_n("N"),
    robust="pronouns alone or repeated as filler fail (a word besides them)",
    source=_SRC,
)
def _pronouns(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust and (filler(view(t, ctx)) or other_words(view(t, ctx), _PRONOUNS, enough=1) < 1):
        return False
    words = drop_punct(view(t, ctx).replace("/", " ").lower()).split()
    return sum(1 for w in words if w in _PRONOUNS) >= int(a["N"])


def _five(a: dict[str, Any]) -> dict[str, Any]:
    return {f"keyword{i}": text(a, f"keyword{i}").strip() for i in range(1, 6)}


_TIMES = (1, 2, 3, 5, 7)


@instruction(
    "count:keywords_multiple",
    rule="keyword1..keyword5 appear exactly 1, 2, 3, 5 and 7 times (case-insensitive substring counts)",
    read=_five,
    robust="a keyword counts as a whole word, not inside another word ('cat' in 'concatenate'), and the "
    "keywords alone fail (at least 5 other words)",
    source=_SRC,
)
def _keywords_multiple(t: str, a: dict[str, Any], ctx: Context) -> bool:
    low = view(t, ctx).lower()
    if ctx.robust and other_words(low, {a[f"keyword{i}"].lower() for i in range(1, 6)}, enough=5) < 5:
        return False
    for i, times in enumerate(_TIMES, start=1):
        word = a[f"keyword{i}"].lower()
        if ctx.robust:
            found = len(re.findall(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", low))
        else:
            found = low.count(word)
        if found != times:
            return False
    return True


@instruction(
    "count:words_japanese",
    rule="every N-th whitespace word (punctuation stripped; digits and empty words skipped) has a kana or "
    "kanji",
    read=_n("N", lo=1),
    robust="at least N words (a response shorter than N has no N-th word to check)",
    source=_SRC,
)
def _words_japanese(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = t.split()
    if ctx.robust and len(words) < a["N"]:
        return False
    for i, word in enumerate(words):
        w = strip_punct(word)
        if (i + 1) % a["N"] == 0 and w and not w.isdigit() and not _JAPANESE.search(w):
            return False
    return True


_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@instruction(
    "ratio:sentence_words",
    rule="exactly three sentences (IFEval's splitter) of the same number of characters",
    robust="the three sentences share no word (the prompt asks for all different words; the reference "
    "does not look)",
    source=_SRC,
)
def _sentence_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(view(t, ctx))
    if len(parts) != 3 or len({len(s.strip()) for s in parts}) != 1:
        return False
    if ctx.robust:
        seen: set[str] = set()
        for s in parts:
            words = {strip_punct(w).lower() for w in s.split()} - {""}
            if words & seen or not words:
                return False
            seen |= words
    return True
