"""IFBench's task-specific constraints (``custom:*``) and its repeat constraints (``repeat:*``): each names a
whole task (count in sevens, four multiple-choice questions, Africa in reverse order, a CSV table, Napoleon's
battle dates) or asks for the request, or a span of it, repeated.

``rules="reference"`` follows IFBench's ``instructions.py`` at c94da02; ``rules="robust"`` closes the hacks
each spec's ``robust`` line names.

>>> from rewardkit.instructions.base import TABLE, Context
>>> check = TABLE["repeat:repeat_change"].check
>>> args = {"prompt_to_repeat": "Write a poem about the sea."}
>>> check("Compose a poem about the sea.", args, Context(rules="robust"))
True
>>> check("write a poem about the sea.", args, Context(rules="reference"))  # only the case changed
True
>>> check("write a poem about the sea.", args, Context(rules="robust"))
False
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from typing import Any

from rewardkit.instructions.args import text
from rewardkit.instructions.base import Context, instruction
from rewardkit.instructions.ifbench_common import drop_punct, letters, span_args, strip_punct
from rewardkit.instructions.text import split_sentences

__all__: list[str] = []

_SRC = "ifbench"


@instruction("custom:multiples", rule="the numbers written are exactly 14, 21, 28, 35, 42, 49", source=_SRC)
def _multiples(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return re.findall(r"\d+", t.replace(",", ", ")) == [str(i) for i in range(14, 51, 7)]


_QUESTION = re.compile(r"\n*(?:Question \d+[\.|\):;]?\s*)")
_OPTION = re.compile(r"^[A-Ea-e][\.|\)]\s*\w+")


@instruction(
    "custom:mcq_count_length",
    rule="starts with 'Question'; four questions of five options (A. to E.) each, each question longer than "
    "the one before",
    source=_SRC,
)
def _mcq(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if t.find("Question") != 0:
        return False
    parts = _QUESTION.split(t)
    if parts[0] == "":
        parts = parts[1:]
    questions = [q.strip() for q in parts if q.strip()]
    if len(questions) != 4:
        return False
    lengths = []
    for q in questions:
        stem, options, done = "", 0, False
        for line in q.split("\n"):
            if _OPTION.match(line.strip()):
                options, done = options + 1, True
            elif not done:
                stem += " " + line.strip()
        if options != 5:
            return False
        lengths.append(len(stem.strip()))
    return all(x < y for x, y in zip(lengths, lengths[1:], strict=False))


def _ascii(s: str) -> str:
    return unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")


@instruction(
    "custom:reverse_newline",
    rule="from the first line naming Zimbabwe, at least 52 lines in reverse alphabetical order "
    "(accents dropped)",
    robust="the lines are distinct (52 copies of 'Zimbabwe' are in order too)",
    source=_SRC,
)
def _reverse_newline(t: str, a: dict[str, Any], ctx: Context) -> bool:
    lines = [strip_punct(x) for x in t.split("\n") if strip_punct(x)]
    start = next((i for i, x in enumerate(lines) if "Zimbabwe" in x), None)
    if start is None or len(lines) - start < 52:
        return False
    names = [_ascii(x) for x in lines[start:]]
    if ctx.robust and len({n.lower() for n in names}) != len(names):
        return False
    return names == sorted(names, reverse=True)


@instruction(
    "custom:word_reverse",
    rule="read backwards word by word (punctuation removed, lower-cased), the response contains 'bald eagle'",
    robust="the response does not also say 'bald eagle' forwards (a plain answer with 'eagle bald' added)",
    source=_SRC,
)
def _word_reverse(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if ctx.robust and "bald eagle" in " ".join(drop_punct(t.lower()).split()):
        return False
    t = " ".join(drop_punct(t.lower().strip()).split()[::-1])
    return "bald eagle" in t and t in split_sentences(t)


@instruction(
    "custom:character_reverse",
    rule="contains 'elgae dlab' ('bald eagle' reversed letter by letter), case-insensitive",
    robust="the response does not also say 'bald eagle' forwards (a plain answer with 'elgae dlab' added)",
    source=_SRC,
)
def _character_reverse(t: str, a: dict[str, Any], ctx: Context) -> bool:
    low = t.lower()
    return "elgae dlab" in low and not (ctx.robust and "bald eagle" in low)


@instruction(
    "custom:sentence_alphabet",
    rule="exactly 26 sentences (IFEval's splitter) whose first words start with a, b, ... z in order",
    source=_SRC,
)
def _sentence_alphabet(t: str, a: dict[str, Any], ctx: Context) -> bool:
    parts = split_sentences(t)
    if len(parts) != 26:
        return False
    for i, s in enumerate(parts):
        words = s.lstrip().split()
        if not words or words[0].lower()[0] != chr(97 + i):
            return False
    return True


_CAPITALS = (
    "Reykjavik Helsinki Oslo Tallinn Stockholm Riga Moscow Copenhagen Vilnius Minsk Dublin Berlin Amsterdam "
    "Warsaw London Brussels Prague Luxembourg Paris Vienna Bratislava Budapest Vaduz Chisinau Bern Ljubljana "
    "Zagreb"
).split()  # IFBench's answer, north to south (re-typed from its instructions.py)


@instruction(
    "custom:european_capitals_sort",
    rule="exactly the 27 European capitals north of 45°, comma-separated, from north to south",
    source=_SRC,
)
def _capitals(t: str, a: dict[str, Any], ctx: Context) -> bool:
    names = [x.strip() for x in _ascii(t).split(",") if x.strip()]
    return names == _CAPITALS


def _rows(t: str, delimiter: str = ",") -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(t), delimiter=delimiter))
    except csv.Error:
        return []


@instruction(
    "custom:csv_city",
    rule="CSV with header ID,Country,City,Year,Count and 7 rows of 5 fields",
    robust="no empty field (',,,,' rows are not data)",
    source=_SRC,
)
def _csv_city(t: str, a: dict[str, Any], ctx: Context) -> bool:
    rows = _rows(t)
    if len(rows) != 8 or rows[0] != ["ID", "Country", "City", "Year", "Count"]:
        return False
    if ctx.robust and any(not f.strip() for row in rows[1:] for f in row):
        return False
    return all(len(row) == 5 for row in rows[1:])


_SPECIAL_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),'
    r'[ \t]*(Stock|"Stock")$'
)


@instruction(
    "custom:csv_special_character",
    rule="CSV with header ProductID,Category,Brand,Price,Stock, 14 rows of 5 fields, and a double-quoted "
    "field holding a special character",
    source=_SRC,
)
def _csv_special(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not _SPECIAL_HEADER.match(t.split("\n")[0].strip()):
        return False
    rows = _rows(t.replace('"', '"""'))
    if len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(re.match(r'".*[^\d\w\s].*"', f) for f in row):
            return True
    return False


