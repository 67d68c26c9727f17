"""TRL's ``GRPOTrainer`` trained with rewardkit's rewards: a real GRPO run of a step or two.

A rewardkit reward is a plain callable with TRL's reward contract, so it goes straight into
``reward_funcs``. This script trains a tiny model it builds itself (nothing is downloaded) on two
GSM8K-style questions for ``--steps`` steps on the CPU, with:

- ``math`` reading GSM8K's gold column, ``answer`` (``columns={"solution": "answer"}``);
- ``format`` twice, strict and with the ``<think>`` prefilled: TRL logs a reward as
  ``rewards/<name>/mean``, so each gets a name of its own with ``alias=``;
- with ``--judge``: ``llm_judge``, a grade from the model behind ``REWARDKIT_JUDGE_BASE_URL``
  (``REWARDKIT_JUDGE_MODEL``, ``REWARDKIT_JUDGE_API_KEY``), the question read from TRL's ``prompts``;
- with ``--url`` (or ``REWARDKIT_URL``): ``math`` again, scored by the service there (``remote_reward``),
  so that the CPU-heavy checking runs off the GPU node.

It prints each step's rewards and leaves ``trainer_state.json`` in ``--out``, where ``rewardkit diagnose``
reads it.

Needs, in the trainer's venv (TRL comes with ms-swift; torch goes in first, pinned)::

    pip install torch==2.13.0
    pip install '/path/to/rewardkit[swift,math]'            # add judge for --judge, client for --url

Run::

    python -m rewardkit.examples.trl --steps 2 [--out DIR] [--judge] [--url http://cpu-box:8000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import rewardkit
from rewardkit.examples._tiny import tiny_model

# GSM8K's layout: the question in "prompt", the worked solution ending in "#### <answer>" in "answer".
QUESTIONS = {
    "prompt": [
        "Tom has 3 apples and buys 4. How many apples does he have now?",
        "A box holds 6 eggs. How many eggs are in 2 boxes?",
    ],
    "answer": ["He has 3 + 4 = 7 apples.\n#### 7", "2 boxes hold 2 * 6 = 12 eggs.\n#### 12"],
}


def reward_funcs(judge: bool, url: str | None) -> list[Any]:
    """The rewards, each under the name TRL logs it by."""
    funcs: list[Any] = [
        rewardkit.get("math", alias="gsm8k_acc", columns={"solution": "answer"}),
        rewardkit.get("format", alias="fmt_strict"),
        rewardkit.get("format", alias="fmt_prefilled", think_prefilled=True),
    ]
    if judge:
        funcs.append(rewardkit.get("llm_judge"))
    if url:
        from rewardkit.client import remote_reward  # the client extra

        # checked against the service's policy now: a wrong name or parameter fails here, not at step 100
        funcs.append(remote_reward("math", url, alias="math_remote", columns={"solution": "answer"}))
    return funcs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.examples.trl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the text as written here
    )
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--out", type=Path, help="output directory (default: a new temporary one)")
    parser.add_argument("--model", help="a model name or path (default: a tiny model built here)")
    parser.add_argument("--judge", action="store_true", help="add llm_judge (REWARDKIT_JUDGE_* settings)")
    parser.add_argument("--url", default=os.environ.get("REWARDKIT_URL"), help="add math on this service")
    args = parser.parse_args(argv)
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="rewardkit-trl-"))

    # imported here, so that --help answers at once: TRL, transformers and datasets take seconds to import
    from datasets import Dataset  # type: ignore[import-untyped]
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.grpo_config import GRPOConfig  # `from trl import ...` too; these paths are typed
    from trl.trainer.grpo_trainer import GRPOTrainer

    model = args.model or str(tiny_model(out / "model"))
    config = GRPOConfig(
        output_dir=str(out),
        max_steps=args.steps,
        per_device_train_batch_size=4,
        num_generations=4,  # the GRPO group: 4 completions of each prompt, compared with each other
        max_completion_length=8,  # the tiny model writes noise: a few tokens are enough to score
        learning_rate=1e-4,
        logging_steps=1,
        use_cpu=True,  # and float32: a tiny model on the CPU (drop these three for a real model on GPUs)
        bf16=False,
        fp16=False,
        report_to="none",
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
    )
    funcs = reward_funcs(args.judge, args.url)
    names = [func.__name__ for func in funcs]  # TRL logs each as rewards/<__name__>/mean
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model),
        reward_funcs=funcs,
        args=config,
        train_dataset=Dataset.from_dict(QUESTIONS),
        processing_class=AutoTokenizer.from_pretrained(model),
    )
    try:
        trainer.train()
    finally:
        for func in funcs:
            func.close()  # a remote reward's HTTP client; a no-op for the others
    trainer.save_state()  # trainer_state.json: the logged metrics, for `rewardkit diagnose`

    for entry in trainer.state.log_history:
        if "reward" in entry:  # a training step's entry (the last one holds the run's totals)
            means = {name: entry.get(f"rewards/{name}/mean") for name in names}
            print(f"step {entry['step']}: reward {entry['reward']:.3f}", json.dumps(means))
    print(f"trainer_state.json in {out}: rewardkit diagnose {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
