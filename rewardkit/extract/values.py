"""Reading a value out of text: how an answer is tidied (``$...$``, bold, the value after the last ``=``),
what reads as a value rather than prose, and the readers of steps 4-5 of :mod:`rewardkit.extract` (a bare
value, the finished final sentence, the lenient last value)."""

from __future__ import annotations

import re

from rewardkit.extract.words import number_phrases, number_value

_CLAUSE_TOKEN = re.compile(r"[()\[\]{},]|(?<![<>!=])=(?!=)|\bis\b")
_COMMAND = re.compile(r"\\[A-Za-z]+")
# "x = 5", "x \\in [-2, 7]", "f(x) = 2x", "a_1 \\geq 3": a value stated about a variable
_RELATION_START = re.compile(
    r"[A-Za-z](?:_\{?\w+\}?|\([A-Za-z]\))?\s*(?:=|<|>|!=|\\(?:in|le|ge|leq|geq|lt|gt|neq|ne|approx)\b)"
)
_WORD = re.compile(r"[A-Za-z]{2,}")
TAIL_CHARS = 800  # how far from the end an answer marker or a lenient answer is looked for


# an answer in quotes: "12 and 13", \"$12$\", “5”
_QUOTED = re.compile(r'\\?"([^"]+?)\\?"|“([^”]+)”', re.DOTALL)


def _tidy(value: str, *, equation: bool = False) -> str:
    """An answer as written: no surrounding ``$``, bold marks, or full stop; with ``equation`` (an answer
    read from prose), the value after the last ``=`` (``18 + 38 = 56`` -> ``56``)."""
    value = value.strip().strip("*").strip()
    quoted = _QUOTED.fullmatch(value)
    if quoted is not None:
        value = (quoted.group(1) or quoted.group(2)).strip()
    spans = _JOINED_SPANS.fullmatch(value)
    value = re.sub(r"\$([^$]+)\$", r"\1", value) if spans is not None else _unwrap_math(value)
    if equation:  # "18 + 38 = 56" -> "56"; "The volume is 120" -> "120"
        value = _last_clause(value)
    return value.rstrip(".").strip().strip("*").strip()


def _last_clause(value: str) -> str:
    """What follows the last ``=`` or "is" outside brackets: the value a computation or a definition ends
    in (``18 + 38 = 56``, ``x = 18 + 38 = 56``, ``k = 5``, ``(x, y) = (1, 2)``, ``The volume is 120``).
    Kept whole: a list of equations (``p=-1, p=2``, ``x = 2 or x = 3``) and one equation between
    expressions, which is itself the answer (``x - 2y + z - 1 = 0``)."""
    depth, cuts, comma = 0, [], -1
    for match in _CLAUSE_TOKEN.finditer(value):
        token = match.group(0)
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            if token == ",":
                comma = match.start()
            else:
                cuts.append((match.start(), match.end(), token))
    if not cuts or comma >= 0 and comma < cuts[-1][1]:
        return value.strip()
    joined = _JOINED.search(value, cuts[0][1])
    if joined is not None and joined.start() < cuts[-1][0]:
        return value.strip()  # "x = 2 or x = 3": equations joined as a solution set, kept whole
    start, end, token = cuts[-1]
    if len(cuts) == 1 and token != "is" and not _DEFINED.fullmatch(value[:start]):
        return value.strip()  # "x - 2y + z - 1 = 0": an equation, not a value
    return value[end:].strip()


# "or"/"and" between two clauses, as a word or in \text{}
_JOINED = re.compile(r"\\text\{\s*(?:or|and)\s*\}|\s(?:or|and)\s")
# math spans joined by "or", "and" or commas ("$x = 2$ or $x = 3$"): one answer, the spans' contents
_JOINED_SPANS = re.compile(r"\$([^$]+)\$((?:\s*(?:,|;|\bor\b|\band\b)\s*\$[^$]+\$)+)")


