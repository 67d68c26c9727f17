"""Throughput of the text rewards against the peers' rules, measured in the same run.

    python bench/text_rewards.py [--n 100000] [--repeats 3] [--seed 0]

Generates GRPO-shaped completions (a think block of realistic length, then an answer that is right, wrong,
uses the wrong numbers, is malformed, or is missing) and prints completions/s for rewardkit's countdown,
format and r1v_acc next to baselines re-implemented here from the peers' published rules:

* countdown: ms-swift's GRPO example ``external_countdown`` (first ``<answer>`` by regex, digits by regex,
  a character whitelist, then ``eval``);
* format: ms-swift's ``MathFormat`` regex (``^<think>.*?</think>\\s*<answer>.*?</answer>(?![\\s\\S])``);
* r1v_acc: R1-V's string fallback (first ``<answer>`` by regex, stripped strings compared).

Medians of ``--repeats`` runs, one process. It also runs the baseline countdown on ``90**50**3**2`` in a
child process with a 5 s limit, to show what that input does to a trainer.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rewardkit  # noqa: E402

# --------------------------------------------------------------------------- baselines (the peers' rules)


def swift_example_countdown(
    completions: Sequence[str], target: Sequence[Any], nums: Sequence[Any]
) -> list[float]:
    """ms-swift's example countdown reward, as its docs describe it (regex + eval)."""
    rewards = []
    for completion, gt, numbers in zip(completions, target, nums, strict=True):
        try:
            match = re.search(r"<answer>(.*?)<\/answer>", completion)
            if match is None:
                rewards.append(0.0)
                continue
            equation = match.group(1).strip()
            if "=" in equation:
                equation = equation.split("=")[0]
            used = [int(n) for n in re.findall(r"\d+", equation)]
            if sorted(used) != sorted(numbers):
                rewards.append(0.0)
                continue
            if not re.match(r"^[\d+\-*/().\s]+$", equation):
                rewards.append(0.0)
                continue
            result = eval(equation, {"__builtins__": None}, {})  # the peer's rule; never do this
            rewards.append(1.0 if abs(float(result) - float(gt)) < 1e-5 else 0.0)
        except Exception:
            rewards.append(0.0)
    return rewards


_SWIFT_FORMAT = re.compile(r"^<think>.*?</think>\s*<answer>.*?</answer>(?![\s\S])", re.DOTALL | re.MULTILINE)


def swift_math_format(completions: Sequence[str]) -> list[float]:
    """ms-swift's MathFormat rule."""
    return [1.0 if _SWIFT_FORMAT.match(c) else 0.0 for c in completions]


def r1v_string_fallback(completions: Sequence[str], solution: Sequence[str]) -> list[float]:
    """R1-V's fallback rule: first <answer> of each side, stripped strings compared."""
    out = []
    for completion, sol in zip(completions, solution, strict=True):
        gold = re.search(r"<answer>(.*?)</answer>", sol)
        pred = re.search(r"<answer>(.*?)</answer>", completion)
        g = gold.group(1).strip() if gold else sol.strip()
        p = pred.group(1).strip() if pred else completion.strip()
        out.append(1.0 if p == g else 0.0)
    return out


# --------------------------------------------------------------------------- workload

WORDS = "so we need to combine the numbers carefully and check each step before we answer it".split()


def _filler(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 250)))


def _expression(rng: random.Random, nums: list[int]) -> str:
    items = [str(n) for n in nums]
    rng.shuffle(items)
    expr = items[0]
    for item in items[1:]:
        op = rng.choice("+-*/")
        expr = f"({expr} {op} {item})" if rng.random() < 0.5 else f"{expr} {op} {item}"
    return expr


def _exact(expr: str) -> int | None:
    """Evaluate a generated expression exactly, with rewardkit's own parser (the bench's ground truth)."""
    from rewardkit.rewards.countdown import evaluate

    try:
        value = evaluate(expr)
    except ZeroDivisionError:
        return None
    return int(value) if value.denominator == 1 and value > 0 else None


def countdown_workload(n: int, rng: random.Random) -> tuple[list[str], list[int], list[list[int]]]:
    completions: list[str] = []
    targets: list[int] = []
    numss: list[list[int]] = []
    while len(completions) < n:
        nums = [rng.randint(1, 99) for _ in range(rng.choice((3, 4)))]
        expr = _expression(rng, nums)
        target = _exact(expr)
        if target is None:
            continue
        think = _filler(rng)
        kind = rng.random()
        if kind < 0.10:
            completions.append(f"<think>{think}")  # truncated: no answer block
            targets.append(target)
            numss.append(nums)
            continue
        if kind < 0.50:
            answer = expr + (f" = {target}" if rng.random() < 0.5 else "")
        elif kind < 0.70:
            answer = _expression(rng, nums)  # usually a wrong value
        elif kind < 0.80:
            answer = _expression(rng, nums[:-1] + [nums[-1] + 1])  # wrong numbers
        elif kind < 0.90:
            answer = rng.choice(
                [f"{nums[0]} ^ {nums[1]}", "I am not sure", expr.replace("*", "x"), expr + " +"]
            )
        else:
            answer = expr.replace("*", " \\times ").replace("/", "÷")  # LaTeX and Unicode operators
        completion = f"<think>{think}</think>\n<answer>{answer}</answer>"
        completions.append(completion)
        targets.append(target)
        numss.append(nums)
    return completions, targets, numss


