"""Golden-completion tests: how users unit-test their rewards.

A golden file is JSONL, one case a line::

    {"func": "countdown", "params": {"format_score": 0.1}, "completion": "<answer>1+2*3</answer>",
     "columns": {"target": 7, "nums": [1, 2, 3]}, "expected": 1.0, "note": "precedence"}

``params`` and ``note`` are optional; ``expected`` may be ``null`` (the reward does not apply); floats
compare within ``1e-6``. Each column holds the single sample's value (not a list). Run them with
``rewardkit check FILE_OR_DIR...`` or from pytest::

    import pytest
    from rewardkit.testing import golden_cases

    @pytest.mark.parametrize("case", golden_cases("tests/golden"))
    def test_golden(case):
        case.assert_passes()
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.core import Completion, Reward, RewardError
from rewardkit.registry import get

__all__ = [
    "CaseResult",
    "GoldenCase",
    "GoldenFileError",
    "golden_cases",
    "iter_golden_files",
    "load_golden",
    "values_match",
]

TOLERANCE = 1e-6
_KEYS = {"func", "params", "completion", "columns", "expected", "note"}


class GoldenFileError(ValueError):
    """A golden file cannot be read: it names the file and the line."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path, self.line = str(path), line


def values_match(expected: float | None, got: float | None, tolerance: float = TOLERANCE) -> bool:
    """``None`` matches only ``None``; numbers match within ``tolerance``.

    >>> values_match(1.0, 1.0 + 1e-9), values_match(None, 0.0), values_match(None, None)
    (True, False, True)
    """
    if expected is None or got is None:
        return expected is None and got is None
    return math.isclose(expected, got, rel_tol=0.0, abs_tol=tolerance)


@dataclass(frozen=True)
class CaseResult:
    """What one golden case gave."""

    passed: bool
    got: float | None
    reason: str | None
    error: str | None = None
    detail: Any = None  # what the reward read (math: the answer and the gold), for a failure message


@dataclass(frozen=True)
class GoldenCase:
    """One golden case, with where it came from."""

    func: str
    completion: Completion
    columns: Mapping[str, Any]
    expected: float | None
    params: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    path: str = ""
    line: int = 0

    @property
    def id(self) -> str:
        """A readable pytest id: the note, else the func and the line."""
        return self.note or f"{self.func}@{Path(self.path).name}:{self.line}"

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def reward(self) -> Reward:
        return get(self.func, **dict(self.params))

    def run(self) -> CaseResult:
        """Score the case as a batch of one."""
        try:
            columns: dict[str, Any] = {k: [v] for k, v in self.columns.items()}
            scored = self.reward().score_detailed([self.completion], **columns)
        except RewardError as exc:
            return CaseResult(False, None, None, f"{type(exc).__name__}: {exc}")
        got, reason = scored.values[0], scored.reasons[0]
        return CaseResult(values_match(self.expected, got), got, reason, detail=scored.details[0])

    def assert_passes(self) -> None:
        """Raise ``AssertionError`` saying what was expected and what came out."""
        result = self.run()
        if not result.passed:
            detail = result.error or f"got {result.got!r} (reason {result.reason!r})"
            if result.detail is not None:
                detail += f"; read {result.detail!r}"
            note = self.note or "(no note)"
            where = f"{self.location} [{self.func}] {note}"
            raise AssertionError(f"{where}: expected {self.expected!r}, {detail}")


def _parse_case(raw: str, path: Path, line: int) -> GoldenCase:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise GoldenFileError(path, line, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise GoldenFileError(path, line, "each line must be a JSON object")
    unknown = set(data) - _KEYS
    if unknown:
        raise GoldenFileError(path, line, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    for key in ("func", "completion", "expected"):
        if key not in data:
            raise GoldenFileError(path, line, f"missing {key!r}")
    func, params, columns = data["func"], data.get("params") or {}, data.get("columns") or {}
    expected, note = data["expected"], data.get("note") or ""
    if not isinstance(func, str):
        raise GoldenFileError(path, line, "'func' must be a string")
    if not isinstance(params, dict) or not isinstance(columns, dict):
        raise GoldenFileError(path, line, "'params' and 'columns' must be JSON objects")
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int | float)):
        raise GoldenFileError(path, line, f"'expected' must be a number or null, got {expected!r}")
    if not isinstance(note, str):
        raise GoldenFileError(path, line, "'note' must be a string")
    try:
        get(func, **params)  # unknown func or bad params: the file is wrong, not the reward
    except RewardError as exc:
        raise GoldenFileError(path, line, str(exc)) from None
    return GoldenCase(func, data["completion"], columns, expected, params, note, str(path), line)


def load_golden(path: str | Path) -> list[GoldenCase]:
    """Read one golden file. Raises :class:`GoldenFileError` naming the line of the first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenFileError(path, None, f"cannot read: {exc}") from None
    cases = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            cases.append(_parse_case(raw, path, number))
    return cases


def iter_golden_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named, and every ``*.jsonl`` below the folders named, in a stable order."""
    for p in paths:
        p = Path(p)
        if p.is_dir():
            yield from sorted(p.rglob("*.jsonl"))
        else:
            yield p  # missing files surface as GoldenFileError in load_golden


def golden_cases(*paths: str | Path) -> list[Any]:
    """The cases of the given files or folders as ``pytest.param`` objects with readable ids."""
    import pytest

    params = []
    for file in iter_golden_files(paths):
        for case in load_golden(file):
            params.append(pytest.param(case, id=f"{file.stem}:{case.line}:{case.id}"))
    return params
