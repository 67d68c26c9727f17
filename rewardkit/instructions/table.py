"""The documentation table of every instruction id: one row each, its source, its rule and its robust rule,
generated from :data:`~rewardkit.instructions.base.TABLE` (``rewardkit/rewards/README.md`` holds its output
between two markers; ``tests/test_ifeval_reward.py`` checks they agree).

    python -m rewardkit.instructions.table            # print the table
    python -m rewardkit.instructions.table --write    # rewrite it in rewardkit/rewards/README.md

>>> print(markdown().splitlines()[0])
| id | source | rule (`rules="reference"`) | `rules="robust"` differs |
"""

from __future__ import annotations

import sys
from pathlib import Path

import rewardkit.instructions  # noqa: F401  (fills the table)
from rewardkit.instructions.base import TABLE

__all__ = ["BEGIN", "END", "README", "markdown", "write"]

BEGIN = "<!-- instruction table: python -m rewardkit.instructions.table --write -->"
END = "<!-- end of the instruction table -->"
README = Path(__file__).resolve().parents[1] / "rewards" / "README.md"
_ORDER = {"ifeval": 0, "ifbench": 1, "ifbench-train": 2, "open-instruct": 3}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """The table: IFEval's ids, IFBench's, IFBench's training ids, then open-instruct's ``func_name`` s."""
    specs = sorted(TABLE.values(), key=lambda s: (_ORDER.get(s.source, 9), s.source, s.id))
    lines = ['| id | source | rule (`rules="reference"`) | `rules="robust"` differs |', "|---|---|---|---|"]
    for spec in specs:
        robust = _cell(spec.robust) if spec.robust else "-"
        lines.append(f"| `{spec.id}` | {spec.source} | {_cell(spec.rule)} | {robust} |")
    return "\n".join(lines)


def write(path: Path = README) -> None:
    """Replace the table between :data:`BEGIN` and :data:`END` in ``path``."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    path.write_text(text[:start] + "\n" + markdown() + "\n" + text[end:], encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(markdown())
