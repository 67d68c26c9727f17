"""Findings about a run's reward curves, from a :class:`Report`'s metrics and group statistics: dead steps
(zero reward std), stuck rewards, clipped or flat completion lengths, a reward that rises as length falls;
each in plain words with what to try.

>>> from rewardkit.diagnose.report import Report
>>> report = Report(source="run", kind="trl", steps=[1, 2], funcs=["format"],
...                 metrics={"reward_std": [0.3, 0.2], "rewards/format": [1.0, 1.0]})
>>> [(f.kind, f.func, f.steps) for f in find(report)]
[('stuck', 'format', (1, 2))]
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rewardkit.diagnose.report import Finding, Report, count
from rewardkit.groups import EPS

__all__ = ["ADVICE", "ZERO_STD_SHARE", "find"]

ZERO_STD_SHARE = 0.5  # a step is dead when at least this share of its groups have zero reward std
ADVICE = {
    "zero_std": (
        "if a reward is constant at 0, check the format it expects against the completions (`rewardkit "
        "diagnose PATH --rescore NAME` shows why); if the prompts are all solved or all failed, make the"
        " data harder or easier, or raise num_generations."
    ),
    "stuck_0": (
        "check that the completions have the form this reward reads (tags, boxed answers) and that its "
        "columns hold what it expects; rescore to see the reasons."
    ),
    "stuck_1": (
        "the task is too easy for this reward to teach anything; use harder prompts, or drop it or lower"
        " its weight."
    ),
    "zero_std_groups": (
        "a group whose completions all score alike gives no advantage; see the zero_std advice."
    ),
    "length_clipped": (
        "a clipped completion never reaches its answer tags: raise max_completion_length, or teach "
        "brevity first (soft_overlong, a format reward on shorter prompts)."
    ),
    "length_flat": (
        "nothing in the rewards depends on length, or the policy is not changing: check that rewards "
        "vary within groups (reward_std) and that the learning rate is not zero."
    ),
    "reward_up_length_down": (
        "shorter answers may be what is being rewarded (skipped reasoning, bare answers): read a few "
        "late completions; a length or format reward may be needed."
    ),
}


def _le(value: float | None, bound: float) -> bool:
    return value is not None and value <= bound


def _ge(value: float | None, bound: float) -> bool:
    return value is not None and value >= bound


def _stretches(steps: Sequence[int], flags: Sequence[bool]) -> list[tuple[int, int, int]]:
    """Runs of consecutive flagged logged steps: (first step, last step, how many logged steps)."""
    out: list[tuple[int, int, int]] = []
    start: int | None = None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((steps[start], steps[i - 1], i - start))
            start = None
    return out


def _span(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _constant_words(report: Report, steps: set[int] | None) -> str:
    """Which rewards are constant in most groups of ``steps`` (all groups: ``None``), from the completions."""
    parts = []
    for func in report.funcs:
        stats = report.groups.get(func)
        if stats is None or not stats.groups:
            continue
        groups, constant = stats.within(steps) if steps and stats.by_step else (stats.groups, stats.constant)
        if not groups or constant / groups <= ZERO_STD_SHARE:
            continue  # constant in at most half the groups: not what kills them
        values = ", ".join(f"{v:g} ({count(c, 'group')})" for v, c in stats.values.most_common(3))
        example = f'; e.g. "{stats.examples[0]}"' if stats.examples else ""
        parts.append(
            f"{func} is constant in {constant}/{groups} groups ({constant / groups:.0%}; constant at "
            f"{values} over the run){example}"
        )
    return " ".join(p + "." for p in parts)


DEAD_WORDS = (
    "Every completion of such a group gets the same reward, so its advantage, and its policy-gradient term, "
    "are zero."
)


def _dead_findings(report: Report) -> list[Finding]:
    steps, m = report.steps, report.metrics
    std = m.get("reward_std") or [None] * len(steps)
    frac = m.get("frac_reward_zero_std") or [None] * len(steps)
    dead = [_le(std[i], EPS) or _ge(frac[i], ZERO_STD_SHARE) for i in range(len(steps))]
    stretches = _stretches(steps, dead)
    # a few stretches: one finding each; many (dead steps scattered over the run): one finding for all
    blocks = [[s] for s in stretches] if len(stretches) <= 3 else [stretches]
    found = []
    for block in blocks:
        first, last = block[0][0], block[-1][1]
        covered = [i for i, s in enumerate(steps) if dead[i] and first <= s <= last]
        shares = [v for v in (frac[i] for i in covered) if v is not None]
        flat = all(_le(std[i], EPS) for i in covered)
        cause = "reward_std is ~0" if flat else "at least half the groups have zero reward std"
        if shares:
            cause += f"; on average {statistics.fmean(shares):.0%} of groups have zero reward std"
        where = f"{_span(first, last)} ({len(covered)} of {count(len(steps), 'logged step')})"
        if len(block) > 1:
            longest = max(block, key=lambda s: s[2])
            where = (
                f"{len(covered)} of {count(len(steps), 'logged step')} "
                f"({len(covered) / len(steps):.0%}), in "
                f"{len(block)} stretches between steps {first} and {last}"
            )
            if longest[2] > 1:
                where += f" (the longest: {_span(longest[0], longest[1])})"
        constant = _constant_words(report, {steps[i] for i in covered})
        found.append(
            Finding(
                "zero_std",
                f"{where}: {cause}. {DEAD_WORDS} {constant}".rstrip(),
                ADVICE["zero_std"],
                (first, last),
                spans=tuple((a, b) for a, b, _ in block),
            )
        )
    return found


def _stuck_findings(report: Report) -> list[Finding]:
    steps, m = report.steps, report.metrics
    found = []
    for func in report.funcs:
        logged = [(s, v) for s, v in zip(steps, m.get(f"rewards/{func}", []), strict=False) if v is not None]
        if len(logged) < 2:
            continue
        where = f"at all {len(logged)} logged steps that report it ({_span(logged[0][0], logged[-1][0])})"
        for level, words, advice in (
            (0.0, "it never rewards anything (for a penalty, such as soft_overlong, that is the best case)",
             ADVICE["stuck_0"]),
            (1.0, "it rewards everything", ADVICE["stuck_1"]),
        ):  # fmt: skip
            if all(abs(v - level) <= EPS for _, v in logged):
                found.append(
                    Finding(
                        "stuck",
                        f"{func} is {level:.1f} {where}: {words}.",
                        advice,
                        (logged[0][0], logged[-1][0]),
                        func,
                    )
                )
    return found


def find(report: Report) -> list[Finding]:
    if report.steps:
        return [*_dead_findings(report), *_stuck_findings(report), *_length_findings(report)]
    found = []
    for func, stats in report.groups.items():
        if func == "advantages" or not stats.groups or stats.constant_share < ZERO_STD_SHARE:
            continue
        seen = ", ".join(f"{v:g} ({count(c, 'group')})" for v, c in stats.values.most_common(3))
        share = f"{stats.constant}/{stats.groups} groups ({stats.constant_share:.0%})"
        found.append(
            Finding(
                "zero_std_groups",
                f"{func}: {share} have zero std (constant at {seen}). {DEAD_WORDS}",
                ADVICE["zero_std"],
                func=func,
            )
        )
    return found


def _length_findings(report: Report) -> list[Finding]:
    m, steps = report.metrics, report.steps
    lengths = m.get("completion_length") or [None] * len(steps)
    clipped = m.get("clipped_ratio") or [None] * len(steps)
    out = []
    pinned = _stretches(steps, [_ge(c, 0.9) for c in clipped])
    total = sum(c for _, _, c in pinned)
    if pinned and total >= max(2, len(steps) // 10):  # not one stray step
        longest = max(pinned, key=lambda s: s[2])
        shares = [c for s, c in zip(steps, clipped, strict=True) if c is not None and _ge(c, 0.9)]
        out.append(
            Finding(
                "length_clipped",
                f"completions hit the length limit at {total} of {count(len(steps), 'logged step')} "
                f"(the longest stretch: {_span(longest[0], longest[1])}); {statistics.fmean(shares):.0%} of "
                "them are clipped there on average.",
                ADVICE["length_clipped"],
                (pinned[0][0], pinned[-1][1]),
                spans=tuple((a, b) for a, b, _ in pinned),
            )
        )
    points = [(s, v) for s, v in zip(steps, lengths, strict=True) if v is not None]
    values = [v for _, v in points]
    if not out and len(values) >= 3:
        mean = statistics.fmean(values)
        if mean > 0 and (max(values) - min(values)) <= 0.02 * mean:
            limit = [v for v in m.get("max_length", []) if v is not None]
            at_max = f", at the maximum of {limit[0]:g}" if limit and min(limit) <= mean * 1.001 else ""
            first, last = points[0][0], points[-1][0]
            out.append(
                Finding(
                    "length_flat",
                    f"completion length does not move: {min(values):.0f}-{max(values):.0f} over "
                    f"{_span(first, last)}{at_max}.",
                    ADVICE["length_flat"],
                    (first, last),
                )
            )
    rewards = m.get("reward") or [None] * len(steps)
    paired = [
        (s, r, n) for s, r, n in zip(steps, rewards, lengths, strict=True) if r is not None and n is not None
    ]
    if len(paired) >= 4:
        third = max(1, len(paired) // 3)
        early, late = paired[:third], paired[-third:]
        gain = statistics.fmean(r for _, r, _ in late) - statistics.fmean(r for _, r, _ in early)
        before, after = statistics.fmean(n for _, _, n in early), statistics.fmean(n for _, _, n in late)
        if gain >= 0.1 and before > 0 and after <= 0.7 * before:
            first, last = paired[0][0], paired[-1][0]
            out.append(
                Finding(
                    "reward_up_length_down",
                    f"the reward rises by {gain:.2f} while completion length falls from {before:.0f} to "
                    f"{after:.0f} (means of the first and last third of {_span(first, last)}).",
                    ADVICE["reward_up_length_down"],
                    (first, last),
                )
            )
    return out
