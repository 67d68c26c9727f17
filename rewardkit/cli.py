"""The ``rewardkit`` command: list rewards, score a JSONL file, check golden files."""

from __future__ import annotations

import atexit
import importlib
import json
import math
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from rewardkit import __version__
from rewardkit.adapters import plugin_path, service_app
from rewardkit.agreement import half as split_half
from rewardkit.agreement import measure, read_labelled
from rewardkit.core import BackendUnavailable, RewardError
from rewardkit.diagnose import DiagnoseError, GroupStats, GroupTracker, diagnose, group_key, plot
from rewardkit.engine import FuncSpec, resolve, result_keys, score_batch
from rewardkit.registry import list_rewards
from rewardkit.testing import CaseResult, GoldenCase, GoldenFileError, iter_golden_files, load_golden

__all__ = ["app", "main", "parse_func_spec"]

app = typer.Typer(
    name="rewardkit",
    help="Reward functions for RL fine-tuning of LLMs: list them, score JSONL files, check golden files.",
    no_args_is_help=True,
    add_completion=False,
)
err = Console(stderr=True)
PROGRESS_MIN_BYTES = 1 << 20  # show a progress bar from 1 MiB of input


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rewardkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """rewardkit: one library of pure, batched reward functions."""


def _split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes (so ``tags=["a","b"]`` stays whole)."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def _param_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a bare word is a string


