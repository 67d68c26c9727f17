"""rewardkit as veRL's custom reward function, called the way veRL 0.9's reward loop calls it.

You give veRL two settings, and write no reward code::

    python -m verl.trainer.main_ppo ... \\
        reward.custom_reward_function.path=$(rewardkit plugin-path verl) \\
        reward.custom_reward_function.name=compute_score_async

veRL loads that file by its path and takes the function by its name; its reward loop then makes one task per
sample, ``await compute_score_async(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``,
and awaits them together: rewardkit scores the samples awaited together as one batch. Each row is scored by
the reward its ``data_source`` names (``openai/gsm8k`` and ``lighteval/MATH``: math; ``countdown``;
``math_dapo``: math, -1 when wrong; the table is in ``rewardkit/adapters/README.md``), against the row's
``reward_model.ground_truth``.

This script does what veRL does with those two settings, on rows in veRL's data layout and responses a
rollout could have written, and prints each score. With veRL installed, the function comes from veRL's own
loader (``verl.trainer.ppo.reward.get_custom_reward_fn``), given the settings above; without it, the file is
loaded by path, as that loader loads it.

Needs, in veRL's venv::

    pip install '/path/to/rewardkit[math]'    # the math reward (gsm8k, MATH); countdown needs only the core

Run::

    python -m rewardkit.examples.verl                                     # scored in this process
    REWARDKIT_URL=http://cpu-box:8000 python -m rewardkit.examples.verl   # scored by the service there
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.adapters import plugin_path

# Rows as veRL's data files hold them (its gsm8k and MATH preprocessing write these fields), and a response.
ROWS: list[dict[str, Any]] = [
    {
        "data_source": "openai/gsm8k",
        "reward_model": {"ground_truth": "18"},
        "response": "She sells 16 - 3 - 4 = 9 eggs a day, at $2 each: 9 * 2 = 18.\n#### 18",
    },
    {"data_source": "openai/gsm8k", "reward_model": {"ground_truth": "18"}, "response": "#### 17"},
    {
        "data_source": "lighteval/MATH",
        "reward_model": {"ground_truth": "\\frac12"},
        "response": "So $x = \\boxed{\\dfrac{1}{2}}$.",  # the same number, written differently
    },
    {
        "data_source": "countdown",
        "reward_model": {"ground_truth": {"target": 24, "numbers": [2, 6, 6]}},
        "response": "<think>6 - 2 = 4, 4 * 6 = 24</think><answer>(6 - 2) * 6</answer>",
    },
    {
        "data_source": "countdown",
        "reward_model": {"ground_truth": {"target": 24, "numbers": [2, 6, 6]}},
        "response": "<answer>6 ** 2 - 6 * 2</answer>",  # 24, but countdown allows no powers
    },
    {"data_source": "math_dapo", "reward_model": {"ground_truth": "8"}, "response": "Answer: 7"},
]


def load(name: str) -> tuple[Callable[..., Any], str]:
    """The function veRL gets from ``reward.custom_reward_function.path`` and ``.name``, and how it was
    loaded."""
    path = str(plugin_path("verl"))  # what `rewardkit plugin-path verl` prints
    try:
        from omegaconf import OmegaConf  # type: ignore[import-not-found]
        from verl.trainer.ppo.reward import get_custom_reward_fn  # type: ignore[import-not-found]
    except ImportError as missing:  # no veRL here: load the file as veRL's loader does
        spec = importlib.util.spec_from_file_location("custom_module", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name), f"by path, as veRL's loader does (no veRL here: {missing})"
    config = OmegaConf.create({"reward": {"custom_reward_function": {"path": path, "name": name}}})
    return get_custom_reward_fn(config), "by veRL's get_custom_reward_fn"


def score_kwargs(i: int, row: dict[str, Any]) -> dict[str, Any]:
    """The keywords veRL calls the reward function with, for sample ``i``."""
    return {
        "data_source": row["data_source"],
        "solution_str": row["response"],
        "ground_truth": row["reward_model"]["ground_truth"],
        "extra_info": {"index": i, "split": "train"},
    }


async def reward_loop(compute_score: Callable[..., Any], rows: Sequence[dict[str, Any]]) -> list[float]:
    """veRL's reward loop: one task per sample, awaited together."""
    tasks = [compute_score(**score_kwargs(i, row)) for i, row in enumerate(rows)]
    return list(await asyncio.gather(*tasks))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.examples.verl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the text as written here
    )
    parser.add_argument(
        "--name",
        default="compute_score_async",
        choices=["compute_score_async", "compute_score"],
        help="reward.custom_reward_function.name",
    )
    args = parser.parse_args(argv)

    compute_score, how = load(args.name)
    print(f"{args.name} loaded {how}")
    if inspect.iscoroutinefunction(compute_score):  # how veRL decides to await it
        scores = asyncio.run(reward_loop(compute_score, ROWS))
    else:  # compute_score: veRL runs it in a thread pool, one call per sample
        scores = [compute_score(**score_kwargs(i, row)) for i, row in enumerate(ROWS)]
    for row, score in zip(ROWS, scores, strict=True):
        print(f"{score:5.1f}  {row['data_source']:<15} {json.dumps(row['response'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
