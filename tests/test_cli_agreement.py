"""`rewardkit agreement` never shows confidence it does not have (issue 34.1), run as a user runs it: the
installed console script in a subprocess. No labelled row is an error naming the field and the fields the rows
have; labels are read in the forms datasets write them or refused by name; rows without a label are counted
and shown; a figure over fewer than 20 rows says so; disagreements are named by file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from rewardkit.agreement import MIN_ROWS
from tests.test_cli import run, said

RIGHT: dict[str, Any] = {"completion": "so \\boxed{4}", "solution": "4"}
WRONG: dict[str, Any] = {"completion": "so \\boxed{5}", "solution": "4"}


def _write(path: Path, rows: list[dict[str, Any]], *, blank_first: bool = False) -> Path:
    path.write_text(("\n" if blank_first else "") + "".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("field", "args", "hint"),
    [
        ("lable", [], "(did you mean 'lable'?)"),  # the field misspelled in the file
        ("label", ["--label", "correct"], ""),  # --label names a field no row has
    ],
)
def test_no_labelled_row_is_an_error_naming_the_field_and_the_rows_fields(
    tmp_path: Path, field: str, args: list[str], hint: str
) -> None:
    path = _write(tmp_path / "rows.jsonl", [{**RIGHT, field: 1}, {**WRONG, field: 0}])
    for extra in ([], ["--json"]):
        proc = run("agreement", str(path), "-f", "math", *args, *extra)
        assert proc.returncode == 2, proc.stdout
        assert proc.stdout == ""  # no table, no {"n": 0, "rate": 1.0}
        wanted = args[-1] if args else "label"
        message = said(proc.stderr)
        assert f"rows.jsonl: none of the 2 rows has a label in '{wanted}'" in message
        assert f"the rows have: completion, {field}, solution" in message and hint in message
        assert "100" not in message


def test_labels_are_read_in_the_forms_datasets_write(tmp_path: Path) -> None:
    labels = [1, 0, True, False, "1", "0", "yes", "no", "Correct", "incorrect", 1.0, "true"]
    rows = [{**(RIGHT if i % 2 == 0 else WRONG), "label": label} for i, label in enumerate(labels)]
    proc = run("agreement", str(_write(tmp_path / "rows.jsonl", rows)), "-f", "math", "--json")
    assert proc.returncode == 0, proc.stderr
    [report] = json.loads(proc.stdout)
    assert (report["n"], report["agree"], report["skipped"]) == (12, 11, 0)  # before: the 6 strings skipped
    assert (report["false_positives"], report["false_negatives"]) == (0, 1)  # "true" on a wrong answer


@pytest.mark.parametrize("label", ["maybe", 2, 0.5, [1]])
def test_a_label_it_cannot_read_is_refused_by_name_and_line(tmp_path: Path, label: object) -> None:
    rows = [{**RIGHT, "label": 1}, {**WRONG, "label": label}]
    proc = run("agreement", str(_write(tmp_path / "rows.jsonl", rows, blank_first=True)), "-f", "math")
    assert proc.returncode == 2 and proc.stdout == ""
    message = said(proc.stderr)
    assert f"rows.jsonl:3: the label {label!r} is not one of 1/0, true/false" in message


def test_rows_without_a_label_are_counted_and_shown(tmp_path: Path) -> None:
    rows = [
        {**RIGHT, "label": 1},
        {**WRONG, "label": 0},
        {**RIGHT, "label": None},
        {**RIGHT, "label": ""},
        RIGHT,
    ]
    path = _write(tmp_path / "rows.jsonl", rows)
    table = run("agreement", str(path), "-f", "math")
    assert table.returncode == 0, table.stderr
    assert "no label" in table.stdout
    line = next(row for row in table.stdout.splitlines() if row.startswith("│ math"))
    assert [cell.strip() for cell in line.split("│")[3:8]] == ["2 *", "100.0%", "0 (0.0%)", "0", "3"]
    assert "note: 3 rows without a label in 'label' skipped; 2 labelled rows compared" in said(table.stderr)
    [report] = json.loads(run("agreement", str(path), "-f", "math", "--json").stdout)
    assert (report["n"], report["skipped"]) == (2, 3)


def test_under_20_rows_the_figure_says_it_is_rough(tmp_path: Path) -> None:
    few = _write(tmp_path / "few.jsonl", [{**RIGHT, "label": 1}] * (MIN_ROWS - 1))
    proc = run("agreement", str(few), "-f", "math")
    assert proc.returncode == 0, proc.stderr
    assert f"warning: only {MIN_ROWS - 1} labelled rows: under {MIN_ROWS}" in said(proc.stderr)
    assert f"{MIN_ROWS - 1} *" in proc.stdout and f"* under {MIN_ROWS} labelled rows" in proc.stdout
    [report] = json.loads(run("agreement", str(few), "-f", "math", "--json").stdout)
    assert report["too_few"] is True
    enough = _write(tmp_path / "enough.jsonl", [{**RIGHT, "label": 1}] * MIN_ROWS)
    proc = run("agreement", str(enough), "-f", "math")
    assert proc.returncode == 0 and "warning" not in proc.stderr and " *" not in proc.stdout
    assert json.loads(run("agreement", str(enough), "-f", "math", "--json").stdout)[0]["too_few"] is False


def test_a_group_with_no_row_labelled_wrong_shows_no_false_positive_rate(tmp_path: Path) -> None:
    path = _write(tmp_path / "rows.jsonl", [{**RIGHT, "label": 1}, {**WRONG, "label": 1}])
    [report] = json.loads(run("agreement", str(path), "-f", "math", "--json").stdout)
    assert report["fp_rate"] is None and report["rate"] == 0.5
    line = next(
        row for row in run("agreement", str(path), "-f", "math").stdout.splitlines() if "│ math" in row
    )
    assert "0 (-)" in line


def test_disagreements_are_named_by_file_and_line_as_check_names_cases(tmp_path: Path) -> None:
    rows = [{**RIGHT, "label": 1}, {**WRONG, "label": 1, "id": "q7"}, {**RIGHT, "label": 0}]
    path = _write(tmp_path / "rows.jsonl", rows, blank_first=True)  # the rows are on lines 2-4
    [report] = json.loads(run("agreement", str(path), "-f", "math", "--json").stdout)
    assert [(e["where"], e.get("id")) for e in report["examples"]] == [
        (f"{path}:4", None),  # the false positive first
        (f"{path}:3", "q7"),  # a row's own id is kept beside its place
    ]
    table = run("agreement", str(path), "-f", "math")
    assert f'{{"where": "{path}:4"' in table.stdout


def test_gzip_and_stdin_are_read_by_the_same_reader_as_score(tmp_path: Path) -> None:
    rows = [{**RIGHT, "label": 1}, {**WRONG, "label": "no"}]
    packed = tmp_path / "rows.jsonl.gz"
    packed.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    [from_file] = json.loads(run("agreement", str(packed), "-f", "math", "--json").stdout)
    with packed.open("rb") as handle:
        piped = run("agreement", "-", "-f", "math", "--json", stdin=handle)
    [from_stdin] = json.loads(piped.stdout)
    assert from_file["n"] == from_stdin["n"] == 2 and from_file["agree"] == from_stdin["agree"] == 2
    assert from_stdin["examples"] == [] and "agreement with" not in piped.stdout


def test_an_empty_file_or_half_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    proc = run("agreement", str(empty), "-f", "math")
    assert proc.returncode == 2 and "empty.jsonl has no rows" in said(proc.stderr)
    path = _write(tmp_path / "rows.jsonl", [{**RIGHT, "label": 1}])  # one gold: one half holds every row
    codes = sorted(run("agreement", str(path), "-f", "math", "--half", h).returncode for h in "AB")
    assert codes == [0, 2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--by", "datset"], "no labelled row has the field 'datset' to group by"),  # was one group, None
        (
            ["--half", "A", "--split-by", "gold"],
            "no row has the field 'gold' to split by",
        ),  # was all in one half
    ],
)
def test_grouping_or_splitting_by_a_field_no_row_has_is_an_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    rows = [{**RIGHT, "label": 1, "dataset": "a"}, {**WRONG, "label": 0, "dataset": "b"}]
    proc = run("agreement", str(_write(tmp_path / "rows.jsonl", rows)), "-f", "math", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in said(proc.stderr) and "the rows have: completion, dataset, label, solution" in said(
        proc.stderr
    )
    if args[0] == "--by":
        assert "(did you mean 'dataset'?)" in said(proc.stderr)
