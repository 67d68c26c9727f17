"""The commands that check rewards: ``rewardkit list`` (what is registered), ``rewardkit check`` (golden
files) and ``rewardkit agreement`` (agreement with labelled data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rewardkit.agreement import half as split_half
from rewardkit.agreement import measure, read_labelled
from rewardkit.core import BackendUnavailable, RewardError
from rewardkit.registry import list_rewards
from rewardkit.testing import CaseResult, GoldenCase, GoldenFileError, iter_golden_files, load_golden

__all__ = ["agreement_command", "check_command", "list_command"]

err = Console(stderr=True)


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
        table.add_row(*map(escape, (i.name, cols or "-", params or "-", i.description)))
    Console().print(table)


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
    threshold: Annotated[
        float,
        typer.Option(
            help="A value counts as 'correct' from this on (llm_judge: 0.7 = a score of 7/10 and up)."
        ),
    ] = 0.5,
    show: Annotated[int, typer.Option(min=0, help="Disagreements to show per reward.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """How far rewards agree with labelled data: agreement, false positives and negatives, top reasons.

    A graded reward is compared at --threshold, the judge too: --func llm_judge --threshold 0.7.

    The judge's endpoint: REWARDKIT_JUDGE_BASE_URL, REWARDKIT_JUDGE_MODEL, REWARDKIT_JUDGE_API_KEY.

    Its rows need a 'question' (or 'prompt', 'messages') and usually a 'solution'.

    A reply without a score counts as wrong; each disagreement shows the judge's reply.
    """
    columns: dict[str, str] = {}
    for item in column or []:
        name, eq, field = item.partition("=")
        if not eq or not name.strip() or not field.strip():
            err.print(f"[red]error:[/red] bad --column {escape(repr(item))}: expected REWARD_COLUMN=FIELD")
            raise typer.Exit(2)
        columns[name.strip()] = field.strip()
    if half not in (None, "A", "B"):
        err.print(f"[red]error:[/red] --half must be A or B, got {escape(repr(half))}")
        raise typer.Exit(2)
    try:
        rows = read_labelled(input_file)
        if half is not None:
            rows = [row for row in rows if split_half(row, split_by) == half]
        reports = [
            report
            for f in func
            for report in measure(
                rows, f, label=label, by=by, columns=columns or None, threshold=threshold, show=show
            )
        ]
    except OSError as exc:
        err.print(f"[red]error:[/red] {escape(f'cannot read {input_file}: {exc}')}")
        raise typer.Exit(2) from None
    except (RewardError, BackendUnavailable) as exc:  # a judge that cannot be reached, too
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in reports], ensure_ascii=False, indent=1))
        return
    title = f"agreement with {label!r}: {input_file.name}" + (f" (half {half})" if half else "")
    table = Table(title=escape(title) + (f", correct from {threshold:g}" if threshold != 0.5 else ""))
    for name in ("reward", "group", "rows", "agree", "false +", "false -", "top reasons of disagreement"):
        table.add_column(name, justify="right" if name in ("rows", "agree", "false +", "false -") else "left")
    for r in reports:
        top = ", ".join(f"{k} ({v})" for k, v in list(r.reasons.items())[:3]) or "-"
        cells = (r.func, r.group or "all", str(r.n), f"{r.rate:.1%}")
        table.add_row(
            *map(escape, (*cells, f"{r.false_positives} ({r.fp_rate:.1%})", str(r.false_negatives), top))
        )
    Console().print(table)
    for r in reports:
        if r.group is None and r.examples:
            typer.echo(f"\n{r.func}: disagreements (false positives first)")
            for example in r.examples:
                typer.echo("  " + json.dumps(example, ensure_ascii=False))


def _read(detail: Any) -> str:
    """What a reward read, for a failure table: ``answer 40 | gold 40°``."""
    if isinstance(detail, dict):
        return " | ".join(f"{k} {v!r}" for k, v in detail.items())
    return "" if detail is None else repr(detail)


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"


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
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if not cases:
        err.print(f"[red]error:[/red] no golden cases found in {escape(', '.join(map(str, paths)))}")
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
            cells = (case.location, case.func, case.note, _fmt(case.expected), got, read)
            table.add_row(*map(escape, cells))
        console.print(table)
    passed = len(cases) - len(failures)
    style = "red" if failures else "green"
    console.print(f"[{style}]golden: {passed} passed, {len(failures)} failed[/{style}] ({len(files)} files)")
    if failures:
        raise typer.Exit(1)
