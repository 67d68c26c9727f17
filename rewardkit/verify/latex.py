"""How the math workers run latex2sympy (Math-Verify's LaTeX parser): the same results, in less time.

Two changes, installed in the worker processes only (:mod:`rewardkit.verify.worker` imports this module and
calls :func:`install`), each left out where latex2sympy is not built as expected:

* **Two-stage parsing**, as ANTLR's authors advise: first with SLL prediction, which keeps every decision
  in the parser's tables; only when that finds a syntax error, again with a fresh parser of latex2sympy's
  own (full LL prediction), which settles each ambiguous spot by reading the whole input and keeps none of
  it. Fresh: the first parser, rewound, would carry on past a character its lexer could not read
  (``60*\\degree`` became ``60*E*E*g*r``) where latex2sympy stops with an error.
* **Plain numbers**: latex2sympy turns each number it reads into a SymPy number with ``sympy.Number(text)``,
  which runs SymPy's expression parser (``from sympy import *`` into a fresh namespace, then ``eval``) for
  every ``12`` or ``3.5``: 0.4 ms each, about a third of a worker's time on a pair. Digits become
  ``Integer(int(text))`` and digits with one point ``Float(text)``, which are the objects that parser makes
  of them (the same class, value and precision); anything else goes the old way.

``bench/parsing.py`` parses every answer and gold of the dev data and the GRPO workload (18,335 texts) both
ways: none differs; ``tests/test_parsing.py`` checks half of the dev data's, and the edge cases. Only far
past what answers hold do they part, and towards the right value: SLL recurses less and keeps its
decisions, so ``\\frac{\\frac{...}{2}}{2}`` 107 deep reads as 2^-107 where latex2sympy alone ran out of
stack (Math-Verify then kept a part of it, 1/2), and 80 nested brackets take 2.4 s instead of 14 s.

>>> plain_number("120"), plain_number("3.50"), plain_number("1e5"), plain_number("٣")
(120, 3.50000000000000, None, None)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sympy

__all__ = ["install", "plain_number", "unchanged"]


def plain_number(text: str) -> Any:
    """The SymPy number that ``sympy.Number(text)`` gives, made directly, for ASCII digits with at most
    one point among them; ``None`` for anything else."""
    whole, point, fraction = text.partition(".")
    digits = whole + fraction
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    if not point:
        try:
            return sympy.Integer(int(whole))
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits): the old way
            return None
    return sympy.Float(text)


def install() -> None:
    """Install both changes in this process (once; a second call changes nothing)."""
    try:
        from antlr4.atn.PredictionMode import PredictionMode
        from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
    except ImportError:
        return
    build = getattr(_Latex2Sympy, "create_parser", None)
    if build is not None and not getattr(build, "two_stage", False):
        _Latex2Sympy.create_parser = _two_stage(build, PredictionMode)
    number = getattr(_Latex2Sympy, "parse_number", None)
    if number is not None and not getattr(number, "plain", False):
        _Latex2Sympy.parse_number = _plain_numbers(number)


@contextmanager
def unchanged() -> Iterator[None]:
    """latex2sympy as it comes, for as long as the block runs (what the changes are compared with)."""
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    ours = _Latex2Sympy.create_parser, _Latex2Sympy.parse_number
    _Latex2Sympy.create_parser = getattr(ours[0], "one_stage", ours[0])
    _Latex2Sympy.parse_number = getattr(ours[1], "original", ours[1])
    try:
        yield
    finally:
        _Latex2Sympy.create_parser, _Latex2Sympy.parse_number = ours


def _two_stage(build: Any, modes: Any) -> Any:
    def create_parser(self: Any, latex: str) -> Any:
        parser = build(self, latex)
        interp, math = getattr(parser, "_interp", None), getattr(parser, "math", None)
        if interp is None or math is None or not hasattr(interp, "predictionMode"):
            return parser

        def two_stage() -> Any:
            try:
                interp.predictionMode = modes.SLL
                return math()
            except Exception as exc:  # noqa: BLE001 - latex2sympy raises a plain Exception for a syntax error
                if type(exc) is not Exception:
                    raise
            return build(self, latex).math()  # latex2sympy's own parser, as before

        parser.math = two_stage
        return parser

    create_parser.two_stage = True  # type: ignore[attr-defined]
    create_parser.one_stage = build  # type: ignore[attr-defined]
    return create_parser


def _plain_numbers(parse_number: Any) -> Any:
    def plain(self: Any, text: str) -> Any:
        number = plain_number(text.replace(",", ""))  # latex2sympy drops the commas first too
        return parse_number(self, text) if number is None else number

    plain.plain = True  # type: ignore[attr-defined]
    plain.original = parse_number  # type: ignore[attr-defined]
    return plain
