"""Finding the answer in a completion: extraction only, no judging (that is each reward's compare step)."""

from __future__ import annotations

import re

__all__ = ["last_boxed", "last_tag_block", "math_answer", "math_gold"]


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
    end = len(text)
    for match in reversed(list(_BOX.finditer(text))):
        brace = match.end()
        while brace < end and text[brace] == " ":
            brace += 1
        if brace < end and text[brace] == "{":
            content = _balanced(text, brace, end)
            if content is not None:
                return content
        end = match.start()
    return None


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


def math_answer(completion: str) -> str | None:
    """The final answer of a math completion: the last ``<answer>`` block (inside it, its last
    ``\\boxed{}`` if any), else the last ``\\boxed{}`` of the completion, else ``None``.

    >>> math_answer("<think>...</think><answer>The answer is \\\\boxed{7}.</answer>")
    '7'
    >>> math_answer("so \\\\boxed{18} ... finally \\\\boxed{210}")
    '210'
    >>> math_answer("<answer>1/2</answer>")
    '1/2'
    """
    block = last_tag_block(completion, "answer")
    if block is not None:
        boxed = last_boxed(block)
        return (boxed if boxed is not None else block).strip()
    boxed = last_boxed(completion)
    return boxed.strip() if boxed is not None else None


def math_gold(solution: str) -> str:
    """The gold answer of a reference solution: its last ``<answer>`` block, else its last ``\\boxed{}``,
    else the whole solution, stripped.

    >>> math_gold("... so the area is $\\\\boxed{12}$."), math_gold("<answer> 3/4 </answer>")
    ('12', '3/4')
    >>> math_gold(" 5 ")
    '5'
    """
    block = last_tag_block(solution, "answer")
    if block is not None:
        return block.strip()
    boxed = last_boxed(solution)
    return (boxed if boxed is not None else solution).strip()
