"""A row's instructions, read from the columns users have them in, and checked against an answer.

Columns (the first given wins):

- IFEval / IFBench: ``instruction_id_list`` (a list of ids, or its JSON text) and ``kwargs`` (one dict per
  instruction, ``null`` values ignored, or its JSON text; missing: no arguments);
- open-instruct's RLVR ``ground_truth``: a dict (or JSON text) with ``func_name`` and its arguments, or a list
  of them; or its newer ``[{"instruction_id": [...], "kwargs": [...]}]`` (JSON, or Python literal text as
  open-instruct writes it); a dict with ``instruction_id_list``/``instruction_id`` and ``kwargs`` too;
- veRL's ``reward_model`` (``{"ground_truth": <any of the above>, ...}``).

:func:`read_instructions` raises :class:`RowError` with a reason for a row whose instructions cannot be read
(``invalid_instructions``, ``too_many_instructions``, ``no_instructions``); an unknown id or unusable
arguments come back from :func:`follow` as the reason, never as a pass.

>>> read_instructions(["punctuation:no_comma"], [{"relation": None}], None)
[('punctuation:no_comma', {})]
>>> read_instructions(None, None, '{"func_name": "validate_lowercase", "N": null}')
[('validate_lowercase', {})]
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from rewardkit.instructions.base import TABLE, BadKwargs, Context, Rules, read_args
from rewardkit.instructions.ifeval_common import content

__all__ = [
    "MAX_INSTRUCTIONS",
    "MAX_TEXT_CHARS",
    "Outcome",
    "RowError",
    "follow",
    "loose_variants",
    "read_instructions",
]

#: the most instructions one row may carry (more: ``too_many_instructions``)
MAX_INSTRUCTIONS = 64
#: the longest JSON (or Python literal) text of a row's instructions that is read
MAX_TEXT_CHARS = 200_000

Pair = tuple[str, dict[str, Any]]


class RowError(ValueError):
    """The row's instructions cannot be read; ``reason`` says why."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason


def _parse_text(value: str) -> Any:
    if len(value) > MAX_TEXT_CHARS:
        raise RowError("invalid_instructions", f"instruction text over {MAX_TEXT_CHARS} characters")
    return _parse_cached(value)


