"""Verdicts on real model outputs: agreement of `math` and `r1v_acc` with a referee's labels.

    python bench/verdicts.py [--data ../shared/verdicts/geoqa_dev.jsonl] [--show 10]

The data is R1-V's published GeoQA evaluation logs (Qwen2-VL outputs; golds with degree signs, units, unicode
roots and pi), one distinct (completion, gold) pair a line with the referee's ``label`` (null: the completion
holds no <answer>) and ``n``, how often the pair occurs. The rows are split in two halves by gold, so that a
rule tuned on one half can be checked on the other ("A" was used while writing the rules, "B" was not).

Prints, per reward and half: agreement with the labels (distinct pairs, and weighted by ``n``), the share of
correct answers accepted, the share of wrong ones rejected, and the disagreements.
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from math_throughput import load  # noqa: E402

import rewardkit  # noqa: E402

SHARED_DATA = ROOT.parent / "shared" / "verdicts" / "geoqa_dev.jsonl"
DEFAULT_DATA = SHARED_DATA if SHARED_DATA.is_file() else ROOT / "bench" / "data" / (SHARED_DATA.name + ".gz")


def half(row: dict[str, object]) -> str:
    return "A" if zlib.crc32(str(row["solution"]).encode()) % 2 == 0 else "B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--show", type=int, default=8, help="disagreements to print per reward")
    args = parser.parse_args()
    rows = load(args.data)
    labelled = [r for r in rows if r["label"] is not None]
    print(
        f"{args.data.name}: {len(rows)} pairs, {len(labelled)} labelled ({len(rows) - len(labelled)} without)"
    )
    for name in ("math", "r1v_acc"):
        reward = rewardkit.get(name)
        scored = reward.score_detailed(
            [r["completion"] for r in labelled], solution=[r["solution"] for r in labelled]
        )
        print(f"\n{name}")
        print(f"  {'half':<5}{'pairs':>7}{'agree':>9}{'agree(n)':>10}{'correct ok':>12}{'wrong ok':>10}")
        wrong_rows = []
        for part in ("A", "B", "all"):
            idx = [i for i, r in enumerate(labelled) if part == "all" or half(r) == part]
            got = [1.0 if scored.values[i] == 1.0 else 0.0 for i in idx]
            want = [labelled[i]["label"] for i in idx]
            weights = [labelled[i]["n"] for i in idx]
            agree = [g == w for g, w in zip(got, want, strict=True)]
            pos = [a for a, w in zip(agree, want, strict=True) if w == 1.0]
            neg = [a for a, w in zip(agree, want, strict=True) if w == 0.0]
            weighted = sum(w for a, w in zip(agree, weights, strict=True) if a) / sum(weights)
            print(
                f"  {part:<5}{len(idx):>7}{sum(agree) / len(idx):>9.1%}{weighted:>10.1%}"
                f"{sum(pos) / max(len(pos), 1):>12.1%}{sum(neg) / max(len(neg), 1):>10.1%}"
            )
            if part == "all":
                wrong_rows = [i for i, a in zip(idx, agree, strict=True) if not a]
        for i in wrong_rows[: args.show]:
            row = labelled[i]
            text = row["completion"]
            tail = text[text.rfind("<answer>") :][:80] if "<answer>" in text else text[-80:]
            print(
                f"    label {row['label']:.0f} got {scored.values[i]}: gold {row['solution']!r} "
                f"answer {tail!r} ({scored.reasons[i]})"
            )


if __name__ == "__main__":
    main()
