"""Agreement of `math` with the sources' labels and with the labels as audited by hand, per dev file and half.

    python bench/label_audit.py [--dir ../shared/verdicts/real_outputs_dev] [--only NAME] [--func math]
                                [--list]

``data/label_audit.jsonl`` holds one line per row where `math` (its default config; rows with option texts
get them as the ``choices`` column) disagreed with a source's label at commit
8d5c37cbc4ffebee3363d9d3a38fe5766ccdd668: ``file``, ``id``, ``label``, ``reward`` (math's value then),
``verdict`` and a one-line ``why``. Verdicts, decided by reading the completion's final part and the gold:

- ``label_wrong``: the completion's final answer is correct and the label says 0, or it is not (wrong,
  incomplete, several options, truncated reasoning) and the label says 1;
- ``reward_wrong``: the label is right and `math` is not (``why`` starts with a category in brackets);
- ``unclear``: the text cannot decide it.

Rows are keyed by their ``id``, unique within each dev file (the script stops if a file repeats one).

Printed per file and half (A, B, all; :func:`rewardkit.agreement.half`): rows, agreement and false-positive
rate (label 0 scored correct) against the labels, the same against the audited labels (a label flipped where
the audit says ``label_wrong``; ``unclear`` rows left out and counted), how many disagreements with the
labels the audit does not cover ("new": they appeared after rule changes and want auditing), and how many
audited rows `math` now scores as their label says ("flipped": a ``reward_wrong`` row fixed, or a
``label_wrong`` row now fitted to the wrong label). ``--list`` prints both kinds.
Every figure comes from :func:`rewardkit.agreement.measure`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewardkit.agreement import AgreementReport, half, measure, read_labelled  # noqa: E402

DEV_DIR = ROOT.parent / "shared" / "verdicts" / "real_outputs_dev"
AUDIT = Path(__file__).resolve().parent / "data" / "label_audit.jsonl"
HALVES = ("A", "B", "all")


def read_audit(path: Path = AUDIT) -> dict[tuple[str, str], dict[str, Any]]:
    """The audit's rows by (file, id)."""
    return {(row["file"], str(row["id"])): row for row in read_labelled(path)}


def audited_figures(
    report: AgreementReport, ids: list[str], labels: Mapping[str, float], audit: Mapping[str, str]
) -> dict[str, Any]:
    """Figures against the audited labels for the rows ``ids`` of one report (whose ``examples`` hold every
    disagreement with the labels). ``audit`` maps a row id to its verdict."""
    disagree = {str(example["id"]) for example in report.examples}
    n = agree = negatives = false_positives = unclear = 0
    for row_id in ids:
        verdict = audit.get(row_id)
        if verdict == "unclear":
            unclear += 1
            continue
        label = labels[row_id] == 1.0
        got = label != (row_id in disagree)  # a binary value: agreeing with the label means equal to it
        want = not label if verdict == "label_wrong" else label
        n += 1
        agree += got == want
        negatives += not want
        false_positives += got and not want
    return {
        "rows": n,
        "agree": agree,
        "false_positives": false_positives,
        "negatives": negatives,
        "unclear": unclear,
        "not_audited": sorted(disagree - set(audit)),
        "flipped": sorted(i for i in set(ids) & set(audit) if i not in disagree),
    }


def cells(n: int, agree: int, false_positives: int, negatives: int) -> str:
    """``agreement/FP%``: the false-positive rate is over the rows labelled 0."""
    return f"{agree / max(n, 1):>7.1%}/{false_positives / max(negatives, 1):>5.1%}"


def row_line(name: str, part: str, figures: Sequence[int]) -> str:
    """One printed line: rows, agreement/FP% with the labels and with the audited labels, unclear, new."""
    n, agree, fp, negatives, audited_n, audited_agree, audited_fp, audited_negatives, *counts = figures
    labels = cells(n, agree, fp, negatives)
    audited = cells(audited_n, audited_agree, audited_fp, audited_negatives)
    return f"{name:<44}{part:>5}{n:>6}{labels:>20}{audited:>20}" + "".join(f"{c:>9}" for c in counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEV_DIR)
    parser.add_argument("--only", default=None, help="files whose name contains this")
    parser.add_argument("--func", default="math", help="the reward spec (default: math)")
    parser.add_argument("--list", action="store_true", help="print the disagreements not audited")
    args = parser.parse_args()
    audit = read_audit()
    files = sorted(args.dir.glob("*.jsonl.gz"))
    if args.only:
        files = [f for f in files if args.only in f.name]
    head = f"{'file':<44}{'half':>5}{'rows':>6}{'labels agree/FP%':>20}{'audited agree/FP%':>20}"
    print(head + "".join(f"{c:>9}" for c in ("unclear", "new", "flipped")))
    totals: dict[str, list[int]] = {}
    for path in files:
        rows = [dict(r, half=half(r)) for r in read_labelled(path) if r.get("label") is not None]
        ids = [str(r.get("id")) for r in rows]
        if len(set(ids)) != len(ids):
            raise SystemExit(f"{path.name}: row ids repeat; the audit keys rows by id")
        columns = None
        if any(r.get("options") for r in rows) and not any(r.get("choices") for r in rows):
            columns = {"choices": "options"}
        reports = measure(rows, args.func, by="half", columns=columns, show=len(rows))
        labels = {i: float(r["label"]) for i, r in zip(ids, rows, strict=True)}
        verdicts = {i: row["verdict"] for (name, i), row in audit.items() if name == path.name}
        by_half = {report.group or "all": report for report in reports}
        for part in HALVES:
            report = by_half.get(part)
            if report is None:
                continue
            part_ids = [i for i, r in zip(ids, rows, strict=True) if part == "all" or r["half"] == part]
            fig = audited_figures(report, part_ids, labels, verdicts)
            figures = (
                report.n,
                report.agree,
                report.false_positives,
                report.n - report.positives,
                *(fig[k] for k in ("rows", "agree", "false_positives", "negatives", "unclear")),
                len(fig["not_audited"]),
                len(fig["flipped"]),
            )
            total = totals.setdefault(part, [0] * len(figures))
            for k, value in enumerate(figures):
                total[k] += value
            print(row_line(path.name.removesuffix(".jsonl.gz")[:43], part, figures))
            if args.list and part == "all":
                for example in report.examples:
                    if str(example["id"]) in fig["not_audited"]:
                        print("      new: " + json.dumps(example, ensure_ascii=False)[:600])
                for row_id in fig["flipped"]:
                    print(
                        "      flipped: " + json.dumps(audit[(path.name, row_id)], ensure_ascii=False)[:600]
                    )
    for part in HALVES:
        if part in totals:
            print(row_line("overall", part, totals[part]))


if __name__ == "__main__":
    main()
