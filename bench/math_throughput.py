"""Math reward throughput, agreement and worst-case latency, against ms-swift's built-in `accuracy`.

    python bench/math_throughput.py [--workload ../shared/bench/math_grpo_workload.jsonl] [--repeats 3]

On the shared GRPO-shaped workload (500 problems x 16 completions, scored as one batch, in order) it prints,
measured in the same run:

* completions/s of rewardkit ``math`` (pool warm, verdict cache emptied before each run) and of ms-swift
  4.6's ``orms["accuracy"](args=None)(completions, solution=...)`` in this process, and their ratio;
* agreement of each with the workload's ``label`` field, and rewardkit's remaining disagreements;
* the latency of a 1,152-completion batch (48 prompts x 24) with 10 pathological answers mixed in, with the
  guards on (as shipped) and off (every pathological answer reaches SymPy and must be stopped by the
  timeouts), and whether the other 1,142 scores equal the clean run;
* peak RSS of this process and of each worker process.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rewardkit  # noqa: E402
from rewardkit.verify import get_verifier  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The shared copy beside the checkout when there is one, else the copy shipped in bench/data (a fresh clone).
SHARED_WORKLOAD = ROOT.parent / "shared" / "bench" / "math_grpo_workload.jsonl"
DEFAULT_WORKLOAD = (
    SHARED_WORKLOAD if SHARED_WORKLOAD.is_file() else ROOT / "bench" / "data" / (SHARED_WORKLOAD.name + ".gz")
)

PATHOLOGICAL = [
    "\\boxed{9^{9^{9^{9}}}}",
    "\\boxed{2^{2^{2^{2^{2^{2}}}}}}",
    "\\boxed{(10^{7})!}",
    "\\boxed{10^{10^{7}}}",
    "\\boxed{" + "+".join(["1"] * 1000) + "}",
    "\\boxed{" + "\\frac{1}{" * 200 + "2" + "}" * 200 + "}",
    "\\boxed{" + "9" * 100_000 + "}",
    "x" * 1_000_000 + "\\boxed{" + "1+" * 400 + "1}",
    "\\boxed{\ud800\udfff 12}",
    "\\boxed{9^{9^{9}}!}",
]


def load(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file, gzipped or not."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def descendants_peak_rss_mb() -> list[tuple[str, int, float]]:
    """(role, pid, peak RSS in MB) of every process below this one: the worker host (``python -m
    rewardkit.verify``), its forkserver and resource tracker, and the workers below the forkserver."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: list[tuple[int, int]] = []
    frontier = [(os.getpid(), 0)]
    while frontier:
        pid, depth = frontier.pop()
        for child, parent in parents.items():
            if parent == pid:
                found.append((child, depth + 1))
                frontier.append((child, depth + 1))
    out = []
    for pid, depth in sorted(found, key=lambda item: (item[1], item[0])):
        try:
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if depth >= 3:  # forked from the forkserver: their command line is the forkserver's
            role = "worker"
        elif "rewardkit.verify" in cmd.split("\0"):
            role = "host"
        else:
            role = "forkserver" if "forkserver" in cmd else "resource tracker"
        for line in status:
            if line.startswith("VmHWM:"):
                out.append((role, pid, int(line.split()[1]) / 1024))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--repeats", type=int, default=3, help="rewardkit runs (the baseline runs once)")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()

    rows = load(args.workload)
    completions = [r["completion"] for r in rows]
    solutions = ["\\boxed{" + r["gold"] + "}" for r in rows]
    labels = [r["label"] for r in rows]
    n = len(rows)
    reward = rewardkit.get("math", timeout_s=args.timeout)
    verifier = get_verifier(reward.workers or None, reward.memory_mb)  # type: ignore[attr-defined]
    print(
        f"workload: {n:,} completions, {len({r['gold'] for r in rows})} distinct golds, "
        f"{verifier.workers} workers, timeout_s={args.timeout}"
    )

    start = time.perf_counter()
    verifier.ready()
    print(
        f"worker pool start (forkserver importing SymPy + Math-Verify): {time.perf_counter() - start:.2f} s"
    )

    times, values = [], []
    for _ in range(args.repeats):
        verifier._cache.clear()
        start = time.perf_counter()
        scored = reward.score_detailed(completions, solution=solutions)
        times.append(time.perf_counter() - start)
        values = scored.values
    ours_rate = n / statistics.median(times)
    stats = dict(verifier.stats)

    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    start = time.perf_counter()
    from swift.rewards import orms

    import_s = time.perf_counter() - start
    accuracy = orms["accuracy"](args=None)
    start = time.perf_counter()
    base_values = accuracy(completions, solution=solutions)
    base_s = time.perf_counter() - start
    base_rate = n / base_s

    def agreement(vals: list[float | None]) -> float:
        return sum(1 for v, lab in zip(vals, labels, strict=True) if (v or 0.0) == lab) / n

    print(f"\n{'':<28}{'completions/s':>14}{'agreement':>11}")
    print(
        f"{'rewardkit math':<28}{ours_rate:>14,.0f}{agreement(values):>11.2%}   "
        f"(median of {args.repeats}: {statistics.median(times):.2f} s)"
    )
    print(
        f"{'ms-swift 4.6 accuracy':<28}{base_rate:>14,.0f}{agreement(base_values):>11.2%}   "
        f"({base_s:.2f} s, one run; `import swift.rewards` took {import_s:.1f} s more)"
    )
    print(f"ratio: {ours_rate / base_rate:.1f}x")
    print(
        f"rewardkit work per run: {stats['pairs'] // args.repeats:,} pairs, "
        f"{stats['fast_path'] // args.repeats:,} fast path, {stats['guarded'] // args.repeats} guarded, "
        f"{stats['verified'] // args.repeats:,} sent to workers "
        f"(cache emptied between runs; {stats['cache_hits'] // args.repeats} hits)"
    )

    wrong = [(r, v) for r, v in zip(rows, values, strict=True) if (v or 0.0) != r["label"]]
    kinds = Counter(r["kind"] for r, _ in wrong)
    print(f"\nrewardkit disagreements with the labels: {len(wrong)} ({dict(kinds)})")
    seen = set()
    for r, v in wrong:
        key = (r["gold"], r["final_answer"])
        if key in seen:
            continue
        seen.add(key)
        print(f"  label {r['label']} got {v}: gold {r['gold']!r} answer {r['final_answer']!r} ({r['kind']})")

    # worst-case latency: 48 x 24 with 10 pathological answers
    batch = completions[:1152]
    batch_solutions = solutions[:1152]
    clean = reward(batch, solution=batch_solutions)
    positions = [i * 115 + 7 for i in range(10)]
    dirty = list(batch)
    for position, answer in zip(positions, PATHOLOGICAL, strict=True):
        dirty[position] = answer
    print(f"\n1,152-completion batch (48 x 24) with 10 pathological answers, timeout_s={args.timeout}:")
    for guards in (True, False):
        verifier._cache.clear()
        start = time.perf_counter()
        if guards:
            scored = reward.score_detailed(dirty, solution=batch_solutions)
            got, reasons = scored.values, scored.reasons
        else:
            from rewardkit.extract import gold_answer, math_answer
            from rewardkit.verify import Check

            checks = [
                Check(gold_answer(s) or "", math_answer(c).answer or "")
                for c, s in zip(dirty, batch_solutions, strict=True)
            ]
            results = verifier.verify_many(checks, timeout_s=args.timeout, guards=False)
            got = [None if e is None else float(e) for e, _ in results]
            reasons = [why for _, why in results]
        elapsed = time.perf_counter() - start
        others_equal = (
            all((got[i] or 0.0) == (clean[i] or 0.0) for i in range(len(batch)) if i not in positions)
            if guards
            else None
        )
        bad = Counter(reasons[i] for i in positions)
        verdict = "within" if elapsed <= args.timeout + 1 else "OVER"
        print(
            f"  guards {'on ' if guards else 'off'}: {elapsed:.2f} s ({verdict} timeout_s + 1 s); "
            f"pathological -> {dict(bad)}"
            + (f"; other 1,142 equal the clean run: {others_equal}" if guards else "")
        )

    print(
        f"\npeak RSS: this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB "
        "(it also imported ms-swift and torch for the baseline)"
    )
    for role, pid, mb in descendants_peak_rss_mb():
        print(f"  {role} pid {pid}: {mb:.0f} MB")


if __name__ == "__main__":
    main()
