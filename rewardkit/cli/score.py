"""The ``rewardkit score`` command: score a JSONL file (gzipped or not, or ``-`` for standard input), in
process or through a running service, streamed in batches; write each row with its scores, then a summary per
reward and its statistics within GRPO groups.

A summary is never a figure over nothing: a file without rows is an error, and a reward that scored no row
(``None`` for every one) shows ``-`` for its mean and is named in a warning with its commonest reason.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from rewardkit.cli.common import COLUMN_HELP, columns_option, count, fail, stderr, unknown_reward

if TYPE_CHECKING:
    from rich.table import Table

    from rewardkit.core import Reward
    from rewardkit.groups import GroupStats
    from rewardkit.jsonl import JsonlReader
    from rewardkit.spec import RewardSpec

__all__ = ["score_command"]

PROGRESS_MIN_BYTES = 1 << 20  # show a progress bar from 1 MiB of input


def _dump(row: dict[str, Any]) -> str:
    """One JSON line; rows holding lone surrogates (invalid UTF-8 from a model) are written escaped."""
    line = json.dumps(row, ensure_ascii=False, default=str)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row, ensure_ascii=True, default=str)
    return line


def _chunks(reader: JsonlReader, size: int) -> Iterator[tuple[list[int], list[dict[str, Any]]]]:
    """The rows in batches of ``size``, each with the rows' line numbers."""
    lines: list[int] = []
    chunk: list[dict[str, Any]] = []
    for number, row in reader:
        lines.append(number)
        chunk.append(row)
        if len(chunk) >= size:
            yield lines, chunk
            lines, chunk = [], []
    if chunk:
        yield lines, chunk


def _where(name: str, lines: Sequence[int]) -> str:
    return f"{name}:{lines[0]}" if len(lines) == 1 else f"{name}, lines {lines[0]}-{lines[-1]}"


def _check_fields(
    rewards: Sequence[tuple[str, Reward]], chunk: Sequence[Mapping[str, Any]], where: str
) -> None:
    """A field a reward needs that no row of the batch holds: said in the file's words, before scoring."""
    for key, reward in rewards:
        required, _ = reward.caller_columns()
        for name in required:
            if all(row.get(name) is None for row in chunk):
                fields = ", ".join(sorted({str(k) for row in chunk for k in row}))
                empty = sum(1 for row in chunk if name in row)
                said = f"{empty} with it empty" if empty else f"their fields: {fields}"
                fail(
                    f"{where}: reward {key!r} reads the {name!r} field, and no row there has one "
                    f"({count(len(chunk), 'row')}; {said}); read it from another field with -c {name}=FIELD"
                )


class _Summary:
    """Running per-reward statistics: mean, std, share of None, items with a reason."""

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

    def unscored(self) -> list[str]:
        """The rewards that gave every row ``None``: their summary would be a figure over nothing."""
        return [key for key, s in self.stats.items() if s["n"] == s["none"]]

    def table(self, rows: int) -> Table:
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=f"{count(rows, 'completion')} scored")
        for column in ("func", "mean", "std", "None", "with reason", "top reason"):
            table.add_column(column)
        for key, s in self.stats.items():
            scored = s["n"] - s["none"]
            mean = s["sum"] / scored if scored else math.nan
            std = math.sqrt(max(s["sumsq"] / scored - mean * mean, 0.0)) if scored else math.nan
            top = self.reasons[key].most_common(1)
            table.add_row(
                escape(key),
                "-" if math.isnan(mean) else f"{mean:.4f}",
                "-" if math.isnan(std) else f"{std:.4f}",
                f"{s['none'] / s['n']:.1%}",
                str(sum(self.reasons[key].values())),
                escape(f"{top[0][0]} ({top[0][1]})") if top else "-",
            )
        return table


