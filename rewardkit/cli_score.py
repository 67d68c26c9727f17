"""The ``rewardkit score`` command: score a JSONL file, in process or through a running service, streamed in
batches; write each row with its scores, then a summary per reward and its statistics within GRPO groups."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from rewardkit.core import RewardError
from rewardkit.engine import resolve, result_keys, score_batch
from rewardkit.groups import GroupStats, GroupTracker, group_key
from rewardkit.spec import RewardSpec

__all__ = ["InputFileError", "score_command"]

err = Console(stderr=True)
PROGRESS_MIN_BYTES = 1 << 20  # show a progress bar from 1 MiB of input


def _dump(row: dict[str, Any]) -> str:
    """One JSON line; rows holding lone surrogates (invalid UTF-8 from a model) are written escaped."""
    line = json.dumps(row, ensure_ascii=False, default=str)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row, ensure_ascii=True, default=str)
    return line


try:  # the client's errors, when the client is installed (the service extra)
    from rewardkit.client import RewardServiceError as _ServiceError
except ImportError:  # pragma: no cover - exercised only without the extra

    class _ServiceError(Exception):  # type: ignore[no-redef]
        """Stands in for RewardServiceError when the client is not installed (never raised)."""


class InputFileError(ValueError):
    """A line of the file to score is not a JSON object with a 'completion' (names the file and line)."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")


def _read_rows(path: Path, handle: IO[str]) -> Iterator[tuple[int, dict[str, Any], int]]:
    for number, line in enumerate(handle, start=1):
        size = len(line.encode("utf-8", "replace"))
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputFileError(path, number, f"not valid JSON ({exc})") from None
        if not isinstance(row, dict) or "completion" not in row:
            raise InputFileError(path, number, "each line must be a JSON object with a 'completion' field")
        yield number, row, size


def _chunks(
    rows: Iterator[tuple[int, dict[str, Any], int]], size: int
) -> Iterator[tuple[list[dict[str, Any]], int]]:
    chunk: list[dict[str, Any]] = []
    nbytes = 0
    for _, row, row_bytes in rows:
        chunk.append(row)
        nbytes += row_bytes
        if len(chunk) >= size:
            yield chunk, nbytes
            chunk, nbytes = [], 0
    if chunk:
        yield chunk, nbytes


class _Summary:
    """Running per-func statistics: mean, std, share of None, items with a reason."""

    def __init__(self, keys: list[str]) -> None:
        self.stats = {k: {"n": 0, "none": 0, "sum": 0.0, "sumsq": 0.0} for k in keys}
        self.reasons: dict[str, Counter[str]] = {k: Counter() for k in keys}

    def add(self, key: str, values: list[float | None], reasons: list[str | None] | None) -> None:
        s = self.stats[key]
        for v in values:
            s["n"] += 1
            if v is None:
                s["none"] += 1
            else:
                s["sum"] += v
                s["sumsq"] += v * v
        if reasons:
            self.reasons[key].update(r for r in reasons if r is not None)

    def table(self, rows: int) -> Table:
        table = Table(title=f"{rows} completions scored")
        for column in ("func", "mean", "std", "None", "with reason", "top reason"):
            table.add_column(column)
        for key, s in self.stats.items():
            count = s["n"] - s["none"]
            mean = s["sum"] / count if count else math.nan
            var = max(s["sumsq"] / count - mean * mean, 0.0) if count else math.nan
            top = self.reasons[key].most_common(1)
            table.add_row(
                escape(key),
                f"{mean:.4f}",
                f"{math.sqrt(var):.4f}",
                f"{s['none'] / s['n']:.1%}" if s["n"] else "-",
                str(sum(self.reasons[key].values())),
                escape(f"{top[0][0]} ({top[0][1]})") if top else "-",
            )
        return table


def score_command(
    input_file: Annotated[Path, typer.Argument(help="JSONL: 'completion' plus column fields on each line.")],
    func: Annotated[
        list[str],
        typer.Option("--func", "-f", help="NAME[:key=value,...]; repeat for several rewards."),
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write scored JSONL here (default: stdout).")
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Rows scored per batch.")] = 1024,
    url: Annotated[
        str | None, typer.Option(help="Score through a running service (e.g. http://127.0.0.1:8000).")
    ] = None,
) -> None:
    """Score a JSONL file with one or more rewards; write each row with 'scores' and the summed 'reward'."""
    try:
        specs = [RewardSpec.parse(f) for f in func]
        # Locally, build every reward now so a bad name or parameter fails before the file is read.
        keys = [key for key, _, _ in resolve(specs)] if url is None else result_keys([s.name for s in specs])
    except RewardError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    try:
        scorer = score_batch if url is None else _remote_scorer(url, specs)
    except (RewardError, _ServiceError) as exc:  # a refused parameter, or a service that is not there
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    try:
        handle = input_file.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        err.print(f"[red]error:[/red] {escape(f'cannot read {input_file}: {exc}')}")
        raise typer.Exit(2) from None
    out = output.open("w", encoding="utf-8") if output else sys.stdout
    summary = _Summary(keys)
    groups = GroupTracker()  # rows sharing a group (else a prompt): GRPO's groups
    total = 0
    show = err.is_terminal and input_file.stat().st_size >= PROGRESS_MIN_BYTES
    progress = Progress(
        TextColumn("scoring"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=not show,
        transient=True,
    )
    try:
        with handle, progress:
            task = progress.add_task("score", total=input_file.stat().st_size)
            for chunk, nbytes in _chunks(_read_rows(input_file, handle), batch_size):
                columns: dict[str, list[Any]] = {}
                for name in {k for row in chunk for k in row} - {"completion"}:
                    columns[name] = [row.get(name) for row in chunk]
                result = scorer(specs, [row["completion"] for row in chunk], columns)
                for key in keys:
                    summary.add(key, result.scores[key], result.errors.get(key))
                for i, row in enumerate(chunk):
                    row["scores"] = {key: result.scores[key][i] for key in keys}
                    group = group_key(row)
                    if group is not None:
                        groups.add(group, row["scores"], row["completion"])
                    row["reward"] = result.rewards[i]
                    errors = {key: r[i] for key, r in result.errors.items() if r[i] is not None}
                    if errors:
                        row["errors"] = errors
                    out.write(_dump(row) + "\n")
                total += len(chunk)
                progress.advance(task, nbytes)
    except (InputFileError, RewardError, _ServiceError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    finally:
        if output:
            out.close()
    err.print(summary.table(total))
    stats = groups.stats()
    if any(s.groups for s in stats.values()):
        err.print(_group_table(stats))


def _group_table(stats: dict[str, GroupStats]) -> Table:
    """Per func: how many groups, their mean std, and the share with zero std (no GRPO advantage)."""
    table = Table(title="within groups (rows sharing 'group', else 'prompt', and 'step'); sample std")
    for column in ("func", "groups", "mean std", "zero-std groups"):
        table.add_column(column)
    for func, s in stats.items():
        if s.groups:
            table.add_row(escape(func), str(s.groups), f"{s.mean_std:.4f}", f"{s.constant_share:.1%}")
        else:
            table.add_row(escape(func), "0", "-", "-")
    return table


def _remote_scorer(url: str, specs: list[RewardSpec]) -> Any:
    """Scores through the service; checks ``specs`` against its policy now, before the file is read."""
    from rewardkit.client import RewardClient

    client = RewardClient(url)
    client.check(specs)

    def scorer(specs: list[RewardSpec], completions: list[Any], columns: dict[str, list[Any]]) -> Any:
        return client.score(specs, completions, **columns)

    return scorer
