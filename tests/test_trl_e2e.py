"""A real TRL GRPOTrainer run (a tiny local model on the CPU, 2 steps) with rewardkit's rewards as TRL calls
them: the judge against the loopback judge, math reading GSM8K's ``answer`` column, two configurations of
``format`` under their own metric names, and a reward scored by the service through ``remote_reward``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.client import remote_reward
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import Server
from tests.support.tiny_swift import build


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("trl") / "server.log")
    yield s
    s.stop()


@pytest.mark.timeout(600)
def test_a_grpo_run_with_rewardkits_rewards(fake_judge: FakeJudge, service: Server, tmp_path: Path) -> None:
    os.environ.setdefault("WANDB_DISABLED", "true")
    from datasets import Dataset  # type: ignore[import-untyped]
    from transformers import AutoTokenizer, Qwen2ForCausalLM
    from trl.trainer.grpo_config import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    model_dir, _ = build(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = Qwen2ForCausalLM.from_pretrained(model_dir)
    # GSM8K's layout: the gold is in "answer"; the fake judge scores 6 whatever it is sent with "SCORE:6"
    dataset = Dataset.from_dict(
        {
            "prompt": ["Tom has 3 apples and buys 4. How many now? SCORE:6"] * 4,
            "answer": ["7"] * 4,
        }
    )
    calls: dict[str, list[str]] = {}

    def seen(reward: Any) -> Any:
        """Record what TRL passed (keyword names), then score as TRL asked."""

        def call(*args: Any, **kwargs: Any) -> Any:
            calls.setdefault(reward.__name__, sorted(kwargs))
            return reward(*args, **kwargs)

        call.__name__ = reward.__name__
        return call

    remote = remote_reward("math", service.url, alias="remote_math", columns={"solution": "answer"})
    rewards = [
        rewardkit.get("llm_judge"),
        rewardkit.get("math", alias="gsm8k_acc", columns={"solution": "answer"}),
        rewardkit.get("format", alias="fmt_strict"),
        rewardkit.get("format", alias="fmt_prefilled", think_prefilled=True),
        remote,
    ]
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        per_device_train_batch_size=4,
        num_generations=4,
        gradient_accumulation_steps=1,
        max_completion_length=8,
        max_steps=2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        learning_rate=1e-4,
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[seen(r) for r in rewards],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    remote.close()

    logged = [entry for entry in trainer.state.log_history if "rewards/llm_judge/mean" in entry]
    assert len(logged) == 2  # both steps
    names = {"llm_judge", "gsm8k_acc", "fmt_strict", "fmt_prefilled", "remote_math"}
    for entry in logged:
        assert {f"rewards/{n}/mean" for n in names} <= set(entry)
        assert entry["rewards/llm_judge/mean"] == pytest.approx(0.6)  # the question came from prompts=
        for name in ("gsm8k_acc", "remote_math", "fmt_strict", "fmt_prefilled"):
            assert 0.0 <= entry[f"rewards/{name}/mean"] <= 1.0
    # TRL's convention: prompts=, completions=, completion_ids=, trainer_state= and the other columns
    assert calls["gsm8k_acc"] == ["answer", "completion_ids", "completions", "prompts", "trainer_state"]
    assert set(calls) == names
    assert any("Tom has 3 apples" in text for text in fake_judge.texts)
    # the same completions scored in process and on the service agree (math read "answer" both ways)
    assert [e["rewards/gsm8k_acc/mean"] for e in logged] == [e["rewards/remote_math/mean"] for e in logged]

    # `rewardkit diagnose` on the run's trainer_state.json: the findings follow from the log
    from rewardkit.diagnose import diagnose

    checkpoint = tmp_path / "out" / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    trainer.state.save_to_json(str(checkpoint / "trainer_state.json"))
    report = diagnose(tmp_path / "out")
    assert report.kind == "trl" and report.steps == [1, 2] and set(report.funcs) == names
    dead = [e for e in logged if e["reward_std"] <= 1e-6 or e.get("frac_reward_zero_std", 0) >= 0.5]
    assert bool(dead) == any(f.kind == "zero_std" for f in report.findings)
    never = {n for n in names if all(e[f"rewards/{n}/mean"] == 0.0 for e in logged)}
    assert never == {f.func for f in report.findings if f.kind == "stuck"}
    assert "llm_judge" not in never  # 0.6: neither 0 nor 1
