"""The ``rewardkit agreement`` command: how far rewards agree with labelled data (:mod:`rewardkit.agreement`).

It never shows confidence it does not have: a file, a half or a label field without a labelled row is an
error naming the field and the fields the rows have; a label it cannot read is refused by name; rows without a
label are counted and shown; a figure over fewer than :data:`rewardkit.agreement.MIN_ROWS` rows is marked.
Disagreements are named by ``file:line``, as ``rewardkit check`` names its cases.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rewardkit.cli.common import COLUMN_HELP, columns_option, count, fail, unknown_reward

if TYPE_CHECKING:
    from rewardkit.agreement import AgreementReport

__all__ = ["agreement_command"]


def agreement_command(
    input_file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="JSONL (or .jsonl.gz; - reads stdin): 'completion', the reward's fields and a label.",
        ),
    ],
    func: Annotated[
        list[str],
        typer.Option(
            "--func",
            "-f",
            metavar="NAME[:K=V,...]",
            help="A reward and its parameters; repeat to compare configurations.",
        ),
    ],
    label: Annotated[
        str,
        typer.Option(
            metavar="FIELD",
            help="The field holding the label: 1/0, true/false, yes/no or correct/incorrect; rows "
            "without one are skipped and counted.",
        ),
    ] = "label",
    by: Annotated[
        str | None, typer.Option(metavar="FIELD", help="Also report per value of this field.")
    ] = None,
    column: Annotated[
        list[str] | None, typer.Option("--column", "-c", metavar="COLUMN=FIELD", help=COLUMN_HELP)
    ] = None,
    half: Annotated[
        str | None,
        typer.Option(
            metavar="A|B", help="Only half A or B of the rows, split by --split-by (hold half out)."
        ),
    ] = None,
    split_by: Annotated[
        str, typer.Option(metavar="FIELD", help="The field that splits rows into halves.")
    ] = "solution",
    threshold: Annotated[
        float,
        typer.Option(
            metavar="X",
            help="A value counts as 'correct' from this on (llm_judge: 0.7 = a score of 7/10 and up).",
        ),
    ] = 0.5,
    show: Annotated[int, typer.Option(min=0, metavar="N", help="Disagreements to show per reward.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """How far rewards agree with labelled data: agreement, false positives and negatives, top reasons.

    A graded reward is compared at --threshold, the judge too: --func llm_judge --threshold 0.7.

    The judge's endpoint: REWARDKIT_JUDGE_BASE_URL, REWARDKIT_JUDGE_MODEL, REWARDKIT_JUDGE_API_KEY.

    Its rows need a 'question' (or 'prompt', 'messages') and usually a 'solution'.

    A reply without a score counts as wrong; each disagreement shows the judge's reply.
    """
    from rewardkit.agreement import LabelError, fields_hint, measure
    from rewardkit.agreement import half as split_half
    from rewardkit.core import BackendUnavailable, RewardError
    from rewardkit.jsonl import JsonlReader
    from rewardkit.spec import RewardSpec

    columns = columns_option(column)
    if half not in (None, "A", "B"):
        fail(f"--half must be A or B, got {half!r}")
    try:
        unknown = unknown_reward(RewardSpec.parse(f).name for f in func)
    except RewardError as exc:
        fail(str(exc))
    if unknown:
        fail(unknown)
    try:
        with JsonlReader(input_file, require=("completion",)) as reader:
            numbered = list(reader)
        name = reader.name
        if not numbered:
            fail(f"{name} has no rows (each line a JSON object with a 'completion' field and a label)")
        if half is not None:
            if all(split_by not in row for _, row in numbered):
                rows = [row for _, row in numbered]
                fail(f"{name}: no row has the field {split_by!r} to split by" + fields_hint(rows, split_by))
            numbered = [(line, row) for line, row in numbered if split_half(row, split_by) == half]
            if not numbered:
                fail(
                    f"half {half} of {name} has no rows (split by {split_by!r}); the other half has them all"
                )
        rows = [row for _, row in numbered]
        where = [f"{name}:{line}" for line, _ in numbered]
        reports = [
            report
            for f in func
            for report in measure(
                rows,
                f,
                label=label,
                by=by,
                columns=columns or None,
                threshold=threshold,
                show=show,
                where=where,
            )
        ]
    except OSError as exc:
        fail(f"cannot read {input_file}: {exc.strerror or exc}")
    except LabelError as exc:  # no labelled row says which file; a label it cannot read says its line
        fail(str(exc) if str(exc).startswith(name) else f"{name}: {exc}")
    except (RewardError, BackendUnavailable) as exc:  # a judge that cannot be reached, too
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in reports], ensure_ascii=False, indent=1))
    else:
        title = f"agreement with {label!r}: {Path(name).name}" + (f" (half {half})" if half else "")
        if threshold != 0.5:
            title += f", correct from {threshold:g}"
        _print(title, reports)
    _warn(reports, label)


def _rate(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1%}"


def _print(title: str, reports: list[AgreementReport]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rewardkit.agreement import MIN_ROWS

    table = Table(title=escape(title))
    numbers = ("rows", "agree", "false +", "false -", "no label")
    for name in ("reward", "group", *numbers, "top reasons of disagreement"):
        table.add_column(name, justify="right" if name in numbers else "left")
    for r in reports:
        top = ", ".join(f"{k} ({v})" for k, v in list(r.reasons.items())[:3]) or "-"
        rows = f"{r.n:,}" + (" *" if r.too_few else "")
        cells = (r.func, r.group or "all", rows, _rate(r.rate))
        fp = f"{r.false_positives} ({_rate(r.fp_rate)})"
        table.add_row(*map(escape, (*cells, fp, str(r.false_negatives), f"{r.skipped:,}", top)))
    console = Console()
    console.print(table)
    if any(r.too_few for r in reports):
        console.print(f"* under {MIN_ROWS} labelled rows: a rough figure, not one to trust a verifier on")
    for r in reports:
        if r.group is None and r.examples:
            typer.echo(f"\n{r.func}: disagreements (false positives first)")
            for example in r.examples:
                typer.echo("  " + json.dumps(example, ensure_ascii=False))


def _warn(reports: list[AgreementReport], label: str) -> None:
    """What the figures leave out, on stderr (so ``--json`` stays JSON): skipped rows and too few rows."""
    from rewardkit.agreement import MIN_ROWS
    from rewardkit.cli.common import stderr

    overall = next((r for r in reports if r.group is None), None)
    if overall is None:
        return
    console = stderr()
    if overall.skipped:
        console.print(
            f"note: {count(overall.skipped, 'row')} without a label in {label!r} skipped; "
            f"{count(overall.n, 'labelled row')} compared",
            markup=False,
            soft_wrap=True,
        )
    if overall.too_few:
        console.print(
            f"warning: only {count(overall.n, 'labelled row')}: under {MIN_ROWS}, the agreement is too rough "
            "to trust a verifier on",
            markup=False,
            soft_wrap=True,
        )
