"""A real 2-step GRPO run of ms-swift 4.6 on the CPU with the plugin, locally and through the service:
rewardkit/examples/swift.py run as a user runs it (it builds the tiny model and the dataset, then runs
``swift rlhf``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.examples.swift import REWARD_FUNCS as FUNCS
from tests.support.helpers import ROOT, Server


def grpo(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    return subprocess.run(
        [sys.executable, "-m", "rewardkit.examples.swift", "--steps", "2", "--out", str(root), *args],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=400,
    )  # fmt: skip


def assert_trained(root: Path, proc: subprocess.CompletedProcess[str]) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    (command,) = [line for line in proc.stdout.splitlines() if line.startswith("$ ")]  # what it ran
    assert " rlhf --rlhf_type grpo " in command and "--reward_funcs " + " ".join(FUNCS) in command
    for func in FUNCS:
        assert f"'rewards/{func}/mean'" in output, f"{func} not logged:\n{output[-3000:]}"
    assert "'global_step/max_steps': '2/2'" in output
    assert proc.stdout.splitlines()[-1] == f"the run is in {root / 'out'}: rewardkit diagnose {root / 'out'}"


def assert_diagnosed(root: Path) -> None:
    """`rewardkit diagnose` reads the run ms-swift just wrote, and its findings follow from the raw logs."""
    from rewardkit.diagnose import diagnose, plot

    report = diagnose(root / "out", rescore=["format"])
    assert report.kind == "ms-swift" and report.steps == [1, 2]
    assert set(report.funcs) == set(FUNCS)
    (log,) = root.glob("out/v*/logging.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    logged = [e for e in entries if "global_step/max_steps" in e and "reward" in e]  # not the summary lines
    dead = [e for e in logged if e.get("reward_std", 1.0) <= 1e-6 or e.get("frac_reward_zero_std", 0) >= 0.5]
    assert bool(dead) == any(f.kind == "zero_std" for f in report.findings)
    clipped = sum(e["completions/clipped_ratio"] for e in logged) / len(logged)
    assert (clipped >= 0.9) == any(f.kind == "length_clipped" for f in report.findings)
    (table,) = root.glob("out/v*/completions.jsonl")
    logged_tables = [json.loads(line)["completion"] for line in table.read_text().splitlines()]
    # ms-swift writes its buffer again at the final log: a table equal to the one before is the same rollout
    fresh = [t for i, t in enumerate(logged_tables) if i == 0 or t != logged_tables[i - 1]]
    rows = sum(len(t) for t in fresh)
    assert report.completions == rows > 0
    assert sum(report.rescored["format"].values()) == rows  # every logged completion rescored with a reason
    assert report.groups["rk_format"].groups >= 1  # grouped by prompt and step
    png = plot(report, root / "diagnose.png")
    assert png.stat().st_size > 10_000


@pytest.mark.timeout(600)
def test_grpo_two_steps_local_and_remote(tmp_path: Path) -> None:
    assert_trained(tmp_path, grpo(tmp_path, env={"REWARDKIT_PARAMS": '{"countdown": {"format_score": 0.1}}'}))
    assert_diagnosed(tmp_path)
    server = Server({}, tmp_path / "server.log")
    try:
        assert_trained(
            tmp_path, grpo(tmp_path, "--url", server.url, env={})
        )  # the model built by the first run
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert 'POST /score HTTP/1.1" 200' in log  # the rewards really went through the service
