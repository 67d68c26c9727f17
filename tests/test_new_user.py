"""What a new user trips on (issue 23): brackets in what the CLI prints, a custom judge template's columns, a
plain function reward without its column, the GSM8K column hint, names across trainer, metrics and diagnose,
and what the service and the ms-swift plugin say about themselves."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import rewardkit
from rewardkit import ColumnError, adapters
from rewardkit.cli import app
from rewardkit.diagnose import DiagnoseError, diagnose
from rewardkit.diagnose.rescore import logged_name
from rewardkit.spec import RewardSpec
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import ROOT, Server

PLUGIN = ROOT / "swift_plugins" / "rewards.py"


def _said(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, _said(result.stdout), _said(result.stderr)


# -- 1. square brackets in what the CLI prints are text, not Rich markup


def test_serve_ray_without_ray_names_the_extra_with_its_brackets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "ray://nowhere:10001")  # no Ray of our own is set up
    monkeypatch.setattr(adapters, "service_app", lambda: "rewardkit_absent_package.app:create_app")
    code, _, err = _invoke("serve", "--ray")
    assert code == 2 and "pip install '/path/to/rewardkit[ray]'" in err


def test_check_prints_what_was_compared_with_its_brackets(tmp_path: Path) -> None:
    case = {
        "func": "format",
        "completion": "[b]no tags[/b]",
        "expected": 1.0,
        "note": "units [m] vs [cm]",
    }
    golden = tmp_path / "units[v1].jsonl"
    golden.write_text(json.dumps(case) + "\n")
    code, out, _ = _invoke("check", str(golden))
    assert code == 1
    assert "units [m] vs [cm]" in out and "units[v1].jsonl:1" in out


def test_an_error_naming_a_file_keeps_its_brackets(tmp_path: Path) -> None:
    code, _, err = _invoke("score", "-f", "format", str(tmp_path / "run[ray].jsonl"))
    assert code == 2 and "run[ray].jsonl" in err
    code, _, err = _invoke("diagnose", str(tmp_path / "out[plot]"))
    assert code == 2 and "out[plot]: no such file or directory" in err


# -- 2. a custom judge template needs exactly its placeholders


def test_a_judge_template_without_question_needs_no_question(fake_judge: FakeJudge) -> None:
    judge = rewardkit.get("llm_judge", template="Rubric: {rubric}\n{completion}\n[[N]]")
    assert judge.caller_columns() == (("rubric",), ("images",))
    assert judge(["x"], rubric=["be kind SCORE:3"]) == [0.3]  # the rubric reached the judge
    assert rewardkit.get("llm_judge", template="Rubric: {rubric}\n{completion}")(["x"], rubric=["r"]) == [0.7]
    with pytest.raises(ColumnError, match="required column 'rubric' is missing"):
        judge(["x"], question=["q"])
    with pytest.raises(ColumnError, match="it needs the question"):  # the default template still does
        rewardkit.get("llm_judge")(["x"], solution=["4"])
    assert fake_judge.requests == 2


# -- 3. a plain function reward without its column raises ColumnError, naming the column


def test_a_public_function_without_its_column_raises_column_error() -> None:
    with pytest.raises(ColumnError, match="reward 'math': required column 'solution' is missing"):
        rewardkit.math_equivalence(["\\boxed{1}"])  # type: ignore[call-arg]
    with pytest.raises(ColumnError, match="required column 'nums' is missing"):
        rewardkit.countdown(completions=["<answer>1 + 2</answer>"], target=[3])  # type: ignore[call-arg]
    assert rewardkit.countdown(["<answer>1 + 2</answer>"], [3], [[1, 2]]) == [1.0]  # positional columns
    assert rewardkit.math_equivalence.__name__ == "math"
    assert pickle.loads(pickle.dumps(rewardkit.math_equivalence)) is rewardkit.math_equivalence


# -- 4. a missing gold column, when the batch has it under a dataset's name, says how to map it


def test_a_missing_solution_with_an_answer_column_suggests_the_map() -> None:
    hint = 'map it with columns={"solution": "answer"}'
    with pytest.raises(ColumnError, match="the batch has 'answer': " + re.escape(hint)):
        rewardkit.get("math")(["\\boxed{4}"], answer=["4"])
    with pytest.raises(ColumnError, match=re.escape('columns={"solution": "ground_truth"}')):
        rewardkit.math_equivalence(["\\boxed{4}"], ground_truth=["4"])  # type: ignore[call-arg]
    with pytest.raises(ColumnError) as plain:
        rewardkit.get("math")(["\\boxed{4}"], question=["2+2?"])
    assert "map it" not in str(plain.value)
    assert rewardkit.get("math", columns={"solution": "answer"})(["\\boxed{4}"], answer=["4"]) == [1.0]


# -- 5. names across trainer, metrics and diagnose


def _swift_run(root: Path, func: str) -> Path:
    """An ms-swift run whose plugin reward ``func`` (``rk_format``) is logged under its plugin name."""
    run = root / "out" / "v0-20261201-000000"
    run.mkdir(parents=True)
    steps = [
        {
            "global_step/max_steps": f"{step}/2",
            "reward": 0.5,
            "reward_std": 0.0,
            "frac_reward_zero_std": 1.0,
            f"rewards/{func}/mean": 0.5,
            "completions/mean_length": 100.0,
        }
        for step in (1, 2)
    ]
    (run / "logging.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    table = {
        "step": ["1", "1"],
        "prompt": ["p", "p"],
        "completion": ["<think>x</think><answer>1</answer>", "no tags"],
        func: [1.0, 0.0],
    }
    (run / "completions.jsonl").write_text(json.dumps(table) + "\n")
    return root


def test_rescore_takes_the_names_the_run_logged(tmp_path: Path) -> None:
    run = _swift_run(tmp_path / "a", "rk_format")
    report = diagnose(run, rescore=["rk_format"])
    assert "rk_format" in report.funcs
    assert dict(report.rescored["rk_format"]) == {"= 1": 1, "missing:think": 1}
    code, out, err = _invoke("diagnose", str(run), "--rescore", "rk_format", "--json")
    assert code == 1, err  # the run's groups are dead: findings
    assert json.loads(out)["rescored"] == {"rk_format": {"= 1": 1, "missing:think": 1}}
    assert logged_name("external_countdown").name == "countdown"  # ms-swift's example names
    assert logged_name("external_r1v_acc").alias == "external_r1v_acc"
    code, _, err = _invoke("diagnose", str(run), "--rescore", "rk_nope")
    assert code == 2 and "unknown reward 'rk_nope'" in err


def test_a_trl_run_with_log_completions_is_diagnosed_and_rescored(tmp_path: Path) -> None:
    """TRL 0.29 as it writes a run: trainer_state.json in a checkpoint, log_completions=True's parquet tables
    in output_dir/completions, the rewards under their __name__ (an alias: r1v_strict)."""
    import pandas  # type: ignore[import-untyped]  # ms-swift and TRL bring it: make test installs it

    out = tmp_path / "trl-out"
    (out / "checkpoint-2").mkdir(parents=True)
    history = [
        {"step": step, "reward": 0.5, "reward_std": 0.0, "rewards/r1v_strict/mean": 0.5} for step in (1, 2)
    ]
    (out / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    (out / "completions").mkdir()
    question = "How many cubes are there?"
    prompt = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"  # the templated prompt
    for step in (1, 2):
        table = {
            "step": [step] * 2,
            "prompt": [prompt] * 2,
            "completion": ["<answer>3</answer>", f"<answer>{step} or 4</answer>"],
            "r1v_strict": [1.0, 0.0],
            "advantage": [0.7, -0.7],
        }
        pandas.DataFrame(table).to_parquet(out / "completions" / f"completions_{step:05d}.parquet")
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"prompt": question, "solution": "3"}) + "\n")
    report = diagnose(out, rescore=[RewardSpec("r1v_acc", alias="r1v_strict")], data=data)
    assert report.kind == "trl" and report.steps == [1, 2] and report.completions == 4
    assert report.groups["r1v_strict"].groups == 2 and report.groups["r1v_strict"].constant == 0
    assert dict(report.rescored["r1v_strict"]) == {"= 1": 2, "several_numbers": 2}
    shutil.rmtree(out / "completions")  # a run without log_completions=True: metrics only
    assert diagnose(out).completions == 0
    with pytest.raises(DiagnoseError, match=re.escape("TRL: GRPOConfig(log_completions=True)")):
        diagnose(out, rescore=["format"])


def test_plot_says_where_it_wrote(tmp_path: Path) -> None:
    run = _swift_run(tmp_path / "a", "rk_format")
    out = tmp_path / "figures" / "curves[1].png"
    out.parent.mkdir()
    code, _, err = _invoke("diagnose", str(run), "--plot", str(out))
    assert code == 1 and out.stat().st_size > 0
    assert f"plot written to {out}" in err


# -- 6. what the service and the ms-swift plugin say about themselves


def test_readyz_and_the_start_up_log_say_which_rewards_need_parameters(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = Server(
        {"REWARDKIT_PARAMS": json.dumps({"soft_overlong": {"max_length": 100, "cache_length": 20}})}, log
    )
    try:
        states = httpx.get(server.url + "/readyz", timeout=60).json()["rewards"]
    finally:
        server.stop()
    assert states["cosine"] == "needs parameters: max_len (each request gives them)"
    assert states["route"] == "needs parameters: routes (each request gives them)"
    assert states["soft_overlong"] == "ready"  # the operator gave it its parameter
    assert states["llm_judge"].startswith("unavailable: llm_judge: no base_url")  # not configured here
    assert states["math"] == "ready"
    text = log.read_text()
    assert "reward cosine (needs parameters: max_len (each request gives them))" in text
    assert "reward llm_judge (unavailable: llm_judge: no base_url" in text
    assert "reward soft_overlong (ok)" in text


@pytest.mark.parametrize("url", [None, "http://127.0.0.1:9/"])
def test_the_swift_plugin_says_once_where_it_scores(url: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    if url is not None:
        env["REWARDKIT_URL"] = url  # nothing is called when the plugin loads
    load = f"from swift.utils.utils import import_external_file; import_external_file({str(PLUGIN)!r})"
    proc = subprocess.run(
        [sys.executable, "-c", f"{load}; {load}"], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "reward functions score" in line]
    where = f"on the service at {url}" if url else "locally, in this process (REWARDKIT_URL is not set)"
    assert len(said) == 1 and said[0].endswith(where), proc.stderr[-2000:]


def test_two_rewards_of_one_trl_trainer_under_one_name_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    """TRL's calling convention: every reward of a trainer gets ``trainer_state``; TRL logs each under its
    ``__name__``, so ``rewardkit.math_equivalence`` and another ``math`` would share one metric."""
    state, other_trainer = object(), object()
    local = rewardkit.get("math")
    batch: dict[str, Any] = {"prompts": ["p"], "completion_ids": [[1]], "solution": ["4"]}
    with caplog.at_level("WARNING", logger="rewardkit"):
        rewardkit.math_equivalence(["\\boxed{4}"], trainer_state=state, **batch)
        rewardkit.math_equivalence(["\\boxed{4}"], trainer_state=state, **batch)  # the same reward: fine
        assert not caplog.records
        assert local(["\\boxed{4}"], trainer_state=state, **batch) == [1.0]
        local(["\\boxed{4}"], trainer_state=state, **batch)
        local(["\\boxed{4}"], trainer_state=other_trainer, **batch)  # another trainer: its own names
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "both named 'math'" in warnings[0] and "alias=" in warnings[0]
    with caplog.at_level("WARNING", logger="rewardkit"):
        caplog.clear()
        third = object()  # a third trainer: math and an aliased math log apart
        aliased = rewardkit.get("math", alias="math_local")
        rewardkit.math_equivalence(["\\boxed{4}"], trainer_state=third, **batch)
        aliased(["\\boxed{4}"], trainer_state=third, **batch)
    assert not caplog.records
