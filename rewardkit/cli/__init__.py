"""The ``rewardkit`` command (also ``python -m rewardkit``): the Typer app and the commands it registers.

The commands' bodies live beside it, one job a module: :mod:`~rewardkit.cli.serve` (``serve``,
``plugin-path``), :mod:`~rewardkit.cli.score` (``score``), :mod:`~rewardkit.cli.check` (``list``,
``check``), :mod:`~rewardkit.cli.agreement` (``agreement``) and :mod:`~rewardkit.cli.diagnose`
(``diagnose``); :mod:`~rewardkit.cli.common` holds what they share (errors on stderr, counts in words,
``--column``, reward names checked with the closest names suggested). Each module imports at its top only
what its options are declared with; what a command runs with (the engine, rich tables, the client) is
imported when it runs, so ``rewardkit --help`` stays quick. ``--func NAME[:k=v,...]`` is parsed by
:func:`parse_func_spec`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from rewardkit import __version__
from rewardkit.cli.agreement import agreement_command
from rewardkit.cli.check import check_command, list_command
from rewardkit.cli.diagnose import diagnose_command
from rewardkit.cli.score import score_command
from rewardkit.cli.serve import plugin_path_command, serve_command
from rewardkit.spec import RewardSpec

__all__ = ["app", "main", "parse_func_spec"]


def _no_flag_placeholder(params: list[Any]) -> list[Any]:
    """A flag takes no value, so ``--help`` shows none (Typer would show ``<bool>``)."""
    for param in params:
        if getattr(param, "is_bool_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _no_flag_placeholder(super().get_params(ctx))


class _Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _no_flag_placeholder(super().get_params(ctx))


app = typer.Typer(
    name="rewardkit",
    cls=_Group,
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


# The commands, in the order `rewardkit --help` lists them.
for _name, _command in (
    ("serve", serve_command),
    ("plugin-path", plugin_path_command),
    ("list", list_command),
    ("score", score_command),
    ("agreement", agreement_command),
    ("diagnose", diagnose_command),
    ("check", check_command),
):
    app.command(_name, cls=_Command)(_command)


def main() -> None:
    """Entry point of the ``rewardkit`` script and of ``python -m rewardkit``."""
    app()