# what the left side of "lhs = value" may be for the value alone to be the answer: a name (x, a_1, f(x),
# \\theta, MRTS_{l,k}), a tuple of names, or a computation on numbers (18 + 38)
_DEFINED = re.compile(
    r"\s*(?:\\?[A-Za-z]+(?:_\{?[\w,]+\}?)?(?:\([^()]*\))?|\([^()]*\)"
    r"|(?:[\d\s.+\-*/×·^(){}]|\\[A-Za-z]+)*\d(?:[\d\s.+\-*/×·^(){}]|\\[A-Za-z]+)*)\s*"
)


def _unwrap_math(value: str) -> str:
    for opening, closing in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if value.startswith(opening) and value.endswith(closing) and len(value) > len(opening) + len(closing):
            inner = value[len(opening) : -len(closing)].strip()
            if "$" not in inner:
                return inner
    return value


def value_like(text: str) -> bool:
    """Text that reads as a value rather than prose: it starts like one (a digit, a sign, LaTeX, a bracket,
    ``x =``) and holds at most one word of two letters or more outside LaTeX commands (a unit).

    >>> value_like("12 cm"), value_like("\\\\frac{1}{2}"), value_like("x = 5"), value_like("Step 3:")
    (True, True, True, False)
    """
    text = _unwrap_math(text.strip().strip("*").strip()).rstrip(".").strip()
    if not text or len(text) > 200 or text.endswith(":"):
        return False
    if not (text[0] in "0123456789-+−.$\\({[|√π" or _RELATION_START.match(text)):
        return False
    return len(_WORD.findall(_COMMAND.sub(" ", text))) <= 1


# words that make the value near them something other than the answer: "not 7", "less than 7", "at least 7"
QUALIFIED = re.compile(
    r"\b(?:not|never|cannot|can[’']t|isn[’']t|wasn[’']t|aren[’']t|won[’']t|don[’']t|doesn[’']t|didn[’']t"
    r"|no longer|less than|more than|greater than|"
    r"fewer than|smaller than|larger than|at least|at most|instead of|rather than|except|other than|"
    r"neither|nor|excluding|besides)\b",
    re.IGNORECASE,
)


# -- 3. the whole text as an answer, and the lenient fallback
_VALUE = re.compile(
    r"\$\$(.+?)\$\$|\$([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]"
    r"|(?<![\w.])(-?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?:/\d+)?%?)",
    re.DOTALL,
)
BARE_CHARS = 200  # a completion this short that is only a value is its own answer


