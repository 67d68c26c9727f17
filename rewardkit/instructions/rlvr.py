"""open-instruct's RLVR ground truths (Tulu 3's ``allenai/RLVR-IFeval``): the 25 ``func_name`` checks of
``open_instruct/if_functions.py``, registered under their own names (``source="open-instruct"``), since
each differs from IFEval's instruction of the same idea (exact counts where IFEval has "at least", an
``around`` quantifier, substring keywords, whitespace words, its own sentence splitter).

``rules="reference"`` reproduces open-instruct's verdicts on the answer as its verifier hands it over
(reasoning removed, ends stripped); where open-instruct raises (an undetectable language, a paragraph index
out of range, a letter of two characters) the verdict is False or the arguments are ``bad_kwargs``.
``rules="robust"`` closes the hacks each spec's ``robust`` line names.

>>> from rewardkit.instructions.base import TABLE, Context
>>> spec = TABLE["validate_title"]
>>> [spec.check("<<>> nothing", {}, Context(rules=r)) for r in ("reference", "robust")]
[True, False]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rewardkit.instructions.args import integer, text, texts
from rewardkit.instructions.base import BadKwargs, Context, instruction
from rewardkit.instructions.ifeval_common import content, filler, pattern, piece_key, pieces_count, view_of
from rewardkit.instructions.ifeval_format import json_has_content
from rewardkit.instructions.text import language, normalise

__all__ = ["QUANTIFIERS"]

SRC = "open-instruct"
QUANTIFIERS = ("at least", "around", "at most")
_COMMAS = re.compile("[,\u060c\u201a\u3001\u2e41\u2e34\u066b\ua4fe\u1802\u1808]")

Args = dict[str, Any]


def _n(args: Args) -> Args:
    return {"N": integer(args, "N")}


def _nq(args: Args) -> Args:
    q = args.get("quantifier")
    if q not in QUANTIFIERS:
        raise BadKwargs(f"quantifier must be one of {QUANTIFIERS}, got {q!r}")
    return {"N": integer(args, "N"), "quantifier": q}


def _one(name: str, *, strip: bool = False) -> Callable[[Args], Args]:
    def read(args: Args) -> Args:
        value = text(args, name)
        return {name: value.strip() if strip else value}

    return read


def _within(n: int, quantifier: str, target: int, tolerance: int) -> bool:
    if quantifier == "at least":
        return n >= target
    if quantifier == "at most":
        return n <= target
    return abs(n - target) <= tolerance


def _answer(t: str, ctx: Context) -> str:
    """The answer as open-instruct hands it over (ends stripped), normalised under the robust rules."""
    return normalise(t.strip()) if ctx.robust else t.strip()


@instruction(
    "verify_keywords",
    rule="every keyword of keyword_list occurs (case-insensitive substring)",
    read=lambda a: {"keyword_list": texts(a, "keyword_list")},
    robust="whole words on the normalised text",
    source=SRC,
)
def _keywords(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if ctx.robust:
        return all(pattern(view_of(k, ctx), whole=True, raw=False).search(v) for k in a["keyword_list"])
    low = v.lower()
    return all(k.lower() in low for k in a["keyword_list"])


@instruction(
    "verify_keyword_frequency",
    rule="word occurs exactly N times among the \\b\\w+\\b words (case-insensitive)",
    read=lambda a: {"word": text(a, "word"), "N": integer(a, "N")},
    robust="whole-word (or phrase) occurrences on the normalised text; repeated filler fails",
    source=SRC,
)
def _keyword_frequency(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if ctx.robust:
        n = len(pattern(view_of(a["word"], ctx), whole=True, raw=False).findall(v))
        return n == a["N"] and not (a["N"] > 0 and filler(v))
    word = a["word"].lower()
    return bool(sum(1 for w in re.findall(r"\b\w+\b", v.lower()) if w == word) == a["N"])


@instruction(
    "validate_forbidden_words",
    rule="no forbidden word occurs (case-insensitive substring)",
    read=lambda a: {"forbidden_words": texts(a, "forbidden_words")},
    robust="whole words on the normalised text (look-alikes and zero-width characters cannot hide one)",
    source=SRC,
)
def _forbidden(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if ctx.robust:
        return not any(
            pattern(view_of(w, ctx), whole=True, raw=False).search(v) for w in a["forbidden_words"]
        )
    low = v.lower()
    return not any(w.lower() in low for w in a["forbidden_words"])


def _letter(args: Args) -> Args:
    letter = args.get("letter")
    if not isinstance(letter, str) or len(letter) != 1:
        raise BadKwargs(f"letter must be one character, got {letter!r}")
    return {"letter": letter, "N": integer(args, "N")}


@instruction(
    "verify_letter_frequency",
    rule="letter (case-sensitive) occurs exactly N times",
    read=_letter,
    robust="counted on the normalised text",
    source=SRC,
)
def _letter_frequency(t: str, a: Args, ctx: Context) -> bool:
    return bool(_answer(t, ctx).count(a["letter"]) == a["N"])


@instruction(
    "validate_response_language",
    rule="langdetect (seeded) says language; undetectable is False (open-instruct raises)",
    read=_one("language", strip=True),
    source=SRC,
)
def _language(t: str, a: Args, ctx: Context) -> bool:
    return bool(language(t.strip()) == a["language"])


def _star_paragraphs(v: str) -> list[str]:
    cleaned = "\n".join(line.strip() for line in v.splitlines()).strip()
    return cleaned.split("* * *")


@instruction(
    "verify_paragraph_count",
    rule="exactly N non-empty paragraphs split by '* * *'",
    read=_n,
    robust="paragraphs must hold words and differ",
    source=SRC,
)
def _paragraph_count(t: str, a: Args, ctx: Context) -> bool:
    parts = _star_paragraphs(_answer(t, ctx))
    if any(not p.strip() for p in parts):
        return False
    if ctx.robust and pieces_count(parts) != len(parts):
        return False
    return bool(len(parts) == a["N"])


@instruction(
    "validate_word_constraint",
    rule="whitespace words number at least / at most / around (10%, at least 1) N",
    read=_nq,
    robust="repeated filler fails 'at least' and 'around'",
    source=SRC,
)
def _word_constraint(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if ctx.robust and a["quantifier"] != "at most" and a["N"] > 0 and filler(v):
        return False
    return _within(len(v.split()), a["quantifier"], a["N"], max(round(a["N"] * 0.1), 1))


_SENTENCE_SPLIT = re.compile(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s")


@instruction(
    "verify_sentence_constraint",
    rule="pieces split after . ? ! number at least / at most / around (1) N",
    read=_nq,
    robust="'at least' and 'around' count distinct sentences with words and fail on repeated filler",
    source=SRC,
)
def _sentence_constraint(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    parts = _SENTENCE_SPLIT.split(v)
    n = len(parts)
    if ctx.robust and a["quantifier"] != "at most":
        if a["N"] > 0 and filler(v):
            return False
        n = pieces_count(parts)
    return _within(n, a["quantifier"], a["N"], 1)


def _paragraphs_args(args: Args) -> Args:
    n, i = integer(args, "N", lo=1), integer(args, "i", lo=1)
    if i > n:
        raise BadKwargs(f"i ({i}) must be at most N ({n})")
    return {"N": n, "i": i, "first_word": text(args, "first_word")}


@instruction(
    "validate_paragraphs",
    rule="exactly N paragraphs split by blank lines; paragraph i starts with first_word (a prefix)",
    read=_paragraphs_args,
    robust="paragraphs hold words and differ; first_word is a whole word; normalised text",
    source=SRC,
)
def _paragraphs(t: str, a: Args, ctx: Context) -> bool:
    parts = _answer(t, ctx).split("\n\n")
    if len(parts) != a["N"]:
        return False
    start = parts[a["i"] - 1].strip()
    if not ctx.robust:
        return bool(start.startswith(a["first_word"]))
    word = view_of(a["first_word"], ctx)
    return (
        pieces_count(parts) == len(parts)
        and start.startswith(word)
        and not start[len(word) : len(word) + 1].isalnum()
        and content(start[len(word) :])
    )


@instruction(
    "verify_postscript",
    rule="the postscript_marker occurs and something follows it",
    read=_one("postscript_marker"),
    robust="the marker starts a line and words follow it",
    source=SRC,
)
def _postscript(t: str, a: Args, ctx: Context) -> bool:
    v, marker = _answer(t, ctx), a["postscript_marker"]
    if not ctx.robust:
        at = v.find(marker)
        return at >= 0 and len(v[at:].strip()) > len(marker)
    marker = view_of(marker, ctx)
    for line in v.splitlines():
        body = line.lstrip(" \t*_>#")
        if body.startswith(marker) and content(body[len(marker) :]):
            return True
    return False


@instruction(
    "validate_placeholders",
    rule="at least N [bracketed] placeholders",
    read=_n,
    robust="a placeholder must name something",
    source=SRC,
)
def _placeholders(t: str, a: Args, ctx: Context) -> bool:
    found = re.findall(r"\[(.*?)\]", _answer(t, ctx))
    if ctx.robust:
        found = [p for p in found if content(p)]
    return bool(len(found) >= a["N"])


@instruction(
    "verify_bullet_points",
    rule="exactly N lines start with * or -",
    read=_n,
    robust="a bullet must hold words and differ from the others ('---' rules do not count)",
    source=SRC,
)
def _bullets(t: str, a: Args, ctx: Context) -> bool:
    lines = [line.strip() for line in _answer(t, ctx).split("\n")]
    found = [line for line in lines if line.startswith(("*", "-"))]
    if not ctx.robust:
        return bool(len(found) == a["N"])
    bodies = [b.lstrip("*-").strip() for b in found]
    bodies = [b for b in bodies if content(b)]
    return len(bodies) == a["N"] and pieces_count(bodies) == len(bodies)


@instruction(
    "validate_title",
    rule="a <<title>> occurs (even an empty one)",
    robust="the title holds a word and words stand outside it",
    source=SRC,
)
def _title(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    titles = re.findall(r"<<(.*?)>>", v)
    if not ctx.robust:
        return len(titles) > 0
    return any(content(x) for x in titles) and content(re.sub(r"<<(.*?)>>", " ", v))


@instruction(
    "validate_choice",
    rule="one of options occurs (substring)",
    read=lambda a: {"options": texts(a, "options")},
    robust="exactly one option, as a whole word or phrase",
    source=SRC,
)
def _choice(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if not ctx.robust:
        return any(o in v for o in a["options"])
    hits = {o for o in a["options"] if re.search(r"(?<!\w)" + re.escape(view_of(o, ctx)) + r"(?!\w)", v)}
    return len(hits) == 1


@instruction(
    "validate_highlighted_sections",
    rule="at least N *spans* (even empty ones)",
    read=_n,
    robust="a highlight holds words and differs from the others",
    source=SRC,
)
def _highlights(t: str, a: Args, ctx: Context) -> bool:
    found = re.findall(r"\*(.*?)\*", _answer(t, ctx))
    return bool((pieces_count(found) if ctx.robust else len(found)) >= a["N"])


@instruction(
    "validate_sections",
    rule="splitting on section_splitter gives exactly N sections (a leading empty one dropped)",
    read=lambda a: {"N": integer(a, "N"), "section_splitter": text(a, "section_splitter")},
    robust="each section holds words besides its header and differs from the others",
    source=SRC,
)
def _sections(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    parts = v.split(view_of(a["section_splitter"], ctx))
    if parts[0] == "":
        parts.pop(0)
    if ctx.robust:
        bodies = [re.sub(r"^\s*\d+", "", p) for p in parts]
        if not all(content(b) for b in bodies) or pieces_count(bodies) != len(bodies):
            return False
    return bool(len(parts) == a["N"])


@instruction(
    "validate_json_format",
    rule="the answer parses as JSON",
    robust="a JSON object or array with some content",
    source=SRC,
)
def _json(t: str, a: Args, ctx: Context) -> bool:
    try:
        value = json.loads(t.strip())
    except (ValueError, RecursionError):
        return False
    if not ctx.robust:
        return True
    return isinstance(value, dict | list) and json_has_content(value)


@instruction(
    "validate_repeat_prompt",
    rule="the answer starts with original_prompt (exactly)",
    read=_one("original_prompt"),
    robust="spacing may differ; an answer must follow the repeated prompt",
    source=SRC,
)
def _repeat(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if not ctx.robust:
        return v.startswith(a["original_prompt"])
    squash = re.compile(r"\s+")
    answer, prompt = squash.sub(" ", v), squash.sub(" ", view_of(a["original_prompt"], ctx).strip())
    return bool(prompt) and answer.startswith(prompt) and content(answer[len(prompt) :])


@instruction(
    "validate_two_responses",
    rule="exactly one ****** separator and the two sides differ",
    robust="both sides hold words and differ beyond case, spacing and punctuation",
    source=SRC,
)
def _two(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if v.count("******") != 1:
        return False
    first, second = (p.strip() for p in v.split("******"))
    if ctx.robust:
        return content(first) and content(second) and piece_key(first) != piece_key(second)
    return first != second


@instruction(
    "validate_uppercase",
    rule="the answer equals its upper-case form (a text without letters passes)",
    robust="it must hold a cased letter (str.isupper) on the normalised text",
    source=SRC,
)
def _upper(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    return v.isupper() if ctx.robust else v == v.upper()


@instruction(
    "validate_lowercase",
    rule="the answer equals its lower-case form (a text without letters passes)",
    robust="it must hold a cased letter (str.islower) on the normalised text",
    source=SRC,
)
def _lower(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    return v.islower() if ctx.robust else v == v.lower()


@instruction(
    "validate_frequency_capital_words",
    rule="\\b[A-Z]+\\b words number at least / at most / around (10%, at least 1) N",
    read=_nq,
    robust="normalised text; repeated filler fails 'at least' and 'around'",
    source=SRC,
)
def _capitals(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if ctx.robust and a["quantifier"] != "at most" and a["N"] > 0 and filler(v):
        return False
    n = len(re.findall(r"\b[A-Z]+\b", v))
    return _within(n, a["quantifier"], a["N"], max(round(a["N"] * 0.1), 1))


@instruction(
    "validate_end",
    rule="the answer ends with end_phrase (exactly)",
    read=_one("end_phrase"),
    robust="normalised text; words must come before the phrase",
    source=SRC,
)
def _end(t: str, a: Args, ctx: Context) -> bool:
    v = _answer(t, ctx)
    if not ctx.robust:
        return v.endswith(a["end_phrase"])
    phrase = view_of(a["end_phrase"], ctx).strip()
    return bool(phrase) and v.endswith(phrase) and content(v[: len(v) - len(phrase)])


@instruction(
    "validate_quotation",
    rule='the answer starts and ends with " (a lone " passes)',
    robust="words must stand between the quotes",
    source=SRC,
)
def _quotation(t: str, a: Args, ctx: Context) -> bool:
    v = t.strip()
    ok = v.startswith('"') and v.endswith('"')
    return ok and (not ctx.robust or (len(v) > 1 and content(v[1:-1])))


@instruction(
    "validate_no_commas",
    rule="no ',' in the answer",
    robust="no comma look-alike either",
    source=SRC,
)
def _no_commas(t: str, a: Args, ctx: Context) -> bool:
    if not ctx.robust:
        return "," not in t
    return _COMMAS.search(normalise(t, fold=False)) is None
