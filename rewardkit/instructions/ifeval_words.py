"""IFEval's keyword, language, case and length instructions (see :mod:`~rewardkit.instructions.ifeval`).

>>> from rewardkit.instructions.base import TABLE, Context
>>> spec = TABLE["keywords:forbidden_words"]
>>> spec.check("No b\\u0430d words.", spec.read({"forbidden_words": ["bad"]}), Context(rules="robust"))
False
"""

from __future__ import annotations

import re
from typing import Any

from rewardkit.instructions.args import relation
from rewardkit.instructions.base import Context, instruction
from rewardkit.instructions.ifeval_common import (
    LEAST,
    SRC,
    compare,
    content,
    count_arg,
    filler,
    language_args,
    letter_args,
    nth_paragraph_args,
    pattern,
    pieces_count,
    reader,
    view_of,
    word_arg,
    words_arg,
)
from rewardkit.instructions.text import count_words, language, normalise, sentences, word_tokens

__all__: list[str] = []


# --- keywords -------------------------------------------------------------------------------------------


@instruction(
    "keywords:existence",
    rule="every keyword occurs (case-insensitive)",
    read=reader(keywords=words_arg),
    robust="whole words on the normalised text (a substring of another word does not count)",
    source=SRC,
)
def _existence(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    return all(pattern(view_of(k, ctx), whole=ctx.robust).search(view) for k in a["keywords"])


@instruction(
    "keywords:frequency",
    rule="keyword occurs less than / at least frequency times (case-insensitive)",
    read=reader(keyword=word_arg, frequency=count_arg(), relation=lambda a, n: relation(a, n)),
    robust="whole-word occurrences on the normalised text; 'at least' fails on repeated filler",
    source=SRC,
)
def _frequency(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    n = len(pattern(view_of(a["keyword"], ctx), whole=ctx.robust).findall(view))
    if ctx.robust and a["relation"] == LEAST and a["frequency"] > 0 and filler(view):
        return False
    return compare(n, a["relation"], a["frequency"])


@instruction(
    "keywords:forbidden_words",
    rule="none of forbidden_words occurs as a whole word (case-insensitive)",
    read=reader(forbidden_words=words_arg),
    robust="read on the normalised text (look-alike letters and zero-width characters cannot hide a word)",
    source=SRC,
)
def _forbidden(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    return not any(pattern(view_of(w, ctx), whole=True).search(view) for w in set(a["forbidden_words"]))


@instruction(
    "keywords:letter_frequency",
    rule="letter occurs less than / at least let_frequency times (case-insensitive)",
    read=letter_args,
    robust="counted on the normalised text (look-alike letters count as the letter they imitate); 'at least' "
    "fails on the letter alone or repeated filler (fewer than 3 distinct words)",
    source=SRC,
)
def _letter_frequency(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    if ctx.robust and a["let_relation"] == LEAST and a["let_frequency"] > 0:
        if filler(view) or len(set(re.findall(r"\w+", view.casefold()))) < 3:
            return False
    n = view.lower().count(a["letter"])
    return compare(n, a["let_relation"], a["let_frequency"])


# --- language and case ----------------------------------------------------------------------------------


@instruction(
    "language:response_language",
    rule="langdetect (seeded) says the answer is in language; an undetectable text passes",
    read=language_args,
    robust="an undetectable text (no letters, only digits or marks) fails",
    source=SRC,
)
def _response_language(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = language(t)
    if found is None:
        return not ctx.robust
    return bool(found == a["language"])


@instruction(
    "change_case:english_capital",
    rule="the answer is all upper case (str.isupper) and langdetect says English; undetectable passes",
    robust="read on the normalised text; an undetectable text fails",
    source=SRC,
)
def _english_capital(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not view_of(t, ctx).isupper():
        return False
    found = language(t)
    return found == "en" if found is not None else not ctx.robust


@instruction(
    "change_case:english_lowercase",
    rule="the answer is all lower case (str.islower) and langdetect says English; undetectable passes",
    robust="read on the normalised text; an undetectable text fails",
    source=SRC,
)
def _english_lowercase(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not view_of(t, ctx).islower():
        return False
    found = language(t)
    return found == "en" if found is not None else not ctx.robust


@instruction(
    "change_case:capital_word_frequency",
    rule="all-capital tokens (nltk.word_tokenize) number less than / at least capital_frequency",
    read=reader(capital_frequency=count_arg(), capital_relation=lambda a, n: relation(a, n)),
    robust="tokens read on the normalised text; 'at least' fails on repeated filler",
    source=SRC,
)
def _capital_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    if ctx.robust and a["capital_relation"] == LEAST and a["capital_frequency"] > 0 and filler(view):
        return False
    return compare(capital_words(view), a["capital_relation"], a["capital_frequency"])


def capital_words(t: str) -> int:
    """How many of ``word_tokens(t)`` are all capitals, tokenising only the whitespace-separated pieces that
    hold a capital letter (a token without one cannot be all capitals, and the tokenizer splits each piece
    on its own: same count, a fraction of the work on ordinary prose; bench/ifeval_parity.py checks it).

    >>> capital_words("NASA's plan: GO to the MOON, then Mars."), capital_words("no capitals here")
    (3, 0)
    """
    pieces = [p for p in t.split() if any(map(str.isupper, p))]
    return sum(1 for w in word_tokens(" ".join(pieces)) if w.isupper()) if pieces else 0


# --- length ---------------------------------------------------------------------------------------------


@instruction(
    "length_constraints:number_sentences",
    rule="Punkt (nltk English) sentences number less than / at least num_sentences",
    read=reader(num_sentences=count_arg(), relation=lambda a, n: relation(a, n)),
    robust="'at least' counts only distinct sentences with a word in them and fails on repeated filler",
    source=SRC,
)
def _number_sentences(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = sentences(t)
    if ctx.robust and a["relation"] == LEAST:
        if a["num_sentences"] > 0 and filler(normalise(t)):
            return False
        return bool(pieces_count(normalise(s) for s in found) >= a["num_sentences"])
    return compare(len(found), a["relation"], a["num_sentences"])


@instruction(
    "length_constraints:number_words",
    rule="\\w+ words number less than / at least num_words",
    read=reader(num_words=count_arg(), relation=lambda a, n: relation(a, n)),
    robust="counted on the normalised text, an underscore separating words (thirty words joined by '_' are "
    "not one); 'at least' fails on repeated filler",
    source=SRC,
)
def _number_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx).replace("_", " ") if ctx.robust else t
    if ctx.robust and a["relation"] == LEAST and a["num_words"] > 0 and filler(view):
        return False
    return compare(count_words(view), a["relation"], a["num_words"])


def _star_paragraphs(t: str) -> list[str] | None:
    parts = re.split(r"\s?\*\*\*\s?", t)
    last = len(parts) - 1
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif 0 < i < last:
            return None  # an empty paragraph between two dividers
    return kept


@instruction(
    "length_constraints:number_paragraphs",
    rule="exactly num_paragraphs paragraphs split by the *** divider (an empty inner one fails)",
    read=reader(num_paragraphs=count_arg()),
    robust="each paragraph must hold a word and differ from the others (repeated or mark-only ones fail)",
    source=SRC,
)
def _number_paragraphs(t: str, a: dict[str, Any], ctx: Context) -> bool:
    kept = _star_paragraphs(t)
    if kept is None:
        return False
    if ctx.robust and pieces_count(normalise(p) for p in kept) != len(kept):
        return False
    return bool(len(kept) == a["num_paragraphs"])


def _first_word(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = []
    for ch in word:
        if ch in ".,?!'\"":
            break
        out.append(ch.lower())
    return "".join(out)


@instruction(
    "length_constraints:nth_paragraph_first_word",
    rule="exactly num_paragraphs non-empty blank-line paragraphs; paragraph nth starts with first_word",
    read=nth_paragraph_args,
    robust="normalised text; a block without a word ('---') is no paragraph; paragraphs differ; paragraph "
    "nth holds more than its first word",
    source=SRC,
)
def _nth_paragraph_first_word(t: str, a: dict[str, Any], ctx: Context) -> bool:
    nth, target = a["nth_paragraph"], a["first_word"]
    if ctx.robust:
        # paragraphs are blocks holding a word ('---' rules are not paragraphs); no two alike; paragraph nth
        # holds more than its first word
        kept = [p.strip() for p in normalise(t).split("\n\n") if content(p)]
        if nth > len(kept) or pieces_count(kept) != len(kept) or len(re.findall(r"\w+", kept[nth - 1])) < 2:
            return False
        return len(kept) == a["num_paragraphs"] and _first_word(kept[nth - 1]) == normalise(target)
    parts = t.split("\n\n")
    count = sum(1 for p in parts if p.strip())
    if nth > count:
        return False
    paragraph = parts[nth - 1].strip()
    if not paragraph:
        return False
    return bool(count == a["num_paragraphs"] and _first_word(paragraph) == target)