def bare_answer(text: str) -> str | None:
    """The text itself when it is only a value (``-5``, ``$[0,1)$``, ``\\frac{10}{9}``, ``x = 3``, or a
    whole number in words, :func:`~rewardkit.extract.words.number_value`): a completion that is nothing but
    its answer.

    >>> bare_answer(" $\\\\frac13 $ "), bare_answer("The sum is 5."), bare_answer("Twelve")
    ('\\\\frac13', None, 'Twelve')
    """
    stripped = text.strip().rstrip(".").strip()
    if not stripped or len(stripped) > BARE_CHARS:
        return None
    inner = _unwrap_math(stripped)
    if inner != stripped and inner:  # the whole text is one math span: whatever it holds
        return inner
    return _tidy(stripped) if value_like(stripped) or number_value(stripped) is not None else None


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[^a-z])|\n\s*\n")
FINAL_SENTENCES = 3  # a closing remark or two may follow the sentence that states the answer
# what models write after their answer: "I hope it is correct.", "I think that's the final answer.",
# "Let me know if ...", "Hope this helps!", "That looks good.", "Perfect.", "Is there anything else I can
# help you with?", "This problem demonstrates the use of modular arithmetic."
_CLOSING = re.compile(
    r"\W*+(?:I\b|I'm\b|I've\b|Hope\b|Let me know\b|Feel free\b|Please\b|Thanks?\b|So,? that's\b|That's\b"
    r"|(?:That|This|It|Everything)\s+(?:looks|seems|makes sense|checks out|is correct|is right)\b"
    r"|(?:Looks|Seems)\s+(?:good|right|correct)\b|(?:Yes|Yeah|OK|Okay|Great|Perfect|Alright|Good)\b[.!,]"
    r"|This (?:is|should be) (?:the|my|our|correct)\b|[^.!?]*\b(?:final|correct) answer\b"
    r"|(?:Is|Do|Would|Can) (?:there|you) (?:anything|any|like|want|need)\b[^.!]*\?"
    r"|This (?:problem|question|exercise|example|approach|method|solution|process)\s+"
    r"(?:demonstrates|illustrates|shows|highlights|uses|involves|requires|tests|is an?)\b)",
    re.IGNORECASE,
)
_FINISHED = (".", "!", "?", "$", "\\)", "\\]")
# a number with a currency sign, a percent sign or a unit with its power after it ends a value: a reply that
# ends "... which is 1,000.99€" or "... it's 12 m²" has finished, with or without a full stop
_UNIT_END = re.compile(r"\d\s*(?:€|£|¥|%|°|[a-zA-Z]{1,3}[²³])$")
# a reply that declines the task: the numbers in its words describe the task, they answer nothing
REFUSAL = re.compile(
    r"\b(?:I|I'm|I am)\s+(?:can(?:no|')t|unable to|not able to|do not have the ability to"
    r"|don't have the ability to)\s+(?:view|see|access|look at|open|analy[sz]e|process|interpret)\b"
    r"|\bas an AI\b",
    re.IGNORECASE,
)


def sentence_answer(text: str) -> str | None:
    """The last value of the final sentence, when the text ends with a finished sentence (truncated text
    has no answer): ``So f(-2) is 18.``, ``Therefore $x \\geq 5$ is the solution.``; in a sentence with no
    digit or math, the last whole number in words (:func:`~rewardkit.extract.words.number_phrases`:
    ``So the result is twenty-one.``). Closing remarks after it (``I hope it is correct.``, ``I think that's
    the final answer.``) are passed over.

    >>> sentence_answer("First 3 apples.\\n\\nSo f(-2) is 18."), sentence_answer("so x = (1/2")
    ('18', None)
    >>> sentence_answer("The result is twelve."), sentence_answer("The result is twelve")
    ('12', None)
    >>> sentence_answer("so the number is 10 which is 1,000.99m²"), sentence_answer("the price is 3,15 €")
    ('1,000.99', '3,15')
    >>> sentence_answer("I can't view pictures, so I cannot compare the heights of the three towers.") is None
    True
    """
    stripped = text.rstrip()
    if not stripped.endswith(_FINISHED) and not _UNIT_END.search(stripped[-20:]):
        return None
    tail = stripped[-TAIL_CHARS:]
    if REFUSAL.search(tail):
        return None  # "I can't view pictures ... the heights of the three towers": no count is stated
    sentences = [s for s in _SENTENCE_SPLIT.split(tail) if s.strip()]
    for sentence in reversed(sentences[-FINAL_SENTENCES:]):
        values = _values(sentence) or number_phrases(sentence)
        if values and _qualified(sentence, values):
            return None  # "So the result is not 7.", "It is at least 7."
        if values or not _CLOSING.match(sentence):
            return values[-1][2] if values else None
    return None  # nothing but closing remarks


# what joins the values one qualifier bounds: "not 10 or 12", "neither 3 nor 4", "not 1, 2"
_LIST_JOIN = re.compile(r"[\s,;]*(?:(?:or|and|nor)\b[\s,;]*)?", re.IGNORECASE)


_BECAUSE = re.compile(r"\b(?:since|because|as|for|when|if|given|then)\b", re.IGNORECASE)


