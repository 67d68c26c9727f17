"""The shipped golden files, and the golden-file machinery users rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit.testing import GoldenCase, GoldenFileError, golden_cases, iter_golden_files, load_golden

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("case", golden_cases(GOLDEN))
def test_golden(case: GoldenCase) -> None:
    case.assert_passes()


def test_golden_files_cover_every_builtin_with_at_least_80_cases() -> None:
    cases = [c for f in iter_golden_files([GOLDEN]) for c in load_golden(f)]
    assert len(cases) >= 80
    by_func = {c.func for c in cases}
    assert {"countdown", "format", "r1v_acc"} <= by_func
    assert all(c.note for c in cases), "every golden case says why it exists"
    assert any(c.expected is None for c in cases)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"func": "countdown", "completion": "x", "expected": 0}\nnot json\n',
            r"cases.jsonl:2: not valid JSON",
        ),
        ('{"func": "nope", "completion": "x", "expected": 0}\n', r"cases.jsonl:1: unknown reward 'nope'"),
        ('{"func": "format", "completion": "x"}\n', r":1: missing 'expected'"),
        ('{"func": "format", "completion": "x", "expected": "1"}\n', r"'expected' must be a number or null"),
        ('{"func": "format", "completion": "x", "expected": 1, "extra": 2}\n', r"unknown key"),
        (
            '{"func": "format", "params": {"tags": "x"}, "completion": "x", "expected": 1}\n',
            r":1: format: tags",
        ),
        ("[1, 2]\n", r":1: each line must be a JSON object"),
    ],
)
def test_bad_golden_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(GoldenFileError, match=message):
        load_golden(_write(tmp_path, text))


def test_a_wrong_expectation_fails_with_a_useful_message(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '\n{"func": "format", "completion": "<answer>4</answer>", "expected": 1.0,'
        ' "note": "wrong on purpose"}\n',
    )
    (case,) = load_golden(path)
    assert case.line == 2 and case.id == "wrong on purpose"
    result = case.run()
    assert not result.passed and result.got == 0.0 and result.reason == "missing:think"
    with pytest.raises(
        AssertionError, match=r"cases.jsonl:2 \[format\] wrong on purpose: expected 1.0, got 0.0"
    ):
        case.assert_passes()


def test_missing_column_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"func": "countdown", "completion": "<answer>1</answer>", "expected": 1.0}\n')
    (case,) = load_golden(path)
    result = case.run()
    assert not result.passed and result.error is not None and "required column 'target'" in result.error


def test_tolerance_and_null(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"func": "countdown", "params": {"format_score": 0.1}, "completion": "<answer>1+1</answer>",'
        ' "columns": {"target": 3, "nums": [1, 1]}, "expected": 0.1000001}\n'
        '{"func": "countdown", "completion": "<answer>1+1</answer>",'
        ' "columns": {"target": "?", "nums": [1, 1]}, "expected": null}\n'
        '{"func": "countdown", "completion": "<answer>1+1</answer>",'
        ' "columns": {"target": "?", "nums": [1, 1]}, "expected": 0.0}\n',
    )
    assert [c.run().passed for c in load_golden(path)] == [True, True, False]


def test_missing_file_is_a_golden_file_error(tmp_path: Path) -> None:
    with pytest.raises(GoldenFileError, match="cannot read"):
        load_golden(tmp_path / "absent.jsonl")
