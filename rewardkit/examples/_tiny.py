"""A tiny Qwen2 model and its tokenizer, made on the spot, for the trainer examples (TRL, ms-swift).

A 2-layer model with 64-wide hidden states and a byte-level BPE tokenizer of 400 tokens with a ChatML
template: untrained, so what it writes is noise, but every part of a GRPO step runs on it on a CPU in seconds,
and nothing is downloaded. In a real run you name your model instead (``Qwen/Qwen2.5-0.5B-Instruct``, a path).
Needs torch, transformers and tokenizers (``rewardkit[swift]`` brings the last two; torch goes in first).
"""

from __future__ import annotations

from pathlib import Path

#: what the tokenizer learns its merges from: the words of the examples' prompts and answers
CORPUS = [
    "Using the numbers 3, 5, 8 create an equation that equals 24.",
    "Tom has 3 apples and buys 4. How many apples does he have now?",
    "<think>hmm</think><answer>3 * 8</answer> \\boxed{7}",
    "0123456789 + - * / ( ) = <answer> </answer> <think> </think>",
]
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def tiny_model(out: Path, seed: int = 0) -> Path:
    """Write a tiny Qwen2 model and its tokenizer to ``out`` (a directory ``from_pretrained`` and ms-swift's
    ``--model`` read); returns ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    learn = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(CORPUS * 50, learn)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(out)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=int(tokenizer.convert_tokens_to_ids("<|endoftext|>")),  # type: ignore[arg-type]
    )
    torch.manual_seed(seed)
    Qwen2ForCausalLM(config).save_pretrained(out)  # type: ignore[no-untyped-call]
    return out