def parse_func_spec(text: str) -> FuncSpec:
    """Parse ``NAME[:k=v,...]``; values are JSON (``0.1``, ``true``, ``["a","b"]``) or bare strings.

    >>> spec = parse_func_spec('format:tags=["think","answer"],think_prefilled=true')
    >>> spec.name, spec.params
    ('format', {'tags': ['think', 'answer'], 'think_prefilled': True})
    """
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in _split_top_level(rest, ","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise RewardError(f"bad --func {text!r}: expected NAME:key=value,... (got {item!r})")
            params[key.strip()] = _param_value(value.strip())
    return FuncSpec(name.strip(), params)


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes.")] = 1,
    ray: Annotated[
        bool, typer.Option("--ray", help="Serve with Ray Serve (local Ray, or the cluster in RAY_ADDRESS).")
    ] = False,
    replicas: Annotated[int, typer.Option(min=1, help="--ray: replicas (fixed).")] = 2,
    min_replicas: Annotated[int | None, typer.Option(min=0, help="--ray: autoscale from this many.")] = None,
    max_replicas: Annotated[int | None, typer.Option(min=1, help="--ray: autoscale up to this many.")] = None,
    target_ongoing_requests: Annotated[
        float, typer.Option(min=0.1, help="--ray: autoscaling's target requests in flight per replica.")
    ] = 4.0,
    cpus_per_replica: Annotated[
        float, typer.Option(min=0.01, help="--ray: CPUs each replica asks Ray for (its math pool's size).")
    ] = 1.0,
) -> None:
    """Run the scoring service (POST /score, /get_reward, /rewards, /metrics; docs at /docs)."""
    try:
        import uvicorn
    except ImportError:
        err.print("[red]error:[/red] the service needs its extra: pip install 'rewardkit[service]'")
        raise typer.Exit(2) from None
    if ray:
        if not os.environ.get("RAY_ADDRESS"):
            # A Ray of our own listens on loopback only, whatever --host the service answers on: Ray's own
            # ports have no authentication. (Ray reads this when it is imported, below.)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            module = importlib.import_module(service_app().split(":")[0].rsplit(".", 1)[0] + ".ray_serve")
        except ImportError:
            err.print("[red]error:[/red] --ray needs Ray Serve: pip install 'rewardkit[ray]'")
            raise typer.Exit(2) from None
        options = module.RayOptions(
            replicas=replicas,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            target_ongoing_requests=target_ongoing_requests,
            cpus=cpus_per_replica,
        )
        module.run(host, port, options)
        sys.stdout.flush()
        os._exit(0)  # Ray's exit hooks ran already (bounded); the ones left could wait on a gone raylet
    if workers > 1 and not os.environ.get("REWARDKIT_MATH_WORKERS"):
        # the workers share the cores: each one's math pool gets its part of them, not all of them
        os.environ["REWARDKIT_MATH_WORKERS"] = str(max(1, (os.cpu_count() or 1) // workers))
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # /metrics sums over every worker (prometheus_client's multiprocess mode): a fresh directory a run
        directory = tempfile.mkdtemp(prefix="rewardkit-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
    uvicorn.run(service_app(), factory=True, host=host, port=port, workers=workers)


@app.command("plugin-path")
def plugin_path_command(
    trainer: Annotated[
        str, typer.Argument(help="The trainer: swift (ms-swift), verl or openrlhf.")
    ] = "swift",
) -> None:
    """Print the path of a trainer's plugin file: ms-swift's --external_plugins, veRL's
    reward.custom_reward_function.path, OpenRLHF's --reward.remote_url (the file form)."""
    try:
        typer.echo(str(plugin_path(trainer)))
    except (ValueError, FileNotFoundError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


@app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the registered rewards: name, columns, parameters and description."""
    infos = list_rewards()
    if as_json:
        typer.echo(json.dumps([i.as_dict() for i in infos], indent=2))
        return
    table = Table(title="rewardkit rewards")
    for column in ("name", "columns", "params (defaults)", "description"):
        table.add_column(column, overflow="fold")
    for i in infos:
        cols = ", ".join(i.columns) + (
            f" (+ optional {', '.join(i.optional_columns)})" if i.optional_columns else ""
        )
        params = ", ".join(f"{k}={json.dumps(v, default=list)}" for k, v in i.params.items())
        table.add_row(i.name, cols or "-", params or "-", i.description)
    Console().print(table)


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
                key,
                f"{mean:.4f}",
                f"{math.sqrt(var):.4f}",
                f"{s['none'] / s['n']:.1%}" if s["n"] else "-",
                str(sum(self.reasons[key].values())),
                f"{top[0][0]} ({top[0][1]})" if top else "-",
            )
        return table


@app.command("score")
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
        specs = [parse_func_spec(f) for f in func]
        # Locally, build every reward now so a bad name or parameter fails before the file is read.
        keys = [key for key, _, _ in resolve(specs)] if url is None else result_keys([s.name for s in specs])
    except RewardError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    try:
        scorer = score_batch if url is None else _remote_scorer(url, specs)
    except (RewardError, _ServiceError) as exc:  # a refused parameter, or a service that is not there
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    try:
        handle = input_file.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {input_file}: {exc}")
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
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    finally:
        if output:
            out.close()
    err.print(summary.table(total))
    stats = groups.stats()
    if any(s.groups for s in stats.values()):
        err.print(_group_table(stats))


@app.command("agreement")
def agreement_command(
    input_file: Annotated[
        Path, typer.Argument(help="JSONL (or .jsonl.gz): 'completion', the reward's columns and a label.")
    ],
    func: Annotated[
        list[str],
        typer.Option("--func", "-f", help="NAME[:key=value,...]; repeat to compare configurations."),
    ],
    label: Annotated[str, typer.Option(help="The field holding the label (1 correct, 0 wrong).")] = "label",
    by: Annotated[str | None, typer.Option(help="Also report per value of this field.")] = None,
    column: Annotated[
        list[str] | None,
        typer.Option("--column", "-c", help="REWARD_COLUMN=FIELD: read a column from another field."),
    ] = None,
    half: Annotated[
        str | None, typer.Option(help="Only half A or B of the rows, split by --split-by (hold half out).")
    ] = None,
    split_by: Annotated[str, typer.Option(help="The field that splits rows into halves.")] = "solution",
    show: Annotated[int, typer.Option(min=0, help="Disagreements to show per reward.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """How far rewards agree with labelled data: agreement, false positives and negatives, top reasons."""
    columns: dict[str, str] = {}
    for item in column or []:
        name, eq, field = item.partition("=")
        if not eq or not name.strip() or not field.strip():
            err.print(f"[red]error:[/red] bad --column {item!r}: expected REWARD_COLUMN=FIELD")
            raise typer.Exit(2)
        columns[name.strip()] = field.strip()
    if half not in (None, "A", "B"):
        err.print(f"[red]error:[/red] --half must be A or B, got {half!r}")
        raise typer.Exit(2)
    try:
        rows = read_labelled(input_file)
        if half is not None:
            rows = [row for row in rows if split_half(row, split_by) == half]
        reports = [
            report
            for f in func
            for report in measure(rows, f, label=label, by=by, columns=columns or None, show=show)
        ]
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {input_file}: {exc}")
        raise typer.Exit(2) from None
    except RewardError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in reports], ensure_ascii=False, indent=1))
        return
    table = Table(title=f"agreement with {label!r}: {input_file.name}" + (f" (half {half})" if half else ""))
    for name in ("reward", "group", "rows", "agree", "false +", "false -", "top reasons of disagreement"):
        table.add_column(name, justify="right" if name in ("rows", "agree", "false +", "false -") else "left")
    for r in reports:
        top = ", ".join(f"{k} ({v})" for k, v in list(r.reasons.items())[:3]) or "-"
        table.add_row(
            r.func,
            r.group or "all",
            str(r.n),
            f"{r.rate:.1%}",
            f"{r.false_positives} ({r.fp_rate:.1%})",
            str(r.false_negatives),
            top,
        )
    Console().print(table)
    for r in reports:
        if r.group is None and r.examples:
            typer.echo(f"\n{r.func}: disagreements (false positives first)")
            for example in r.examples:
                typer.echo("  " + json.dumps(example, ensure_ascii=False))


def _group_table(stats: dict[str, GroupStats]) -> Table:
    """Per func: how many groups, their mean std, and the share with zero std (no GRPO advantage)."""
    table = Table(title="within groups (rows sharing 'group', else 'prompt', and 'step'); sample std")
    for column in ("func", "groups", "mean std", "zero-std groups"):
        table.add_column(column)
    for func, s in stats.items():
        if s.groups:
            table.add_row(func, str(s.groups), f"{s.mean_std:.4f}", f"{s.constant_share:.1%}")
        else:
            table.add_row(func, "0", "-", "-")
    return table


@app.command("diagnose")
def diagnose_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="An ms-swift or TRL output directory (searched below), one of their logs, or a JSONL scored "
            "by `rewardkit score`."
        ),
    ],
    plot_file: Annotated[
        Path | None, typer.Option("--plot", help="Write the figure here (.png, or .html with the findings).")
    ] = None,
    rescore: Annotated[
        list[str] | None,
        typer.Option("--rescore", help="NAME[:k=v,...]: score the logged completions again; repeatable."),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="The dataset (JSONL) whose columns --rescore needs, by prompt."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Explain a GRPO run's reward curves: dead groups, stuck rewards, flat or clipped lengths, and why.

    Exit status: 0 no finding, 1 findings, 2 unreadable input."""
    try:
        if plot_file is not None and plot_file.suffix.lower() not in (".png", ".html"):
            raise DiagnoseError(f"{plot_file}: the plot is a .png or an .html file")
        specs = [parse_func_spec(f) for f in rescore or []]
        report = diagnose(path, rescore=specs, data=data)
    except (DiagnoseError, RewardError, BackendUnavailable) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    except Exception as exc:  # a bug of ours must not read as "findings" (exit 1)
        err.print(f"[red]error:[/red] diagnose failed: {type(exc).__name__}: {exc}")
        raise typer.Exit(2) from None
    typer.echo(json.dumps(report.as_dict(), indent=2) if as_json else report.text())
    if plot_file is not None:
        try:
            plot(report, plot_file)
        except DiagnoseError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    raise typer.Exit(1 if report.findings else 0)


def _remote_scorer(url: str, specs: list[FuncSpec]) -> Any:
    """Scores through the service; checks ``specs`` against its policy now, before the file is read."""
    from rewardkit.client import RewardClient

    client = RewardClient(url)
    client.check(specs)

    def scorer(specs: list[FuncSpec], completions: list[Any], columns: dict[str, list[Any]]) -> Any:
        return client.score(specs, completions, **columns)

    return scorer


def _read(detail: Any) -> str:
    """What a reward read, for a failure table: ``answer 40 | gold 40°``."""
    if isinstance(detail, dict):
        return " | ".join(f"{k} {v!r}" for k, v in detail.items())
    return "" if detail is None else repr(detail)


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"


@app.command("check")
def check_command(
    paths: Annotated[list[Path], typer.Argument(help="Golden JSONL files, or folders holding them.")],
) -> None:
    """Run golden-completion files; exit 1 on any failure, 2 on an unreadable file or unknown func."""
    cases: list[GoldenCase] = []
    try:
        files = list(iter_golden_files(paths))
        for file in files:
            cases.extend(load_golden(file))
    except GoldenFileError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if not cases:
        err.print(f"[red]error:[/red] no golden cases found in {', '.join(map(str, paths))}")
        raise typer.Exit(2)
    failures: list[tuple[GoldenCase, CaseResult]] = []
    for case in cases:
        result = case.run()
        if not result.passed:
            failures.append((case, result))
    console = Console()
    if failures:
        table = Table(title="golden failures")
        for column in ("where", "func", "note", "expected", "got", "read"):
            table.add_column(column, overflow="fold")
        for case, result in failures:
            got = result.error or f"{_fmt(result.got)}" + (f" ({result.reason})" if result.reason else "")
            read = _read(result.detail)
            table.add_row(case.location, case.func, case.note, _fmt(case.expected), got, read)
        console.print(table)
    passed = len(cases) - len(failures)
    style = "red" if failures else "green"
    console.print(f"[{style}]golden: {passed} passed, {len(failures)} failed[/{style}] ({len(files)} files)")
    if failures:
        raise typer.Exit(1)


def main() -> None:
    """Entry point of the ``rewardkit`` script."""
    app()
