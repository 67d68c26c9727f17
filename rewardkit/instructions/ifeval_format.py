"""IFEval's content, format, combination, start/end and punctuation instructions (see
:mod:`~rewardkit.instructions.ifeval`).

>>> from rewardkit.instructions.base import TABLE, Context
>>> spec = TABLE["detectable_format:json_format"]
>>> [spec.check('"prose"', {}, Context(rules=r)) for r in ("reference", "robust")]
[True, False]
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from rewardkit.instructions.base import BadKwargs, Context, instruction
from rewardkit.instructions.ifeval_common import (
    CONSTRAINED_OPTIONS,
    PLAIN,
    SRC,
    content,
    count_arg,
    end_phrase_args,
    piece_key,
    pieces_count,
    postscript_args,
    reader,
    repeat_args,
    view_of,
    word_arg,
)
from rewardkit.instructions.text import normalise

__all__ = ["json_has_content"]


# --- detectable content ---------------------------------------------------------------------------------


@instruction(
    "detectable_content:number_placeholders",
    rule="at least num_placeholders [bracketed] placeholders",
    read=reader(num_placeholders=count_arg()),
    robust="a placeholder must name something ([ ] or [...] does not count)",
    source=SRC,
)
def _placeholders(t: str, a: dict[str, Any], ctx: Context) -> bool:
    found = re.findall(r"\[.*?\]", view_of(t, ctx))
    if ctx.robust:
        found = [p for p in found if content(p)]
    return bool(len(found) >= a["num_placeholders"])


_PS_PATTERNS = {"P.P.S": r"\s*p\.\s?p\.\s?s.*$", "P.S.": r"\s*p\.\s?s\..*$"}


@lru_cache(maxsize=1024)
def _ps_pattern(marker: str, robust: bool) -> re.Pattern[str]:
    body = _PS_PATTERNS.get(marker)
    if body is None:
        lowered = marker.lower()
        body = r"\s*" + (lowered if PLAIN.fullmatch(lowered) else re.escape(lowered)) + r".*$"
    if robust:
        # the marker starts a line (after spaces or markdown emphasis) and words follow it on that line
        body = r"^[\s*_>#]*" + body.removeprefix(r"\s*").removesuffix(r".*$") + r"[\s*_:.,-]*\w.*$"
    return re.compile(body, re.MULTILINE)


@instruction(
    "detectable_content:postscript",
    rule="the lower-cased answer holds the postscript_marker (P.S. / P.P.S with optional spaces) anywhere",
    read=postscript_args,
    robust="the marker starts a line of the normalised text and words follow it (a bare marker fails)",
    source=SRC,
)
def _postscript_check(t: str, a: dict[str, Any], ctx: Context) -> bool:
    marker = view_of(a["postscript_marker"], ctx)
    return _ps_pattern(marker, ctx.robust).search(view_of(t, ctx).lower()) is not None


# --- detectable format ----------------------------------------------------------------------------------

_STAR_BULLET = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", re.MULTILINE)


@instruction(
    "detectable_format:number_bullet_lists",
    rule="exactly num_bullets lines start with '* ' or '-'",
    read=reader(num_bullets=count_arg()),
    robust="a bullet must hold a word and differ from the others ('---' rules and empty or repeated bullets "
    "do not count)",
    source=SRC,
)
def _bullets(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    found = _STAR_BULLET.findall(view) + _DASH_BULLET.findall(view)
    if ctx.robust:
        bodies = [b.strip().lstrip("*-").strip() for b in found]
        n = sum(1 for b in bodies if content(b))
        return n == a["num_bullets"] and pieces_count(bodies) == n
    return bool(len(found) == a["num_bullets"])


@instruction(
    "detectable_format:constrained_response",
    rule="the answer holds one of 'My answer is yes.' / 'no.' / 'maybe.'",
    robust="exactly one of the three options, read on the normalised text (all three at once fails), and no "
    "other option stated in another form ('My answer is yes. My answer is no' hedges)",
    source=SRC,
)
def _constrained(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx).strip()
    hits = sum(1 for option in CONSTRAINED_OPTIONS if option in view)
    if not ctx.robust:
        return hits > 0
    return hits == 1 and len({m.lower() for m in _OPTION_SAID.findall(view)}) == 1


# an option stated in any case or punctuation ("my answer is NO!"): a second one hedges the first
_OPTION_SAID = re.compile(r"\bmy\s+answer\s+is\W{0,3}(yes|no|maybe)\b", re.IGNORECASE)


_SINGLE = re.compile(r"\*[^\n\*]*\*")
_DOUBLE = re.compile(r"\*\*[^\n\*]*\*\*")


@instruction(
    "detectable_format:number_highlighted_sections",
    rule="at least num_highlights non-empty *highlighted* or **highlighted** spans",
    read=reader(num_highlights=count_arg()),
    robust="a highlight must hold a word and differ from the others ('*...*' or repeats do not count)",
    source=SRC,
)
def _highlights(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    found = [h.strip("*") for h in _SINGLE.findall(view)]
    found += [h.removeprefix("**").removesuffix("**") for h in _DOUBLE.findall(view)]
    if ctx.robust:
        return bool(pieces_count(found) >= a["num_highlights"])
    return bool(sum(1 for h in found if h.strip()) >= a["num_highlights"])


@lru_cache(maxsize=1024)
def _section_split(spliter: str) -> re.Pattern[str]:
    body = spliter if PLAIN.fullmatch(spliter) else re.escape(spliter)
    return re.compile(r"\s?" + body + r"\s?\d+\s?")


@instruction(
    "detectable_format:multiple_sections",
    rule="at least num_sections section headers '<section_spliter> <number>'",
    read=reader(section_spliter=word_arg, num_sections=count_arg()),
    robust="a section must hold words besides its header and differ from the others",
    source=SRC,
)
def _sections(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
    parts = _section_split(view_of(a["section_spliter"], ctx)).split(view)
    if ctx.robust:
        bodies = parts[1:]
        return all(content(b) for b in bodies) and pieces_count(bodies) >= a["num_sections"]
    return bool(len(parts) - 1 >= a["num_sections"])


def json_has_content(value: Any, depth: int = 0) -> bool:
    """Whether a parsed JSON value holds something: a number, a boolean or a string with a word in it."""
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(json_has_content(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(json_has_content(v, depth + 1) for v in value)
    if isinstance(value, str):
        return content(value)
    return value is not None


@instruction(
    "detectable_format:json_format",
    rule="the answer, without a ``` / ```json fence, parses as JSON",
    robust="it must be a JSON object or array with some content (not a bare string, number, {} or [])",
    source=SRC,
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
        return isinstance(value, dict | list) and json_has_content(value)
    return True


@instruction(
    "detectable_format:title",
    rule="a non-empty title in double angular brackets <<like this>> on one line",
    robust="the title must hold a word, and the answer must hold words besides the title",
    source=SRC,
)
def _title(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx)
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
    source=SRC,
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
        return content(first) and content(second) and piece_key(first) != piece_key(second)
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
    read=repeat_args,
    robust="an answer must follow the repeated request; without prompt_to_repeat, the row's prompt up to its "
    "'repeat the request' sentence is the request (no prompt either: bad_kwargs)",
    source=SRC,
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
    read=end_phrase_args,
    robust="read on the normalised text; words must come before the phrase (the phrase alone fails)",
    source=SRC,
)
def _end_checker(t: str, a: dict[str, Any], ctx: Context) -> bool:
    view = view_of(t, ctx).strip().strip('"').lower()
    phrase = view_of(a["end_phrase"], ctx).strip().lower()
    if not view.endswith(phrase):
        return False
    return not ctx.robust or content(view[: len(view) - len(phrase)])


@instruction(
    "startend:quotation",
    rule='the answer (ends stripped) starts and ends with a double quote (") and is over one character',
    robust="words must stand between the quotes",
    source=SRC,
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
    source=SRC,
)
def _no_comma(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not ctx.robust:
        return "," not in t
    return _COMMAS.search(normalise(t, fold=False)) is None
