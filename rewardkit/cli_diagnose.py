"""The ``rewardkit diagnose`` command: explain a GRPO run's reward curves (see :mod:`rewardkit.diagnose`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from rewardkit.core import BackendUnavailable, RewardError
from rewardkit.diagnose import DiagnoseError, diagnose, plot
from rewardkit.spec import RewardSpec

__all__ = ["diagnose_command"]

err = Console(stderr=True)


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
        specs = [RewardSpec.parse(f) for f in rescore or []]
        report = diagnose(path, rescore=specs, data=data)
    except (DiagnoseError, RewardError, BackendUnavailable) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except Exception as exc:  # a bug of ours must not read as "findings" (exit 1)
        err.print(f"[red]error:[/red] diagnose failed: {type(exc).__name__}: {escape(str(exc))}")
        raise typer.Exit(2) from None
    typer.echo(json.dumps(report.as_dict(), indent=2) if as_json else report.text())
    if plot_file is not None:
        try:
            written = plot(report, plot_file)
        except DiagnoseError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None
        err.print(f"plot written to {escape(str(written))}", soft_wrap=True)  # stderr: --json stays JSON
    raise typer.Exit(1 if report.findings else 0)