def counting_workload(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    completions, solutions = [], []
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    for _ in range(n):
        gold = rng.randint(0, 10)
        kind = rng.random()
        if kind < 0.5:
            answer = str(gold if rng.random() < 0.7 else gold + 1)
        elif kind < 0.7:
            answer = f"There are {words[gold]} objects."
        elif kind < 0.85:
            answer = f"{gold} or {gold + 1}"
        else:
            answer = f"$\\boxed{{{gold}}}$"
        completions.append(f"<think>{_filler(rng)}</think><answer>{answer}</answer>")
        solutions.append(f"<answer> {gold} </answer>")
    return completions, solutions


# --------------------------------------------------------------------------- measurement


def compare(
    ours: Callable[[], list[Any]], baseline: Callable[[], list[Any]], n: int, repeats: int
) -> tuple[float, float, float, list[Any], list[Any]]:
    """Time both, interleaved round by round (so load on a shared machine hits both alike).

    Returns the median rate of each, the median of the per-round ratios, and each one's result.
    """
    ours_t, base_t, ratios = [], [], []
    ours_result: list[Any] = []
    base_result: list[Any] = []
    for round_ in range(repeats):
        order = [("ours", ours), ("base", baseline)]
        if round_ % 2:
            order.reverse()
        elapsed = {}
        for label, fn in order:
            start = time.perf_counter()
            result = fn()
            elapsed[label] = time.perf_counter() - start
            if label == "ours":
                ours_result = result
            else:
                base_result = result
        ours_t.append(elapsed["ours"])
        base_t.append(elapsed["base"])
        ratios.append(elapsed["base"] / elapsed["ours"])
    return (
        n / statistics.median(ours_t),
        n / statistics.median(base_t),
        statistics.median(ratios),
        ours_result,
        base_result,
    )


def _hang_child(queue: Any) -> None:
    queue.put(swift_example_countdown(["<answer>90**50**3**2</answer>"], [24], [[90, 50, 3, 2]]))


def baseline_on_power_tower(limit_s: float = 5.0) -> str:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_hang_child, args=(queue,), daemon=True)
    start = time.perf_counter()
    proc.start()
    proc.join(limit_s)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return f"did not finish in {limit_s:.0f} s (killed)"
    return f"finished in {time.perf_counter() - start:.2f} s with {queue.get()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n = args.n

    completions, targets, nums = countdown_workload(n, rng)
    counting, solutions = counting_workload(n, rng)
    mean_len = statistics.mean(len(c) for c in completions)
    print(f"rewardkit {rewardkit.__version__}, python {sys.version.split()[0]}, {n:,} completions per reward")
    print(
        f"countdown workload: mean completion length {mean_len:.0f} chars, medians of {args.repeats} runs\n"
    )

    rows = []
    ours_cd, base_cd, ratio_cd, ours_values, base_values = compare(
        lambda: rewardkit.countdown(completions, target=targets, nums=nums),
        lambda: swift_example_countdown(completions, targets, nums),
        n,
        args.repeats,
    )
    rows.append(("countdown", ours_cd, "ms-swift example (regex + eval)", base_cd, ratio_cd))
    ours_fmt, base_fmt, ratio_fmt, fmt_values, base_fmt_values = compare(
        lambda: rewardkit.format_tags(completions), lambda: swift_math_format(completions), n, args.repeats
    )
    rows.append(("format", ours_fmt, "ms-swift MathFormat regex", base_fmt, ratio_fmt))
    ours_r1v, base_r1v, ratio_r1v, r1v_values, base_r1v_values = compare(
        lambda: rewardkit.r1v_accuracy(counting, solution=solutions),
        lambda: r1v_string_fallback(counting, solutions),
        n,
        args.repeats,
    )
    rows.append(("r1v_acc", ours_r1v, "R1-V string fallback", base_r1v, ratio_r1v))

    print(f"{'reward':<10} {'rewardkit/s':>12}   {'baseline':<32} {'baseline/s':>11} {'ratio':>7}")
    for name, ours, base_name, base, ratio in rows:
        print(f"{name:<10} {ours:>12,.0f}   {base_name:<32} {base:>11,.0f} {ratio:>6.2f}x")
    print("(ratio: median over rounds of baseline time / rewardkit time; above 1 means rewardkit is faster)")

    print("\nwhere rewardkit and the baseline disagree (same completions):")
    diff = Counter((b, o) for b, o in zip(base_values, ours_values, strict=True) if b != o)
    for (b, o), count in sorted(diff.items(), key=lambda kv: -kv[1]):
        print(f"  countdown  baseline {b} -> rewardkit {o}: {count:,}")
    fmt_diff = sum(1 for a, b in zip(fmt_values, base_fmt_values, strict=True) if a != b)
    r1v_diff = Counter((b, o) for b, o in zip(base_r1v_values, r1v_values, strict=True) if b != o)
    print(f"  format     {fmt_diff:,} differ")
    for (b, o), count in sorted(r1v_diff.items(), key=lambda kv: -kv[1]):
        print(f"  r1v_acc    baseline {b} -> rewardkit {o}: {count:,}")

    tower = ["<answer>90**50**3**2</answer>"] * 1000
    start = time.perf_counter()
    values = rewardkit.countdown(tower, target=[24] * 1000, nums=[[90, 50, 3, 2]] * 1000)
    per_item_us = (time.perf_counter() - start) / 1000 * 1e6
    print(
        f"\n<answer>90**50**3**2</answer>: rewardkit {per_item_us:.1f} us per item (value {values[0]}); ",
        end="",
    )
    print(f"baseline {baseline_on_power_tower()}")


if __name__ == "__main__":
    main()