def score_command(
    input_file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="JSONL (or .jsonl.gz; - reads stdin): 'completion' plus the rewards' fields on each line.",
        ),
    ],
    func: Annotated[
        list[str],
        typer.Option(
            "--func", "-f", metavar="NAME[:K=V,...]", help="A reward and its parameters; repeatable."
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write scored JSONL here (default: stdout)."),
    ] = None,
    column: Annotated[
        list[str] | None, typer.Option("--column", "-c", metavar="COLUMN=FIELD", help=COLUMN_HELP)
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, metavar="N", help="Rows scored per batch.")] = 1024,
    url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="Score through a running service (e.g. http://127.0.0.1:8000)."),
    ] = None,
) -> None:
    """Score a JSONL file with one or more rewards; write each row with 'scores' and the summed 'reward'."""
    from rewardkit.core import RewardError
    from rewardkit.engine import resolve, result_keys, score_batch
    from rewardkit.groups import GroupTracker, group_key
    from rewardkit.jsonl import JsonlReader
    from rewardkit.spec import RewardSpec

    columns = columns_option(column)
    try:
        specs = [RewardSpec.parse(f) for f in func]
        if columns:
            specs = [s.replace(columns={**(s.columns or {}), **columns}) for s in specs]
    except RewardError as exc:
        fail(str(exc))
    rewards: list[tuple[str, Reward]] = []
    if url is None:  # build every reward now, so a bad name or parameter fails before the file is read
        unknown = unknown_reward(s.name for s in specs)
        if unknown:
            fail(unknown)
        try:
            rewards = [(key, reward) for key, reward, _ in resolve(specs)]
        except RewardError as exc:
            fail(str(exc))
    keys = [key for key, _ in rewards] if url is None else result_keys([s.name for s in specs])
    service_error = _service_error()
    try:
        scorer = score_batch if url is None else _remote_scorer(url, specs)
    except (RewardError, service_error) as exc:  # a refused parameter, or a service that is not there
        fail(str(exc))
    try:
        reader = JsonlReader(input_file, require=("completion",))
    except OSError as exc:
        fail(f"cannot read {input_file}: {exc.strerror or exc}")
    out: IO[str] | None = None
    summary = _Summary(keys)
    groups = GroupTracker()  # rows sharing a group (else a prompt): GRPO's groups
    total = 0
    progress = _progress(reader)
    try:
        with reader, progress:
            task = progress.add_task("score", total=reader.size)
            for lines, chunk in _chunks(reader, batch_size):
                where = _where(reader.name, lines)
                _check_fields(rewards, chunk, where)
                batch: dict[str, list[Any]] = {}
                for name in {k for row in chunk for k in row} - {"completion"}:
                    batch[name] = [row.get(name) for row in chunk]
                try:
                    result = scorer(specs, [row["completion"] for row in chunk], batch)
                except RewardError as exc:  # a column a reward cannot read: say which rows
                    fail(f"{where}: {exc}")
                if out is None:  # opened with the first rows: no rows, no file
                    out = output.open("w", encoding="utf-8") if output else _stdout()
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
                progress.update(task, completed=reader.consumed)
    except (RewardError, service_error) as exc:  # a line that is not a row, a service that failed
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read {reader.name}: {exc.strerror or exc}")
    finally:
        if output and out is not None:
            out.close()
    if total == 0:
        fail(f"{reader.name} has no rows to score (each line a JSON object with a 'completion' field)")
    console = stderr()
    console.print(summary.table(total))
    stats = groups.stats()
    if any(s.groups for s in stats.values()):
        console.print(_group_table(stats))
    for key in summary.unscored():
        top = summary.reasons[key].most_common(1)
        why = f"; reason {top[0][0]} for {count(top[0][1], 'row')}" if top else ""
        console.print(
            f"warning: {key} scored no row ({count(total, 'row')} read, each None{why})",
            markup=False,
            soft_wrap=True,
        )


def _stdout() -> IO[str]:
    import sys

    return sys.stdout


def _progress(reader: JsonlReader) -> Any:
    """A progress bar on stderr for a large plain file on a terminal (else one that shows nothing)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    console = stderr()
    show = console.is_terminal and (reader.size or 0) >= PROGRESS_MIN_BYTES
    return Progress(
        TextColumn("scoring"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not show,
        transient=True,
    )


def _group_table(stats: dict[str, GroupStats]) -> Table:
    """Per func: how many groups, their mean std, and the share with zero std (no GRPO advantage)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="within groups (rows sharing 'group', else 'prompt', and 'step'); sample std")
    for column in ("func", "groups", "mean std", "zero-std groups"):
        table.add_column(column)
    for func, s in stats.items():
        if s.groups:
            table.add_row(escape(func), str(s.groups), f"{s.mean_std:.4f}", f"{s.constant_share:.1%}")
        else:
            table.add_row(escape(func), "0", "-", "-")
    return table


def _service_error() -> type[Exception]:
    """The client's error class when the client is installed (the service extra), else one never raised."""
    try:
        from rewardkit.client import RewardServiceError
    except ImportError:  # pragma: no cover - exercised only without the extra
        return _NeverRaised
    return RewardServiceError


class _NeverRaised(Exception):
    """Stands in for RewardServiceError when the client is not installed."""


def _remote_scorer(url: str, specs: list[RewardSpec]) -> Any:
    """Scores through the service; checks ``specs`` against its policy now, before the file is read (an
    unknown name is said with the closest of the names the service has: :func:`rewardkit.spec.check`)."""
    from rewardkit.client import RewardClient

    client = RewardClient(url)
    client.check(specs)

    def scorer(specs: list[RewardSpec], completions: list[Any], columns: dict[str, list[Any]]) -> Any:
        return client.score(specs, completions, **columns)

    return scorer
