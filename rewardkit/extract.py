"""Finding the answer in a completion: extraction only, no judging (that is each reward's compare step)."""

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
    "strip_special_tail",
]

#: end-of-turn tokens a trainer may leave in a decoded completion (OpenRLHF keeps special tokens): ChatML and
#: Llama 3 style ``<|...|>``, DeepSeek's full-width ``<｜...｜>``, and the classic ``</s>``, ``<eos>``, ...
_SPECIAL_TAIL = re.compile(r"(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</s>|<eos>|<end_of_turn>|<pad>)\Z")


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
    r"(?:\s|,|;|\$|\\[,;:! ]|\\q?quad\b|\band\b|\bor\b|\\text\s*\{\s*(?:,|and|or)?\s*\})*",
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
        if previous is None or not _SET_GAP.fullmatch(text, previous[1], start):
            break
        start, _, content = previous
        items.insert(0, content)
    return items


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


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
# "#### 72" (GSM8K), a final "A: 72" / "Answer: 72" / "Final answer: 72" line, "the (final) answer is 72".
_HASHES = re.compile(r"^[ \t]*####[ \t]*(.*)$", re.MULTILINE)
_ANSWER_LINE = re.compile(
    r"^[ \t*#]*(?:final[ \t]+answer|answer|a)[ \t*]*:[ \t*]*(.*)$", re.MULTILINE | re.IGNORECASE
)
_ANSWER_PHRASE = re.compile(r"\banswer(?:[ \t]+is)?[ \t]*(?::|\bis\b)[ \t]*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|\n")
_LAST_NUMBER = re.compile(r"\$([^$]*)\$|(-?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?)")
_LAST_CLAUSE = re.compile(r"=|\bis\b")
TAIL_CHARS = 600  # how far from the end an answer phrase or a lenient answer is looked for


def final_text(completion: str) -> str | None:
    """The part of a completion that holds its answer: after the last ``</think>`` when there is one; the
    whole text without think tags; ``None`` when a ``<think>`` is opened and never closed (truncated
    reasoning has no answer, whatever the reasoning boxed).

    >>> final_text("<think>maybe \\\\boxed{5}</think> I am not sure.")
    ' I am not sure.'
    >>> final_text("<think>still thinking \\\\boxed{5}") is None
    True
    """
    close = completion.rfind(_THINK_CLOSE)
    if close >= 0:
        return completion[close + len(_THINK_CLOSE) :]
    return None if _THINK_OPEN in completion else completion


def _tidy(value: str, *, equation: bool = False) -> str:
    """An answer as written: no surrounding ``$``, bold marks, or full stop; with ``equation`` (an answer
    read from prose), the value after the last ``=`` (``18 + 38 = 56`` -> ``56``)."""
    value = value.strip().strip("*").strip()
    if value.startswith("$") and value.endswith("$") and len(value) > 1:
        value = value.strip("$").strip()
    if equation:  # "18 + 38 = 56" -> "56"; "The volume is 120" -> "120"
        value = _LAST_CLAUSE.split(value)[-1].strip()
    return value.rstrip(".").strip()


def answer_phrase(text: str) -> str | None:
    """The value after the last answer marker near the end: ``#### x``, a final ``A:``/``Answer:`` line, or
    "the (final) answer is x" (taking the next line when the phrase ends one).

    >>> answer_phrase("the answer: 18 + 38 = 56, so\\nthe final answer is 56.")
    '56'
    >>> answer_phrase("Natalia sold 72 clips.\\n#### 72")
    '72'
    >>> answer_phrase("The answer is:\\n\\n$(7, 6)$")
    '(7, 6)'
    """
    tail_start = max(0, len(text) - TAIL_CHARS)
    best: tuple[int, str] | None = None
    for pattern in (_HASHES, _ANSWER_LINE):
        for match in pattern.finditer(text, tail_start):
            if match.group(1).strip() and (best is None or match.start() > best[0]):
                best = (match.start(), match.group(1))
    for match in _ANSWER_PHRASE.finditer(text, tail_start):
        if best is None or match.start() > best[0]:
            rest = text[match.end() :].lstrip()
            stop = _SENTENCE_END.search(rest)
            value = rest[: stop.start()] if stop is not None else rest
            if value.strip():
                best = (match.start(), value)
    if best is None:
        return None
    value = _tidy(best[1], equation=True)
    return value or None


def lenient_answer(text: str) -> str | None:
    """The last math expression (``$...$``) or number of the completion's last sentence that has one.

    >>> lenient_answer("... so the ordered pair is $(7, 6)$."), lenient_answer("The volume is 120.")
    ('(7, 6)', '120')
    """
    tail = text[-TAIL_CHARS:]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", tail) if s.strip()]
    for sentence in reversed(sentences):
        found = list(_LAST_NUMBER.finditer(sentence))
        if found:
            math, number = found[-1].groups()
            return (math if math is not None else number).strip() or None
    return None


def math_answer(completion: str, *, lenient: bool = False) -> Extracted:
    """The final answer of a math completion.

    Only the text after the last ``</think>`` counts. There, in order: the last ``<answer>`` block (inside
    it, its final boxes if any); the final boxes (several joined only by commas, "and", ``\\quad`` are one
    answer set, written ``a, b``); ``#### x``, a final ``A: x`` / ``Answer: x`` line or "the (final) answer
    is x" near the end; with ``lenient``, the last number or ``$...$`` of the last sentence.

    >>> math_answer("<think>...</think><answer>The answer is \\\\boxed{7}.</answer>")
    Extracted(answer='7', reason=None)
    >>> math_answer("so \\\\boxed{18} ... finally \\\\boxed{210}").answer
    '210'
    >>> math_answer("<answer>1/2</answer>").answer, math_answer("<think>no end").reason
    ('1/2', 'unclosed_think')
    """
    text = final_text(completion)
    if text is None:
        return Extracted(None, "unclosed_think")
    block = last_tag_block(text, "answer")
    if block is not None:
        boxes = final_boxes(block)
        if boxes is not None:
            return Extracted(", ".join(boxes).strip())
        return Extracted(answer_phrase(block) or _tidy(block))
    boxes = final_boxes(text)
    if boxes is not None:
        return Extracted(", ".join(boxes).strip())
    phrase = answer_phrase(text)
    if phrase is not None:
        return Extracted(phrase)
    if lenient:
        loose = lenient_answer(text)
        if loose is not None:
            return Extracted(loose)
    return Extracted(None, "no_answer")


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
    text = solution if isinstance(solution, str) else str(solution)
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
