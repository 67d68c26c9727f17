"""Run in a subprocess with veRL 0.9.1 on the path (tests/test_verl.py): veRL's own loader (through
rewardkit/examples/verl.py's ``load``, as the example loads it) and reward managers call rewardkit's veRL file
on a mixed gsm8k/countdown/MATH batch of token ids. Prints a JSON report."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto  # type: ignore[import-not-found]
from verl.experimental.reward_loop.reward_manager.naive import (  # type: ignore[import-not-found]
    NaiveRewardManager as LoopNaive,
)
from verl.workers.reward_manager import (  # type: ignore[import-not-found]
    BatchRewardManager,
    NaiveRewardManager,
)

from rewardkit.examples.verl import load

ROWS = json.loads(sys.argv[1])  # [data_source, response, ground_truth] per sample
LOADED: set[str] = set()  # how the example's load() got each function


def tokenizer() -> tuple[PreTrainedTokenizerFast, dict[str, int]]:
    chars = sorted({c for row in ROWS for c in row[1]} | set("question?"))
    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")  # type: ignore[no-untyped-call]
    return fast, vocab


def batch(vocab: dict[str, int]) -> DataProto:
    """veRL's layout: left-padded prompts, right-padded responses ending in EOS, and their attention mask."""
    prompt = [vocab[c] for c in "question?"]
    responses = [[vocab[c] for c in row[1]] + [1] for row in ROWS]
    width = max(len(r) for r in responses)
    padded = [r + [0] * (width - len(r)) for r in responses]
    mask = [[1] * len(prompt) + [1] * len(r) + [0] * (width - len(r)) for r in responses]
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt] * len(ROWS)),
            "responses": torch.tensor(padded),
            "attention_mask": torch.tensor(mask),
        },
        non_tensors={
            "data_source": np.array([row[0] for row in ROWS], dtype=object),
            "reward_model": np.array([{"ground_truth": row[2]} for row in ROWS], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(ROWS))], dtype=object),
        },
    )


def loaded(name: str) -> Any:
    function, how = load(name)
    LOADED.add(how)
    return function


def last_token_scores(reward_tensor: torch.Tensor) -> list[float]:
    return [float(row[row.nonzero()[-1]].item()) if row.any() else 0.0 for row in reward_tensor]


def main() -> None:
    tok, vocab = tokenizer()
    data = batch(vocab)
    report: dict[str, Any] = {}
    # the reward loop (veRL 0.9's trainer): one task per sample, an async compute_score awaited
    fn = loaded("compute_score_async")
    report["async_detected"] = inspect.iscoroutinefunction(fn)
    manager = LoopNaive(config=None, tokenizer=tok, compute_score=fn)

    async def loop() -> list[Any]:
        return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))

    outs = manager.loop.run_until_complete(loop())
    report["reward_loop"] = [o["reward_score"] for o in outs]
    from rewardkit.adapters import verl as adapter

    report["reward_loop_batches"] = manager.loop.run_until_complete(_batches(adapter))
    # the legacy managers: per sample (sync compute_score) and the batch manager (compute_score_batch)
    naive = NaiveRewardManager(tokenizer=tok, num_examine=0, compute_score=loaded("compute_score"))
    report["naive"] = last_token_scores(naive(data))
    batched = BatchRewardManager(tokenizer=tok, num_examine=0, compute_score=loaded("compute_score_batch"))
    report["batch"] = last_token_scores(batched(data))
    detailed = NaiveRewardManager(
        tokenizer=tok, num_examine=0, compute_score=loaded("compute_score_detailed")
    )
    out = detailed(data, return_dict=True)
    report["detailed_reasons"] = list(out["reward_extra_info"]["reason"])
    report["loaded"] = sorted(LOADED)
    print(json.dumps(report))


async def _batches(adapter: Any) -> int:
    return int(adapter.coalescer().batches)


if __name__ == "__main__":
    main()
