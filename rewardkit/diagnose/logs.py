"""Reading what trainers write, streamed: ms-swift's ``logging.jsonl`` and ``completions.jsonl``, TRL's
``trainer_state.json``, and a JSONL scored by ``rewardkit score``, into a :class:`Report`'s metrics and group
statistics.

* ms-swift: ``logging.jsonl`` holds one line per logged step; with ``--log_completions true``,
  ``completions.jsonl`` holds one line per logged step of column lists (``step``, ``prompt``, ``completion``,
  one list per reward function, ``advantages``, dataset columns);
* TRL: ``trainer_state.json``'s ``log_history``; with ``GRPOConfig(log_completions=True)``, the tables in
  ``output_dir/completions/completions_<step>.parquet`` (read like ms-swift's lines: one table a file);
* scored: rows with ``scores`` and a ``group`` or ``prompt`` field.

>>> import json, pathlib, tempfile
>>> log = pathlib.Path(tempfile.mkdtemp()) / "logging.jsonl"
>>> entry = {"global_step/max_steps": "1/2", "reward": 0.5, "rewards/f/mean": 0.5}
>>> _ = log.write_text(json.dumps(entry) + "\\n")
>>> report = Report(source=str(log), kind="ms-swift")
>>> read_swift_log(report, log)
>>> report.steps, report.metrics["reward"], report.metrics["rewards/f"]
([1], [0.5], [0.5])
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rewardkit.diagnose.report import DiagnoseError, Report
from rewardkit.groups import GroupStats, GroupTracker, finite, group_key
from rewardkit.lengths import group_text

__all__ = [
    "LOG_NAMES",
    "locate",
    "lines",
    "read_completions",
    "read_scored",
    "read_swift_log",
    "read_trainer_state",
    "tables",
]

METRIC_ALIASES = {  # what the plots and findings read, from the names trainers log
    "completion_length": ("completions/mean_length", "completion_length"),
    "clipped_ratio": ("completions/clipped_ratio",),
    "max_length": ("completions/max_length",),
    "reward": ("reward",),
    "reward_std": ("reward_std",),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
}
LOG_NAMES = ("logging.jsonl", "completions.jsonl", "trainer_state.json")
NOT_REWARDS = {
    "num_turns",
    "step",
    "prompt",
    "completion",
    "advantages",
    "entropy",
    "group",
    "solution",
    "scores",
    "advantage",
}


def lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file. A last line cut off mid-write (a run still training) is skipped."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DiagnoseError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:
                if not line.endswith("\n"):
                    return  # the line being written
                raise DiagnoseError(f"{path}, line {number}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise DiagnoseError(f"{path}, line {number}: expected a JSON object")
            yield number, row


def _add_log(report: Report, step: int, entry: dict[str, Any]) -> None:
    index = len(report.steps)
    report.steps.append(step)
    wanted = {
        name: next((entry[k] for k in keys if k in entry), None) for name, keys in METRIC_ALIASES.items()
    }
    wanted.update({f"rewards/{k.split('/')[1]}": v for k, v in entry.items() if _is_func_mean(k)})
    for name, value in wanted.items():
        column = report.metrics.setdefault(name, [None] * index)
        column.append(finite(value))
    for column in report.metrics.values():  # a metric this step did not log
        if len(column) < index + 1:
            column.append(None)


def _is_func_mean(key: str) -> bool:
    parts = key.split("/")
    return len(parts) == 3 and parts[0] == "rewards" and parts[2] == "mean"


def read_swift_log(report: Report, path: Path) -> None:
    for _, entry in lines(path):
        marker = entry.get("global_step/max_steps")
        if not isinstance(marker, str) or "/" not in marker or "reward" not in entry:
            continue  # the run's summary line, an eval line
        try:
            step = int(marker.split("/", 1)[0])
        except ValueError:
            continue
        _add_log(report, step, entry)


def read_trainer_state(report: Report, path: Path) -> None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DiagnoseError(f"cannot read {path}: {exc}") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise DiagnoseError(f"{path}: no log_history (is it a trainer_state.json?)")
    for entry in history:
        if isinstance(entry, dict) and "reward" in entry and isinstance(entry.get("step"), int):
            _add_log(report, entry["step"], entry)


def _column(table: dict[str, Any], name: str, n: int, path: Path, number: int) -> list[Any] | None:
    """A column of a completions line: a list of ``n`` values, ``None`` when absent; else DiagnoseError."""
    value = table.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        size = len(value) if isinstance(value, list) else type(value).__name__
        raise DiagnoseError(f"{path}, line {number}: column {name!r} has {size} values for {n} completions")
    return value


def _step_number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _parquet_tables(folder: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """TRL's completion tables (``completions_<step>.parquet``), in step order, one a file."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise DiagnoseError(
            f"{folder}: reading TRL's completion tables needs pyarrow (pip install pyarrow)"
        ) from None
    for number, file in enumerate(sorted(folder.glob("completions_*.parquet")), 1):
        try:
            table = pq.read_table(file).to_pydict()
        except (OSError, ValueError) as exc:
            raise DiagnoseError(f"cannot read {file}: {exc}") from None
        yield number, table


