"""The commands that check rewards: ``rewardkit list`` (what is registered) and ``rewardkit check`` (golden
files: a golden file's ``func`` that no reward is registered under names the closest ones)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from rewardkit.cli.common import count, fail, unknown_reward

__all__ = ["check_command", "list_command"]


def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the registered rewards: name, columns, parameters and description."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rewardkit.registry import list_rewards

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


def _read(detail: Any) -> str:
    """What a reward read, for a failure table: ``answer 40 | gold 40°``."""
    if isinstance(detail, dict):
        return " | ".join(f"{k} {v!r}" for k, v in detail.items())
    return "" if detail is None else repr(detail)


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"


def _golden_func(path: str, line: int | None) -> str | None:
    """The ``func`` a golden file's line names, when it is a string (to suggest the closest names)."""
    if line is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == line:
                    func = json.loads(text).get("func")
                    return func if isinstance(func, str) else None
    except (OSError, ValueError, AttributeError):
        return None
    return None


def check_command(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATH", help="Golden JSONL files, or folders holding them.")
    ],
) -> None:
    """Run golden-completion files; exit 1 on any failure, 2 on an unreadable file or unknown func."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rewardkit.testing import CaseResult, GoldenCase, GoldenFileError, iter_golden_files, load_golden

    cases: list[GoldenCase] = []
    try:
        files = list(iter_golden_files(paths))
        for file in files:
            cases.extend(load_golden(file))
    except GoldenFileError as exc:
        func = _golden_func(exc.path, exc.line)
        unknown = unknown_reward([func]) if func is not None else None
        fail(f"{exc.path}:{exc.line}: {unknown}" if unknown else str(exc))
    if not cases:
        fail(f"no golden cases found in {', '.join(map(str, paths))}: nothing was checked")
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
    files_read = escape(count(len(files), "file"))
    console.print(f"[{style}]golden: {passed} passed, {len(failures)} failed[/{style}] ({files_read})")
    if failures:
        raise typer.Exit(1)
