"""IFBench's 29 IF-RLVR training constraints (``source="ifbench-train"``): the ids IFBench's README names as
its new training constraints, whose checkers live in open-instruct's ``open_instruct/IFEvalG/instructions.py``
(copying, hyphenated sentences, bracketed words, single keywords, paragraphs, first and last words, bigrams,
banned marks, letter and word counts, palindromes, start and end words).

``rules="reference"`` follows open-instruct's checkers (a keyword there is a regular expression, searched
case-insensitively; a pattern that does not compile is ``False`` here); ``rules="robust"`` counts keywords as
whole words, reads the normalised text, and closes the hacks each spec's ``robust`` line names.

>>> from rewardkit.instructions.base import TABLE, Context
>>> check = TABLE["keywords:palindrome"].check
>>> check("I saw a racecar.", {}, Context(rules="robust"))
True
>>> check("I am here.", {}, Context(rules="reference"))
True
>>> check("I am here.", {}, Context(rules="robust"))  # 'I' reads the same reversed
False
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rewardkit.instructions.args import integer, relation, text
from rewardkit.instructions.base import BadKwargs, Context, instruction
from rewardkit.instructions.ifbench_common import (
    count_word,
    keyword_at,
    letters,
    span_args,
    strip_punct,
    view,
)
from rewardkit.instructions.text import split_sentences, word_tokens

__all__: list[str] = []

_SRC = "ifbench-train"


def _regex_count(pattern: str, t: str) -> int:
    """``len(re.findall(keyword, value, flags=re.IGNORECASE))``; -1 when the pattern does not compile."""
    try:
        return len(re.findall(pattern, t, flags=re.IGNORECASE))
    except re.error:
        return -1


def _keyword_count(t: str, keyword: str, ctx: Context) -> int:
    return count_word(view(t, ctx), keyword) if ctx.robust else _regex_count(keyword, t)


def _prompt(a: dict[str, Any]) -> dict[str, Any]:
    return {"prompt_to_repeat": text(a, "prompt_to_repeat")}


def _same(x: str, y: str) -> bool:
    return x.strip().lower() == y.strip().lower()


def _phrase(a: dict[str, Any]) -> dict[str, Any]:
    phrase = text(a, "phrase").strip()
    if len(phrase.split()) < 3:
        raise BadKwargs("phrase must have at least three words")
    return {"phrase": phrase, "small_n": integer(a, "small_n", lo=1, hi=100)}


@instruction(
    "copy:repeat_phrase",
    rule="the phrase appears small_n times (first word ... last word), each time with exactly one word "
    "changed",
    read=_phrase,
    robust="the phrase's first and last words are matched literally (the reference reads them as a regular "
    "expression, so 'C++' or 'a+' never match)",
    source=_SRC,
)
def _repeat_phrase(t: str, a: dict[str, Any], ctx: Context) -> bool:
    want = a["phrase"].split()
    first, last = (re.escape(want[0]), re.escape(want[-1])) if ctx.robust else (want[0], want[-1])
    try:
        found = re.findall(rf"{first} .*? {last}", t)
    except re.error:
        return False
    if len(found) != a["small_n"]:
        return False
    for phrase in found:
        words = phrase.split()
        if len(words) != len(want):
            return False
        changed = [i for i, (x, y) in enumerate(zip(words, want, strict=True)) if x != y]
        if len(changed) != 1:
            return False
    return True


@instruction(
    "copy:copy",
    rule="the response is the request, verbatim (case and outer space ignored)",
    read=_prompt,
    source=_SRC,
)
@instruction(
    "copy:copying_simple",
    rule="the response is the request, verbatim (case and outer space ignored)",
    read=_prompt,
    source=_SRC,
)
def _copy(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _same(t, a["prompt_to_repeat"])


@instruction(
    "new:copy_span_idx",
    rule="the response is the request's characters n_start to n_end (end excluded; case and outer space "
    "ignored)",
    read=span_args,
    source=_SRC,
)
def _copy_span(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _same(t, a["prompt_to_repeat"][a["n_start"] : a["n_end"]])


@instruction(
    "detectable_format:sentence_hyphens",
    rule="the pieces between hyphens are the sentences (IFEval's splitter), with no space around a hyphen",
    robust="at least two sentences joined by a hyphen (one sentence without a hyphen passes the reference)",
    source=_SRC,
)
def _sentence_hyphens(t: str, a: dict[str, Any], ctx: Context) -> bool:
    gold = split_sentences(t.replace("-", " "))
    pieces = t.split("-")
    if ctx.robust and len(pieces) < 2:
        return False
    return all(p.strip() == p and p == g for p, g in zip(pieces, gold, strict=False))


@instruction(
    "keywords:no_adjacent_consecutive",
    rule="no two adjacent whitespace words start with consecutive letters of the alphabet (a then b)",
    robust="normalised text (a look-alike first letter is that letter)",
    source=_SRC,
)
def _no_adjacent(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = view(t, ctx).split()
    return all(ord(y[0].lower()) - ord(x[0].lower()) != 1 for x, y in zip(words, words[1:], strict=False))


@instruction(
    "detectable_format:square_brackets",
    rule="every whitespace word starts with '[' and ends with ']'",
    robust="each bracketed word holds a letter or digit, and there is one ('[]' is not a word)",
    source=_SRC,
)
def _square_brackets(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = t.split()
    if ctx.robust and (not words or not all(letters(w) for w in words)):
        return False
    return all(w.startswith("[") and w.endswith("]") for w in words)


def _keyword(a: dict[str, Any]) -> dict[str, Any]:
    return {"keyword": text(a, "keyword").strip()}


@instruction(
    "keywords:word_once",
    rule="keyword occurs exactly once (a case-insensitive regular-expression search)",
    read=_keyword,
    robust="keyword counted as a whole word in the normalised text",
    source=_SRC,
)
def _word_once(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _keyword_count(t, a["keyword"], ctx) == 1


def _keyword_frequency(a: dict[str, Any]) -> dict[str, Any]:
    return {**_keyword(a), "frequency": integer(a, "frequency"), "relation": relation(a)}


@instruction(
    "keywords:word_count_different_numbers",
    rule="keyword occurs (case-insensitive regex) fewer than / at least frequency times, as relation says",
    read=_keyword_frequency,
    robust="keyword counted as a whole word in the normalised text",
    source=_SRC,
)
def _word_count_numbers(t: str, a: dict[str, Any], ctx: Context) -> bool:
    n = _keyword_count(t, a["keyword"], ctx)
    if n < 0:
        return False
    return _compare(n, a["frequency"], a["relation"])


@instruction(
    "keywords:exclude_word_harder",
    rule="' keyword ' (with a space each side) does not occur",
    read=_keyword,
    robust="the keyword as a whole word in any case, at the start or the end or next to punctuation, fails",
    source=_SRC,
)
def _exclude(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust:
        return count_word(view(t, ctx), a["keyword"]) == 0
    return f" {a['keyword']} " not in t


def _two_paragraphs(parts: list[str], robust: bool) -> bool:
    count = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i in (0, len(parts) - 1):
                count -= 1
            else:
                return False
        elif robust and not letters(p):
            return False
    return count == 2


@instruction(
    "paragraphs:paragraphs",
    rule="two paragraphs separated by the markdown divider *** (empty ends ignored)",
    robust="each paragraph holds a letter or digit",
    source=_SRC,
)
def _paragraphs(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _two_paragraphs(re.split(r"\s?\*\*\*\s?", t), ctx.robust)


@instruction(
    "paragraphs:paragraphs2",
    rule="two paragraphs separated by a blank line (\\n\\n; empty ends ignored)",
    robust="each paragraph holds a letter or digit",
    source=_SRC,
)
def _paragraphs2(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _two_paragraphs(t.split("\n\n"), ctx.robust)


def _word_arg(name: str) -> Any:
    def read(a: dict[str, Any]) -> dict[str, Any]:
        value = a.get(name)
        if isinstance(value, list | tuple) and value:
            value = value[0]  # open-instruct takes the first of a list
        return {name: text({name: value}, name).strip()}

    return read


@instruction(
    "first_word:first_word_sent",
    rule="every sentence (IFEval's splitter) starts with first_word (case-insensitive, punctuation kept)",
    read=_word_arg("first_word"),
    robust="normalised text",
    source=_SRC,
)
def _first_word_sent(t: str, a: dict[str, Any], ctx: Context) -> bool:
    for s in split_sentences(view(t, ctx)):
        if not s.strip() or s.split()[0].strip().lower() != a["first_word"].lower():
            return False
    return True


@instruction(
    "first_word:first_word_answer",
    rule="the response's first whitespace word is first_word (case-insensitive)",
    read=_word_arg("first_word"),
    robust="normalised text",
    source=_SRC,
)
def _first_word_answer(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = view(t, ctx).split()
    return bool(words) and words[0].lower() == a["first_word"].lower()


def _bare(word: str) -> str:
    return re.sub(r"[^\w\s]", "", word.strip()).lower()


@instruction(
    "last_word:last_word_sent",
    rule="every sentence's last whitespace word, punctuation removed, is last_word (case-insensitive)",
    read=_word_arg("last_word"),
    robust="normalised text",
    source=_SRC,
)
def _last_word_sent(t: str, a: dict[str, Any], ctx: Context) -> bool:
    for s in split_sentences(view(t, ctx)):
        if not s.strip() or _bare(s.split()[-1]) != a["last_word"].lower():
            return False
    return True


@instruction(
    "last_word:last_word_answer",
    rule="the response's last whitespace word, punctuation removed, is last_word (case-insensitive)",
    read=_word_arg("last_word"),
    robust="normalised text",
    source=_SRC,
)
def _last_word_answer(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = view(t, ctx).split()
    return bool(words) and _bare(words[-1]) == a["last_word"].lower()


@instruction(
    "detectable_format:bigram_wrapping",
    rule="words come in pairs, each pair '<<first' ... 'second>>' (a last odd word is free)",
    robust="every word of a pair holds a letter or digit ('<<>> <<>>' wraps nothing)",
    source=_SRC,
)
def _bigrams(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = t.split()
    if ctx.robust and (not words or not all(letters(w) for w in words)):
        return False
    return all(words[i].startswith("<<") and words[i + 1].endswith(">>") for i in range(0, len(words) - 1, 2))


@instruction(
    "copy:copying_multiple",
    rule="the request N times, separated by '******' (case and outer space ignored)",
    read=lambda a: {**_prompt(a), "N": integer(a, "N", lo=1, hi=100)},
    source=_SRC,
)
def _copying_multiple(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = t.split("******")
    return len(parts) == a["N"] and all(_same(p, a["prompt_to_repeat"]) for p in parts)


@instruction(
    "punctuation:punctuation_dot",
    rule="no '.' anywhere",
    robust="normalised text: a full-width, ideographic or halfwidth dot, or an ellipsis character, is a dot",
    source=_SRC,
)
def _no_dot(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return "." not in view(t, ctx) and not (ctx.robust and any(c in t for c in "\u3002\uff61"))


@instruction(
    "punctuation:punctuation_exclamation",
    rule="no '!' anywhere",
    robust="normalised text: a full-width '!', the look-alike letter 'ǃ' or an emoji '❗' is a '!'",
    source=_SRC,
)
def _no_bang(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return "!" not in view(t, ctx) and not (ctx.robust and any(c in t for c in "\u01c3\u2757\u2755"))


@instruction(
    "count:lowercase_counting",
    rule="at most N lower-case words in all (the prompt says each lower-case word at most N times)",
    read=lambda a: {"N": integer(a, "N")},
    robust="each distinct lower-case word at most N times, as the prompt says",
    source=_SRC,
)
def _lowercase_counting(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = re.findall(r"\b[a-z]+\b", view(t, ctx))
    if ctx.robust:
        return all(n <= a["N"] for n in Counter(words).values())
    return len(words) <= int(a["N"])


def _compare(n: int, bound: int, how: str) -> bool:
    return n < bound if how == "less than" else n >= bound


@instruction(
    "letters:letter_counting",
    rule="the count of ASCII letters is fewer than / at least N, as relation says",
    read=lambda a: {"N": integer(a, "N"), "relation": relation(a)},
    robust="normalised text (look-alike letters are letters)",
    source=_SRC,
)
def _letter_counting(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _compare(len(re.findall(r"[a-zA-Z]", view(t, ctx))), a["N"], a["relation"])


def _letter(a: dict[str, Any]) -> dict[str, Any]:
    letter = text(a, "letter").strip().lower()
    if len(letter) != 1 or not "a" <= letter <= "z":
        raise BadKwargs(f"letter must be one ASCII letter, got {letter!r}")
    return {
        "letter": letter,
        "let_frequency": integer(a, "let_frequency"),
        "let_relation": relation(a, "let_relation"),
    }


@instruction(
    "letters:letter_counting2",
    rule="the letter (either case) occurs fewer than / at least let_frequency times, as let_relation says",
    read=_letter,
    robust="normalised text (look-alike letters are letters)",
    source=_SRC,
)
def _letter_counting2(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _compare(view(t, ctx).lower().count(a["letter"]), a["let_frequency"], a["let_relation"])


@instruction(
    "count:counting_composition",
    rule="three paragraphs split by ***, each of n_sent sentences of n_words NLTK word tokens",
    read=lambda a: {"n_sent": integer(a, "n_sent", lo=1), "n_words": integer(a, "n_words", lo=1)},
    robust="the divider may be '* * *' as the prompt writes it, and an empty first or last piece is skipped "
    "(the reference counts it and fails)",
    source=_SRC,
)
def _counting_composition(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = re.split(r"\s?\*\s?\*\s?\*\s?" if ctx.robust else r"\s?\*\*\*\s?", t)
    count = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i not in (0, len(parts) - 1):
                return False
            count -= 1
            if ctx.robust:
                continue
        sents = split_sentences(p)
        if len(sents) != a["n_sent"] or any(len(word_tokens(s)) != a["n_words"] for s in sents):
            return False
    return count == 3


@instruction(
    "count:count_unique",
    rule="no NLTK word token (punctuation tokens included) occurs twice",
    robust="only words count (a second comma is not a repeated word) and case is ignored ('The' = 'the')",
    source=_SRC,
)
def _count_unique(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = word_tokens(view(t, ctx))
    if ctx.robust:
        words = [w.lower() for w in words if letters(w)]
        if not words:
            return False
    return len(words) == len(set(words))


@instruction(
    "count:count_increment_word",
    rule="keyword1 occurs once and keyword2 twice (case-insensitive regex counts)",
    read=lambda a: {k: text(a, k).strip() for k in ("keyword1", "keyword2")},
    robust="keywords counted as whole words in the normalised text",
    source=_SRC,
)
def _count_increment(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return _keyword_count(t, a["keyword1"], ctx) == 1 and _keyword_count(t, a["keyword2"], ctx) == 2


@instruction(
    "keywords:palindrome",
    rule="some whitespace word reads the same reversed",
    robust="a palindrome of at least three letters ('I', 'a' or '--' are not palindromes)",
    source=_SRC,
)
def _palindrome(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = view(t, ctx).split()
    if ctx.robust:
        words = [strip_punct(w).lower() for w in words]
        return any(len(w) >= 3 and w.isalpha() and len(set(w)) > 1 and w == w[::-1] for w in words)
    return any(w == w[::-1] for w in words)


def _kw_nm(a: dict[str, Any]) -> dict[str, Any]:
    return {**_word_arg("keyword")(a), "n": integer(a, "n", lo=1), "m": integer(a, "m", lo=1)}


@instruction(
    "keywords:keyword_specific_position",
    rule="the m-th NLTK word token of the n-th sentence (IFEval's splitter) is keyword (case-sensitive)",
    read=_kw_nm,
    source=_SRC,
)
def _keyword_position(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return keyword_at(t, a)


@instruction(
    "keywords:start_end",
    rule="the first and last NLTK word tokens are the same (case-insensitive), at least two tokens",
    robust="those tokens are words, not punctuation ('. anything .' starts and ends with '.')",
    source=_SRC,
)
def _start_end(t: str, a: dict[str, Any], ctx: Context) -> bool:
    words = word_tokens(view(t, ctx))
    if len(words) < 2 or (ctx.robust and not letters(words[0])):
        return False
    return bool(words[0].lower() == words[-1].lower())
