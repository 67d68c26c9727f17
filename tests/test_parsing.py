"""Two-stage LaTeX parsing in the math workers (rewardkit.verify.worker): SLL first, latex2sympy's own LL
parser where SLL finds a syntax error. It must parse every text as latex2sympy alone does; it is only
faster (``bench/parsing.py`` measures it on every answer and gold of the dev data)."""

from __future__ import annotations

import gzip
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("math_verify")

DEV = Path(__file__).resolve().parents[2] / "shared" / "verdicts" / "real_outputs_dev"


@pytest.fixture
def parsers() -> Iterator[tuple[Any, Any]]:
    """(latex2sympy's own parser, the two-stage one), with the worker's alarm handler in this process;
    the two-stage one is put back afterwards."""
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    from rewardkit.verify.worker import init_worker

    previous = signal.getsignal(signal.SIGALRM)
    init_worker(0)
    two = _Latex2Sympy.create_parser
    yield two.one_stage, two
    _Latex2Sympy.create_parser = two
    signal.signal(signal.SIGALRM, previous)


def outcome(parser: Any, text: str) -> Any:
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
    from math_verify.parser import parse_latex_cached

    from rewardkit.verify.worker import _parse_answer

    _Latex2Sympy.create_parser = parser
    parse_latex_cached.cache_clear()
    try:
        return [(str(value), type(value).__name__) for value in _parse_answer(text)]
    except Exception as exc:
        return ("error", type(exc).__name__)


def dev_texts(every: int) -> list[str]:
    """Every ``every``-th distinct gold and answer the math reward sends to Math-Verify in the dev data."""
    from rewardkit.verify.rows import Pending, read_rows

    texts: dict[str, None] = {}
    for path in sorted(DEV.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        batch = [
            (
                r.get("solution"),
                r["completion"] if isinstance(r.get("completion"), str) else None,
                r.get("options"),
            )
            for r in rows
        ]
        for read in read_rows(batch, "standard", 0.0, 1000):
            if isinstance(read, Pending):
                texts.setdefault(read.canonical.gold)
                texts.setdefault(read.canonical.prediction)
    return list(texts)[::every]


def test_the_workers_parse_in_two_stages(parsers: tuple[Any, Any]) -> None:
    from rewardkit.verify import worker

    one, two = parsers
    assert two.two_stage and one is not two
    worker._two_stage_parsing()  # once only: a second call leaves the first in place
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    assert _Latex2Sympy.create_parser is two


@pytest.mark.parametrize(
    "text",
    [
        "60*\\degree",  # LL fails on what the lexer cannot read; SLL alone read on and made 60*E*E*g*r of it
        "1216 \\AA",  # and 1216*a*a of this
        "(C) 45*\\degree",
        "\\frac{1}{2}",
        "x^2+2x+1",
        "[1,2)\\cup(3,\\infty)",
        "\\begin{pmatrix}1\\\\2\\end{pmatrix}",
        "y = 2x + 1",
        "1,2,3",
        "}{",
    ],
)
def test_two_stages_parse_as_latex2sympy_does(parsers: tuple[Any, Any], text: str) -> None:
    one, two = parsers
    assert outcome(two, text) == outcome(one, text)


@pytest.mark.timeout(300)
def test_two_stages_parse_the_dev_data_as_latex2sympy_does(parsers: tuple[Any, Any]) -> None:
    one, two = parsers
    texts = dev_texts(every=2)  # all of them: bench/parsing.py
    assert len(texts) > 1000
    differ = [text for text in texts if outcome(two, text) != outcome(one, text)]
    assert differ == []
