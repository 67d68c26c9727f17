"""The figure of a run: rewards per func, the within-group spread, and completion length over the logged
steps, with the steps each finding covers shaded; a ``.png``, or an ``.html`` page holding it and the
findings. Needs matplotlib (the ``plot`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardkit.diagnose.report import DiagnoseError, Report

__all__ = ["plot"]


def plot(report: Report, path: str | Path) -> Path:
    """One figure of the run: rewards per func, reward_std and the share of zero-std groups, and completion
    length over the logged steps, with the steps each finding covers shaded. ``.png`` (matplotlib, the
    ``plot`` extra) or ``.html`` (the same figure inline, then the findings)."""
    out = Path(path)
    if out.suffix.lower() not in (".png", ".html"):
        raise DiagnoseError(f"{out}: the plot is a .png or an .html file")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise DiagnoseError("plotting needs matplotlib: pip install '/path/to/rewardkit[plot]'") from None
    if not report.steps:
        raise DiagnoseError(f"{report.source}: no logged steps to plot (a scored JSONL has none)")
    m, steps = report.metrics, report.steps
    figure, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    rewards, spread, length = axes
    for name in ["reward", *(f"rewards/{f}" for f in report.funcs)]:
        _line(rewards, steps, m.get(name), name, width=2.5 if name == "reward" else 1.2)
    rewards.set_ylabel("reward (mean)")
    _line(spread, steps, m.get("reward_std"), "reward_std")
    _line(spread, steps, m.get("frac_reward_zero_std"), "frac_reward_zero_std")
    spread.set_ylabel("within-group spread")
    _line(length, steps, m.get("completion_length"), "completion length (mean)")
    if any(v is not None for v in m.get("clipped_ratio", [])):
        clipped = length.twinx()
        _line(clipped, steps, m.get("clipped_ratio"), "clipped ratio", style="--", colour="tab:red")
        clipped.set_ylabel("clipped ratio")
        clipped.set_ylim(-0.05, 1.05)
        clipped.legend(loc="upper right", fontsize=8)
    length.set_ylabel("tokens")
    length.set_xlabel("step")
    spans: dict[tuple[int, int], list[str]] = {}  # one shaded band per span, naming its findings
    for number, finding in enumerate(report.findings, 1):
        for span in finding.spans or ((finding.steps,) if finding.steps else ()):
            names = spans.setdefault(span, [])
            if len(spans) <= 12 or names:  # label a few bands; shade them all
                names.append(f"#{number} {finding.kind}")
    half = 0.5 * min((b - a for a, b in zip(steps, steps[1:], strict=False)), default=1)
    for row, ((first, last), names) in enumerate(spans.items()):
        for axis in axes:
            axis.axvspan(first - half, last + half, color="tab:orange", alpha=0.12, linewidth=0)
        if names:
            place = (first - half, 0.97 - 0.07 * row)
            rewards.annotate(
                ", ".join(names), place, xycoords=("data", "axes fraction"), va="top", fontsize=8
            )
    from matplotlib.ticker import MaxNLocator

    for axis in axes:
        axis.grid(alpha=0.3)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(steps) == 1:
            axis.set_xlim(steps[0] - 1, steps[0] + 1)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(loc="lower right", fontsize=8)
    figure.suptitle(f"{report.source} ({report.kind}): {len(report.findings)} finding(s)", fontsize=10)
    figure.tight_layout()
    try:
        _save(figure, out, report)
    except OSError as exc:
        raise DiagnoseError(f"cannot write {out}: {exc.strerror}") from None
    finally:
        plt.close(figure)
    return out


def _save(figure: Any, out: Path, report: Report) -> None:
    if out.suffix.lower() == ".png":
        figure.savefig(out, dpi=100)
    else:
        import base64
        import html
        import io

        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        image = base64.b64encode(buffer.getvalue()).decode("ascii")
        items = "".join(
            f"<li><p>{html.escape(f.message)}</p><p><i>Try:</i> {html.escape(f.advice)}</p></li>"
            for f in report.findings
        )
        out.write_text(
            f"<!doctype html><meta charset='utf-8'><title>rewardkit diagnose</title>"
            f"<h1>{html.escape(report.source)}</h1>"
            f"<img alt='reward curves' src='data:image/png;base64,{image}'>"
            f"<ol>{items or '<li>No findings.</li>'}</ol>",
            encoding="utf-8",
        )


def _line(
    axis: Any,
    steps: Sequence[int],
    values: Sequence[float | None] | None,
    label: str,
    *,
    width: float = 1.2,
    style: str = "-",
    colour: str | None = None,
) -> None:
    if not values or all(v is None for v in values):
        return
    xs = [s for s, v in zip(steps, values, strict=False) if v is not None]
    ys = [v for v in values if v is not None]
    axis.plot(xs, ys, style, label=label, linewidth=width, marker="o", markersize=3, color=colour)
