"""IFBench's layout constraints (``format:*``): nesting, quotes, options, one word a line, emoji, stairs,
quoted phrases, list markers, an italic thesis, sub-bullets, sentences then bullets, title case, a template,
no whitespace.

``rules="reference"`` follows IFBench's ``instructions.py`` at c94da02, bugs included (``line_indent`` skips a
blank line that follows another while it removes blank lines); ``rules="robust"`` fixes them and requires
content where the reference counts markers alone.

>>> from rewardkit.instructions.base import TABLE, Context
>>> check = TABLE["format:output_template"].check
>>> skeleton = "My Answer: My Conclusion: Future Outlook:"
>>> check(skeleton, {}, Context(rules="reference")), check(skeleton, {}, Context(rules="robust"))
(True, False)
>>> check("My Answer: yes. My Conclusion: it works. Future Outlook: bright.", {}, Context(rules="robust"))
True
"""

from __future__ import annotations

import re
import string
from typing import Any

from rewardkit.instructions.args import text
from rewardkit.instructions.base import Context, instruction
from rewardkit.instructions.ifbench_common import PUNCT, drop_punct, letters, strip_punct
from rewardkit.instructions.text import normalise, split_sentences, word_tokens

__all__: list[str] = []

_SRC = "ifbench"
_PAIRS = {")": "(", "]": "[", "}": "{"}


@instruction(
    "format:parentheses",
    rule="brackets ( [ { nest at least 5 deep: passes when a group closes after the depth reached 5",
    robust="some text (a letter or digit) sits inside the fifth level: '((((()))))' alone fails",
    source=_SRC,
)
def _parentheses(t: str, a: dict[str, Any], ctx: Context) -> bool:
    levels: list[str] = []
    deepest = 0
    filled = False  # robust: a letter or digit was seen at depth 5 or more since the last reset
    for c in t:
        if c in "([{":
            levels.append(c)
            deepest = max(deepest, len(levels))
        elif c in _PAIRS:
            if levels and levels[-1] == _PAIRS[c]:
                levels.pop()
                if deepest >= 5 and len(levels) < deepest and (filled or not ctx.robust):
                    return True
            else:
                levels, deepest, filled = [], 0, False
        elif len(levels) >= 5 and c.isalnum():
            filled = True
    return False


@instruction(
    "format:quotes",
    rule="quotes (\" and ') nest at least 3 deep: a closing quote 3 levels below the deepest reached passes",
    robust="the innermost quote holds a letter or digit ('\"'\"\"'\"' alone fails)",
    source=_SRC,
)
def _quotes(t: str, a: dict[str, Any], ctx: Context) -> bool:
    levels: list[str] = []
    content: list[bool] = []
    reached = 0
    deepest_ok = False
    for c in t:
        if levels and c == levels[-1]:
            levels.pop()
            had = content.pop()
            if len(levels) + 1 == reached:
                deepest_ok = had
            if content and had:
                content[-1] = True
            if reached - len(levels) >= 3 and (deepest_ok or not ctx.robust):
                return True
        elif c in "\"'":
            levels.append(c)
            content.append(False)
            reached = max(reached, len(levels))
        elif content and c.isalnum():
            content[-1] = True
    return False


def _options(a: dict[str, Any]) -> dict[str, Any]:
    return {"options": text(a, "options")}


def _split_options(options: str, robust: bool) -> tuple[bool, list[str]]:
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    if "/" in options:
        parts = options.split("/")
    elif robust and re.search(r"\bor\b", options):
        parts = re.split(r"\bor\b", options)
    elif not robust and "or" in options:
        parts = options.split("or")
    else:
        parts = options.split(",")
    return strict, [p.strip() for p in parts]


@instruction(
    "format:options",
    rule="the response is one of the options (split on '/', 'or' or ','): letters a) b) exactly, words "
    "case- and punctuation-insensitively",
    read=_options,
    robust="options split on 'or' as a word (the reference splits 'Correct, Incorrect' inside the words)",
    source=_SRC,
)
def _options_check(t: str, a: dict[str, Any], ctx: Context) -> bool:
    strict, options = _split_options(a["options"], ctx.robust)
    if strict:
        return t in options or (ctx.robust and t.strip() in options)
    answer = strip_punct(t).lower()
    return any(strip_punct(o).lower() == answer for o in options)


