"""ms-swift's GRPO trained with rewardkit's rewards: ``swift rlhf`` with the plugin and ``rk_...`` names.

ms-swift takes rewards by name from a plugin file; rewardkit's registers every reward as ``rk_<name>``, and
the names ms-swift's own GRPO examples use (``external_countdown``, ``external_r1v_acc``) with rewardkit's
rules. Two flags, no reward code::

    swift rlhf --rlhf_type grpo ... \\
        --external_plugins $(rewardkit plugin-path swift) \\
        --reward_funcs rk_countdown rk_format rk_math

This script writes a tiny model and a countdown dataset (nothing is downloaded), prints the ``swift rlhf``
command it runs, and runs it for ``--steps`` steps on the CPU; ms-swift logs each reward as
``rewards/rk_countdown/mean`` and so on, and ``rewardkit diagnose`` reads the run it leaves in ``--out``.

Parameters come from ``REWARDKIT_PARAMS='{"countdown": {"format_score": 0.1}}'`` (ms-swift passes none);
with ``--url`` (or ``REWARDKIT_URL``, and the token in ``REWARDKIT_API_TOKEN``) every reward is scored by the
service there instead of in the trainer.

Needs, in the trainer's venv (torch goes in first, pinned)::

    pip install torch==2.13.0
    pip install '/path/to/rewardkit[swift,math]'            # add client for --url

Run::

    python -m rewardkit.examples.swift --steps 2 [--out DIR] [--url http://cpu-box:8000]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rewardkit.adapters import plugin_path
from rewardkit.examples._tiny import tiny_model

# Countdown (ms-swift's GRPO example task): reach the target with the numbers. `target` and `nums` are
# countdown's columns; `solution` is what rk_math reads. ms-swift passes every dataset column to the rewards.
PROMPT = (
    "Using the numbers [3, 5, 8], create an equation that equals 24. Show your work in <think> </think> tags "
    "and the equation in <answer> </answer> tags."
)
ROW = {"messages": [{"role": "user", "content": PROMPT}], "target": 24, "nums": [3, 5, 8], "solution": "24"}
REWARD_FUNCS = [
    "rk_countdown",  # rewardkit's countdown: no eval of model output, exact arithmetic
    "external_countdown",  # the name ms-swift's countdown example uses, scored by rewardkit's rules
    "rk_format",  # <think>...</think><answer>...</answer> and nothing else
    "rk_math",  # the answer, checked against `solution`
]


def swift_command(
    model: Path, dataset: Path, out: Path, steps: int, reward_funcs: Sequence[str]
) -> list[str]:
    """``swift rlhf`` for a GRPO run with rewardkit's plugin, sized for the tiny model on a CPU."""
    beside = Path(sys.executable).parent / "swift"  # the script of this venv's ms-swift, else the PATH's
    swift = str(beside) if beside.is_file() else shutil.which("swift") or "swift"
    return [
        swift, "rlhf", "--rlhf_type", "grpo",
        "--model", str(model), "--model_type", "qwen2", "--template", "qwen",
        "--dataset", str(dataset), "--split_dataset_ratio", "0",
        # rewardkit: the plugin file, and the rewards by name
        "--external_plugins", str(plugin_path("swift")), "--reward_funcs", *reward_funcs,
        # a GRPO group of 2 completions, 16 tokens each, full fine-tuning in float32 on the CPU
        "--num_generations", "2", "--per_device_train_batch_size", "2", "--max_completion_length", "16",
        "--max_length", "256", "--use_vllm", "false", "--tuner_type", "full", "--torch_dtype", "float32",
        "--max_steps", str(steps), "--logging_steps", "1", "--log_completions", "true",
        "--save_strategy", "no", "--eval_strategy", "no", "--dataloader_num_workers", "0",
        "--report_to", "none", "--output_dir", str(out),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.examples.swift",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the text as written here
    )
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--out", type=Path, help="working directory (default: a new temporary one)")
    parser.add_argument("--url", default=os.environ.get("REWARDKIT_URL"), help="score on this service")
    parser.add_argument("--reward_funcs", nargs="+", default=REWARD_FUNCS, help="rewardkit's reward names")
    args = parser.parse_args(argv)
    root: Path = args.out or Path(tempfile.mkdtemp(prefix="rewardkit-swift-"))

    model = root / "model"
    if not model.is_dir():
        tiny_model(model)
    dataset = root / "countdown.jsonl"
    dataset.write_text("".join(json.dumps(ROW) + "\n" for _ in range(8)), encoding="utf-8")

    command = swift_command(model, dataset, root / "out", args.steps, args.reward_funcs)
    env = dict(os.environ)
    if args.url:
        env["REWARDKIT_URL"] = args.url  # the plugin then makes every reward a remote one
    # ms-swift starts helpers of its own by name: its venv's scripts first on the PATH
    env["PATH"] = os.pathsep.join([str(Path(command[0]).parent), env.get("PATH", "")])
    print("$", shlex.join(command), flush=True)
    returncode = subprocess.run(command, cwd=root, env=env).returncode
    if returncode == 0:
        print(f"the run is in {root / 'out'}: rewardkit diagnose {root / 'out'}")
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
