"""Finding the answer in a completion: extraction only, no judging (that is each reward's compare step).

The order, written from how models write and how trusted harnesses read them (Math-Verify's extraction
configs, lm-evaluation-harness's GSM8K and Minerva filters, Qwen2.5-Math's ``extract_answer``, MMLU-Pro's and
OpenCompass's option readers, simple-evals), and measured with ``rewardkit agreement`` on labelled outputs:

1. the final segment (:func:`final_text`, :func:`before_next_turn`): after ``</think>``, inside Sky-T1's
   ``<|begin_of_solution|>``; never unfinished reasoning; cut before a new turn written after an answer;
2. containers: the last ``<answer>`` block, the final boxes (one answer set when only joiners stand between);
3. markers near the end (:func:`answer_phrase`): ``#### x``, ``Answer: x``, "the (final) answer (...) is x",
   a bold value;
4. the whole segment when it is only a value (:func:`bare_answer`);
5. ``standard`` (the default): the last value of a finished final sentence (:func:`sentence_answer`);
   ``lenient``: the last value of the final lines (:func:`lenient_answer`); ``strict`` stops at 4.

Golds are read by :func:`gold_answer`, the one gold reader of every reward.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

__all__ = [
    "Extracted",
    "answer_phrase",
    "final_boxes",
    "final_text",
    "gold_answer",
    "last_boxed",
    "last_tag_block",
    "lenient_answer",
    "math_answer",
    "sentence_answer",
    "stated_answers",
    "value_like",
    "bare_answer",
    "before_next_turn",
    "answer_in",
    "final_segment",
    "EXTRACT_MODES",
    "QUALIFIED",
    "strip_special_tail",
]

#: end-of-turn tokens a trainer may leave in a decoded completion (OpenRLHF keeps special tokens): ChatML and
#: Llama 3 style ``<|...|>``, DeepSeek's full-width ``<｜...｜>``, and the classic ``</s>``, ``<eos>``, ...
_SPECIAL_TAIL = re.compile(
    r"(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</s>|<eos>|<end_of_turn>|<pad>|<[A-Z][A-Z_]{2,30}>)\Z"
)


def strip_special_tail(text: str) -> str:
    """``text`` without the special tokens (and white space) it ends with.

    >>> strip_special_tail("<answer>4</answer><|im_end|>\\n<|endoftext|>")
    '<answer>4</answer>'
    >>> strip_special_tail("<answer>4</answer></s>")
    '<answer>4</answer>'
    """
    end = len(text.rstrip())
    while True:  # move the end back token by token; one slice at the end (linear in what is stripped)
        match = _SPECIAL_TAIL.search(text, max(0, end - 48), end)  # a token is short: look at the end only
        if match is None:
            return text[:end]
        end = match.start()
        while end and text[end - 1].isspace():
            end -= 1


def last_tag_block(text: str, tag: str = "answer") -> str | None:
    """The content of the last complete ``<tag>...</tag>`` block, or ``None`` when there is none.

    The block ends at the first closing tag after the last opening tag that has one, so
    ``<answer>a</answer> junk </answer>`` gives ``"a"`` and ``<answer>a<answer>b</answer>`` gives ``"b"``.
    Linear in the text's length, whatever it holds.

    >>> last_tag_block("<answer>1</answer> then <answer>\\n2\\n</answer>")
    '\\n2\\n'
    >>> last_tag_block("no tags here") is None
    True
    """
    opening, closing = f"<{tag}>", f"</{tag}>"
    last_close = text.rfind(closing)
    if last_close < 0:
        return None
    start = text.rfind(opening, 0, last_close)
    if start < 0:
        return None
    start += len(opening)
    end = text.find(closing, start)
    return text[start:end]


_BOX = re.compile(r"\\(?:boxed|fbox)")
MAX_SET_ITEMS = 32  # boxes read as one answer set


def last_boxed(text: str) -> str | None:
    """The content of the last brace-balanced ``\\boxed{...}`` (or ``\\fbox{...}``), or ``None``.

    Nested braces are kept whole; an unclosed box is skipped for the one before it. Linear in the text:
    a box before an unclosed one can only close before it, so each character is scanned once.

    >>> last_boxed("first \\\\boxed{18}, then \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> last_boxed("\\\\boxed{1} and an unclosed \\\\boxed{2")
    '1'
    >>> last_boxed("no box") is None
    True
    """
    found = _last_box(text, len(text))
    return found[2] if found is not None else None


def _last_box(text: str, stop: int) -> tuple[int, int, str] | None:
    """``(start, end, content)`` of the last complete box that closes before ``stop``."""
    end = stop
    for match in reversed(list(_BOX.finditer(text, 0, stop))):
        brace = match.end()
        while brace < end and text[brace] == " ":
            brace += 1
        if brace < end and text[brace] == "{":
            content = _balanced(text, brace, end)
            if content is not None:
                return match.start(), brace + len(content) + 2, content
        end = match.start()
    return None


# What may stand between the boxes of one final answer: commas, "and"/"or", spacing, \text{} of those words.
_SET_GAP = re.compile(
    r"(?:\s|,|;|\$|\\[,;:! ()\[\]]|\\q?quad\b|\band\b|\bor\b|\\text\s*\{\s*(?:,|and|or)?\s*\})*",
    re.IGNORECASE,
)


def final_boxes(text: str) -> list[str] | None:
    """The boxes of the final answer, in order: the last box, and the boxes before it that are joined to it
    only by commas, "and"/"or", ``\\quad`` and the like (an answer set). A box earlier in the reasoning,
    with other words between, is an intermediate result. ``None`` when there is no box.

    >>> final_boxes("The integers are \\\\boxed{-2} and \\\\boxed{1}.")
    ['-2', '1']
    >>> final_boxes("first \\\\boxed{18}, which gives \\\\boxed{210}")
    ['210']
    """
    found = _last_box(text, len(text))
    if found is None:
        return None
    start, _, content = found
    items = [content]
    while len(items) < MAX_SET_ITEMS:
        previous = _last_box(text, start)
        if previous is None or not _joins(text[previous[1] : start]):
            break
        start, _, content = previous
        items.insert(0, content)
    return items


_GAP_MARKUP = re.compile(r"\\text\s*\{|[{}$]|\\[()\[\],;:! ]|\\q?quad\b")
_GAP_JOINER = re.compile(r"(?:,|;|\band|\bor)\s*$", re.IGNORECASE)
MAX_GAP_CHARS = 40


def _joins(gap: str) -> bool:
    """Two boxes with ``gap`` between them belong to one answer: only commas, "and", ``\\quad`` and the
    like, or a short label ending in "and"/"or"/a comma (``\\text{ for part (a) and }``), no sentence end."""
    if _SET_GAP.fullmatch(gap):
        return True
    if len(gap) > MAX_GAP_CHARS:
        return False
    words = _GAP_MARKUP.sub(" ", gap)
    return not re.search(r"[.!?:=]|\n\s*\n", words) and bool(_GAP_JOINER.search(words))


def _balanced(text: str, open_at: int, stop: int) -> str | None:
    """The content of the brace group opening at ``open_at`` if it closes before ``stop``, else ``None``."""
    depth = 0
    for position in range(open_at, stop):
        char = text[position]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : position]
    return None


class Extracted(NamedTuple):
    """What was read as the final answer (``None`` when nothing was), and why not."""

    answer: str | None
    reason: str | None = None


# -- 1. the final segment
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_THOUGHT_OPEN, _THOUGHT_CLOSE = "<|begin_of_thought|>", "<|end_of_thought|>"
_SOLUTION_OPEN, _SOLUTION_CLOSE = "<|begin_of_solution|>", "<|end_of_solution|>"
#: a new turn that a base model (or a model trained on few-shot prompts) writes after its answer: the
#: stop sequences of the harnesses (lm-evaluation-harness, Qwen2.5-Math, MMLU-Pro, OpenCompass) as lines,
#: and chat templates' user-turn tokens
_NEXT_TURN = re.compile(
    r"^[ \t]*+(?:#{1,4}[ \t]*+)?(?:\*\*)?(?:Question|Problem|Q|Human|User|Exercise|Instruction)\b"
    r"[ \t]*+(?:\d++[ \t]*+)?(?:\*\*[ \t]*+)?[:：]"
    r"|^[ \t]*+#{1,4}[ \t]*+Problem\b",
    re.MULTILINE,
)
_TEMPLATE_TURN = re.compile(
    r"(?:<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>)(?![ \t]*(?:assistant|model)\b)"
    r"|<\|user\|>|\[INST\]|<\|eot_id\|>|<\|im_end\|>|<end_of_turn>"
)
MAX_TURNS = 8  # next-turn markers tried before giving up on cutting


def final_text(completion: str) -> str | None:
    """The part of a completion that holds its answer, or ``None`` when its reasoning never ended.

    After the last ``</think>``; inside the last ``<|begin_of_solution|>`` (Sky-T1, STILL), else after
    ``<|end_of_thought|>``; the whole text when it has no reasoning markers. A ``<think>`` or
    ``<|begin_of_thought|>`` that is never closed is truncated reasoning: it has no answer, whatever it
    boxed along the way. Trailing special tokens are dropped.

    >>> final_text("<think>maybe \\\\boxed{5}</think> I am not sure.")
    ' I am not sure.'
    >>> final_text("<think>still thinking \\\\boxed{5}") is None
    True
    >>> final_text("<|begin_of_thought|>hm<|end_of_thought|><|begin_of_solution|>3<|end_of_solution|>")
    '3'
    """
    text = strip_special_tail(completion)
    close = text.rfind(_THINK_CLOSE)
    if close >= 0:
        return text[close + len(_THINK_CLOSE) :]
    if _THINK_OPEN in text:
        return None
    solution = text.rfind(_SOLUTION_OPEN)
    if solution >= 0:
        body = text[solution + len(_SOLUTION_OPEN) :]
        end = body.find(_SOLUTION_CLOSE)
        return body if end < 0 else body[:end]
    close = text.rfind(_THOUGHT_CLOSE)
    if close >= 0:
        return text[close + len(_THOUGHT_CLOSE) :]
    return None if _THOUGHT_OPEN in text else text


def before_next_turn(text: str) -> str:
    """``text`` up to the first new turn (``Question:``, ``Problem:``, ``Q:``, ``<|im_start|>user``, ...)
    that follows an answer: what a harness's stop sequences would have cut. A marker with no answer before
    it (a restated problem) is kept.

    >>> before_next_turn("The answer is 4.\\n\\nQuestion: what is 3+3?\\nThe answer is 6.")
    'The answer is 4.\\n\\n'
    >>> before_next_turn("Problem: find x.\\nSo x = 2, the answer is 2.")
    'Problem: find x.\\nSo x = 2, the answer is 2.'
    """
    template = _TEMPLATE_TURN.search(text)
    if template is not None:  # a chat template's user turn: never part of an answer
        text = text[: template.start()]
    for tried, match in enumerate(_NEXT_TURN.finditer(text)):
        if tried >= MAX_TURNS:
            break
        if match.start() > 0 and _has_answer(text[: match.start()]):
            return text[: match.start()]
    return text


def _has_answer(text: str) -> bool:
    return (
        last_tag_block(text, "answer") is not None
        or _last_box(text, len(text)) is not None
        or _marked_answer(text) is not None
    )


# -- 2. answer markers
# "#### 72" (GSM8K), at the start or the end of a line
_HASHES = re.compile(r"####[ \t]*([^\n]*)")
_ANSWER_LINE = re.compile(
    r"^[ \t*#]*(?:final[ \t]+answer|answer|a)[ \t*]*:[ \t*]*(.*)$", re.MULTILINE | re.IGNORECASE
)
# "the (final) answer is x", with what models put between "answer" and "is": a short parenthetical
# ("the answer (arabic numerals) is"), a complement ("the answer to this problem is"), a hedge ("the answer
# should be"); or "Answer: x", "**Final Answer:** x", "the correct option is (C)".
_ANSWER_PHRASE = re.compile(
    r"\b(?:answers?|correct[ \t]+(?:option|choice))\b"
    r"(?:[ \t]*\([^()\n]{1,40}\))?"
    r"(?:[ \t]+(?:to|for)[ \t]+[^.\n:=]{1,40}?)?"
    r"(?:[ \t]+(?:should|would|must|will|could|might|then|therefore|thus|here|now|finally|indeed|clearly"
    r"|simply|still|again|also|actually|obviously|definitely|probably|exactly|always))*"
    r"[ \t*]*(?:(?:\bis\b|\bbe\b|\bwas\b|\bequals\b)[ \t*]*:?|:|=|(?=\$|\\[(\[]))[ \t*]*"
    r"|答案[ \t]*(?:应该|应)?[ \t]*(?:是|为|:|：)[ \t]*",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|。|\n")
_DISPLAY = re.compile(r"\\\[(.*?)\\\]|\$\$(.*?)\$\$", re.DOTALL)
_BOLD = re.compile(r"\*\*([^*\n]{1,60})\*\*")
_CLAUSE_TOKEN = re.compile(r"[()\[\]{},]|(?<![<>!=])=(?!=)|\bis\b")
_COMMAND = re.compile(r"\\[A-Za-z]+")
# "x = 5", "x \\in [-2, 7]", "f(x) = 2x", "a_1 \\geq 3": a value stated about a variable
_RELATION_START = re.compile(
    r"[A-Za-z](?:_\{?\w+\}?|\([A-Za-z]\))?\s*(?:=|<|>|!=|\\(?:in|le|ge|leq|geq|lt|gt|neq|ne|approx)\b)"
)
_WORD = re.compile(r"[A-Za-z]{2,}")
TAIL_CHARS = 800  # how far from the end an answer marker or a lenient answer is looked for
BOLD_TAIL_CHARS = 300  # a bold value counts on the final lines only


def _tidy(value: str, *, equation: bool = False) -> str:
    """An answer as written: no surrounding ``$``, bold marks, or full stop; with ``equation`` (an answer
    read from prose), the value after the last ``=`` (``18 + 38 = 56`` -> ``56``)."""
    value = value.strip().strip("*").strip()
    value = _unwrap_math(value)
    if equation:  # "18 + 38 = 56" -> "56"; "The volume is 120" -> "120"
        value = _last_clause(value)
    return value.rstrip(".").strip().strip("*").strip()


def _last_clause(value: str) -> str:
    """What follows the last ``=`` or "is" outside brackets: the value a computation or a definition ends
    in (``18 + 38 = 56``, ``x = 18 + 38 = 56``, ``k = 5``, ``(x, y) = (1, 2)``, ``The volume is 120``).
    Kept whole: a list of equations (``p=-1, p=2``) and one equation between expressions, which is itself
    the answer (``x - 2y + z - 1 = 0``)."""
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
    start, end, token = cuts[-1]
    if len(cuts) == 1 and token != "is" and not _DEFINED.fullmatch(value[:start]):
        return value.strip()  # "x - 2y + z - 1 = 0": an equation, not a value
    return value[end:].strip()


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


def answer_phrase(text: str) -> str | None:
    """The value after the last answer marker near the end: ``#### x`` (at either end of a line), an
    ``Answer: x`` line, "the (final) answer (...) is x", a bold value on the final lines.

    >>> answer_phrase("the answer: 18 + 38 = 56, so\\nthe final answer is 56.")
    '56'
    >>> answer_phrase("so she makes $18 every day. #### 18")
    '18'
    >>> answer_phrase("Therefore, the answer (arabic numerals) is 26.")
    '26'
    >>> answer_phrase("The answer is:\\n\\n$(7, 6)$"), answer_phrase("so *n* = **5**.")
    ('(7, 6)', '5')
    """
    found = _marked_answer(text)
    return found[1] if found is not None else None


def _marked_answer(text: str) -> tuple[int, str] | None:
    """``(position, value)`` of the last answer marker near the end of ``text`` that holds a value."""
    tail_start = max(0, len(text) - TAIL_CHARS)
    best: tuple[int, str] | None = None
    for pattern in (_HASHES, _ANSWER_LINE):
        for match in pattern.finditer(text, tail_start):
            value = _tidy(match.group(1), equation=True)
            if value and (best is None or match.start() > best[0]):
                best = (match.start(), value)
    for position, phrase in stated_answers(text):
        if best is None or position > best[0]:
            best = (position, phrase)
    for match in _BOLD.finditer(text, max(0, len(text) - BOLD_TAIL_CHARS)):
        if (best is None or match.start() > best[0]) and value_like(match.group(1)):
            value = _tidy(match.group(1), equation=True)
            if value:
                best = (match.start(), value)
    return best


def stated_answers(text: str) -> list[tuple[int, str]]:
    """Every ``(position, value)`` stated with an answer phrase in ``text``'s tail, in order (for
    multiple choice, where stating several options is no answer).

    >>> stated_answers("The answer is (A). No wait, the answer is (C).")
    [(4, '(A)'), (32, '(C)')]
    """
    found = []
    for match in _ANSWER_PHRASE.finditer(text, max(0, len(text) - TAIL_CHARS)):
        value = _phrase_value(text, match.end())
        if value:
            found.append((match.start(), value))
    return found


def _phrase_value(text: str, start: int) -> str | None:
    """The value an answer phrase ending at ``start`` introduces: a display (``\\[...\\]``, ``$$...$$``)
    that opens there, else the rest of the sentence (the next line when the phrase ends one)."""
    rest = text[start:].lstrip()
    display = _DISPLAY.match(rest)
    if display is not None:
        value = display.group(1) if display.group(1) is not None else display.group(2)
    else:
        stop = _SENTENCE_END.search(rest)
        value = rest[: stop.start()] if stop is not None else rest
    tidied = _tidy(value, equation=True)
    if tidied and len(_WORD.findall(_COMMAND.sub(" ", tidied))) >= 2 and not value_like(tidied):
        leading = _leading_value(tidied)
        if leading is not None:  # "12, which is more than 10" -> 12; "8 since each side counts" -> 8
            return leading
        if QUALIFIED.search(tidied):
            return None  # "definitely not 1/2", "less than 7": no value is stated
        last = lenient_answer(tidied)  # "Final Answer: Jane started growing Sphere 3 hours ago." -> 3
        return last if last is not None else tidied
    return tidied or None


# words that make the value near them something other than the answer: "not 7", "less than 7", "at least 7"
QUALIFIED = re.compile(
    r"\b(?:not|never|cannot|can't|isn't|wasn't|aren't|won't|no longer|less than|more than|greater than|"
    r"fewer than|smaller than|larger than|at least|at most|instead of|rather than|except|other than|"
    r"neither|nor|excluding|besides)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\S+")


def _leading_value(text: str) -> str | None:
    """The value a phrase value starts with, before the words that follow it (``12 apples, not 10`` ->
    ``12``), when it starts with one; ``None`` when it starts with words."""
    kept: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _WORD.search(_COMMAND.sub(" ", token.strip("$"))) and not token.startswith("$"):
            break
        kept.append(token)
    value = " ".join(kept).rstrip(",;:").strip()
    return _tidy(value) if value and value_like(value) else None


# -- 3. the whole text as an answer, and the lenient fallback
_VALUE = re.compile(
    r"\$\$(.+?)\$\$|\$([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]"
    r"|(?<![\w.])(-?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?:/\d+)?%?)",
    re.DOTALL,
)
BARE_CHARS = 200  # a completion this short that is only a value is its own answer


def bare_answer(text: str) -> str | None:
    """The text itself when it is only a value (``-5``, ``$[0,1)$``, ``\\frac{10}{9}``, ``x = 3``): a
    completion that is nothing but its answer.

    >>> bare_answer(" $\\\\frac13 $ "), bare_answer("The sum is 5.")
    ('\\\\frac13', None)
    """
    stripped = text.strip().rstrip(".").strip()
    if not stripped or len(stripped) > BARE_CHARS:
        return None
    inner = _unwrap_math(stripped)
    if inner != stripped and inner:  # the whole text is one math span: whatever it holds
        return inner
    return _tidy(stripped) if value_like(stripped) else None


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[^a-z])|\n\s*\n")
FINAL_SENTENCES = 3  # a closing remark or two may follow the sentence that states the answer
# what models write after their answer: "I hope it is correct.", "I think that's the final answer.",
# "Let me know if ...", "Hope this helps!", "That looks good.", "Perfect."
_CLOSING = re.compile(
    r"\W*+(?:I\b|I'm\b|I've\b|Hope\b|Let me know\b|Feel free\b|Please\b|Thanks?\b|So,? that's\b|That's\b"
    r"|(?:That|This|It|Everything)\s+(?:looks|seems|makes sense|checks out|is correct|is right)\b"
    r"|(?:Looks|Seems)\s+(?:good|right|correct)\b|(?:Yes|Yeah|OK|Okay|Great|Perfect|Alright|Good)\b[.!,]"
    r"|This (?:is|should be) (?:the|my|our|correct)\b|[^.!?]*\b(?:final|correct) answer\b)",
    re.IGNORECASE,
)
_FINISHED = (".", "!", "?", "$", "\\)", "\\]")


def sentence_answer(text: str) -> str | None:
    """The last value of the final sentence, when the text ends with a finished sentence (truncated text
    has no answer): ``So f(-2) is 18.``, ``Therefore $x \\geq 5$ is the solution.``; closing remarks after
    it (``I hope it is correct.``, ``I think that's the final answer.``) are passed over.

    >>> sentence_answer("First 3 apples.\\n\\nSo f(-2) is 18."), sentence_answer("so x = (1/2")
    ('18', None)
    """
    stripped = text.rstrip()
    if not stripped.endswith(_FINISHED):
        return None
    tail = stripped[-TAIL_CHARS:]
    sentences = [s for s in _SENTENCE_SPLIT.split(tail) if s.strip()]
    for sentence in reversed(sentences[-FINAL_SENTENCES:]):
        found = lenient_answer(sentence)
        if found is not None and QUALIFIED.search(sentence):
            return None  # "So the result is not 7.", "It is at least 7."
        if found is not None or not _CLOSING.match(sentence):
            return found
    return None  # nothing but closing remarks


def lenient_answer(text: str) -> str | None:
    """The last value of the text's final lines: a math span (``$...$``, ``\\(...\\)``, ``\\[...\\]``) or
    a number, the value after its last ``=``.

    >>> lenient_answer("... so the ordered pair is $(7, 6)$."), lenient_answer("The volume is 120.")
    ('(7, 6)', '120')
    >>> lenient_answer("So f(-2) is 18. I hope it helps!")
    '18'
    """
    tail = text[-TAIL_CHARS:]
    for match in reversed(list(_VALUE.finditer(tail))):
        value = next(group for group in match.groups() if group is not None)
        tidied = _tidy(value, equation=True)
        if tidied:
            return tidied
    return None


EXTRACT_MODES = ("strict", "standard", "lenient")


def math_answer(completion: str, *, mode: str = "standard") -> Extracted:
    """The final answer of a math completion.

    The order, written from how models write and how trusted harnesses read them (Math-Verify's
    extraction, lm-evaluation-harness, Qwen2.5-Math's parser, MMLU-Pro, OpenCompass):

    1. the final segment (:func:`final_text`): after the reasoning, cut before a new turn written after
       an answer (:func:`before_next_turn`); unclosed reasoning has no answer (``unclosed_think``);
    2. answer containers: the last ``<answer>`` block (inside it, its final boxes, else its marker, else
       all of it); the final boxes (several joined only by commas, "and", ``\\quad`` are one answer set,
       written ``a, b``);
    3. answer markers near the end, the last one wins: ``#### x`` at either end of a line, ``Answer: x``,
       "the (final) answer (...) is x" / "should be x", a bold value on the final lines;
    4. the whole final segment when it is only a value (``$\\frac{1}{2}$``);
    5. unless ``mode="strict"`` (accuracy coupled to format), the last value of the final sentence when the
       text ends with a finished one (``So f(-2) is 18.``);
    6. with ``mode="lenient"``, the last value of the final lines, finished or not.

    >>> math_answer("<think>...</think><answer>The answer is \\\\boxed{7}.</answer>")
    Extracted(answer='7', reason=None)
    >>> math_answer("so \\\\boxed{18} ... finally \\\\boxed{210}").answer
    '210'
    >>> math_answer("<answer>1/2</answer>").answer, math_answer("<think>no end").reason
    ('1/2', 'unclosed_think')
    """
    text = final_segment(completion)
    if text is None:
        return Extracted(None, "unclosed_think")
    return answer_in(text, mode=mode)


def final_segment(completion: str) -> str | None:
    """The text whose answer counts: :func:`final_text`, cut by :func:`before_next_turn`; ``None`` when
    the reasoning never ended."""
    text = final_text(completion)
    return None if text is None else before_next_turn(text)


def answer_in(text: str, *, mode: str = "standard") -> Extracted:
    """Steps 2-6 of :func:`math_answer` on a final segment that is already cut."""
    block = last_tag_block(text, "answer")
    if block is not None:
        boxes = final_boxes(block)
        if boxes is not None:
            return Extracted(", ".join(boxes).strip())
        return Extracted(answer_phrase(block) or _tidy(block))
    boxes = final_boxes(text)
    if boxes is not None:
        later = _final_answer_after_box(text)
        return Extracted(later if later is not None else ", ".join(boxes).strip())
    readers = _READERS.get(mode)
    if readers is None:
        raise ValueError(f"extract must be one of {', '.join(EXTRACT_MODES)}, got {mode!r}")
    for reader in readers:
        found = reader(text)
        if found is not None:
            return Extracted(found)
    return Extracted(None, "no_answer")


_FINAL_ANSWER = re.compile(r"\bfinal answer\b", re.IGNORECASE)


def _final_answer_after_box(text: str) -> str | None:
    """A "final answer is x" stated after the last box, which was then an intermediate result (Minerva's
    ``Final Answer: The final answer is x. I hope it is correct.`` after a boxed step)."""
    found = _last_box(text, len(text))
    if found is None or not _FINAL_ANSWER.search(text, found[1]):
        return None
    marked = _marked_answer(text[found[1] :])
    return marked[1] if marked is not None else None


_READERS = {
    "strict": (answer_phrase, bare_answer),
    "standard": (answer_phrase, bare_answer, sentence_answer),
    "lenient": (answer_phrase, bare_answer, sentence_answer, lenient_answer),
}


def gold_answer(solution: object) -> str | None:
    """The gold answer of a reference, the one reader for every reward: its last ``<answer>`` block, else
    its final boxes (an answer set, like a prediction's), else a ``#### x`` or final ``A: x`` /
    ``Answer: x`` line (GSM8K), else the whole reference, stripped. ``None`` for a missing reference.

    >>> gold_answer("so the area is $\\\\boxed{12}$."), gold_answer("<answer> 3/4 </answer>"), gold_answer(5)
    ('12', '3/4', '5')
    >>> gold_answer("She has 5 long-answer questions.\\nSo 72 in all.\\n#### 72"), gold_answer(None)
    ('72', None)
    """
    if solution is None or isinstance(solution, bool):
        return None
    if isinstance(solution, float):
        if not math.isfinite(solution):
            return None
        solution = repr(solution)
    try:
        text = solution if isinstance(solution, str) else str(solution)
    except ValueError:  # an integer with more digits than Python converts
        return None
    block = last_tag_block(text, "answer")
    if block is not None:
        return block.strip() or None
    boxes = final_boxes(text)
    if boxes is not None:
        return ", ".join(boxes).strip() or None
    lines = [
        match.group(1)
        for p in (_HASHES, _ANSWER_LINE)
        for match in p.finditer(text)
        if match.group(1).strip()
    ]
    if lines and "\n" in text.strip():
        return _tidy(lines[-1]) or None
    return text.strip() or None
