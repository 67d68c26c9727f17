"""The `rewardkit` command, run as a user runs it: the installed console script in a subprocess."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import pytest

from tests.support.helpers import Server

GOLDEN = Path(__file__).parent / "golden"
SCRIPT = shutil.which("rewardkit", path=str(Path(sys.executable).parent)) or "rewardkit"


def run(
    *args: str, cwd: Path | None = None, stdin: IO[bytes] | None = None, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        env={"COLUMNS": str(columns), "PATH": ""},
    )


def said(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


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
        (
            ["-f", "countdown"],
            [{"completion": "x"}],
            "reward 'countdown' reads the 'target' field, and no row",
        ),
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


# -- issue 34, round 3 of trying the CLI as a new user would


def test_python_dash_m_rewardkit_runs_the_command(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rewardkit", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.startswith("rewardkit "), proc.stderr
    src = _write_rows(tmp_path / "in.jsonl", [{"completion": "<think>a</think><answer>1</answer>"}])
    scored = subprocess.run(
        [sys.executable, "-m", "rewardkit", "score", "-f", "format", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert scored.returncode == 0 and json.loads(scored.stdout)["reward"] == 1.0, scored.stderr


COMMANDS = ["", "serve", "plugin-path", "list", "score", "agreement", "diagnose", "check"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_at_80_columns_has_whole_option_names_and_no_bool_placeholder(command: str) -> None:
    out = run(*command.split(), "--help", columns=80)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "<bool>" not in text and "…" not in text
    assert "<list[str]>" not in text  # Python's words; the options say NAME[:K=V,...], COLUMN=FIELD
    assert max(map(len, text.splitlines())) <= 80
    if command == "serve":
        assert "--target-ongoing-requests" in text and "--cpus-per-replica" in text


def test_help_imports_no_command_body() -> None:
    """The commands' engines, tables and the HTTP client are imported when a command runs, not for --help."""
    code = "import json, sys; import rewardkit.cli; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    loaded = set(json.loads(proc.stdout))
    heavy = {
        "rewardkit.client",
        "rewardkit.agreement",
        "rewardkit.diagnose",
        "rewardkit.testing",
        "rich.table",
    }
    assert not loaded & heavy, loaded & heavy


