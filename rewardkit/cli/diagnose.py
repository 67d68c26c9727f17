"""The ``rewardkit diagnose`` command: explain a GRPO run's reward curves (see :mod:`rewardkit.diagnose`).

A ``--rescore`` reward that no reward is registered under names the closest ones. "No findings" is said only
over something: a log of one step without completions, or a rescoring that matched no completion, is an
error (exit 2), not a clean bill of health."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rewardkit.cli.common import count, fail, stderr, unknown_reward

if TYPE_CHECKING:
    from rewardkit.spec import RewardSpec

__all__ = ["diagnose_command"]


def diagnose_command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="An ms-swift or TRL output directory (searched below), one of their logs, or a JSONL scored "
            "by `rewardkit score`.",
        ),
    ],
    plot_file: Annotated[
        Path | None,
        typer.Option(
            "--plot", metavar="FILE", help="Write the figure here (.png, or .html with the findings)."
        ),
    ] = None,
    rescore: Annotated[
        list[str] | None,
        typer.Option(
            "--rescore", metavar="NAME[:K=V,...]", help="Score the logged completions again; repeatable."
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data", metavar="FILE", help="The dataset (JSONL) whose columns --rescore needs, by prompt."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Explain a GRPO run's reward curves: dead groups, stuck rewards, flat or clipped lengths, and why.

    Exit status: 0 no finding, 1 findings, 2 unreadable input."""
    from rich.markup import escape

    from rewardkit.core import BackendUnavailable, RewardError
    from rewardkit.diagnose import DiagnoseError, diagnose, plot
    from rewardkit.diagnose.report import MIN_STEPS
    from rewardkit.spec import RewardSpec

    try:
        if plot_file is not None and plot_file.suffix.lower() not in (".png", ".html"):
            raise DiagnoseError(f"{plot_file}: the plot is a .png or an .html file")
        specs = [RewardSpec.parse(f) for f in rescore or []]
        unknown = unknown_reward(_registered_name(s) for s in specs)
        if unknown:
            raise DiagnoseError(unknown)
        report = diagnose(path, rescore=specs, data=data)
    except (DiagnoseError, RewardError, BackendUnavailable) as exc:
        fail(str(exc))
    except Exception as exc:  # a bug of ours must not read as "findings" (exit 1)
        fail(f"diagnose failed: {type(exc).__name__}: {exc}")
    if not report.findings and report.too_little():  # "no findings" over one step is no verdict
        fail(
            f"{report.source}: {count(len(report.steps), 'logged step')} and no group of completions: too "
            f"little to tell whether a reward is stuck ({MIN_STEPS} logged steps needed); diagnose the run "
            "once it has logged more"
        )
    empty = [func for func, counts in report.rescored.items() if not sum(counts.values())]
    if empty:
        fail(f"--rescore {empty[0]}: no logged completion was scored again, so there are no reasons to count")
    typer.echo(json.dumps(report.as_dict(), indent=2) if as_json else report.text())
    if plot_file is not None:
        try:
            written = plot(report, plot_file)
        except DiagnoseError as exc:
            fail(str(exc))
        stderr().print(f"plot written to {escape(str(written))}", soft_wrap=True)  # stderr: --json stays JSON
    raise typer.Exit(1 if report.findings else 0)


def _registered_name(spec: RewardSpec) -> str:
    """The registry name behind a name a run logged (the ms-swift plugin's ``rk_math`` is ``math``)."""
    from rewardkit.diagnose.rescore import logged_name

    return str(logged_name(spec).name)
