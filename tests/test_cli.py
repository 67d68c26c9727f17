"""The `rewardkit` command, run as a user runs it: the installed console script in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
SCRIPT = shutil.which("rewardkit", path=str(Path(sys.executable).parent)) or "rewardkit"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"COLUMNS": "200", "PATH": ""},
    )


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("rewardkit ")
    out = run("--help")
    assert out.returncode == 0 and "score" in out.stdout and "check" in out.stdout


def test_list_table_and_json() -> None:
    table = run("list")
    assert table.returncode == 0
    for name in ("countdown", "format", "r1v_acc", "format_score", "think_prefilled", "solution"):
        assert name in table.stdout
    listed = json.loads(run("list", "--json").stdout)
    by_name = {r["name"]: r for r in listed}
    assert by_name["countdown"]["columns"] == ["target", "nums"]
    assert by_name["format"]["params"] == {
        "tags": ["think", "answer"],
        "think_prefilled": False,
        "correct": 1.0,
        "wrong": 0.0,
    }


def _write_rows(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_score_writes_scores_reward_and_summary(tmp_path: Path) -> None:
    rows = [
        {"id": 1, "completion": "<think>x</think><answer>4 * 6</answer>", "target": 24, "nums": [4, 6]},
        {"id": 2, "completion": "<answer>4 + 6</answer>", "target": 24, "nums": [4, 6]},
        {"id": 3, "completion": "<think>x</think><answer>4*6</answer>", "target": "?", "nums": [4, 6]},
    ]
    src = _write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    proc = run("score", "--func", "countdown:format_score=0.1", "--func", "format", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in scored] == [1, 2, 3]
    assert [r["scores"] for r in scored] == [
        {"countdown": 1.0, "format": 1.0},
        {"countdown": 0.1, "format": 0.0},
        {"countdown": None, "format": 1.0},
    ]
    assert [r["reward"] for r in scored] == [2.0, 0.1, 1.0]
    assert "errors" not in scored[0]
    assert scored[1]["errors"] == {"format": "missing:think"}
    assert scored[2]["errors"] == {"countdown": "invalid_target"}
    summary = proc.stderr
    assert "3 completions scored" in summary and "countdown" in summary and "33.3%" in summary
    assert "invalid_target (1)" in summary


def test_score_to_stdout_with_repeated_func_and_json_params(tmp_path: Path) -> None:
    src = _write_rows(tmp_path / "in.jsonl", [{"completion": "</think><answer>1</answer>"}])
    proc = run("score", "-f", "format", "-f", 'format:tags=["think","answer"],think_prefilled=true', str(src))
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["scores"] == {"format": 0.0, "format#2": 1.0}


def test_score_in_batches_matches_one_batch(tmp_path: Path) -> None:
    rows = [{"completion": f"<answer>{i}</answer>", "solution": str(i % 7)} for i in range(50)]
    src = _write_rows(tmp_path / "in.jsonl", rows)
    small = run("score", "-f", "r1v_acc", "--batch-size", "3", str(src))
    big = run("score", "-f", "r1v_acc", str(src))
    assert small.returncode == big.returncode == 0
    assert small.stdout == big.stdout
    assert sum(json.loads(line)["reward"] for line in big.stdout.splitlines()) == 7.0  # i == i % 7 for i < 7


@pytest.mark.parametrize(
    ("args", "rows", "message"),
    [
        (["-f", "nope"], [{"completion": "x"}], "unknown reward 'nope'"),
        (["-f", "countdown:format_score"], [{"completion": "x"}], "expected NAME:key=value"),
        (["-f", "countdown:bogus=1"], [{"completion": "x"}], "no parameter"),
        (["-f", "countdown"], [{"completion": "x"}], "required column 'target' is missing"),
        (
            ["-f", "format"],
            [{"text": "x"}],
            "in.jsonl:1: each line must be a JSON object with a 'completion'",
        ),
    ],
)
def test_score_errors_exit_2(
    tmp_path: Path, args: list[str], rows: list[dict[str, object]], message: str
) -> None:
    src = _write_rows(tmp_path / "in.jsonl", rows)
    proc = run("score", *args, str(src))
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())


def test_score_missing_input_exits_2(tmp_path: Path) -> None:
    proc = run("score", "-f", "format", str(tmp_path / "absent.jsonl"))
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_score_survives_odd_text(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"completion": "<answer>\\ud800</answer>"}\n{"completion": "\xff\xfe bad utf-8"}\n')
    proc = run("score", "-f", "format", str(src))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["reward"] == 0.0 for line in lines)


def test_check_passes_on_shipped_golden_files() -> None:
    proc = run("check", str(GOLDEN))
    assert proc.returncode == 0, proc.stdout
    assert " passed, 0 failed" in proc.stdout


def test_check_reports_failures_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"func": "format", "completion": "<answer>4</answer>", "expected": 1.0, "note": "needs think"}\n'
        '{"func": "format", "completion": "<think></think><answer>4</answer>", "expected": 1.0}\n'
    )
    proc = run("check", str(bad))
    assert proc.returncode == 1
    flat = " ".join(proc.stdout.split())
    assert "needs think" in flat and "missing:think" in flat and "1 passed, 1 failed" in flat


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"func": "nope", "completion": "x", "expected": 1}\n', "bad.jsonl:1: unknown reward 'nope'"),
        ("\n\n{oops\n", "bad.jsonl:3: not valid JSON"),
    ],
)
def test_check_unreadable_or_unknown_exits_2(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    proc = run("check", str(bad))
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())


def test_check_missing_path_and_empty_dir_exit_2(tmp_path: Path) -> None:
    assert run("check", str(tmp_path / "absent.jsonl")).returncode == 2
    assert run("check", str(tmp_path)).returncode == 2