def tables(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines of a completions log (a folder: TRL's parquet tables), each with a ``completion`` list; a
    line holding the same completions as the line before (ms-swift logs its buffer again when it logs more
    often than it generates) is skipped."""
    previous: int | None = None
    for number, table in _parquet_tables(path) if path.is_dir() else lines(path):
        completions = table.get("completion")
        if not isinstance(completions, list):
            raise DiagnoseError(f"{path}, line {number}: no 'completion' list")
        fingerprint = hash(tuple(c if isinstance(c, str) else json.dumps(c) for c in completions))
        if fingerprint != previous:
            yield number, table
        previous = fingerprint


def read_completions(report: Report, path: Path) -> None:
    """ms-swift's completions.jsonl, one logged step a line, streamed: memory is one line at a time. A line
    holding the same completions as the line before (ms-swift logs its buffer again when it logs more often
    than it generates) is not counted twice."""
    known = set(report.funcs)
    for number, table in tables(path):
        completions = table["completion"]
        n = len(completions)
        funcs = [k for k in table if k in known] or [
            k
            for k, v in table.items()
            if k not in NOT_REWARDS and isinstance(v, list) and v and all(finite(x) is not None for x in v)
        ]
        for func in funcs:
            if func not in report.funcs:
                report.funcs.append(func)
        prompts = _column(table, "prompt", n, path, number) or [""] * n
        steps = _column(table, "step", n, path, number) or [None] * n
        columns = {func: _column(table, func, n, path, number) for func in funcs}
        advantages = _column(table, "advantages", n, path, number) or _column(
            table, "advantage", n, path, number
        )
        groups: dict[tuple[int | None, str], list[int]] = {}
        for i in range(n):
            groups.setdefault((_step_number(steps[i]), group_text(prompts[i])), []).append(i)
        for (step, _), rows in groups.items():
            texts = [completions[rows[0]]]
            for func, column in columns.items():
                if column is not None:  # add() keeps the finite numbers only
                    report.groups.setdefault(func, GroupStats()).add([column[i] for i in rows], texts, step)
            if advantages is not None:
                report.groups.setdefault("advantages", GroupStats()).add(
                    [advantages[i] for i in rows], texts, step
                )
        report.completions += n


def read_scored(report: Report, path: Path) -> None:
    tracker = GroupTracker()
    for number, row in lines(path):
        scores = row.get("scores")
        if not isinstance(scores, dict):
            raise DiagnoseError(f"{path}, line {number}: no 'scores' (score the file with `rewardkit score`)")
        key = group_key(row)
        if key is None:
            raise DiagnoseError(
                f"{path}, line {number}: no 'group' or 'prompt' field to group completions by"
            )
        tracker.add(key, scores, row.get("completion"))
        report.completions += 1
    report.groups = tracker.stats()
    report.funcs = [k for k in report.groups]


def locate(path: Path) -> tuple[str, Path | None, Path | None]:
    """(kind, log file, completions file) for a file, or for the newest run below a directory."""
    if not path.exists():
        raise DiagnoseError(f"{path}: no such file or directory")
    if path.is_file():
        if path.name == "trainer_state.json":  # in output_dir, or in one of its checkpoints
            folders = (d / "completions" for d in (path.parent, path.parent.parent))
            return "trl", path, next((f for f in folders if any(f.glob("completions_*.parquet"))), None)
        if path.name == "completions.jsonl":
            log = path.with_name("logging.jsonl")
            return "ms-swift", log if log.is_file() else None, path
        if path.name == "logging.jsonl":
            completions = path.with_name("completions.jsonl")
            return "ms-swift", path, completions if completions.is_file() else None
        return "scored", path, None
    try:
        found = [p for name in LOG_NAMES for p in path.rglob(name) if p.is_file()]
        newest = max(found, key=lambda p: p.stat().st_mtime, default=None)
    except OSError as exc:
        raise DiagnoseError(f"cannot search {path}: {exc.strerror}") from None
    if newest is None:
        raise DiagnoseError(f"{path}: no logging.jsonl, completions.jsonl or trainer_state.json below it")
    return locate(newest)