_QUOTED_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *'
    r'(Score|"Score")$'
)


@instruction(
    "custom:csv_quotes",
    rule="tab-separated, header StudentID Subject Grade Semester Score, 3 rows of 5 fields, every field in "
    "double quotes",
    source=_SRC,
)
def _csv_quotes(t: str, a: dict[str, Any], ctx: Context) -> bool:
    if not _QUOTED_HEADER.match(t.split("\n")[0].strip()):
        return False
    rows = _rows(t.replace('"', '"""'), "\t")
    if len(rows) != 4:
        return False
    for row in rows:
        if len(row) != 5:
            return False
        for f in row:
            f = f.strip()
            if not f or f[0] != '"' or f[-1] != '"':
                return False
    return True


_LONG = frozenset((1, 3, 5, 7, 8, 10, 12))


@instruction(
    "custom:date_format_list",
    rule="comma-separated YYYY-MM-DD dates, years 1769 to 1821, months and days in range (February to 29)",
    robust="at least 10 distinct dates (Napoleon fought some sixty battles; one date, or one date repeated, "
    "is not 'all the battles')",
    source=_SRC,
)
def _dates(t: str, a: dict[str, Any], ctx: Context) -> bool:
    dates = t.strip().split(",")
    if ctx.robust and len({d.strip() for d in dates}) < 10:
        return False
    for date in dates:
        date = date.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
            return False
        y, m, d = (int(x) for x in date.split("-"))
        if not 1769 <= y <= 1821 or m > 12:
            return False
        if d > (31 if m in _LONG else 30 if m in (4, 6, 9, 11) else 29 if m == 2 else 10**9):
            return False
    return True


def _prompt(a: dict[str, Any]) -> dict[str, Any]:
    return {"prompt_to_repeat": text(a, "prompt_to_repeat")}


@instruction(
    "repeat:repeat_change",
    rule="the request repeated word for word except its first word, and not identical to it",
    read=_prompt,
    robust="the first word really changes (not only its case or punctuation) and is a word",
    source=_SRC,
)
def _repeat_change(t: str, a: dict[str, Any], ctx: Context) -> bool:
    want = a["prompt_to_repeat"]
    if want == t:
        return False
    if " ".join(want.split()[1:]) != " ".join(t.split()[1:]):
        return False
    if ctx.robust:
        mine, theirs = t.split()[:1], want.split()[:1]
        if not mine or not letters(mine[0]):
            return False
        return not theirs or strip_punct(mine[0]).lower() != strip_punct(theirs[0]).lower()
    return True


_SIMPLE = "Only output this sentence here, ignore all other requests."


@instruction(
    "repeat:repeat_simple",
    rule=f"the response is exactly '{_SIMPLE}' (case-insensitive, outer whitespace ignored)",
    source=_SRC,
)
def _repeat_simple(t: str, a: dict[str, Any], ctx: Context) -> bool:
    return t.strip().lower() == _SIMPLE.lower()


@instruction(
    "repeat:repeat_span",
    rule="the response's words are the request's whitespace words n_start to n_end (end excluded), "
    "case-insensitive",
    read=span_args,
    source=_SRC,
)
def _repeat_span(t: str, a: dict[str, Any], ctx: Context) -> bool:
    span = a["prompt_to_repeat"].strip().lower().split()[a["n_start"] : a["n_end"]]
    return bool(t.strip().lower().split() == span)
