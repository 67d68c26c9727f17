"""IFEval's 25 instructions (Google's ``instruction_following_eval``, as ported to IFBench's
``ifbench/classic_instructions.py``), registered in the instruction table with ``source="ifeval"``.

``rules="reference"`` reproduces the reference checkers' verdicts, with three documented exceptions that
cannot be reproduced or must not be: where the reference draws a random value for a missing or out-of-range
argument, the instruction is ``bad_kwargs``; a keyword, marker or splitter the reference reads as a regular
expression is read as one only when it holds no quantifier or group (a hostile pattern could hang the
process), else literally; and ``langdetect`` is seeded (the reference's verdicts on short texts change run to
run).

``rules="robust"`` deviates where each spec's ``robust`` line says: words and letters are read on
:func:`~rewardkit.instructions.text.normalise`'s view, keywords are whole words, empty or repeated pieces
(bullets, sections, paragraphs, highlights, placeholders) do not count, and a response that is only the
constraint's skeleton fails.

>>> from rewardkit.instructions.base import TABLE, Context
>>> spec = TABLE["keywords:existence"]
>>> args = spec.read({"keywords": ["cat"]})
>>> [spec.check("A catalogue of dogs.", args, Context(rules=r)) for r in ("reference", "robust")]
[True, False]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from rewardkit.instructions.args import integer, relation, text, texts
from rewardkit.instructions.base import BadKwargs, Context, instruction
from rewardkit.instructions.text import (
    count_words,
    language,
    normalise,
    sentences,
    word_tokens,
)

__all__ = ["CONSTRAINED_OPTIONS", "LANGUAGES", "content", "filler", "pieces_count", "pattern"]

_SRC = "ifeval"
_LESS, _LEAST = "less than", "at least"

#: the three answers ``detectable_format:constrained_response`` accepts (IFEval's options)
CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

#: the language codes IFEval's ``language:response_language`` asks for (its LANGUAGE_CODES keys)
LANGUAGES = frozenset(
    "en es pt ar hi fr ru de ja it bn uk th ur ta te bg ko pl he fa vi ne sw kn mr gu pa ml fi".split()
)

_WORDCHAR = re.compile(r"\w")
# a keyword, marker or splitter the reference puts into a regular expression: read as one only when it cannot
# carry a quantifier, a group or a class (the dot stays a wildcard, as in the reference)
_PLAIN = re.compile(r"[\w\s'.,:;!?&/-]*")


@lru_cache(maxsize=4096)
def pattern(word: str, *, whole: bool = False, raw: bool = True) -> re.Pattern[str]:
    """The case-insensitive pattern for ``word``: the reference's raw regular expression when ``raw`` and the
    word is plain (:data:`_PLAIN`), else the escaped word; ``whole`` bounds it by non-word characters.

    >>> bool(pattern("cat", whole=True).search("concatenate")), bool(pattern("cat").search("concatenate"))
    (False, True)
    >>> pattern("a(b+)+").pattern
    'a\\\\(b\\\\+\\\\)\\\\+'
    """
    body = word if raw and _PLAIN.fullmatch(word) else re.escape(word)
    if whole:
        body = r"(?<!\w)(?:" + body + r")(?!\w)"
    return re.compile(body, re.IGNORECASE)


def content(piece: str) -> bool:
    """Whether a piece of an answer holds a word character (a letter or a digit), not only marks."""
    return _WORDCHAR.search(piece) is not None


def _key(piece: str) -> str:
    return " ".join(re.findall(r"\w+", piece.casefold()))


def pieces_count(pieces: Iterable[str]) -> int:
    """The robust count of a list of pieces (bullets, sections, paragraphs, highlights): a piece counts when
    it holds a word character and is not a repeat (case, spacing and punctuation aside) of an earlier one.

    >>> pieces_count(["A point.", "", "***", "a point", "Another."])
    2
    """
    seen: set[str] = set()
    for piece in pieces:
        key = _key(piece)
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


def _compare(n: int, rel: str, threshold: int) -> bool:
    return n < threshold if rel == _LESS else n >= threshold


def _view(t: str, ctx: Context) -> str:
    return normalise(t) if ctx.robust else t


# --- argument readers -------------------------------------------------------------------------------------


def _reader(**fields: Callable[[dict[str, Any], str], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def read(args: dict[str, Any]) -> dict[str, Any]:
        return {name: get(args, name) for name, get in fields.items()}

    return read


def _count(lo: int = 0) -> Callable[[dict[str, Any], str], int]:
    return lambda a, n: integer(a, n, lo=lo)


def _word(a: dict[str, Any], n: str) -> str:
    return text(a, n).strip()


def _words(a: dict[str, Any], n: str) -> list[str]:
    return [w.strip() for w in texts(a, n)]


def _letter(args: dict[str, Any]) -> dict[str, Any]:
    letter = args.get("letter")
    if not isinstance(letter, str) or len(letter) != 1 or not ("a" <= letter.lower() <= "z"):
        raise BadKwargs(f"letter must be one ASCII letter, got {letter!r}")
    return {
        "letter": letter.lower(),
        "let_frequency": integer(args, "let_frequency"),
        "let_relation": relation(args, "let_relation"),
    }


def _language(args: dict[str, Any]) -> dict[str, Any]:
    code = text(args, "language").strip()
    if code not in LANGUAGES:
        raise BadKwargs(
            f"language must be one of IFEval's codes ({', '.join(sorted(LANGUAGES))}), got {code!r}"
        )
    return {"language": code}


def _nth_paragraph(args: dict[str, Any]) -> dict[str, Any]:
    num = integer(args, "num_paragraphs", lo=1)
    nth = integer(args, "nth_paragraph", lo=1)
    if nth > num:
        raise BadKwargs(f"nth_paragraph ({nth}) must be at most num_paragraphs ({num})")
    return {"num_paragraphs": num, "nth_paragraph": nth, "first_word": text(args, "first_word").lower()}


def _postscript(args: dict[str, Any]) -> dict[str, Any]:
    return {"postscript_marker": text(args, "postscript_marker").strip()}


def _end_phrase(args: dict[str, Any]) -> dict[str, Any]:
    return {"end_phrase": text(args, "end_phrase").strip()}


def _repeat(args: dict[str, Any]) -> dict[str, Any]:
    # a missing prompt_to_repeat is an error in the reference (it raises); the robust rules fall back on the
    # row's prompt, so the check decides (see _repeat_prompt)
    if "prompt_to_repeat" in args:
        return {"prompt_to_repeat": text(args, "prompt_to_repeat")}
    return {}


# --- keywords -------------------------------------------------------------------------------------------


@instruction(
    "keywords:existence",
    rule="every keyword occurs (case-insensitive)",
    read=_reader(keywords=_words),
    robust="whole words on the normalised text (a substring of another word does not count)",
    source=_SRC,
)
def _existence(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    return all(pattern(_view(k, ctx), whole=ctx.robust).search(view) for k in a["keywords"])


@instruction(
    "keywords:frequency",
    rule="keyword occurs less than / at least frequency times (case-insensitive)",
    read=_reader(keyword=_word, frequency=_count(), relation=lambda a, n: relation(a, n)),
    robust="whole-word occurrences on the normalised text; 'at least' fails on repeated filler",
    source=_SRC,
)
def _frequency(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    n = len(pattern(_view(a["keyword"], ctx), whole=ctx.robust).findall(view))
    if ctx.robust and a["relation"] == _LEAST and a["frequency"] > 0 and filler(view):
        return False
    return _compare(n, a["relation"], a["frequency"])


@instruction(
    "keywords:forbidden_words",
    rule="none of forbidden_words occurs as a whole word (case-insensitive)",
    read=_reader(forbidden_words=_words),
    robust="read on the normalised text (look-alike letters and zero-width characters cannot hide a word)",
    source=_SRC,
)
def _forbidden(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    return not any(pattern(_view(w, ctx), whole=True).search(view) for w in set(a["forbidden_words"]))


@instruction(
    "keywords:letter_frequency",
    rule="letter occurs less than / at least let_frequency times (case-insensitive)",
    read=_letter,
    robust="counted on the normalised text (look-alike letters count as the letter they imitate)",
    source=_SRC,
)
def _letter_frequency(t: str, a: dict[str, Any], ctx: Context) -> bool:
    n = _view(t, ctx).lower().count(a["letter"])
    return _compare(n, a["let_relation"], a["let_frequency"])


# --- language and case ----------------------------------------------------------------------------------


@instruction(
    "language:response_language",
    rule="langdetect (seeded) says the answer is in language; an undetectable text passes",
    read=_language,
    robust="an undetectable text (no letters, only digits or marks) fails",
    source=_SRC,
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
    source=_SRC,
)
def _english_capital(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not _view(t, ctx).isupper():
        return False
    found = language(t)
    return found == "en" if found is not None else not ctx.robust


@instruction(
    "change_case:english_lowercase",
    rule="the answer is all lower case (str.islower) and langdetect says English; undetectable passes",
    robust="read on the normalised text; an undetectable text fails",
    source=_SRC,
)
def _english_lowercase(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not _view(t, ctx).islower():
        return False
    found = language(t)
    return found == "en" if found is not None else not ctx.robust


@instruction(
    "change_case:capital_word_frequency",
    rule="all-capital tokens (nltk.word_tokenize) number less than / at least capital_frequency",
    read=_reader(capital_frequency=_count(), capital_relation=lambda a, n: relation(a, n)),
    robust="tokens read on the normalised text; 'at least' fails on repeated filler",
    source=_SRC,
)
def _capital_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    if ctx.robust and a["capital_relation"] == _LEAST and a["capital_frequency"] > 0 and filler(view):
        return False
    n = sum(1 for w in word_tokens(view) if w.isupper())
    return _compare(n, a["capital_relation"], a["capital_frequency"])


# --- length ---------------------------------------------------------------------------------------------


@instruction(
    "length_constraints:number_sentences",
    rule="Punkt (nltk English) sentences number less than / at least num_sentences",
    read=_reader(num_sentences=_count(), relation=lambda a, n: relation(a, n)),
    robust="'at least' counts only distinct sentences with a word in them and fails on repeated filler",
    source=_SRC,
)
def _number_sentences(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = sentences(t)
    if ctx.robust and a["relation"] == _LEAST:
        if a["num_sentences"] > 0 and filler(normalise(t)):
            return False
        return bool(pieces_count(normalise(s) for s in found) >= a["num_sentences"])
    return _compare(len(found), a["relation"], a["num_sentences"])


@instruction(
    "length_constraints:number_words",
    rule="\\w+ words number less than / at least num_words",
    read=_reader(num_words=_count(), relation=lambda a, n: relation(a, n)),
    robust="counted on the normalised text; 'at least' fails on repeated filler",
    source=_SRC,
)
def _number_words(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    if ctx.robust and a["relation"] == _LEAST and a["num_words"] > 0 and filler(view):
        return False
    return _compare(count_words(view), a["relation"], a["num_words"])


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
    read=_reader(num_paragraphs=_count()),
    robust="each paragraph must hold a word and differ from the others (repeated or mark-only ones fail)",
    source=_SRC,
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
    read=_nth_paragraph,
    robust="normalised text; a block without a word ('---') is no paragraph; paragraphs differ; paragraph "
    "nth holds more than its first word",
    source=_SRC,
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


# --- detectable content ---------------------------------------------------------------------------------


@instruction(
    "detectable_content:number_placeholders",
    rule="at least num_placeholders [bracketed] placeholders",
    read=_reader(num_placeholders=_count()),
    robust="a placeholder must name something ([ ] or [...] does not count)",
    source=_SRC,
)
def _placeholders(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = re.findall(r"\[.*?\]", _view(t, ctx))
    if ctx.robust:
        found = [p for p in found if content(p)]
    return bool(len(found) >= a["num_placeholders"])


_PS_PATTERNS = {"P.P.S": r"\s*p\.\s?p\.\s?s.*$", "P.S.": r"\s*p\.\s?s\..*$"}


@lru_cache(maxsize=1024)
def _ps_pattern(marker: str, robust: bool) -> re.Pattern[str]:
    body = _PS_PATTERNS.get(marker)
    if body is None:
        lowered = marker.lower()
        body = r"\s*" + (lowered if _PLAIN.fullmatch(lowered) else re.escape(lowered)) + r".*$"
    if robust:
        # the marker starts a line (after spaces or markdown emphasis) and words follow it on that line
        body = r"^[\s*_>#]*" + body.removeprefix(r"\s*").removesuffix(r".*$") + r"[\s*_:.,-]*\w.*$"
    return re.compile(body, re.MULTILINE)


@instruction(
    "detectable_content:postscript",
    rule="the lower-cased answer holds the postscript_marker (P.S. / P.P.S with optional spaces) anywhere",
    read=_postscript,
    robust="the marker starts a line of the normalised text and words follow it (a bare marker fails)",
    source=_SRC,
)
def _postscript_check(t: str, a: dict[str, Any], ctx: Context) -> bool:
    marker = _view(a["postscript_marker"], ctx)
    return _ps_pattern(marker, ctx.robust).search(_view(t, ctx).lower()) is not None


# --- detectable format ----------------------------------------------------------------------------------

_STAR_BULLET = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", re.MULTILINE)


@instruction(
    "detectable_format:number_bullet_lists",
    rule="exactly num_bullets lines start with '* ' or '-'",
    read=_reader(num_bullets=_count()),
    robust="a bullet must hold a word and differ from the others ('---' rules and empty or repeated bullets "
    "do not count)",
    source=_SRC,
)
def _bullets(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    found = _STAR_BULLET.findall(view) + _DASH_BULLET.findall(view)
    if ctx.robust:
        bodies = [b.strip().lstrip("*-").strip() for b in found]
        n = sum(1 for b in bodies if content(b))
        return n == a["num_bullets"] and pieces_count(bodies) == n
    return bool(len(found) == a["num_bullets"])


@instruction(
    "detectable_format:constrained_response",
    rule="the answer holds one of 'My answer is yes.' / 'no.' / 'maybe.'",
    robust="exactly one of the three options, read on the normalised text (all three at once fails)",
    source=_SRC,
)
def _constrained(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx).strip()
    hits = sum(1 for option in CONSTRAINED_OPTIONS if option in view)
    return hits == 1 if ctx.robust else hits > 0


_SINGLE = re.compile(r"\*[^\n\*]*\*")
_DOUBLE = re.compile(r"\*\*[^\n\*]*\*\*")


@instruction(
    "detectable_format:number_highlighted_sections",
    rule="at least num_highlights non-empty *highlighted* or **highlighted** spans",
    read=_reader(num_highlights=_count()),
    robust="a highlight must hold a word and differ from the others ('*...*' or repeats do not count)",
    source=_SRC,
)
def _highlights(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    found = [h.strip("*") for h in _SINGLE.findall(view)]
    found += [h.removeprefix("**").removesuffix("**") for h in _DOUBLE.findall(view)]
    if ctx.robust:
        return bool(pieces_count(found) >= a["num_highlights"])
    return bool(sum(1 for h in found if h.strip()) >= a["num_highlights"])


@lru_cache(maxsize=1024)
def _section_split(spliter: str) -> re.Pattern[str]:
    body = spliter if _PLAIN.fullmatch(spliter) else re.escape(spliter)
    return re.compile(r"\s?" + body + r"\s?\d+\s?")


@instruction(
    "detectable_format:multiple_sections",
    rule="at least num_sections section headers '<section_spliter> <number>'",
    read=_reader(section_spliter=_word, num_sections=_count()),
    robust="a section must hold words besides its header and differ from the others",
    source=_SRC,
)
def _sections(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    parts = _section_split(_view(a["section_spliter"], ctx)).split(view)
    if ctx.robust:
        bodies = parts[1:]
        return all(content(b) for b in bodies) and pieces_count(bodies) >= a["num_sections"]
    return bool(len(parts) - 1 >= a["num_sections"])


def _json_leaf(value: Any, depth: int = 0) -> bool:
    """Whether a parsed JSON value holds something: a number, a boolean or a string with a word in it."""
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(_json_leaf(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_json_leaf(v, depth + 1) for v in value)
    if isinstance(value, str):
        return content(value)
    return value is not None


@instruction(
    "detectable_format:json_format",
    rule="the answer, without a ``` / ```json fence, parses as JSON",
    robust="it must be a JSON object or array with some content (not a bare string, number, {} or [])",
    source=_SRC,
)
def _json_format(t: str, a: dict[str, Any], ctx: Context) -> bool:
    body = t.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        body = body.removeprefix(fence)
    body = body.removesuffix("```").strip()
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if ctx.robust:
        return isinstance(value, dict | list) and _json_leaf(value)
    return True


@instruction(
    "detectable_format:title",
    rule="a non-empty title in double angular brackets <<like this>> on one line",
    robust="the title must hold a word, and the answer must hold words besides the title",
    source=_SRC,
)
def _title(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx)
    titles = re.findall(r"<<[^\n]+>>", view)
    if ctx.robust:
        good = [x for x in titles if content(x)]
        rest = re.sub(r"<<[^\n]+>>", " ", view)
        return bool(good) and content(rest)
    return any(x.lstrip("<").rstrip(">").strip() for x in titles)


# --- combination ----------------------------------------------------------------------------------------


@instruction(
    "combination:two_responses",
    rule="exactly two non-empty, different responses separated by ******",
    robust="each response must hold words, and they must differ beyond case, spacing and punctuation",
    source=_SRC,
)
def _two_responses(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = t.split("******")
    last = len(parts) - 1
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif 0 < i < last:
            return False
    if len(kept) != 2:
        return False
    if ctx.robust:
        first, second = (normalise(k) for k in kept)
        return content(first) and content(second) and _key(first) != _key(second)
    return kept[0].strip() != kept[1].strip()


# the instruction sentence IFEval appends to the request ("First repeat the request word for word ...")
_REPEAT_SENTENCE = re.compile(
    r"\s*(?:first,?\s+)?repeat\s+the\s+(?:request|prompt|question)\b", re.IGNORECASE
)


def _prompt_without_instruction(prompt: str) -> str:
    m = _REPEAT_SENTENCE.search(prompt)
    return prompt[: m.start()] if m else prompt


@instruction(
    "combination:repeat_prompt",
    rule="the answer starts with prompt_to_repeat (case-insensitive, ends stripped); none is bad_kwargs",
    read=_repeat,
    robust="an answer must follow the repeated request; without prompt_to_repeat, the row's prompt up to its "
    "'repeat the request' sentence is the request (no prompt either: bad_kwargs)",
    source=_SRC,
)
def _repeat_prompt(t: str, a: dict[str, Any], ctx: Context) -> bool:
    request = a.get("prompt_to_repeat")
    if request is None:
        if not ctx.robust or ctx.prompt is None:
            raise BadKwargs("combination:repeat_prompt needs prompt_to_repeat (or, robust, the row's prompt)")
        request = _prompt_without_instruction(ctx.prompt)
    request = request.strip().lower()
    answer = t.strip().lower()
    if not ctx.robust:
        return answer.startswith(request)
    if not request:
        raise BadKwargs("combination:repeat_prompt: the request to repeat is empty")
    # spacing may differ (a newline for a space); the words must be the same, in order, and an answer follows
    squash = re.compile(r"\s+")
    answer_s, request_s = squash.sub(" ", normalise(answer)), squash.sub(" ", normalise(request))
    return answer_s.startswith(request_s) and content(answer_s[len(request_s) :])


@instruction(
    "startend:end_checker",
    rule="the answer (ends stripped, outer double quotes stripped) ends with end_phrase (case-insensitive)",
    read=_end_phrase,
    robust="read on the normalised text; words must come before the phrase (the phrase alone fails)",
    source=_SRC,
)
def _end_checker(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = _view(t, ctx).strip().strip('"').lower()
    phrase = _view(a["end_phrase"], ctx).strip().lower()
    if not view.endswith(phrase):
        return False
    return not ctx.robust or content(view[: len(view) - len(phrase)])


@instruction(
    "startend:quotation",
    rule='the answer (ends stripped) starts and ends with a double quote (") and is over one character',
    robust="words must stand between the quotes",
    source=_SRC,
)
def _quotation(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = t.strip()
    ok = len(view) > 1 and view[0] == '"' and view[-1] == '"'
    return ok and (not ctx.robust or content(view[1:-1]))


# commas a policy could use instead of ',' (NFKC already folds the full-width and small commas into ',')
_COMMAS = re.compile("[,\u060c\u201a\u3001\u2e41\u2e34\u066b\ua4fe\u1802\u1808]")


@instruction(
    "punctuation:no_comma",
    rule="no ',' in the answer",
    robust="no comma look-alike either (full-width, small, ideographic, Arabic commas; the low quote mark)",
    source=_SRC,
)
def _no_comma(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not ctx.robust:
        return "," not in t
    return _COMMAS.search(normalise(t, fold=False)) is None
