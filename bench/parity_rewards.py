"""Throughput of the parity rewards next to the peers' own implementations, measured in the same run.

    python bench/parity_rewards.py [--n 20000] [--repeats 5]

ms-swift 4.6's ``RepetitionPenalty``, ``SoftOverlong`` and ``CosineReward`` (from ``swift.rewards.orm``) and
TRL's ``think_format_reward`` and soft overlong punishment run on the same completions and token ids as
rewardkit's ``repetition``, ``soft_overlong``, ``cosine`` and ``think_format``; the values must be equal (the
bench stops if they are not). ``cosine`` gets the same correctness reward on both sides (rewardkit's
``format``), so the figures compare the length scaling and the batch handling, not two accuracy rules.
Prints completions/s (median of ``--repeats`` rounds) and the ratio ours/theirs of the rates.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rewardkit  # noqa: E402

WORDS = "the a cat dog sat ran on under mat rug and then again it was so we get x y z".split()


def workload(n: int, rng: random.Random) -> tuple[list[str], list[list[int]]]:
    completions, ids = [], []
    for _ in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 300)))
        form = rng.random()
        text = f"<think>\n{body}\n</think>\n<answer>\n4\n</answer>" if form < 0.6 else body
        completions.append(text)
        ids.append([1] * rng.randint(50, 1200))
    return completions, ids


def rate(run: Callable[[], Any], n: int, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from swift.rewards import orm
    from trl.rewards.format_rewards import think_format_reward
    from trl.rewards.other_rewards import get_soft_overlong_punishment

    completions, ids = workload(args.n, random.Random(0))
    chat = [[{"role": "assistant", "content": c}] for c in completions]
    fmt = rewardkit.get("format")
    swift_args = SimpleNamespace(
        repetition_n_grams=3,
        repetition_max_penalty=-1.0,
        soft_max_length=1024,
        soft_cache_length=256,
        cosine_min_len_value_wrong=-0.5,
        cosine_max_len_value_wrong=0.0,
        cosine_min_len_value_correct=1.0,
        cosine_max_len_value_correct=0.5,
        cosine_max_len=1024,
    )
    pairs: list[tuple[str, str, Callable[[], Any], Callable[[], Any]]] = [
        (
            "repetition",
            "ms-swift RepetitionPenalty",
            lambda: rewardkit.get("repetition")(completions),
            lambda: orm.RepetitionPenalty(swift_args)(completions),
        ),
        (
            "soft_overlong",
            "ms-swift SoftOverlong",
            lambda: rewardkit.get("soft_overlong", max_length=1024, cache_length=256)(
                completions, response_token_ids=ids
            ),
            lambda: orm.SoftOverlong(swift_args)(completions, response_token_ids=ids),
        ),
        (
            "soft_overlong (clip)",
            "TRL soft overlong punishment",
            lambda: rewardkit.get("soft_overlong", max_length=1024, cache_length=256, clip=True)(
                completions, completion_ids=ids
            ),
            lambda: get_soft_overlong_punishment(1024, 256)(ids),
        ),
        (
            "cosine (format)",
            "ms-swift CosineReward",
            lambda: rewardkit.get("cosine", max_len=1024, accuracy="format")(
                completions, response_token_ids=ids
            ),
            lambda: orm.CosineReward(swift_args, accuracy_orm=lambda c, s, **k: fmt(c))(
                completions, [None] * len(completions), response_token_ids=ids
            ),
        ),
        (
            "think_format",
            "TRL think_format_reward",
            lambda: rewardkit.get("think_format")(completions),
            lambda: think_format_reward(chat),
        ),
    ]
    print(f"rewardkit {rewardkit.__version__}: {args.n:,} completions, median of {args.repeats} rounds")
    print(f"{'reward':<22}{'rewardkit/s':>13}   {'peer':<30}{'peer/s':>11}{'ratio':>8}")
    for name, peer, ours_run, theirs_run in pairs:
        ours, ours_values = rate(ours_run, args.n, args.repeats)
        theirs, their_values = rate(theirs_run, args.n, args.repeats)
        if [round(v, 12) for v in ours_values] != [round(v, 12) for v in their_values]:
            raise SystemExit(f"{name}: values differ from {peer}")
        print(f"{name:<22}{ours:>13,.0f}   {peer:<30}{theirs:>11,.0f}{ours / theirs:>7.2f}x")
    print("(values equal on every completion; ratio above 1: rewardkit is faster)")


if __name__ == "__main__":
    main()
