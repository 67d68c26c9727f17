"""The ``rewardkit`` command: the Typer app, its options, and the commands it registers.

The commands' bodies live beside it, one job a module: :mod:`rewardkit.cli_serve` (``serve``,
``plugin-path``), :mod:`rewardkit.cli_score` (``score``), :mod:`rewardkit.cli_check` (``list``, ``check``,
``agreement``) and :mod:`rewardkit.cli_diagnose` (``diagnose``). ``--func NAME[:k=v,...]`` is parsed by
:func:`parse_func_spec`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rewardkit import __version__
from rewardkit.cli_check import agreement_command, check_command, list_command
from rewardkit.cli_diagnose import diagnose_command
from rewardkit.cli_score import score_command
from rewardkit.cli_serve import plugin_path_command, serve_command
from rewardkit.engine import RewardSpec

__all__ = ["app", "main", "parse_func_spec"]

app = typer.Typer(
    name="rewardkit",
    help="Reward functions for RL fine-tuning of LLMs: list them, score JSONL files, check golden files.",
    no_args_is_help=True,
    add_completion=False,
)


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


def parse_func_spec(text: str) -> RewardSpec:
    """Parse ``NAME[:k=v,...]``; values are JSON (``0.1``, ``true``, ``["a","b"]``) or bare strings.

    >>> spec = parse_func_spec('format:tags=["think","answer"],think_prefilled=true')
    >>> spec.name, spec.params
    ('format', {'tags': ['think', 'answer'], 'think_prefilled': True})
    """
    return RewardSpec.parse(text)


# The commands, in the order `rewardkit --help` lists them; their bodies live in the cli_* modules.
app.command("serve")(serve_command)
app.command("plugin-path")(plugin_path_command)
app.command("list")(list_command)
app.command("score")(score_command)
app.command("agreement")(agreement_command)
app.command("diagnose")(diagnose_command)
app.command("check")(check_command)


def main() -> None:
    """Entry point of the ``rewardkit`` script."""
    app()
