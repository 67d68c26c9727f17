"""`rewardkit diagnose` on constructed logs that hold each finding, on scored JSONL, and its CLI contract.
The real runs are diagnosed where they are made: tests/test_swift_e2e.py (ms-swift, --log_completions true)
and tests/test_trl_e2e.py (TRL's trainer_state.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from rewardkit.diagnose import DiagnoseError, diagnose, plot

RK = [str(Path(sys.executable).parent / "rewardkit")]


def swift_run(
    root: Path, steps: list[dict[str, Any]], completions: list[dict[str, Any]] | None = None
) -> Path:
    """An ms-swift output directory as ms-swift 4.6 writes it (logging.jsonl, completions.jsonl)."""
    run = root / "out" / "v0-20261130-000000"
    run.mkdir(parents=True)
    lines = [{"global_step/max_steps": f"{i}/{len(steps)}", **entry} for i, entry in enumerate(steps, 1)]
    lines.append({"train_runtime": 1.0, "global_step/max_steps": "done"})  # the summary line ms-swift adds
    (run / "logging.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if completions is not None:
        (run / "completions.jsonl").write_text("".join(json.dumps(t) + "\n" for t in completions))
    return root


def healthy(step: int) -> dict[str, Any]:
    return {
        "reward": 0.3 + 0.01 * step,
        "reward_std": 0.4,
        "frac_reward_zero_std": 0.1,
        "rewards/accuracy/mean": 0.3 + 0.01 * step,
        "completions/mean_length": 200.0 + 10 * (step % 3),
        "completions/clipped_ratio": 0.02,
        "completions/max_length": 512.0,
    }


def test_a_healthy_run_has_no_finding(tmp_path: Path) -> None:
    report = diagnose(swift_run(tmp_path, [healthy(s) for s in range(1, 9)]))
    assert report.findings == [] and report.steps == list(range(1, 9))
    proc = subprocess.run([*RK, "diagnose", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "No finding" in proc.stdout


def test_dead_groups_name_the_constant_reward_and_show_its_completions(tmp_path: Path) -> None:
    steps = (
        [healthy(1), healthy(2)]
        + [
            {
                **healthy(s),
                "reward": 0.0,
                "reward_std": 0.0,
                "frac_reward_zero_std": 1.0,
                "rewards/accuracy/mean": 0.0,
            }
            for s in range(3, 7)
        ]
        + [healthy(7)]
    )
    prompts = ["p1", "p1", "p2", "p2"]
    tables = [
        {
            "step": [str(s)] * 4,
            "prompt": prompts,
            "completion": [f"I think 4 ({s})", f"maybe 5 ({s})", f"no tags here ({s})", f"still none ({s})"],
            "accuracy": [0.0, 0.0, 0.0, 0.0],
            "format": [0.0, 1.0, 0.0, 0.0],
            "advantages": [0.0, 0.0, 0.0, 0.0],
            "solution": ["4", "4", "9", "9"],
        }
        for s in range(3, 7)
    ]
    for entry in steps:
        entry["rewards/format/mean"] = 0.25
    report = diagnose(swift_run(tmp_path, steps, tables))
    dead = [f for f in report.findings if f.kind == "zero_std"]
    assert len(dead) == 1 and dead[0].steps == (3, 6)
    assert dead[0].message.startswith("steps 3-6 (4 of 7 logged steps): reward_std is ~0; on average 100% of")
    assert (
        "accuracy is constant in 8/8 groups (100%; constant at 0 (8 groups) over the run); "
        'e.g. "I think 4 (3)"' in dead[0].message
    )
    assert (
        "format is constant" not in dead[0].message
    )  # format varies in half the groups: it is not the cause
    assert report.groups["format"].constant_share == 0.5 and report.groups["advantages"].constant == 8
    assert "--rescore" in dead[0].advice
    # rescoring says why: the completions have no tags at all
    rescored = diagnose(swift_run(tmp_path / "again", steps, tables), rescore=["format", "math"])
    assert rescored.rescored["format"] == {"missing:think": 16}
    assert sum(rescored.rescored["math"].values()) == 16


@pytest.mark.parametrize(
    ("change", "kind", "words"),
    [
        (
            {"rewards/accuracy/mean": 1.0},
            "stuck",
            "accuracy is 1.0 at all 6 logged steps that report it (steps 1-6)",
        ),
        (
            {"rewards/accuracy/mean": 0.0},
            "stuck",
            "accuracy is 0.0 at all 6 logged steps that report it (steps 1-6)",
        ),
        (
            {"completions/clipped_ratio": 0.97},
            "length_clipped",
            "at 6 of 6 logged steps (the longest stretch: steps 1-6); 97% of them",
        ),
        ({"completions/mean_length": 301.0}, "length_flat", "completion length does not move: 301-301"),
    ],
)
def test_each_finding_from_a_constructed_log(
    tmp_path: Path, change: dict[str, Any], kind: str, words: str
) -> None:
    report = diagnose(swift_run(tmp_path, [{**healthy(s), **change} for s in range(1, 7)]))
    assert [f.kind for f in report.findings] == [kind]
    assert words in report.findings[0].message


def test_reward_rising_while_length_collapses(tmp_path: Path) -> None:
    steps = [{**healthy(s), "reward": 0.1 * s, "completions/mean_length": 400.0 / s} for s in range(1, 10)]
    report = diagnose(swift_run(tmp_path, steps))
    assert [f.kind for f in report.findings] == ["reward_up_length_down"]
    assert report.findings[0].message.startswith(
        "the reward rises by 0.60 while completion length falls from 244 to 51 (means of the first and last "
        "third of steps 1-9)"
    )


def test_trl_trainer_state(tmp_path: Path) -> None:
    history = [{**healthy(s), "step": s, "reward_std": 0.0, "frac_reward_zero_std": 0.9} for s in range(1, 5)]
    history.append({"train_runtime": 2.0, "step": 4})
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": history}))
    report = diagnose(tmp_path)
    assert report.kind == "trl" and report.steps == [1, 2, 3, 4]
    assert [f.kind for f in report.findings] == ["zero_std"]
    assert "on average 90% of groups have zero reward std" in report.findings[0].message


def test_scored_jsonl_groups_and_the_score_commands_group_table(tmp_path: Path) -> None:
    rows = [
        {"prompt": f"q{i // 4}", "completion": "<think>a</think><answer>1</answer>" if i < 8 else "x"}
        for i in range(16)
    ]
    source = tmp_path / "rollouts.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scored = tmp_path / "scored.jsonl"
    proc = subprocess.run(
        [*RK, "score", str(source), "-f", "format", "-o", str(scored)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "within groups" in proc.stderr and "100.0%" in proc.stderr  # 4 groups, each all 1.0 or all 0.0
    report = diagnose(scored)
    assert report.kind == "scored" and report.completions == 16
    assert report.groups["format"].groups == 4 and report.groups["format"].constant == 4
    assert [f.kind for f in report.findings] == ["zero_std_groups"]
    assert report.findings[0].message.startswith(
        "format: 4/4 groups (100%) have zero std (constant at 1 (2 groups), 0 (2 groups)). Every completion"
    )


def test_unreadable_input_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    run = swift_run(tmp_path, [healthy(1), healthy(2)])
    log = next(run.rglob("logging.jsonl"))
    log.write_text(log.read_text() + "{not json\n")
    with pytest.raises(DiagnoseError, match=r"logging.jsonl, line 4: not JSON"):
        diagnose(run)
    for bad in (str(log), str(tmp_path / "missing")):
        proc = subprocess.run([*RK, "diagnose", bad], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "error:" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DiagnoseError, match="no logging.jsonl, completions.jsonl or trainer_state.json"):
        diagnose(empty)


def test_plot_png_and_html_and_the_cli(tmp_path: Path) -> None:
    steps = [{**healthy(s), "reward_std": 0.0 if 3 <= s <= 5 else 0.4} for s in range(1, 9)]
    run = swift_run(tmp_path, steps)
    report = diagnose(run)
    png = plot(report, tmp_path / "curves.png")
    with Image.open(png) as image:
        assert image.size == (1000, 900)
    page = plot(report, tmp_path / "curves.html").read_text()
    assert "data:image/png;base64," in page and "reward_std is ~0" in page
    with pytest.raises(DiagnoseError, match=".png or an .html"):
        plot(report, tmp_path / "curves.svg")
    out = tmp_path / "cli.png"
    proc = subprocess.run(
        [*RK, "diagnose", str(run), "--plot", str(out), "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr  # findings
    data = json.loads(proc.stdout)
    assert data["findings"][0]["kind"] == "zero_std" and data["findings"][0]["steps"] == [3, 5]
    assert out.stat().st_size > 10_000


def test_scattered_dead_steps_are_one_finding(tmp_path: Path) -> None:
    steps = [{**healthy(s), "reward_std": 0.0 if s % 3 == 0 else 0.4} for s in range(1, 16)]
    report = diagnose(swift_run(tmp_path, steps))
    (finding,) = report.findings
    assert finding.kind == "zero_std" and finding.steps == (3, 15)
    assert finding.spans == ((3, 3), (6, 6), (9, 9), (12, 12), (15, 15))
    assert finding.message.startswith("5 of 15 logged steps (33%), in 5 stretches between steps 3 and 15")


def _table(step: int, prompts: list[Any], completions: list[Any], **columns: list[Any]) -> dict[str, Any]:
    return {"step": [str(step)] * len(completions), "prompt": prompts, "completion": completions, **columns}


def test_odd_inputs_are_exit_2_with_the_file_and_line_never_a_traceback(tmp_path: Path) -> None:
    bad = swift_run(
        tmp_path / "a", [healthy(1)], [_table(1, ["p", "p"], ["a", "b", "c", "d"], accuracy=[0.0] * 4)]
    )
    proc = subprocess.run([*RK, "diagnose", str(bad)], capture_output=True, text=True, timeout=60)
    said = " ".join(proc.stderr.split())  # rich wraps long lines
    assert proc.returncode == 2 and "line 1: column 'prompt' has 2 values for 4 completions" in said
    sft = tmp_path / "sft"
    sft.mkdir()
    (sft / "trainer_state.json").write_text(json.dumps({"log_history": [{"loss": 1.0, "step": 1}]}))
    with pytest.raises(DiagnoseError, match="no GRPO reward metrics"):
        diagnose(sft)
    with pytest.raises(DiagnoseError, match="nothing to rescore: the run has no completions log"):
        diagnose(swift_run(tmp_path / "b", [healthy(1), healthy(2)]), rescore=["format"])
    run = swift_run(tmp_path / "c", [healthy(s) for s in range(1, 4)])
    proc = subprocess.run(
        [*RK, "diagnose", str(run), "--plot", str(tmp_path / "missing" / "x.png")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        proc.returncode == 2 and "cannot write" in proc.stderr and "No findings" in proc.stdout
    )  # report first


def test_a_run_still_being_written_is_read_up_to_its_last_whole_line(tmp_path: Path) -> None:
    run = swift_run(tmp_path, [healthy(s) for s in range(1, 5)])
    log = next(run.rglob("logging.jsonl"))
    log.write_text(log.read_text() + '{"global_step/max_steps": "5/9", "rew')  # cut off mid-write
    assert diagnose(run).steps == [1, 2, 3, 4]


def test_dead_steps_by_share_of_groups_say_so(tmp_path: Path) -> None:
    steps = [{**healthy(s), "frac_reward_zero_std": 0.6 if s > 3 else 0.1} for s in range(1, 7)]
    (finding,) = diagnose(swift_run(tmp_path, steps)).findings
    assert finding.message.startswith(
        "steps 4-6 (3 of 6 logged steps): at least half the groups have zero reward std; on average 60%"
    )


def test_repeated_log_lines_are_counted_once_and_scored_groups_split_by_step(tmp_path: Path) -> None:
    table = _table(1, ["p", "p"], ["a", "b"], accuracy=[0.0, 1.0])
    report = diagnose(
        swift_run(tmp_path / "a", [healthy(1), healthy(2)], [table, {**table, "step": ["2", "2"]}])
    )
    assert report.completions == 2 and report.groups["accuracy"].groups == 1
    rows = [
        {"step": step, "prompt": "same", "completion": "x", "scores": {"acc": value}}
        for step, value in ((1, 0.0), (1, 0.0), (2, 1.0), (2, 1.0))
    ]
    scored = tmp_path / "scored.jsonl"
    scored.write_text("".join(json.dumps(r) + "\n" for r in rows))
    groups = diagnose(scored).groups["acc"]
    assert (groups.groups, groups.constant) == (2, 2)  # not one group of four that varies


def test_rescoring_joins_chat_prompts_and_says_what_it_could_not_match(tmp_path: Path) -> None:
    chat = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
    questions = ["Compute 3*4.", "Compute 3*4. Then add 1.", "Unknown question"]
    tables = [
        _table(
            1,
            [chat.format(q=q) for q in questions for _ in range(2)],
            ["\\boxed{12}", "\\boxed{13}", "\\boxed{13}", "\\boxed{13}", "x", "y"],
            accuracy=[1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
        )
    ]
    dataset = tmp_path / "data.jsonl"
    rows = [
        {"messages": [{"role": "user", "content": "Compute 3*4."}], "solution": "12"},
        {"prompt": "Compute 3*4. Then add 1.", "solution": "13"},
    ]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = diagnose(swift_run(tmp_path, [healthy(1), healthy(2)], tables), rescore=["math"], data=dataset)
    # the right row for each: read as the shorter question's (12), the second's two 13s would be "= 0";
    # a verdict without a reason is counted by its value
    assert report.rescored["math"] == {"= 1": 3, "= 0": 1, "missing_solution": 2}
    assert report.notes == ["--data: 2 logged completions matched no dataset prompt"]
    with pytest.raises(DiagnoseError, match="pass the dataset with --data"):
        diagnose(swift_run(tmp_path / "nodata", [healthy(1), healthy(2)], tables), rescore=["math"])
