"""What ``rewardkit diagnose`` found about a run: the :class:`Report`, its :class:`Finding` items, and the
:class:`DiagnoseError` raised for input it cannot read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rewardkit.groups import GroupStats

__all__ = ["MIN_STEPS", "DiagnoseError", "Finding", "Report", "count"]

#: fewer logged steps than this, and no group of completions, are too little to say "no findings" about
MIN_STEPS = 2


class DiagnoseError(ValueError):
    """The input cannot be read: names the file and, for a bad line, its number."""


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``count(3, "step")`` is ``'3 steps'``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class Finding:
    """One thing the logs show, in plain words, with what to try."""

    kind: str  # zero_std, stuck, length_clipped, length_flat, reward_up_length_down, zero_std_groups
    message: str
    advice: str
    steps: tuple[int, int] | None = None
    func: str | None = None
    spans: tuple[tuple[int, int], ...] = ()  # where it applies, when that is not all of ``steps``


@dataclass
class Report:
    """What :func:`~rewardkit.diagnose.diagnose` found. ``metrics`` maps a name (``reward``, ``reward_std``,
    ``frac_reward_zero_std``, ``completion_length``, ``clipped_ratio``, ``rewards/<func>``) to one value per
    logged step (``None`` where a step did not log it)."""

    source: str
    kind: str  # ms-swift, trl, scored
    steps: list[int] = field(default_factory=list)
    metrics: dict[str, list[float | None]] = field(default_factory=dict)
    funcs: list[str] = field(default_factory=list)
    groups: dict[str, GroupStats] = field(default_factory=dict)  # per reward, plus "advantages"
    completions: int = 0
    rescored: dict[str, Counter[str]] = field(default_factory=dict)  # reward -> reason -> count
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reading skipped or could not match

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view (what ``rewardkit diagnose --json`` prints)."""
        return {
            "source": self.source,
            "kind": self.kind,
            "steps": self.steps,
            "metrics": self.metrics,
            "funcs": self.funcs,
            "completions": self.completions,
            "groups": {
                k: {
                    "groups": g.groups,
                    "constant": g.constant,
                    "constant_share": round(g.constant_share, 4),
                    "mean_std": round(g.mean_std, 6),
                    "constant_values": {str(v): c for v, c in g.values.most_common()},
                    "examples": g.examples,
                }
                for k, g in self.groups.items()
            },
            "rescored": {k: dict(v.most_common()) for k, v in self.rescored.items()},
            "notes": self.notes,
            "findings": [
                {
                    "kind": f.kind,
                    "func": f.func,
                    "steps": f.steps,
                    "spans": f.spans,
                    "message": f.message,
                    "advice": f.advice,
                }
                for f in self.findings
            ],
        }

    def too_little(self) -> bool:
        """Too little to call the run healthy: under :data:`MIN_STEPS` logged steps and no group of scored
        completions (a finding from one step still stands)."""
        return len(self.steps) < MIN_STEPS and not any(g.groups for g in self.groups.values())

    def text(self) -> str:
        """The findings in plain words, then the group and rescoring figures."""
        lines = [
            f"{self.source} ({self.kind}): {count(len(self.steps), 'logged step')}, "
            f"{count(self.completions, 'completion')}"
        ]
        if not self.findings:  # say only what the logs could show: a stuck reward needs two logged steps
            stuck = " and nothing is stuck" if len(self.steps) >= MIN_STEPS else ""
            lines.append(f"No findings: rewards vary within groups{stuck}.")
        for number, finding in enumerate(self.findings, 1):
            lines.append(f"{number}. {finding.message}")
            lines.append(f"   Try: {finding.advice}")
        lines.extend(f"Note: {note}" for note in self.notes)
        for func, counts in self.rescored.items():
            total = sum(counts.values())
            shown = ", ".join(f"{reason} {n / total:.0%}" for reason, n in counts.most_common(5))
            lines.append(f"Rescored {func} ({total} completions): {shown}")
        return "\n".join(lines)
