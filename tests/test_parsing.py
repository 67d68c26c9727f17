"""latex2sympy as the math workers run it (rewardkit.verify.latex: two-stage parsing, plain numbers) must
parse every text as latex2sympy as it comes does; it is only faster (``bench/parsing.py`` measures both on
every answer and gold of the dev data and the workload)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import math_verify  # noqa: F401 - make test installs it: a broken install fails, never skips
import pytest
import sympy

#: every second distinct gold and answer the math reward sends to Math-Verify in ``../shared``'s eight dev
#: files (``verdicts/real_outputs_dev``, read by ``verify.rows.read_rows`` in the standard mode), shipped: a
#: user's clone has no ``../shared``; ``bench/parsing.py`` parses all of them and its workload
DEV_SAMPLE = Path(__file__).with_name("data") / "parsing_dev_texts.json.gz"


def outcome(text: str, ours: bool = True) -> Any:
    from contextlib import nullcontext

    from math_verify.parser import parse_latex_cached

    from rewardkit.verify import latex
    from rewardkit.verify.worker import _parse_answer

    with nullcontext() if ours else latex.unchanged():
        parse_latex_cached.cache_clear()
        try:
            return [(str(value), type(value).__name__, sympy.srepr(value)) for value in _parse_answer(text)]
        except Exception as exc:
            return ("error", type(exc).__name__)


def test_the_workers_run_latex2sympy_changed_once(alarm: None) -> None:
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    from rewardkit.verify import latex

    ours = _Latex2Sympy.create_parser, _Latex2Sympy.parse_number
    assert ours[0].two_stage and ours[1].plain
    latex.install()  # a second time: nothing changes
    assert (_Latex2Sympy.create_parser, _Latex2Sympy.parse_number) == ours
    with latex.unchanged():
        assert _Latex2Sympy.create_parser is ours[0].one_stage
        assert _Latex2Sympy.parse_number is ours[1].original
    assert (_Latex2Sympy.create_parser, _Latex2Sympy.parse_number) == ours


@pytest.mark.parametrize(
    "text",
    ["0", "007", "120", "3.50", "0.000001", ".5", "5.", "12345678901234567890.25", "1,234", "1,234.5", "0,5"]
    + ["1e5", "1_000", "٣", ".", "9" * 4300, "9" * 4301, "9" * 5000 + ".5"],
)
def test_plain_numbers_are_the_numbers_latex2sympy_makes(alarm: None, text: str) -> None:
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    def made(parse_number: Any) -> Any:
        try:
            number = parse_number(None, text)
        except Exception as exc:
            return ("error", type(exc).__name__)
        return sympy.srepr(number), type(number), getattr(number, "_prec", None)

    ours = _Latex2Sympy.parse_number
    assert made(ours) == made(ours.original)


@pytest.mark.parametrize(
    "text",
    [
        "60*\\degree",  # the lexer cannot read it: the SLL parser, rewound, read on and made 60*E*E*g*r of it
        "1216 \\AA",  # and 1216*a*a of this
        "(C) 45*\\degree",
        "\\frac{1}{2}",
        "3.50",
        "1,234",
        "0.5\\%",
        "x^2+2x+1",
        "[1,2)\\cup(3,\\infty)",
        "\\begin{pmatrix}1\\\\2\\end{pmatrix}",
        "y = 2x + 1",
        "1,2,3",
        "}{",
    ],
)
def test_the_workers_parse_as_latex2sympy_does(alarm: None, text: str) -> None:
    assert outcome(text) == outcome(text, ours=False)


@pytest.mark.timeout(300)
def test_the_workers_parse_the_dev_data_as_latex2sympy_does(alarm: None) -> None:
    with gzip.open(DEV_SAMPLE, "rt", encoding="utf-8") as handle:
        texts = json.load(handle)  # all of them: bench/parsing.py
    assert len(texts) == 1200
    differ = [text for text in texts if outcome(text) != outcome(text, ours=False)]
    assert differ == []