def _gzip(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def test_score_reads_gzip_and_stdin_as_agreement_does(tmp_path: Path) -> None:
    rows = [{"id": i, "completion": f"<think>a</think><answer>{i}</answer>"} for i in range(3)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    plain = _write_rows(tmp_path / "in.jsonl", rows)
    want = run("score", "-f", "format", str(plain))
    assert want.returncode == 0 and len(want.stdout.splitlines()) == 3
    packed = _gzip(tmp_path / "in.jsonl.gz", text)
    assert run("score", "-f", "format", str(packed)).stdout == want.stdout
    for source in (plain, packed):  # `-` is standard input, gzipped or not
        with source.open("rb") as handle:
            piped = run("score", "-f", "format", "-", stdin=handle)
        assert piped.returncode == 0 and piped.stdout == want.stdout, piped.stderr
        assert "3 completions scored" in piped.stderr


def test_score_over_no_rows_is_an_error_and_writes_no_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    out = tmp_path / "out.jsonl"
    proc = run("score", "-f", "format", str(empty), "-o", str(out))
    assert proc.returncode == 2 and "empty.jsonl has no rows to score" in said(proc.stderr)
    assert "scored" not in proc.stderr and not out.exists()


def test_score_summary_of_a_reward_that_scored_nothing_is_no_figure(tmp_path: Path) -> None:
    rows = [{"completion": "<answer>1</answer>", "target": 3, "nums": "not a list"}] * 2
    proc = run("score", "-f", "countdown", "-f", "format", str(_write_rows(tmp_path / "in.jsonl", rows)))
    assert proc.returncode == 0, proc.stderr
    table = proc.stderr
    assert "nan" not in table
    countdown = next(line for line in table.splitlines() if "countdown" in line and "│" in line)
    cells = [cell.strip() for cell in countdown.split("│")[1:-1]]
    assert cells[:4] == ["countdown", "-", "-", "100.0%"]
    assert "warning: countdown scored no row (2 rows read, each None; reason invalid_nums" in said(table)


def test_score_missing_field_is_said_in_rows_and_fields(tmp_path: Path) -> None:
    rows = [{"completion": "<answer>4*6</answer>", "nums": [4, 6]}] * 6
    proc = run("score", "-f", "countdown", str(_write_rows(tmp_path / "in.jsonl", rows)))
    message = said(proc.stderr)
    assert proc.returncode == 2
    assert (
        "in.jsonl, lines 1-6: reward 'countdown' reads the 'target' field, and no row there has one"
        in message
    )
    assert (
        "(6 rows; their fields: completion, nums); read it from another field with -c target=FIELD" in message
    )
    assert "list" not in message and "completions" not in message
    mapped = [{"completion": "<answer>4*6</answer>", "goal": 24, "nums": [4, 6]}]
    proc = run(
        "score", "-f", "countdown", "-c", "target=goal", str(_write_rows(tmp_path / "m.jsonl", mapped))
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["reward"] == 1.0, proc.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"completion": "a"\n', "in.jsonl:1: not JSON (Expecting ',' delimiter at the end of the line)"),
        ('\n{"completion": "a", x}\n', "in.jsonl:2: not JSON (Expecting property name enclosed in double"),
        ('["a"]\n', "in.jsonl:1: each line must be a JSON object ({...}), this one is an array"),
        (
            '{"text": "a"}\n',
            "in.jsonl:1: each line must be a JSON object with a 'completion' field; this one",
        ),
    ],
)
def test_score_bad_lines_are_said_in_jsonl_words(tmp_path: Path, text: str, message: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(text)
    proc = run("score", "-f", "format", str(src))
    assert proc.returncode == 2 and message in said(proc.stderr)
    assert "char " not in proc.stderr and "Traceback" not in proc.stderr


def test_a_typo_in_a_reward_name_suggests_the_closest_in_every_command(tmp_path: Path) -> None:
    src = _write_rows(tmp_path / "in.jsonl", [{"completion": "x", "solution": "1", "label": 1}])
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"func": "fromat", "completion": "x", "expected": 0}\n')
    for args in (
        ["score", "-f", "fromat", str(src)],
        ["agreement", str(src), "-f", "fromat"],
        ["diagnose", str(tmp_path), "--rescore", "fromat"],
        ["check", str(golden)],
    ):
        proc = run(*args)
        assert proc.returncode == 2, args
        assert "unknown reward 'fromat'; did you mean 'format'?" in said(proc.stderr), args
    assert "did you mean" not in run("score", "-f", "zzzzzz", str(src)).stderr  # nothing close: no guess
    server = Server({}, tmp_path / "server.log")  # through a service: the closest of the names it has
    try:
        proc = run("score", "--url", server.url, "-f", "fromat", str(src))
    finally:
        server.stop()
    assert proc.returncode == 2
    assert f"the service at {server.url} has no reward 'fromat'" in said(proc.stderr)
    assert "did you mean 'format'?" in said(proc.stderr)
    assert said(proc.stderr).count("did you mean") == 1  # said once, by the policy check


def test_an_error_is_one_line_whatever_the_terminal_width(tmp_path: Path) -> None:
    """A container's log is no terminal: rich wrapped an error at 80 columns, cutting a name in two."""
    src = _write_rows(tmp_path / "in.jsonl", [{"completion": "x", "solution": "1"}])
    proc = run("score", "-f", "fromat", str(src), columns=40)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown reward 'fromat'"), proc.stderr


def test_check_counts_one_file_in_the_singular(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"func": "format", "completion": "<think>a</think><answer>1</answer>", "expected": 1}\n')
    proc = run("check", str(good))
    assert proc.returncode == 0 and "golden: 1 passed, 0 failed (1 file)" in proc.stdout
    (tmp_path / "again.jsonl").write_text(good.read_text())
    assert "(2 files)" in run("check", str(tmp_path)).stdout


def test_diagnose_rescoring_nothing_is_an_error_not_a_summary(tmp_path: Path) -> None:
    run_dir = tmp_path / "out" / "v0"
    run_dir.mkdir(parents=True)
    steps = [
        {"global_step/max_steps": f"{s}/2", "reward": 0.5, "reward_std": 0.4, "rewards/format/mean": 0.5}
        for s in (1, 2)
    ]
    (run_dir / "logging.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (run_dir / "completions.jsonl").write_text("")  # --log_completions true, nothing logged yet
    proc = run("diagnose", str(tmp_path), "--rescore", "format")
    assert proc.returncode == 2, proc.stdout
    assert "--rescore format: no logged completion was scored again" in said(proc.stderr)
    assert "Rescored" not in proc.stdout


def test_diagnose_says_no_findings_only_over_enough_of_a_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "out" / "v0"
    run_dir.mkdir(parents=True)
    step = {"global_step/max_steps": "1/10", "reward": 0.5, "reward_std": 0.3, "rewards/format/mean": 0.5}
    log = run_dir / "logging.jsonl"
    log.write_text(json.dumps(step) + "\n")
    proc = run("diagnose", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""  # was exit 0: "No findings ... nothing is stuck"
    assert "1 logged step and no group of completions: too little to tell" in said(proc.stderr)
    log.write_text(log.read_text() + json.dumps({**step, "global_step/max_steps": "2/10"}) + "\n")
    proc = run("diagnose", str(tmp_path))
    assert (
        proc.returncode == 0
        and "No findings: rewards vary within groups and nothing is stuck." in proc.stdout
    )
    scored = _write_rows(
        tmp_path / "scored.jsonl",
        [{"prompt": "a", "completion": c, "scores": {"format": v}} for c, v in (("x", 1.0), ("y", 0.0))],
    )
    proc = run("diagnose", str(scored))  # one group, no step: nothing could be stuck, so it is not said
    assert proc.returncode == 0 and "No findings: rewards vary within groups." in proc.stdout