@instruction(
    "format:newline",
    rule="as many non-empty lines as whitespace words (punctuation removed): one word a line",
    robust="a line of spaces is not a word's line",
    source=_SRC,
)
def _newline(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = drop_punct(t)
    lines = t.strip().split("\n")
    lines = [x for x in lines if (x.strip() if ctx.robust else x)]
    words = t.strip().split()
    return len(lines) == len(words)


def _is_emoji(c: str) -> bool:
    import emoji

    return bool(emoji.is_emoji(c))


@instruction(
    "format:emoji",
    rule="every sentence (IFEval's splitter) ends with an emoji, or the next sentence starts with one",
    robust="at least one sentence has a word (a string of emoji alone fails)",
    source=_SRC,
)
def _emoji(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(t)
    if ctx.robust and not any(any(c.isalpha() for c in s) for s in parts):
        return False
    for i, s in enumerate(parts):
        bare = drop_punct(s).strip()
        if not bare:
            return False
        if _is_emoji(bare[-1]) or _is_emoji(bare[-2] if len(bare) > 1 else bare[-1]):
            continue
        if i == len(parts) - 1:
            return False
        after = drop_punct(parts[i + 1]).strip()
        if not after or not _is_emoji(after[0]):
            return False
    return True


def _indent(line: str, tabs: bool = False) -> int:
    if tabs:
        line = line.expandtabs(4)
    return len(line) - len(line.lstrip(" "))


@instruction(
    "format:line_indent",
    rule="each line is indented by more spaces than the line before (blank lines dropped, but the reference "
    "removes them while iterating, so a blank line after a blank line stays and breaks the stairs)",
    robust="every blank line is dropped, a tab indents (to the next multiple of 4), and at least two lines "
    "are needed (one line is not a staircase)",
    source=_SRC,
)
def _line_indent(t: str, a: dict[str, Any], ctx: Context) -> bool:
    lines = t.split("\n")
    if ctx.robust:
        lines = [x for x in lines if x.strip()]
        if len(lines) < 2:
            return False
    else:
        for line in lines:  # the reference's loop, which skips the element after each removal
            if not line.strip():
                lines.remove(line)
    steps = [_indent(x, ctx.robust) for x in lines]
    return all(y > x for x, y in zip(steps, steps[1:], strict=False))


@instruction(
    "format:quote_unquote",
    rule="no two quoted phrases touch (no '\"\"' once whitespace is removed) and the text does not end on "
    "a quote",
    robust="at least one quoted phrase (the reference passes a response without quotes)",
    source=_SRC,
)
def _quote_unquote(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = t.replace("\u201c", '"').replace("\u201d", '"').replace("'\"'", "")
    t = "".join(t.split())
    if '""' in t:
        return False
    tail = t.strip(string.digits + PUNCT.replace('"', ""))
    if not tail or tail[-1] == '"':
        return False
    return not ctx.robust or any(letters(inner) for inner in t.split('"')[1:-1:2])


@instruction(
    "format:list",
    rule="the marker sep occurs at least twice",
    read=lambda a: {"sep": text(a, "sep")},
    robust="at least two markers each followed by an item (a letter or digit before the next marker or line "
    "end): empty markers do not count",
    source=_SRC,
)
def _list(t: str, a: dict[str, Any], ctx: Context) -> bool:
    sep = a["sep"]
    if not ctx.robust:
        return t.count(sep) >= 2 if sep else False
    items = [piece for line in t.split("\n") for piece in line.split(sep)[1:]]
    return sum(1 for item in items if letters(item)) >= 2


_ITALIC = re.compile(r"<(i|em)>(.*?)</\1>", re.S)


@instruction(
    "format:thesis",
    rule="an HTML italic (<i> or <em>) with text inside, and text after it",
    robust="the tags match (<i>…</i> or <em>…</em>, the reference cuts '<em>' by 3 characters) and the "
    "thesis and the text after it hold letters",
    source=_SRC,
)
def _thesis(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust:
        m = _ITALIC.search(t)
        return m is not None and letters(m.group(2)) and letters(t[m.end() :])
    start = t.find("<i>")
    if start == -1:
        start = t.find("<em>")
        if start == -1:
            return False
    t = t[start:]
    end = t.find("</i>")
    if end == -1:
        end = t.find("</em>")
        if end == -1:
            return False
    return t[3:end].strip() != "" and t[end + 4 :].strip() != ""


_BULLET = re.compile(r"^\s*\*(?!\*)\s*(.*)$")
_SUB = re.compile(r"^\s*-\s*(.*)$")


@instruction(
    "format:sub-bullets",
    rule="every piece of text after a '*' contains a '-'",
    robust="at least one line starting with '*' and an item, each followed by a line starting with '-' and "
    "an item (the reference passes a response without '*', and '**bold**' counts there)",
    source=_SRC,
)
def _sub_bullets(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not ctx.robust:
        return all("-" in piece for piece in t.split("*")[1:])
    bullets, open_bullet = 0, False
    for line in t.split("\n"):
        b, s = _BULLET.match(line), _SUB.match(line)
        if b:
            if open_bullet or not letters(b.group(1)):
                return False
            bullets, open_bullet = bullets + 1, True
        elif s and letters(s.group(1)):
            open_bullet = False
    return bullets > 0 and not open_bullet


@instruction(
    "format:no_bullets_bullets",
    rule="at least two sentences, then only lines starting with '*' (at least two), nothing after them",
    robust="a bullet holds an item and a sentence holds a word",
    source=_SRC,
)
def _no_bullets_bullets(t: str, a: dict[str, Any], ctx: Context) -> bool:
    prose, sentences, bullets = True, 0, 0
    for line in t.split("\n"):
        bare = line.strip()
        if bare.startswith("*"):
            if ctx.robust and not letters(bare.lstrip("*")):
                return False
            prose = False
            if sentences < 2:
                return False
            bullets += 1
        elif prose:
            parts = split_sentences(bare)
            sentences += sum(1 for s in parts if letters(s)) if ctx.robust else len(parts)
        else:
            return False
    return bullets >= 2


_LOWER_WORD = re.compile(r"(?<!\S)[a-z]{2,}(?!\S)")


@instruction(
    "format:title_case",
    rule="no NLTK word token starts lower-case with a cased rest (e.g. 'the', 'iPHONE')",
    robust="normalised text; at least one capitalised word (a response of digits and marks has none)",
    source=_SRC,
)
def _title_case(t: str, a: dict[str, Any], ctx: Context) -> bool:
    t = normalise(t) if ctx.robust else t
    if _LOWER_WORD.search(t):
        # a piece of two or more lower-case ASCII letters is (or splits into, 'cannot' -> 'can' 'not') tokens
        # that start lower-case with a lower-case rest: False under both rules, without tokenising
        return False
    words = word_tokens(t)
    if ctx.robust and not any(w[0].isupper() and w[1:].islower() for w in words):
        return False
    for word in words:
        head, rest = word[0], word[1:]
        if head.isupper() and rest.islower():
            continue
        if head.islower() and (rest.isupper() or rest.islower()):
            return False
    return True


_LABELS = ("My Answer:", "My Conclusion:", "Future Outlook:")


@instruction(
    "format:output_template",
    rule="contains 'My Answer:', 'My Conclusion:' and 'Future Outlook:'",
    robust="the three labels in that order, each followed by content (letters or digits) before the next",
    source=_SRC,
)
def _output_template(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not ctx.robust:
        return all(label in t for label in _LABELS)
    at = [t.find(label) for label in _LABELS]
    if -1 in at or at != sorted(at):
        return False
    ends = [*at[1:], len(t)]
    return all(letters(t[s + len(lab) : e]) for s, lab, e in zip(at, _LABELS, ends, strict=True))


@instruction(
    "format:no_whitespace",
    rule="no whitespace character at all",
    source=_SRC,
)
def _no_whitespace(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return not any(c.isspace() for c in t)
