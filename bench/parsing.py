"""LaTeX parsing in the math workers: latex2sympy as it comes against latex2sympy as the workers run it
(two-stage parsing and plain numbers: ``rewardkit.verify.latex``).

    python bench/parsing.py [--every N]

The strings are every answer and gold that reaches Math-Verify (rows read as the math reward reads them, in
canonical form) in the eight dev files of ``../shared/verdicts/real_outputs_dev``, GeoQA's dev file and the
GRPO workload (as is, new problems, no repeats: ``bench/scaling.py``'s variants), deduplicated; ``--every N``
takes every N-th. Each string is parsed by both, in turn (two passes each, alternating, the first of each
not timed: the parser learns as it goes); it prints how many parse differently (each value Math-Verify
keeps, as text and as SymPy's ``srepr``; an error counts as an outcome), CPU seconds of each, and their
ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402
from scaling import VARIANTS, variant  # noqa: E402

SHARED = ROOT.parent / "shared" / "verdicts"


def corpus() -> list[str]:
    """Every distinct gold and answer text the math reward sends to Math-Verify, over the data above."""
    from rewardkit.agreement import read_labelled
    from rewardkit.verify.rows import Pending, read_rows

    batches: list[list[tuple[Any, str | None, Any]]] = []
    for path in [*sorted((SHARED / "real_outputs_dev").glob("*.jsonl.gz")), SHARED / "geoqa_dev.jsonl"]:
        if path.is_file():
            batches.append(
                [
                    (
                        r.get("solution", r.get("gold")),
                        r["completion"] if isinstance(r.get("completion"), str) else None,
                        r.get("options") or None,
                    )
                    for r in read_labelled(path)
                ]
            )
    workload = load(DEFAULT_WORKLOAD)
    for name in VARIANTS:
        batch = variant(workload, name, 1, len(workload))
        batches.append([(s, c, None) for c, s in zip(batch["completions"], batch["solutions"], strict=True)])
    texts: dict[str, None] = {}
    for batch_rows in batches:
        for read in read_rows(batch_rows, "standard", 0.0, 1000):
            if isinstance(read, Pending):
                texts[read.canonical.gold] = None
                texts[read.canonical.prediction] = None
    return list(texts)


def outcomes(texts: list[str], ours: bool) -> tuple[list[Any], float]:
    """What Math-Verify's parse of each answer text gives, with latex2sympy as the workers run it or as
    it comes, and the CPU seconds it took."""
    from contextlib import nullcontext

    import sympy
    from math_verify.parser import parse_latex_cached

    from rewardkit.verify import latex, worker

    out: list[Any] = []
    with nullcontext() if ours else latex.unchanged():
        start = time.process_time()
        for text in texts:
            parse_latex_cached.cache_clear()  # Math-Verify keeps the last 20: each text parsed, every time
            try:
                out.append([(str(value), sympy.srepr(value)) for value in worker._parse_answer(text)])
            except Exception as exc:
                out.append(("error", type(exc).__name__))
        return out, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="every N-th string only")
    args = parser.parse_args()
    import logging

    from rewardkit.verify import worker

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    worker.init_worker(0)  # the alarm's handler, as in a worker
    texts = corpus()[:: args.every]
    print(f"{len(texts):,} distinct answer and gold texts")
    seconds: dict[str, list[float]] = {"latex2sympy as it comes": [], "as the workers run it": []}
    results: dict[str, Any] = {}
    for round_ in range(2):
        for name, ours in zip(seconds, (False, True), strict=True):
            results[name], cpu = outcomes(texts, ours)
            if round_:
                seconds[name].append(cpu)
    a, b = results.values()
    differ = [(text, x, y) for text, x, y in zip(texts, a, b, strict=True) if x != y]
    for name, spent in seconds.items():
        print(f"  {name:<26} {spent[0]:7.1f} s CPU  ({spent[0] / len(texts) * 1000:.2f} ms a text)")
    before, now = (spent[0] for spent in seconds.values())
    print(f"  {before / now:.2f}x faster as the workers run it; texts parsed differently: {len(differ)}")
    for text, x, y in differ[:20]:
        print(f"    {text!r}: as it comes {x} / as the workers run it {y}")


if __name__ == "__main__":
    main()
