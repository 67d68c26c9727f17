"""The instruction table: every instruction id, how its keyword arguments are read, and its check.

A check is ``check(text, args, ctx) -> bool``: ``text`` is the final answer (the reasoning already removed),
``args`` the instruction's keyword arguments after :func:`read_args` (``None`` values dropped, each value
validated by the spec's ``read``), ``ctx`` the row's prompt and the rule set. A check never raises for an odd
response (it returns ``False``); it raises :class:`BadKwargs` only from ``read`` when the arguments cannot be
used, which the reward turns into ``None`` with ``bad_kwargs:<id>``.

Instruction modules register with :func:`instruction`:

>>> from rewardkit.instructions.base import TABLE
>>> sorted(TABLE) == sorted(set(TABLE))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["TABLE", "BadKwargs", "Context", "Rules", "Spec", "instruction", "read_args"]

Rules = Literal["reference", "robust"]


class BadKwargs(ValueError):
    """The instruction's keyword arguments cannot be used (a missing or ill-typed value)."""


@dataclass(frozen=True)
class Context:
    """What a check may read besides the answer: the row's prompt (``None`` when not given) and the rules."""

    prompt: str | None = None
    rules: Rules = "robust"

    @property
    def robust(self) -> bool:
        return self.rules == "robust"


Check = Callable[[str, dict[str, Any], Context], bool]
Reader = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Spec:
    """One instruction id: its check, its argument reader, its rule in one line, and (when the robust rules
    differ from the reference) the deviation in one line."""

    id: str
    check: Check
    read: Reader
    rule: str
    robust: str | None = None
    source: str = ""  # "ifeval", "ifbench", "ifbench-train", "open-instruct"


#: every known instruction id -> its spec (filled by the instruction modules at import)
TABLE: dict[str, Spec] = {}


def _no_args(args: dict[str, Any]) -> dict[str, Any]:
    return {}


def instruction(
    id: str,
    *,
    rule: str,
    read: Reader | None = None,
    robust: str | None = None,
    source: str = "",
) -> Callable[[Check], Check]:
    """Register ``check`` under ``id`` (a duplicate id is a ``ValueError``)."""

    def register(check: Check) -> Check:
        if id in TABLE:
            raise ValueError(f"instruction {id!r} registered twice")
        TABLE[id] = Spec(id, check, read or _no_args, rule, robust, source)
        return check

    return register


def read_args(spec: Spec, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The instruction's arguments as its check reads them: ``None`` values dropped (IFEval's files carry a
    ``null`` for every argument another instruction uses), then validated by the spec's reader."""
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, Mapping):
        raise BadKwargs(f"{spec.id}: keyword arguments must be a mapping, got {type(kwargs).__name__}")
    present = {str(k): v for k, v in kwargs.items() if v is not None}
    return spec.read(present)
