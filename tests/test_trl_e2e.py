"""A real TRL GRPOTrainer run (a tiny local model on the CPU, 2 steps) with rewardkit's rewards as TRL calls
them: rewardkit/examples/trl.py run as a user runs it, with the judge against the loopback judge, math reading
GSM8K's ``answer`` column, two configurations of ``format`` under their own metric names, and math scored by
the service through ``remote_reward``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_judge import FakeJudge
from tests.support.helpers import ROOT, Server


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("trl") / "server.log")
    yield s
    s.stop()


@pytest.mark.timeout(600)
def test_a_grpo_run_with_rewardkits_rewards(fake_judge: FakeJudge, service: Server, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # the loopback judge's settings (REWARDKIT_JUDGE_*, set for every test) and nothing else of rewardkit's
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_") or "_JUDGE_" in k}
    command = [sys.executable, "-m", "rewardkit.examples.trl", "--steps", "2", "--out", str(out), "--judge"]
    proc = subprocess.run(
        [*command, "--url", service.url],
        cwd=ROOT,
        env={**env, "WANDB_DISABLED": "true"},
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]

    state = json.loads((out / "trainer_state.json").read_text())  # what the example saved
    logged = [entry for entry in state["log_history"] if "rewards/llm_judge/mean" in entry]
    assert len(logged) == 2  # both steps
    names = ["gsm8k_acc", "fmt_strict", "fmt_prefilled", "llm_judge", "math_remote"]
    for entry in logged:
        assert {f"rewards/{n}/mean" for n in names} <= set(entry)
        assert entry["rewards/llm_judge/mean"] == pytest.approx(0.7)  # the loopback judge's grade, 7 of 10
        for name in ("gsm8k_acc", "math_remote", "fmt_strict", "fmt_prefilled"):
            assert 0.0 <= entry[f"rewards/{name}/mean"] <= 1.0
    # the judge read the question from TRL's prompts=
    assert any("Tom has 3 apples" in text for text in fake_judge.texts)
    # the same completions scored in process and on the service agree (math read "answer" both ways)
    assert [e["rewards/gsm8k_acc/mean"] for e in logged] == [e["rewards/math_remote/mean"] for e in logged]
    # what the example prints is what TRL logged
    printed = [line for line in proc.stdout.splitlines() if line.startswith("step ")]
    assert printed == [
        f"step {e['step']}: reward {e['reward']:.3f} "
        + json.dumps({n: e[f"rewards/{n}/mean"] for n in names})
        for e in logged
    ]

    # `rewardkit diagnose` on the run's trainer_state.json: the findings follow from the log
    from rewardkit.diagnose import diagnose

    report = diagnose(out)
    assert report.kind == "trl" and report.steps == [1, 2] and set(report.funcs) == set(names)
    dead = [e for e in logged if e["reward_std"] <= 1e-6 or e.get("frac_reward_zero_std", 0) >= 0.5]
    assert bool(dead) == any(f.kind == "zero_std" for f in report.findings)
    never = {n for n in names if all(e[f"rewards/{n}/mean"] == 0.0 for e in logged)}
    assert never == {f.func for f in report.findings if f.kind == "stuck"}
    assert "llm_judge" not in never  # 0.7: neither 0 nor 1
