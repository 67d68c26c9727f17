"""A tiny Qwen2 model, a byte-level BPE tokenizer with a ChatML template and a countdown dataset, all built
locally (nothing is downloaded), for a real 2-step ms-swift GRPO run on the CPU."""

from __future__ import annotations

import json
from pathlib import Path


def build(root: Path) -> tuple[Path, Path]:
    """Write the model and tokenizer to ``root/model`` and the dataset to ``root/countdown.jsonl``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = root / "model"
    out.mkdir(parents=True, exist_ok=True)
    corpus = [
        "Using the numbers 3, 5, 8 create an equation that equals 24.",
        "<think>hmm</think><answer>3 * 8</answer>",
        "0123456789 + - * / ( ) = <answer> </answer> <think> </think>",
    ] * 50
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>' + '\\n'}}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    fast.save_pretrained(out)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=int(fast.convert_tokens_to_ids("<|endoftext|>")),  # type: ignore[arg-type]
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    prompt = (
        "Using the numbers [3, 5, 8], create an equation that equals 24. Show your work in <think> </think> "
        "tags and the equation in <answer> </answer> tags."
    )
    rows = [
        {"messages": [{"role": "user", "content": prompt}], "target": 24, "nums": [3, 5, 8], "solution": "24"}
    ] * 8
    dataset = root / "countdown.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out, dataset
