"""The JSON a final answer holds (the reading step of :mod:`rewardkit.structured`).

Rules, in order, on the final answer (the text after the reasoning; the reward cuts it):

1. the last fenced block labelled ``json`` (any case: ```` ```json ````, ```` ```JSON ````, ``~~~json``);
2. else the last fenced block without a label;
3. else the whole answer, stripped.

The last block counts, never the best one, so writing several answers gains nothing. A block that is never
closed runs to the end of the answer. The chosen text must be one JSON value and nothing else (strict: no
``NaN``, no ``Infinity``, no trailing prose), read within bounds by :func:`rewardkit.jsontext.read_json`
(``max_chars`` characters, 100 levels of nesting). Outcomes:

- the value, when it parses;
- ``no_json``: nothing to read: an empty answer, or an answer without a fence that neither parses nor
  starts with ``{`` or ``[`` (prose; "Here is the JSON: {...}" too, as the whole answer must be the JSON);
- ``invalid_json``: a fenced block, or an answer starting with ``{`` or ``[``, that is not exactly one JSON
  value (or is longer than ``max_chars``, or nested deeper than 100 levels).

>>> read_answer('Sure:\\n```json\\n{"a": 1}\\n```\\nDone.')
Found(value={'a': 1}, reason=None, source='json fence', detail=None)
>>> read_answer('{"a": [1, 2]}').value
{'a': [1, 2]}
>>> read_answer("The answer is yes.").reason, read_answer('{"a": 1} and more').reason
('no_json', 'invalid_json')
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from rewardkit.jsontext import JSONTextError, read_json

__all__ = ["Found", "MAX_ANSWER_CHARS", "fenced_blocks", "read_answer"]

#: Characters of JSON an answer may hold when the reward is given no tighter bound.
MAX_ANSWER_CHARS = 100_000

# An opening fence line: up to three spaces, three or more backticks or tildes, an optional info string.
_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.MULTILINE)
_CONTAINERS = ("{", "[")


class Found(NamedTuple):
    """What an answer holds: ``value`` when ``reason`` is ``None``; else why there is none (``detail``)."""

    value: Any
    reason: str | None = None
    source: str = "answer"
    detail: str | None = None


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block of ``text`` as ``(label, content)``, in order; the label lower-cased.

    A block closes at a line of the same fence character, at least as long, and nothing else; one that
    never closes runs to the end. Linear in the text.

    >>> fenced_blocks("a\\n```json\\n{}\\n```\\n~~~\\n[1]\\n")
    [('json', '{}'), ('', '[1]\\n')]
    """
    blocks: list[tuple[str, str]] = []
    position = 0
    while True:
        opening = _OPEN.search(text, position)
        if opening is None:
            return blocks
        fence, label = opening.group(1), opening.group(2).lower()
        start = opening.end() + 1
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, start)
        if end is None:
            blocks.append((label, text[start:]))
            return blocks
        blocks.append((label, text[start : max(start, end.start() - 1)]))
        position = end.end()


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a parsed value (Python's parser accepts them; JSON has none)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def read_answer(text: str, max_chars: int = MAX_ANSWER_CHARS) -> Found:
    """The JSON value of a final answer by the module's rules, or why there is none."""
    candidate, source = None, "answer"
    if "```" in text or "~~~" in text:
        blocks = fenced_blocks(text)
        for wanted, name in (("json", "json fence"), ("", "fence")):
            chosen = [content for label, content in blocks if label == wanted]
            if chosen:
                candidate, source = chosen[-1].strip(), name
                break
    if candidate is None:
        candidate = text.strip()
        if not candidate:
            return Found(None, "no_json", source)
    try:
        value = read_json(candidate, max_chars=max_chars)
    except JSONTextError as exc:
        prose = source == "answer" and not candidate.startswith(_CONTAINERS)
        return Found(None, "no_json" if prose else "invalid_json", source, str(exc))
    if ("NaN" in candidate or "Infinity" in candidate) and not _finite(value):
        return Found(None, "invalid_json", source, "NaN and Infinity are not JSON")
    return Found(value, None, source)