@lru_cache(maxsize=4096)
def _parse_cached(value: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        pass
    try:  # open-instruct writes its ground truths with str() of a Python list
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise RowError("invalid_instructions", "not JSON or a Python literal") from None


def _kwargs_list(kwargs: Any, n: int) -> list[Any]:
    if isinstance(kwargs, str):
        kwargs = _parse_text(kwargs)
    if kwargs is None:
        return [{}] * n
    if isinstance(kwargs, Mapping) and n == 1:
        return [kwargs]
    if isinstance(kwargs, Sequence) and not isinstance(kwargs, str | bytes) and len(kwargs) == n:
        return list(kwargs)
    raise RowError("invalid_instructions", f"kwargs must be a list of {n} dicts")


def _from_ids(ids: Any, kwargs: Any) -> list[Pair]:
    if isinstance(ids, str):
        ids = _parse_text(ids) if ids.lstrip().startswith("[") else [ids]
    if not isinstance(ids, Sequence) or isinstance(ids, bytes):
        raise RowError("invalid_instructions", "instruction ids must be a list")
    if len(ids) > MAX_INSTRUCTIONS:
        raise RowError("too_many_instructions", f"over {MAX_INSTRUCTIONS} instructions")
    out: list[Pair] = []
    for iid, args in zip(ids, _kwargs_list(kwargs, len(ids)), strict=True):
        if not isinstance(iid, str):
            raise RowError("invalid_instructions", "instruction ids must be strings")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise RowError("invalid_instructions", f"kwargs of {iid} must be a dict")
        out.append((iid, {str(k): v for k, v in args.items() if v is not None}))
    return out


def _from_truth(truth: Any) -> list[Pair]:
    if isinstance(truth, str):
        truth = _parse_text(truth)
    if isinstance(truth, Mapping):
        if "ground_truth" in truth and "func_name" not in truth:  # veRL's reward_model
            return _from_truth(truth["ground_truth"])
        if "func_name" in truth:
            name = truth["func_name"]
            if not isinstance(name, str):
                raise RowError("invalid_instructions", "func_name must be a string")
            return [(name, {str(k): v for k, v in truth.items() if k != "func_name" and v is not None})]
        for ids_key in ("instruction_id_list", "instruction_id"):
            if ids_key in truth:
                return _from_ids(truth[ids_key], truth.get("kwargs"))
        raise RowError("invalid_instructions", "no func_name, instruction_id_list or instruction_id")
    if isinstance(truth, Sequence) and not isinstance(truth, bytes):
        if len(truth) > MAX_INSTRUCTIONS:
            raise RowError("too_many_instructions", f"over {MAX_INSTRUCTIONS} instructions")
        out: list[Pair] = []
        for item in truth:
            out.extend(_from_truth(item))
        if len(out) > MAX_INSTRUCTIONS:
            raise RowError("too_many_instructions", f"over {MAX_INSTRUCTIONS} instructions")
        return out
    raise RowError("invalid_instructions", f"cannot read instructions from {type(truth).__name__}")


def read_instructions(ids: Any, kwargs: Any, ground_truth: Any) -> list[Pair]:
    """The row's ``(instruction id, keyword arguments)`` pairs, ``None`` arguments dropped; raises
    :class:`RowError` when they cannot be read or there are none."""
    if ids is not None:
        pairs = _from_ids(ids, kwargs)
    elif ground_truth is not None:
        pairs = _from_truth(ground_truth)
    else:
        raise RowError("no_instructions", "the row names no instructions")
    if not pairs:
        raise RowError("no_instructions", "the row names no instructions")
    return pairs


def loose_variants(text: str, *, robust: bool = True) -> list[str]:
    """IFEval's loose variants of an answer: as it is, without its first line, its last line, or both, each
    also with every ``*`` removed (8 texts, repeats dropped). A variant left empty is dropped, as IFEval drops
    it; under the robust rules so is one left without a word, so a loose pass never rests on nothing.

    >>> loose_variants("Sure!\\n**Answer** here\\nBye")
    ['Sure!\\n**Answer** here\\nBye', '**Answer** here\\nBye', 'Sure!\\n**Answer** here', '**Answer** here', \
'Sure!\\nAnswer here\\nBye', 'Answer here\\nBye', 'Sure!\\nAnswer here', 'Answer here']
    """
    lines = text.split("\n")
    cut = [text, "\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    variants = cut + [t.replace("*", "") for t in cut]
    out: list[str] = []
    for variant in variants:
        kept = content(variant) if robust else bool(variant.strip())
        if kept and variant not in out:
            out.append(variant)
    return out


Outcome = tuple[str, bool]


def follow(
    text: str, pairs: Sequence[Pair], *, prompt: str | None, rules: Rules, loose: bool
) -> tuple[list[Outcome], str | None]:
    """Each instruction's verdict on ``text`` (the final answer), in the row's order, and the reason that
    stops the row from being judged (``unknown_instruction:<id>``, ``bad_kwargs:<id>``), if any.

    An answer without a word character follows no instruction (the references fail an empty answer; the
    robust rules also one of only marks). ``loose`` passes an instruction when any of
    :func:`loose_variants` follows it.
    """
    ctx = Context(prompt=prompt, rules=rules)
    checks = []
    for iid, raw in pairs:
        spec = TABLE.get(iid)
        if spec is None:
            return [], f"unknown_instruction:{iid}"
        try:
            checks.append((spec, read_args(spec, raw)))
        except BadKwargs:
            return [], f"bad_kwargs:{iid}"
    answered = content(text) if ctx.robust else bool(text.strip())
    if not answered:
        return [(spec.id, False) for spec, _ in checks], None
    texts = loose_variants(text, robust=ctx.robust) if loose else [text]
    out: list[Outcome] = []
    for spec, args in checks:
        try:
            ok = any(spec.check(t, args, ctx) for t in texts)
        except BadKwargs:
            return [], f"bad_kwargs:{spec.id}"
        out.append((spec.id, ok))
    return out, None
