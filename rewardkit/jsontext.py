"""JSON text from a dataset's columns, read within bounds: one reader for every reward and adapter.

Columns arrive as JSON text more often than not (a code row's ``tests``, APPS's ``input_output``, a
multiple-choice row's ``choices``, countdown's ``nums``, an OpenRLHF label), and what arrives is data a
caller chose. The standard library's :func:`json.loads` recurses once a level: text nested past the
interpreter's recursion limit raises :class:`RecursionError` (a ``RuntimeError``, not a ``ValueError``: a
500 in the service), and text nested a little less parses into an object that :func:`json.dumps`,
:func:`repr` or a comparison later fails on, deeper in the stack. So:

- :func:`read_json` measures the text's nesting before parsing it (one pass in C over the brackets that
  stand outside strings: no recursion) and refuses text over ``max_chars`` characters or nested more than
  ``max_depth`` levels (:data:`MAX_DEPTH`, 100) with :class:`JSONTextError` (a ``ValueError``) that says
  which, as it does text that is not JSON. What it returns is at most ``max_depth`` levels deep.
- :func:`nesting_depth` measures an object already parsed (a column sent as nested lists in an HTTP body,
  or passed from Python) without recursion, and :func:`check_depth` refuses one nested too deep.

A reward turns the error into its own reason (``bad_tests``, ``invalid_nums``: a value ``None``), never an
exception out of the batch.

>>> read_json('{"inputs": ["1 2"], "outputs": ["3"]}')
{'inputs': ['1 2'], 'outputs': ['3']}
>>> read_json("[" * 200_000 + "]" * 200_000)
Traceback (most recent call last):
...
rewardkit.jsontext.JSONTextError: JSON text nested more than 100 levels deep (the limit)
>>> nesting_depth([[1, [2]], {"a": []}]), nesting_depth("[[[]]]")
(3, 0)
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping
from itertools import accumulate, repeat
from typing import Any

__all__ = ["MAX_CHARS", "MAX_DEPTH", "JSONTextError", "check_depth", "nesting_depth", "read_json"]

#: Levels of lists and objects a column may nest (datasets use a handful: a test's arguments, a grid).
MAX_DEPTH = 100
#: Characters of JSON text read when a caller gives no tighter bound (the code reward's largest tests).
MAX_CHARS = 16_000_000

# A JSON string (its escapes included) and what is neither a bracket nor a quote: both dropped before the
# brackets are counted. Possessive, so a long string is one linear match.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
# An opening bracket as 2, a closing one as 0: minus one each, their running sum is the depth.
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
# What a container's children are when none of them is a container (checked in C, a set of their types).
_SCALARS = frozenset({str, int, float, bool, type(None)})


class JSONTextError(ValueError):
    """JSON text that is not read: too long, nested too deep, or not JSON (the message says which)."""


def _text_depth(text: str, limit: int) -> int:
    """The deepest nesting of ``text``'s brackets outside strings; ``0`` when it has at most ``limit`` of
    them (it cannot be deeper). Exact for JSON; for other text an upper bound of what a parser would see."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii").translate(_STEP)
    return max(accumulate(map(operator.sub, brackets, repeat(1))), default=0)


def read_json(text: str, *, max_chars: int | None = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` parsed as JSON, at most ``max_chars`` characters (``None``: no bound here, for text already
    bounded upstream) and ``max_depth`` levels of nesting.

    Raises:
        JSONTextError: the text is longer, nested deeper, or not JSON.
    """
    if max_chars is not None and len(text) > max_chars:
        raise JSONTextError(f"JSON text of {len(text)} characters; the limit is {max_chars}")
    if _text_depth(text, max_depth) > max_depth:
        raise JSONTextError(f"JSON text nested more than {max_depth} levels deep (the limit)")
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
        raise JSONTextError(f"text that is not JSON ({str(exc)[:80]})") from None


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Levels of lists, tuples and mappings in ``value`` (``0`` for a scalar or a string), counted without
    recursion; the count stops at ``limit + 1`` (so a structure that holds itself is ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if level > deepest:
            deepest = level
            if deepest > limit:
                return deepest
        if set(map(type, children)) <= _SCALARS:
            continue
        stack.extend((child, level + 1) for child in children if isinstance(child, list | tuple | Mapping))
    return deepest


def check_depth(value: Any, max_depth: int = MAX_DEPTH, what: str = "the value") -> None:
    """Refuse an object nested more than ``max_depth`` levels (:func:`nesting_depth`).

    >>> check_depth({"inputs": [[[[1]]]]}, 3, "the tests")
    Traceback (most recent call last):
    ...
    rewardkit.jsontext.JSONTextError: the tests nested more than 3 levels deep (the limit)
    """
    if nesting_depth(value, max_depth) > max_depth:
        raise JSONTextError(f"{what} nested more than {max_depth} levels deep (the limit)")
