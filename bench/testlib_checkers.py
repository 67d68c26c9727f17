"""testlib's own standard checkers judged through the code reward, with the real testlib.h and with
rewardkit's small compatible header (rewardkit/sandbox/data/testlib_lite.h): which compile with ours, and
whether the verdicts agree, on a set of outputs (exact, reformatted, wrong, short, extra, close floats,
yes/no in other cases).

testlib is third-party: it is read from a fetched snapshot given on the command line, never copied here::

    python bench/testlib_checkers.py /path/to/MikeMirzayanov/testlib   # a checkout: testlib.h, checkers/

Every checker and program runs in the sandbox, each checker compiled once per header.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import rewardkit

# (name, the answer (expected output), the program's output): the judgements asked of every checker
CASES = [
    ("exact", "1 2 3\n", "1 2 3\n"),
    ("reformatted", "1 2 3\n", "1  2\n3"),
    ("wrong", "1 2 3\n", "1 2 4\n"),
    ("short", "1 2 3\n", "1 2\n"),
    ("extra", "1 2 3\n", "1 2 3 4\n"),
    ("empty", "1 2 3\n", ""),
    ("close float", "0.3333333333\n", "0.3333333\n"),
    ("far float", "0.3333333333\n", "0.3334\n"),
    ("words", "hello world\n", "hello world\n"),
    ("other case", "hello world\n", "Hello World\n"),
    ("lines", "first line\nsecond line\n", "first line\nsecond  line\n"),
    ("yes", "YES\n", "yes\n"),
    ("no", "YES\n", "NO\n"),
]


def verdict(reason: str | None, detail: dict[str, object]) -> str:
    """The judge's word: accepted, wrong answer, presentation error, the checker failed (or did not
    compile: CE)."""
    if reason is None:
        return "AC"
    if reason == "checker_error" and "does not compile" in str(detail.get("error", "")):
        return "CE"
    return {"wrong_answer": "WA", "presentation_error": "PE", "checker_error": "FAIL"}.get(
        reason.split(":")[0], reason
    )


def judge(checkers: dict[str, str], testlib: str | None) -> tuple[dict[tuple[str, str], str], float]:
    """Every (checker, case) verdict with the header ``testlib`` (``None``: rewardkit's), and the seconds."""
    reward = rewardkit.get("code", testlib=testlib, checker_timeout_s=10.0)
    completions, tests, checker_column, keys = [], [], [], []
    for name, source in checkers.items():
        for case, answer, output in CASES:
            completions.append(f"```python\nprint({output!r}, end='')\n```")
            tests.append({"inputs": ["1\n"], "outputs": [answer]})
            checker_column.append({"language": "cpp", "source": source})
            keys.append((name, case))
    began = time.monotonic()
    scored = reward.score_detailed(completions, tests=tests, checker=checker_column)
    seconds = time.monotonic() - began
    said = zip(keys, scored.reasons, scored.details, strict=True)
    return {key: verdict(reason, detail) for key, reason, detail in said}, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "testlib", type=Path, help="a checkout of MikeMirzayanov/testlib (testlib.h, checkers/)"
    )
    args = parser.parse_args()
    header = args.testlib / "testlib.h"
    sources = {
        path.stem: path.read_text(encoding="utf-8") for path in sorted(args.testlib.glob("checkers/*.cpp"))
    }
    if not sources or not header.is_file():
        raise SystemExit(f"no testlib.h and checkers/*.cpp under {args.testlib}")
    real, real_s = judge(sources, str(header))
    lite, lite_s = judge(sources, None)
    print(
        f"{len(sources)} checkers x {len(CASES)} outputs; real testlib.h {real_s:.1f} s, ours {lite_s:.1f} s"
    )
    print(f"{'checker':<12} {'compiles':<9} agree  differences (case: real -> ours)")
    totals: Counter[str] = Counter()
    for name in sources:
        pairs = [(case, real[(name, case)], lite[(name, case)]) for case, *_ in CASES]
        compiles = not any(ours == "CE" for _, _, ours in pairs)
        same = sum(r == o for _, r, o in pairs)
        diff = ", ".join(f"{case}: {r} -> {o}" for case, r, o in pairs if r != o)
        totals["checkers"] += 1
        totals["compile"] += compiles
        totals["identical"] += same == len(pairs)
        totals["agree"] += same
        totals["cases"] += len(pairs)
        print(f"{name:<12} {'yes' if compiles else 'no':<9} {same:>2}/{len(pairs)}  {diff}")
    print(
        f"ours compiles {totals['compile']}/{totals['checkers']} checkers; verdicts agree on "
        f"{totals['agree']}/{totals['cases']} judgements; identical on every output: "
        f"{totals['identical']}/{totals['checkers']} checkers"
    )


if __name__ == "__main__":
    main()
