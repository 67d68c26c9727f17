"""A real 2-step GRPO run of ms-swift 4.6 on the CPU with the plugin, locally and through the service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Server
from tests.tiny_swift import build

ROOT = Path(__file__).resolve().parents[1]
FUNCS = ["rk_countdown", "external_countdown", "rk_format", "rk_math"]


def grpo(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    model, dataset = root / "model", root / "countdown.jsonl"
    if not model.exists():
        build(root)
    swift = Path(sys.executable).parent / "swift"
    args = [
        str(swift), "rlhf", "--rlhf_type", "grpo", "--model", str(model), "--model_type", "qwen2",
        "--template", "qwen", "--dataset", str(dataset),
        "--external_plugins", str(ROOT / "swift_plugins" / "rewards.py"), "--reward_funcs", *FUNCS,
        "--use_vllm", "false", "--tuner_type", "full", "--torch_dtype", "float32", "--num_generations", "2",
        "--per_device_train_batch_size", "2", "--max_completion_length", "16", "--max_length", "256",
        "--max_steps", "2", "--save_strategy", "no", "--eval_strategy", "no", "--split_dataset_ratio", "0",
        "--dataloader_num_workers", "0", "--report_to", "none", "--logging_steps", "1",
        "--output_dir", str(root / "out"),
    ]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    return subprocess.run(
        args, cwd=root, env={**clean, **env, "PATH": f"{swift.parent}:{os.environ.get('PATH', '')}"},
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip


def assert_trained(proc: subprocess.CompletedProcess[str]) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    for func in FUNCS:
        assert f"'rewards/{func}/mean'" in output, f"{func} not logged:\n{output[-3000:]}"
    assert "'global_step/max_steps': '2/2'" in output


@pytest.mark.timeout(600)
def test_grpo_two_steps_local_and_remote(tmp_path: Path) -> None:
    assert_trained(grpo(tmp_path, {"REWARDKIT_PARAMS": '{"countdown": {"format_score": 0.1}}'}))
    server = Server({}, tmp_path / "server.log")
    try:
        assert_trained(grpo(tmp_path, {"REWARDKIT_URL": server.url}))
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert 'POST /score HTTP/1.1" 200' in log  # the rewards really went through the service
