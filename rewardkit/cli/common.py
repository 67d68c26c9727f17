"""What the ``rewardkit`` commands share: an error on stderr and its exit status, counts in words, the
``--column`` option read, and reward names checked against the registry with the closest names suggested.

>>> count(1, "file"), count(6, "row")
('1 file', '6 rows')
>>> columns_option(["choices=options"])
{'choices': 'options'}
>>> unknown_reward(["mathh"]).split(" (")[0]
"unknown reward 'mathh'; did you mean 'math'?"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["columns_option", "count", "fail", "stderr", "unknown_reward"]

COLUMN_HELP = "Read the rewards' COLUMN from FIELD (e.g. -c solution=answer); repeatable."


def stderr() -> Console:
    """A rich console on standard error (imported when a command runs, not for ``--help``)."""
    from rich.console import Console

    return Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Say ``error: message`` on stderr (the message is text, not markup) and exit with ``code``."""
    from rich.markup import escape

    stderr().print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)  # one line, for logs too
    raise typer.Exit(code)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (thousands separated)."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def columns_option(items: Iterable[str] | None) -> dict[str, str]:
    """``--column REWARD_COLUMN=FIELD`` values as a map; a malformed one ends the command (exit 2)."""
    columns: dict[str, str] = {}
    for item in items or ():
        name, eq, field = item.partition("=")
        if not eq or not name.strip() or not field.strip():
            fail(f"bad --column {item!r}: expected REWARD_COLUMN=FIELD, e.g. -c solution=answer")
        columns[name.strip()] = field.strip()
    return columns


def unknown_reward(names: Iterable[str]) -> str | None:
    """For the first of ``names`` that no reward is registered under: a message naming it, the closest
    names and every registered one; ``None`` when all are known."""
    from rewardkit.redact import did_you_mean, shown
    from rewardkit.registry import list_rewards

    known = [info.name for info in list_rewards()]
    for name in names:
        if name not in known:
            hint = did_you_mean(name, known)
            return f"unknown reward {shown(name)}{hint} (registered rewards: {', '.join(sorted(known))})"
    return None