def _qualified(text: str, values: list[tuple[int, int, str]]) -> bool:
    """The last of ``values`` (read in ``text``) is negated or bounded: a qualifier (``not``, ``at least``,
    ...) stands in it or after it, or bounds it from before. A qualifier bounds the first value after it
    and those joined to that one by "or", "and", commas (``not 10 or 12``); a value after other words is
    stated anew (``not 10 which is 12`` states 12, ``not divisible by 3, so n = 7`` states 7)."""
    start = values[-1][0]
    if QUALIFIED.search(text, start):  # "7 is not possible", "$z \\not= i$"
        return True
    bounded = -1  # the index of the last value the qualifiers bound
    for qualifier in QUALIFIED.finditer(text, 0, start):
        if _BECAUSE.search(text, qualifier.end(), start):
            return True  # "x cannot be 3 since then the denominator is 0": a reason, not a new answer
        first = next((i for i, v in enumerate(values) if v[0] >= qualifier.end()), None)
        if first is None:
            continue
        bounded = max(bounded, first)
        while bounded + 1 < len(values) and _LIST_JOIN.fullmatch(
            text, values[bounded][1], values[bounded + 1][0]
        ):
            bounded += 1
    return bounded == len(values) - 1


# "Marbles remaining after the trade: 5", "**Total cost:** $42": a label of words, a colon, a value
_LABELLED_LINE = re.compile(r"[ \t*#>]*([A-Za-z][A-Za-z ,'’()/-]{2,80}?)[ \t*]*:[ \t*]*(.+?)[ \t*]*")
NOT_A_LABEL = re.compile(r"^(?:step|case|part|note|hint|check|verification|example|question|problem)\b", re.I)
MAX_LABEL_WORDS = 10
# a label that introduces working rather than naming a result: "Calculating the value, we get:"
_WORKING = re.compile(
    r"\b(?:we|I|get|gets|have|has|obtain|find|gives?|yields?|calculating|simplifying)\b", re.I
)


def labelled_line(text: str) -> str | None:
    """The value of a labelled final line, as models close a word problem without a box or "answer"
    (``Marbles remaining after the trade: 5``): a label of at most :data:`MAX_LABEL_WORDS` words (no digits;
    not a step, case, part or note), a colon, and a value (:func:`value_like`), on the text's last line.

    >>> labelled_line("She gives away 3.\\n\\nMarbles remaining after the trade: 5")
    '5'
    >>> labelled_line("Step 2: 12") is None, labelled_line("So we get: $r_p \\\\approx 1.69") is None
    (True, True)
    >>> labelled_line("Remaining: we still need to add") is None
    True
    """
    lines = text.rstrip().rsplit("\n", 1)
    match = _LABELLED_LINE.fullmatch(lines[-1])
    if match is None:
        return None
    label, value = match.group(1).strip(), match.group(2)
    if len(label.split()) > MAX_LABEL_WORDS or NOT_A_LABEL.match(label) or not value_like(value):
        return None
    if _WORKING.search(label) or value.count("$") % 2 or value.count("\\(") != value.count("\\)"):
        return None  # "we get: $r_p \\approx 1.69": working cut off, not a labelled result
    return _tidy(value) or None


def lenient_answer(text: str) -> str | None:
    """The last value of the text's final lines: a math span (``$...$``, ``\\(...\\)``, ``\\[...\\]``) or
    a number, the value after its last ``=``; in lines with neither, the last whole number in words.

    >>> lenient_answer("... so the ordered pair is $(7, 6)$."), lenient_answer("The volume is 120.")
    ('(7, 6)', '120')
    >>> lenient_answer("So f(-2) is 18. I hope it helps!")
    '18'
    """
    tail = text[-TAIL_CHARS:]
    values = _values(tail) or number_phrases(tail)
    return values[-1][2] if values else None


def _values(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, value)`` of every value in ``text`` (a math span or a number), in order, each the value
    after its last ``=``; spans that hold none are left out."""
    found = []
    for match in _VALUE.finditer(text):
        value = next(group for group in match.groups() if group is not None)
        tidied = _tidy(value, equation=True)
        if tidied:
            found.append((match.start(), match.end(), tidied))
    return found
