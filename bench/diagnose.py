"""`rewardkit diagnose` on a large completions log: time and peak memory, against loading it whole.

    python bench/diagnose.py [--completions 200000] [--group 16]

Writes an ms-swift-shaped run to a temporary directory (``logging.jsonl`` and a ``completions.jsonl`` of
``--completions`` completions of about 400 characters, ``--group`` per prompt, 512 per logged step, two
rewards and the advantages), then measures, in the same run:

* ``diagnose(run)`` (streams the log a step at a time), without rescoring;
* the baseline: every line read into memory first, then the same grouping (what a notebook does).

It prints the wall time and the peak of Python allocations (tracemalloc) of each and their ratio, and that
both found the same number of constant groups.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewardkit.diagnose import diagnose  # noqa: E402
from rewardkit.groups import GroupStats  # noqa: E402

STEP = 512  # completions logged per step


def write_run(root: Path, total: int, group: int) -> Path:
    rng = random.Random(0)
    run = root / "out" / "v0-bench"
    run.mkdir(parents=True)
    steps = total // STEP
    words = "the answer is so we add then check each term carefully and simplify".split()
    with (run / "completions.jsonl").open("w") as table, (run / "logging.jsonl").open("w") as log:
        for step in range(1, steps + 1):
            prompts = [f"problem {step}-{i // group}" for i in range(STEP)]
            dead = step % 3 == 0  # every third step: all groups constant
            accuracy = [0.0 if dead else float(rng.random() < 0.4) for _ in range(STEP)]
            row = {
                "step": [str(step)] * STEP,
                "prompt": prompts,
                "completion": [" ".join(rng.choices(words, k=70)) for _ in range(STEP)],
                "accuracy": accuracy,
                "format": [1.0] * STEP,
                "advantages": [0.0 if dead else rng.uniform(-1, 1) for _ in range(STEP)],
            }
            table.write(json.dumps(row) + "\n")
            entry = {
                "global_step/max_steps": f"{step}/{steps}",
                "reward": 1.0 + sum(accuracy) / STEP,
                "reward_std": 0.0 if dead else 0.45,
                "frac_reward_zero_std": 1.0 if dead else 0.05,
                "rewards/accuracy/mean": sum(accuracy) / STEP,
                "rewards/format/mean": 1.0,
                "completions/mean_length": 380.0,
                "completions/clipped_ratio": 0.01,
            }
            log.write(json.dumps(entry) + "\n")
    return root


def baseline(root: Path) -> int:
    """Every line in memory, then the same grouping and statistics: the constant accuracy groups."""
    (path,) = root.glob("out/*/completions.jsonl")
    tables = [json.loads(line) for line in path.read_text().splitlines()]
    stats = {name: GroupStats() for name in ("accuracy", "format", "advantages")}
    for table in tables:
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (step, prompt) in enumerate(zip(table["step"], table["prompt"], strict=True)):
            groups.setdefault((step, prompt), []).append(i)
        for (step, _), rows in groups.items():
            texts = [table["completion"][i] for i in rows]
            for name, group in stats.items():
                group.add([table[name][i] for i in rows], texts, int(step))
    return stats["accuracy"].constant


def measure(work: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall time of one run, then the peak of Python allocations of another (tracing slows it down)."""
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    work()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--completions", type=int, default=200_000)
    parser.add_argument("--group", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_run(Path(tmp), args.completions, args.group)
        size = sum(p.stat().st_size for p in root.rglob("*.jsonl")) / 2**20
        ours_s, ours_mb, report = measure(lambda: diagnose(root))
        base_s, base_mb, constant = measure(lambda: baseline(root))
    groups = report.groups["accuracy"]
    print(f"{report.completions:,} completions in {len(report.steps)} logged steps, {size:.0f} MiB of logs")
    print(f"  diagnose (streamed):     {ours_s:6.2f} s, peak {ours_mb:7.1f} MiB of Python allocations")
    print(f"  baseline (loaded whole): {base_s:6.2f} s, peak {base_mb:7.1f} MiB")
    print(f"  memory {base_mb / ours_mb:.1f}x less, time {base_s / ours_s:.2f}x")
    print(f"  constant accuracy groups: {groups.constant}/{groups.groups} (baseline {constant}); findings:")
    for finding in report.findings:
        print(f"    - {finding.message[:150]}")


if __name__ == "__main__":
    main()
