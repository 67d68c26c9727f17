"""Readers for instruction keyword arguments: each takes the argument dict and returns the value, or raises
:class:`~rewardkit.instructions.base.BadKwargs` naming the argument. Bounds keep a hostile row cheap.

>>> integer({"N": 3}, "N"), integer({"N": "3"}, "N"), text({"keyword": "tree"}, "keyword")
(3, 3, 'tree')
>>> relation({"relation": "at least"})
'at least'
"""

from __future__ import annotations

from typing import Any

from rewardkit.instructions.base import BadKwargs

__all__ = ["MAX_INT", "MAX_TEXT", "MAX_WORDS", "integer", "number", "optional", "relation", "text", "texts"]

MAX_INT = 1_000_000
MAX_TEXT = 10_000
MAX_WORDS = 200
RELATIONS = ("less than", "at least")


def optional(args: dict[str, Any], name: str) -> bool:
    """Whether ``name`` is present (readers are called only for present arguments, or with a default)."""
    return name in args


def integer(
    args: dict[str, Any], name: str, *, lo: int = 0, hi: int = MAX_INT, default: int | None = None
) -> int:
    """An integer in ``[lo, hi]`` (an integral float or a digit string is accepted; a bool is not)."""
    value = args.get(name, default)
    if value is None:
        raise BadKwargs(f"missing {name}")
    if isinstance(value, bool):
        raise BadKwargs(f"{name} must be an integer, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 12:
        value = int(value.strip())
    if not isinstance(value, int):
        raise BadKwargs(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise BadKwargs(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def number(args: dict[str, Any], name: str, *, lo: float, hi: float, default: float | None = None) -> float:
    """A finite number in ``[lo, hi]``."""
    value = args.get(name, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise BadKwargs(f"{name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise BadKwargs(f"{name} must be a number in [{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def text(args: dict[str, Any], name: str, *, default: str | None = None, empty: bool = False) -> str:
    """A string of at most :data:`MAX_TEXT` characters (empty only when ``empty``)."""
    value = args.get(name, default)
    if not isinstance(value, str):
        raise BadKwargs(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT or (not empty and not value.strip()):
        raise BadKwargs(f"{name} must be a non-empty string of at most {MAX_TEXT} characters")
    return value


def texts(args: dict[str, Any], name: str, *, default: list[str] | None = None) -> list[str]:
    """A list of at most :data:`MAX_WORDS` non-empty strings (one string is a list of one)."""
    value = args.get(name, default)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value or len(value) > MAX_WORDS:
        raise BadKwargs(f"{name} must be a list of 1 to {MAX_WORDS} strings")
    out = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_TEXT:
            raise BadKwargs(f"{name} must hold non-empty strings")
        out.append(item)
    return out


def relation(args: dict[str, Any], name: str = "relation", *, default: str | None = None) -> str:
    """IFEval's comparison: ``"less than"`` or ``"at least"``."""
    value = args.get(name, default)
    if value not in RELATIONS:
        raise BadKwargs(f"{name} must be one of {RELATIONS}, got {value!r}")
    return str(value)
