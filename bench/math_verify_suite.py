"""Math-Verify's own test suite (``tests/data/math_verify_suite.jsonl``) through `math`, both ways a trainer
hands it a prediction, against plain Math-Verify on the same cases.

    python bench/math_verify_suite.py [--modes standard,lenient] [--show 20]

Each case is a (gold, prediction, expected) triple taken from Math-Verify's tests with the options its test
ran it with (``match_types``, ``precision``, ``strict``, ``allow_set_relation_comp``). Plain Math-Verify runs
each case as its test does: ``parse`` of both sides with the case's extraction targets (LaTeX, expressions or
both), then ``verify`` with the case's precision, strictness and set-relation option; a case passes when the
verdict is the expected one. `math` runs with the same verification options, under its own names
(``precision``, ``strict``, ``set_relations``: one `math` reward for each set of options the suite uses, as
a trainer configures one reward for a data set); its extraction is its own (``extract``: the mode printed).
The prediction is given bare (``completion``) and inside an answer block (``<answer>completion</answer>``,
as a GRPO completion carries it).

Printed per mode and wrapping: cases passed of all, of the cases plain Math-Verify passes (the figure the
issue-35 floor reads: at least 98%), and of those among them whose test ran Math-Verify's default
verification options (``precision`` 6, ``strict``, no set relations: `math`'s defaults), and of the cases
plain passes with `math` run at its defaults for every case (a reward configured once, no per-case options:
the figure issue 35 quoted before the options existed), with the cases plain passes and `math` fails listed
(``--show``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402

SUITE = ROOT / "tests" / "data" / "math_verify_suite.jsonl"
WRAPPINGS = {"bare": "{}", "answer": "<answer>{}</answer>"}


def read_suite(path: Path = SUITE) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not cases:
        raise SystemExit(f"{path}: no cases")
    return cases


def plain_passes(cases: list[dict[str, Any]]) -> list[bool]:
    """Whether plain Math-Verify, run as the case's test runs it, gives the expected verdict."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    configs = {"latex": LatexExtractionConfig, "expr": ExprExtractionConfig}
    out = []
    for case in cases:
        options = case["options"]
        targets = [configs[name]() for name in options.get("match_types", ["latex", "expr"])]
        kwargs: dict[str, Any] = {
            "float_rounding": options.get("precision", 6),
            "strict": options.get("strict", True),
            "allow_set_relation_comp": options.get("allow_set_relation_comp", False),
        }
        try:
            gold = parse(case["gold"], extraction_config=targets)
            got = parse(case["completion"], extraction_config=targets)
            equal = bool(verify(gold, got, **kwargs))
        except Exception:
            equal = False
        out.append(equal == case["expected"])
    return out


def default_options(case: dict[str, Any]) -> bool:
    """A case its test ran with Math-Verify's defaults for verification (precision 6, strict, no set
    relations): the options `math` itself uses; the others ask for a setting no trainer sets per item."""
    options = case["options"]
    return (
        options.get("precision", 6) == 6
        and options.get("strict", True)
        and not options.get("allow_set_relation_comp", False)
    )


def math_options(case: dict[str, Any]) -> dict[str, Any]:
    """The case's verification options as `math`'s parameters."""
    options = case["options"]
    return {
        "precision": options.get("precision", 6),
        "strict": options.get("strict", True),
        "set_relations": options.get("allow_set_relation_comp", False),
    }


def ours_passes(cases: list[dict[str, Any]], mode: str, wrapping: str, per_case: bool = True) -> list[bool]:
    """Whether `math` gives the expected verdict: the cases scored in one batch per set of options (with
    ``per_case=False``, every case under `math`'s defaults, as a reward configured once would)."""
    groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
    for i, case in enumerate(cases):
        chosen = math_options(case) if per_case else {}
        groups.setdefault(tuple(sorted(chosen.items())), []).append(i)
    values: dict[int, float | None] = {}
    for options, members in groups.items():
        reward = rewardkit.get("math", extract=mode, **dict(options))
        completions = [WRAPPINGS[wrapping].format(cases[i]["completion"]) for i in members]
        scored = reward.score_detailed(completions, solution=[cases[i]["gold"] for i in members])
        values.update(zip(members, scored.values, strict=True))
    return [(values[i] == 1.0) == case["expected"] for i, case in enumerate(cases)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="standard,lenient", help="math's extract modes, comma-separated")
    parser.add_argument("--show", type=int, default=20, help="cases plain passes and math fails, to print")
    args = parser.parse_args()
    cases = read_suite()
    plain = plain_passes(cases)
    n_plain = sum(plain)
    print(f"{len(cases)} cases; plain Math-Verify passes {n_plain} ({n_plain / len(cases):.1%})")
    default = [default_options(case) for case in cases]
    n_default = sum(p and d for p, d in zip(plain, default, strict=True))
    print(
        f"{'mode':<10}{'wrapping':<10}{'passed':>14}{'of plain-passed':>22}"
        f"{'of those with default options':>36}{'of plain-passed, math at its defaults':>40}"
    )
    for mode in args.modes.split(","):
        for wrapping in WRAPPINGS:
            ours = ours_passes(cases, mode, wrapping)
            both = sum(o and p for o, p in zip(ours, plain, strict=True))
            by_default = sum(o and p and d for o, p, d in zip(ours, plain, default, strict=True))
            fixed = ours_passes(cases, mode, wrapping, per_case=False)
            at_defaults = sum(o and p for o, p in zip(fixed, plain, strict=True))
            print(
                f"{mode:<10}{wrapping:<10}{sum(ours):>8}/{len(cases):<5}"
                f"{both:>10}/{n_plain:<5}{both / n_plain:>6.1%}"
                f"{by_default:>20}/{n_default:<5}{by_default / n_default:>6.1%}"
                f"{at_defaults:>24}/{n_plain:<5}{at_defaults / n_plain:>6.1%}"
            )
            missed = [c for c, o, p in zip(cases, ours, plain, strict=True) if p and not o]
            for case in missed[: args.show]:
                print(f"    {case['test']}: {case['completion'][-70:]!r} vs {case['gold'][-50:]!r}")


if __name__ == "__main__":
    main()
