"""Verdicts on real model outputs: agreement of `math` (strict and lenient) and plain Math-Verify with the
sources' own labels, per file and per half.

    python bench/verdicts.py [--dir ../shared/verdicts/real_outputs_dev] [--half A|B|all] [--show 3]
                             [--only NAME] [--no-plain] [--json FILE]

Files: every ``*.jsonl.gz`` of the real-outputs dev folder (8 public evaluation releases, see
``../shared/README.md``), R1-V's GeoQA dev logs, and the shared GRPO workload. Each file is split in two
halves by problem (:func:`rewardkit.agreement.half`, by gold): rules were written looking at half A only;
half B is the check that they generalise. Every figure goes through :func:`rewardkit.agreement.measure`, the
code behind ``rewardkit agreement``.

Columns: rows that carry option texts (MathVista's ``choices``, MMLU-Pro's ``options``) give them to the
reward as its ``choices`` column. "plain" is Math-Verify's own ``parse`` + ``verify`` over the whole
completion (its default extraction, its 5 s timeouts), the baseline users would otherwise take.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402
from rewardkit.agreement import AgreementReport, compare, half, measure, read_labelled  # noqa: E402
from rewardkit.core import Scored  # noqa: E402

SHARED = ROOT.parent / "shared"
DEV_DIR = SHARED / "verdicts" / "real_outputs_dev"
EXTRA = [SHARED / "verdicts" / "geoqa_dev.jsonl", SHARED / "bench" / "math_grpo_workload.jsonl"]
CONFIGS = {"strict": "math:extract=strict", "standard": "math", "lenient": "math:extract=lenient"}


def plain_math_verify(rows: list[dict[str, Any]]) -> list[float | None]:
    """Math-Verify as its README shows it: parse the gold and the whole completion, then verify."""
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    out: list[float | None] = []
    for row in rows:
        try:
            gold = parse(str(row["solution"]))
            got = parse(str(row["completion"]))
            out.append(1.0 if verify(gold, got) else 0.0)
        except Exception:
            out.append(0.0)
    return out


def plain_report(rows: list[dict[str, Any]]) -> AgreementReport:
    [report] = compare(rows, Scored(plain_math_verify(rows)), func="plain", show=0)
    return report


def columns_of(rows: list[dict[str, Any]]) -> dict[str, str] | None:
    if "choices" not in rewardkit.registry.info("math").optional_columns or any(
        row.get("choices") for row in rows
    ):
        return None  # already named choices
    if any(row.get("options") for row in rows):
        return {"choices": "options"}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEV_DIR)
    parser.add_argument("--half", choices=("A", "B", "all"), default=None, help="one half only")
    parser.add_argument("--show", type=int, default=0, help="disagreements to print per file and config")
    parser.add_argument("--only", default=None, help="files whose name contains this")
    parser.add_argument("--no-plain", action="store_true", help="skip plain Math-Verify (slow)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="which of " + ", ".join(CONFIGS))
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args()
    files = sorted(args.dir.glob("*.jsonl.gz")) + [p for p in EXTRA if p.is_file()]
    if args.only:
        files = [f for f in files if args.only in f.name]
    halves = [args.half] if args.half else ["A", "B", "all"]
    configs = {k: CONFIGS[k] for k in args.configs.split(",")}
    names = [*configs, *([] if args.no_plain else ["plain"])]
    print(f"{'file':<44}{'half':>5}{'rows':>6}" + "".join(f"{n + ' agree/FP%':>20}" for n in names))
    figures: list[dict[str, Any]] = []
    totals: dict[tuple[str, str], list[int]] = {}
    started = time.perf_counter()
    for path in files:
        rows = [r for r in read_labelled(path) if r.get("label") is not None]
        for row in rows:  # the GRPO workload names its gold "gold"
            row.setdefault("solution", row.get("gold"))
        for part in halves:
            part_rows = [r for r in rows if part == "all" or half(r) == part]
            cells = []
            for name in names:
                if name == "plain":
                    report = plain_report(part_rows)
                else:
                    [report] = measure(
                        part_rows, configs[name], columns=columns_of(part_rows), show=args.show
                    )
                figures.append({"file": path.name, "half": part, "config": name, **report.as_dict()})
                total = totals.setdefault((part, name), [0, 0, 0, 0])
                total[0] += report.n
                total[1] += report.agree
                total[2] += report.false_positives
                total[3] += report.n - report.positives
                cells.append(f"{report.rate:>12.1%}/{report.fp_rate:>6.1%}")
                for example in report.examples if name != "plain" else []:
                    print(f"      [{name}] {json.dumps(example, ensure_ascii=False)[:400]}")
            short = path.name.removesuffix(".gz").removesuffix(".jsonl")[:43]
            print(f"{short:<44}{part:>5}{len(part_rows):>6}" + "".join(f"{c:>20}" for c in cells), flush=True)
    for part in halves:
        cells = []
        for name in names:
            n, agree, fp, negatives = totals[(part, name)]
            cells.append(f"{agree / n:>12.1%}/{fp / max(negatives, 1):>6.1%}")
        print(
            f"{'overall':<44}{part:>5}{totals[(part, names[0])][0]:>6}" + "".join(f"{c:>20}" for c in cells)
        )
    geoqa = next((p for p in files if p.name.startswith("geoqa")), None)
    if geoqa is not None:  # R1-V's own reward on R1-V's outputs
        rows = [r for r in read_labelled(geoqa) if r.get("label") is not None]
        for part in halves:
            [report] = measure([r for r in rows if part == "all" or half(r) == part], "r1v_acc")
            cell = f"{report.rate:>12.1%}/{report.fp_rate:>6.1%}"
            print(f"{'geoqa_dev: r1v_acc':<44}{part:>5}{report.n:>6}{cell}")
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
