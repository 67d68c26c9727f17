"""Explain a GRPO run's reward curves: dead groups, stuck rewards, flat or clipped lengths, and why.

Reads what trainers write (nothing is re-run):

* an ms-swift GRPO output directory: ``logging.jsonl`` (one line per logged step) and, with
  ``--log_completions true``, ``completions.jsonl`` (one line per logged step holding column lists: ``step``,
  ``prompt``, ``completion``, one list per reward function, ``advantages``, dataset columns);
* a TRL output or checkpoint directory: ``trainer_state.json`` (its ``log_history``);
* a JSONL scored by ``rewardkit score`` (rows with ``scores`` and a ``group`` or ``prompt`` field).

>>> import json, pathlib, tempfile
>>> run = pathlib.Path(tempfile.mkdtemp())
>>> lines = [{"global_step/max_steps": f"{s}/3", "reward": 0.0, "reward_std": 0.0,
...           "frac_reward_zero_std": 1.0, "rewards/format/mean": 0.0,
...           "completions/mean_length": 512.0, "completions/clipped_ratio": 1.0} for s in (1, 2, 3)]
>>> _ = (run / "logging.jsonl").write_text("".join(json.dumps(line) + "\\n" for line in lines))
>>> report = diagnose(run)
>>> [f.kind for f in report.findings]
['zero_std', 'stuck', 'length_clipped']
>>> report.findings[1].message[:60]
'format is 0.0 at all 3 logged steps that report it (steps 1-'
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rewardkit.lengths import group_text

__all__ = ["DiagnoseError", "Finding", "GroupStats", "GroupTracker", "Report", "diagnose", "plot"]

EPS = 1e-6
ZERO_STD_SHARE = 0.5  # a step is dead when at least this share of its groups have zero reward std
EXAMPLES = 3  # completions quoted per constant reward
EXAMPLE_CHARS = 160
METRIC_ALIASES = {  # what the plots and findings read, from the names trainers log
    "completion_length": ("completions/mean_length", "completion_length"),
    "clipped_ratio": ("completions/clipped_ratio",),
    "max_length": ("completions/max_length",),
    "reward": ("reward",),
    "reward_std": ("reward_std",),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
}
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
LOG_NAMES = ("logging.jsonl", "completions.jsonl", "trainer_state.json")
NOT_REWARDS = {
    "num_turns",
    "step",
    "prompt",
    "completion",
    "advantages",
    "entropy",
    "group",
    "solution",
    "scores",
}


class DiagnoseError(ValueError):
    """The input cannot be read: names the file and, for a bad line, its number."""


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
class GroupStats:
    """One reward over the groups of completions (same ``group``, else same prompt and step)."""

    groups: int = 0
    constant: int = 0
    values: Counter[float] = field(default_factory=Counter)  # the value of each constant group
    examples: list[str] = field(default_factory=list)  # completions of constant groups
    std_sum: float = 0.0
    by_step: dict[int, list[int]] = field(default_factory=dict)  # step -> [groups, constant groups]

    def within(self, steps: set[int]) -> tuple[int, int]:
        """(groups, constant groups) of the given steps."""
        pairs = [v for s, v in self.by_step.items() if s in steps]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    @property
    def constant_share(self) -> float:
        return self.constant / self.groups if self.groups else 0.0

    @property
    def mean_std(self) -> float:
        return self.std_sum / self.groups if self.groups else 0.0

    def add(self, values: Sequence[Any], completions: Sequence[Any], step: int | None = None) -> None:
        known = [float(v) for v in values if _number(v) is not None]
        if len(known) < 2:  # a group of one says nothing about variance
            return
        mean = sum(known) / len(known)
        spread = sum((v - mean) ** 2 for v in known)
        self.add_moments(len(known), spread, max(known) - min(known), known[0], completions[:1], step)

    def add_moments(
        self, n: int, squares: float, width: float, first: float, example: Sequence[Any], step: int | None
    ) -> None:
        """One group from its size, sum of squared deviations, max - min and first value."""
        if n < 2:
            return
        self.groups += 1
        self.std_sum += math.sqrt(max(squares, 0.0) / (n - 1))  # the sample std, as TRL and ms-swift log
        counts = self.by_step.setdefault(step, [0, 0]) if step is not None else None
        if counts is not None:
            counts[0] += 1
        if width <= EPS:
            self.constant += 1
            if counts is not None:
                counts[1] += 1
            self.values[round(first, 6)] += 1
            if len(self.examples) < EXAMPLES and example:
                self.examples.append(_snippet(example[0]))


def _snippet(completion: Any) -> str:
    text = completion if isinstance(completion, str) else json.dumps(completion, ensure_ascii=False)
    return text[:EXAMPLE_CHARS].replace("\n", "\\n")


def group_key(row: dict[str, Any]) -> str | None:
    """The GRPO group of a scored row: its ``group``, else its ``prompt``, within its ``step`` when it has one
    (``None`` when it has neither)."""
    value = row.get("group")
    if value is None:
        value = row.get("prompt")
    if value is None:
        return None
    text = group_text(value)
    step = row.get("step")
    return text if step is None else f"{step}\x00{text}"


class GroupTracker:
    """Groups of rows seen in any order (a scored JSONL): running moments per group and reward (Welford),
    and a short first completion per group; memory grows with groups, not rows."""

    def __init__(self) -> None:
        self._moments: dict[tuple[str, str], list[float]] = {}  # n, mean, squares, min, max, first
        self._first: dict[str, str] = {}

    def add(self, key: str, scores: dict[str, Any], completion: Any) -> None:
        if key not in self._first:
            self._first[key] = _snippet(completion)
        for func, value in scores.items():
            number = _number(value)
            if number is None:
                continue
            m = self._moments.get((key, func))
            if m is None:
                self._moments[(key, func)] = [1.0, number, 0.0, number, number, number]
                continue
            m[0] += 1
            delta = number - m[1]
            m[1] += delta / m[0]
            m[2] += delta * (number - m[1])
            m[3], m[4] = min(m[3], number), max(m[4], number)

    def stats(self) -> dict[str, GroupStats]:
        out: dict[str, GroupStats] = {}
        for (key, func), (n, _, squares, low, high, first) in self._moments.items():
            out.setdefault(func, GroupStats()).add_moments(
                int(n), squares, high - low, first, [self._first[key]], None
            )
        return out


@dataclass
class Report:
    """What :func:`diagnose` found. ``metrics`` maps a name (``reward``, ``reward_std``,
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

    def text(self) -> str:
        """The findings in plain words, then the group and rescoring figures."""
        lines = [
            f"{self.source} ({self.kind}): {_count(len(self.steps), 'logged step')}, "
            f"{_count(self.completions, 'completion')}"
        ]
        if not self.findings:
            lines.append("No findings: rewards vary within groups and nothing is stuck.")
        for number, finding in enumerate(self.findings, 1):
            lines.append(f"{number}. {finding.message}")
            lines.append(f"   Try: {finding.advice}")
        lines.extend(f"Note: {note}" for note in self.notes)
        for func, counts in self.rescored.items():
            total = sum(counts.values())
            shown = ", ".join(f"{reason} {count / total:.0%}" for reason, count in counts.most_common(5))
            lines.append(f"Rescored {func} ({total} completions): {shown}")
        return "\n".join(lines)


# ---------------------------------------------------------------- reading


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file. A last line cut off mid-write (a run still training) is skipped."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DiagnoseError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:
                if not line.endswith("\n"):
                    return  # the line being written
                raise DiagnoseError(f"{path}, line {number}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise DiagnoseError(f"{path}, line {number}: expected a JSON object")
            yield number, row


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _add_log(report: Report, step: int, entry: dict[str, Any]) -> None:
    index = len(report.steps)
    report.steps.append(step)
    wanted = {
        name: next((entry[k] for k in keys if k in entry), None) for name, keys in METRIC_ALIASES.items()
    }
    wanted.update({f"rewards/{k.split('/')[1]}": v for k, v in entry.items() if _is_func_mean(k)})
    for name, value in wanted.items():
        column = report.metrics.setdefault(name, [None] * index)
        column.append(_number(value))
    for column in report.metrics.values():  # a metric this step did not log
        if len(column) < index + 1:
            column.append(None)


def _is_func_mean(key: str) -> bool:
    parts = key.split("/")
    return len(parts) == 3 and parts[0] == "rewards" and parts[2] == "mean"


def _read_swift_log(report: Report, path: Path) -> None:
    for _, entry in _lines(path):
        marker = entry.get("global_step/max_steps")
        if not isinstance(marker, str) or "/" not in marker or "reward" not in entry:
            continue  # the run's summary line, an eval line
        try:
            step = int(marker.split("/", 1)[0])
        except ValueError:
            continue
        _add_log(report, step, entry)


def _read_trainer_state(report: Report, path: Path) -> None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DiagnoseError(f"cannot read {path}: {exc}") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise DiagnoseError(f"{path}: no log_history (is it a trainer_state.json?)")
    for entry in history:
        if isinstance(entry, dict) and "reward" in entry and isinstance(entry.get("step"), int):
            _add_log(report, entry["step"], entry)


def _column(table: dict[str, Any], name: str, n: int, path: Path, number: int) -> list[Any] | None:
    """A column of a completions line: a list of ``n`` values, ``None`` when absent; else DiagnoseError."""
    value = table.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        size = len(value) if isinstance(value, list) else type(value).__name__
        raise DiagnoseError(f"{path}, line {number}: column {name!r} has {size} values for {n} completions")
    return value


def _step_number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _tables(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines of a completions log, each with a ``completion`` list; a line holding the same completions
    as the line before (ms-swift logs its buffer again when it logs more often than it generates) is
    skipped."""
    previous: int | None = None
    for number, table in _lines(path):
        completions = table.get("completion")
        if not isinstance(completions, list):
            raise DiagnoseError(f"{path}, line {number}: no 'completion' list")
        fingerprint = hash(tuple(c if isinstance(c, str) else json.dumps(c) for c in completions))
        if fingerprint != previous:
            yield number, table
        previous = fingerprint


def _read_completions(report: Report, path: Path) -> None:
    """ms-swift's completions.jsonl, one logged step a line, streamed: memory is one line at a time. A line
    holding the same completions as the line before (ms-swift logs its buffer again when it logs more often
    than it generates) is not counted twice."""
    known = set(report.funcs)
    for number, table in _tables(path):
        completions = table["completion"]
        n = len(completions)
        funcs = [k for k in table if k in known] or [
            k
            for k, v in table.items()
            if k not in NOT_REWARDS and isinstance(v, list) and v and all(_number(x) is not None for x in v)
        ]
        for func in funcs:
            if func not in report.funcs:
                report.funcs.append(func)
        prompts = _column(table, "prompt", n, path, number) or [""] * n
        steps = _column(table, "step", n, path, number) or [None] * n
        columns = {func: _column(table, func, n, path, number) for func in funcs}
        advantages = _column(table, "advantages", n, path, number)
        groups: dict[tuple[int | None, str], list[int]] = {}
        for i in range(n):
            groups.setdefault((_step_number(steps[i]), group_text(prompts[i])), []).append(i)
        for (step, _), rows in groups.items():
            texts = [completions[rows[0]]]
            for func, column in columns.items():
                if column is not None:  # add() keeps the finite numbers only
                    report.groups.setdefault(func, GroupStats()).add([column[i] for i in rows], texts, step)
            if advantages is not None:
                report.groups.setdefault("advantages", GroupStats()).add(
                    [advantages[i] for i in rows], texts, step
                )
        report.completions += n


def _read_scored(report: Report, path: Path) -> None:
    tracker = GroupTracker()
    for number, row in _lines(path):
        scores = row.get("scores")
        if not isinstance(scores, dict):
            raise DiagnoseError(f"{path}, line {number}: no 'scores' (score the file with `rewardkit score`)")
        key = group_key(row)
        if key is None:
            raise DiagnoseError(
                f"{path}, line {number}: no 'group' or 'prompt' field to group completions by"
            )
        tracker.add(key, scores, row.get("completion"))
        report.completions += 1
    report.groups = tracker.stats()
    report.funcs = [k for k in report.groups]


def _locate(path: Path) -> tuple[str, Path | None, Path | None]:
    """(kind, log file, completions file) for a file, or for the newest run below a directory."""
    if not path.exists():
        raise DiagnoseError(f"{path}: no such file or directory")
    if path.is_file():
        if path.name == "trainer_state.json":
            return "trl", path, None
        if path.name == "completions.jsonl":
            log = path.with_name("logging.jsonl")
            return "ms-swift", log if log.is_file() else None, path
        if path.name == "logging.jsonl":
            completions = path.with_name("completions.jsonl")
            return "ms-swift", path, completions if completions.is_file() else None
        return "scored", path, None
    try:
        found = [p for name in LOG_NAMES for p in path.rglob(name) if p.is_file()]
        newest = max(found, key=lambda p: p.stat().st_mtime, default=None)
    except OSError as exc:
        raise DiagnoseError(f"cannot search {path}: {exc.strerror}") from None
    if newest is None:
        raise DiagnoseError(f"{path}: no logging.jsonl, completions.jsonl or trainer_state.json below it")
    return _locate(newest)


# ---------------------------------------------------------------- findings


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
        values = ", ".join(f"{v:g} ({_count(c, 'group')})" for v, c in stats.values.most_common(3))
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
        where = f"{_span(first, last)} ({len(covered)} of {_count(len(steps), 'logged step')})"
        if len(block) > 1:
            longest = max(block, key=lambda s: s[2])
            where = (
                f"{len(covered)} of {_count(len(steps), 'logged step')} "
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


def _find(report: Report) -> list[Finding]:
    if report.steps:
        return [*_dead_findings(report), *_stuck_findings(report), *_length_findings(report)]
    found = []
    for func, stats in report.groups.items():
        if func == "advantages" or not stats.groups or stats.constant_share < ZERO_STD_SHARE:
            continue
        seen = ", ".join(f"{v:g} ({_count(c, 'group')})" for v, c in stats.values.most_common(3))
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
                f"completions hit the length limit at {total} of {_count(len(steps), 'logged step')} "
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


# ---------------------------------------------------------------- rescoring


PROMPT_FIELDS = ("prompt", "query", "problem", "question")
#: the last user turn inside a templated prompt: ChatML (Qwen), Llama 3, and a plain "user:" line
_USER_TURN = re.compile(
    r"<\|im_start\|>user\n(.*?)<\|im_end\|>|<\|start_header_id\|>user<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>",
    re.DOTALL,
)


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: the text ones
        texts = [str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


def _user_message(prompt: Any) -> str | None:
    """The question a prompt asks: a string as it is, a chat's last user message."""
    if isinstance(prompt, list):
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return _text(users[-1]) if users else None
    return _text(prompt)


def _dataset_index(data: Path) -> dict[str, dict[str, Any]]:
    """Dataset rows by their question: ``prompt``/``query``/``problem``/``question``, else the last user
    message of ``messages``."""
    index: dict[str, dict[str, Any]] = {}
    for number, row in _lines(data):
        found = next((row[f] for f in PROMPT_FIELDS if row.get(f) is not None), None)
        text = _user_message(found if found is not None else row.get("messages"))
        if not text:
            raise DiagnoseError(
                f"{data}, line {number}: no prompt (a {', '.join(PROMPT_FIELDS)} or messages field)"
            )
        index[text.strip()] = row
    return index


class _Join:
    """Logged prompts to dataset rows: the prompt itself, or its last user turn (a chat template around it),
    looked up exactly; else the longest dataset question it contains. Remembers at most 100,000 prompts."""

    def __init__(self, index: dict[str, dict[str, Any]]) -> None:
        self.index, self.cache = index, dict[str, dict[str, Any] | None]()
        self.by_length = sorted(index, key=len, reverse=True)
        self.missed = 0

    def row(self, prompt: Any) -> dict[str, Any]:
        text = _user_message(prompt) or ""
        if text in self.cache:
            found = self.cache[text]
        else:
            turns = [next(g for g in m.groups() if g is not None) for m in _USER_TURN.finditer(text)]
            candidates = [text.strip(), *(t.strip() for t in reversed(turns))]
            found = next((self.index[c] for c in candidates if c in self.index), None)
            if found is None and len(self.by_length) * len(text) <= 50_000_000:  # the scan stays bounded
                found = next((self.index[k] for k in self.by_length if k in text), None)
            if len(self.cache) < 100_000:
                self.cache[text] = found
        if found is None:
            self.missed += 1
        return found or {}


def _rows_for_rescoring(
    report: Report, kind: str, log: Path | None, completions: Path | None
) -> Iterable[dict[str, Any]]:
    if kind == "scored" and log is not None:
        for _, row in _lines(log):
            yield row
    elif completions is not None:
        for _, table in _tables(completions):
            names = [k for k, v in table.items() if isinstance(v, list)]
            for i in range(len(table.get("completion", []))):
                yield {k: table[k][i] for k in names if i < len(table[k])}


def _rescore(
    report: Report, specs: Sequence[Any], rows: Iterable[dict[str, Any]], data: Path | None, batch: int = 1024
) -> None:
    """Score the logged completions again; count each reward's reasons ("= 0" for a verdict without one:
    the answer was read and judged on its merits)."""
    from rewardkit.core import ColumnError
    from rewardkit.engine import resolve

    resolved = resolve(list(specs))
    join = _Join(_dataset_index(data)) if data is not None else None
    counts = {key: Counter[str]() for key, _, _ in resolved}

    def flush(chunk: list[dict[str, Any]]) -> None:
        names = {k for row in chunk for k in row} - {"completion"}
        columns = {name: [row.get(name) for row in chunk] for name in names}
        for key, reward, _ in resolved:
            texts: list[Any] = [row.get("completion") for row in chunk]
            try:
                scored = reward.score_detailed(texts, **cast(dict[str, Any], columns))
            except ColumnError as exc:
                hint = " (pass the dataset with --data to join its columns by prompt)" if join is None else ""
                raise DiagnoseError(f"--rescore {key}: {exc}{hint}") from None
            counts[key].update(
                reason or ("=" + (f" {value:g}" if value is not None else " None"))
                for value, reason in zip(scored.values, scored.reasons, strict=True)
            )

    chunk: list[dict[str, Any]] = []
    for row in rows:
        if join is not None:
            row = {**join.row(row.get("prompt")), **row}
        chunk.append(row)
        if len(chunk) >= batch:
            flush(chunk)
            chunk = []
    if chunk:
        flush(chunk)
    report.rescored.update(counts)
    if join is not None and join.missed:
        report.notes.append(f"--data: {_count(join.missed, 'logged completion')} matched no dataset prompt")


# ---------------------------------------------------------------- the entry point


def diagnose(path: str | Path, *, rescore: Sequence[Any] = (), data: str | Path | None = None) -> Report:
    """Read a run (or a scored JSONL) and say what its reward curves show.

    Args:
        path: an ms-swift output directory, a TRL output or checkpoint directory (searched below for the
            newest log), one of their files, or a JSONL scored by ``rewardkit score``.
        rescore: rewards (names or :class:`~rewardkit.engine.FuncSpec`) to score the logged completions with
            again; their reasons are counted in ``report.rescored``.
        data: the dataset (JSONL) whose columns the rescored rewards need (``solution``...), joined by prompt.

    Raises:
        DiagnoseError: the input cannot be read (naming the file and line), holds no GRPO reward metrics, or
        there is nothing to rescore.
    """
    kind, log, completions = _locate(Path(path))
    read = [p for p in (log, completions) if p is not None]
    report = Report(source=", ".join(str(p) for p in read), kind=kind)
    if rescore and kind != "scored" and completions is None:
        raise DiagnoseError(
            f"{report.source}: nothing to rescore: the run has no completions log (ms-swift: "
            "--log_completions true; TRL logs none)"
        )
    if kind == "trl" and log is not None:
        _read_trainer_state(report, log)
    elif kind == "ms-swift" and log is not None:
        _read_swift_log(report, log)
    if kind != "scored":  # the rewards the log reports; the completions log may add its own
        report.funcs = [k.split("/", 1)[1] for k in report.metrics if k.startswith("rewards/")]
    if kind == "ms-swift" and completions is not None:
        _read_completions(report, completions)
    elif kind == "scored" and log is not None:
        _read_scored(report, log)
    has_metrics = any(any(v is not None for v in values) for values in report.metrics.values())
    if not has_metrics and not any(g.groups for g in report.groups.values()):
        raise DiagnoseError(
            f"{report.source}: no GRPO reward metrics (reward, reward_std, rewards/<func>/mean) and no group "
            "of two or more scored completions: nothing to diagnose"
        )
    report.findings = _find(report)
    if rescore:
        _rescore(
            report, rescore, _rows_for_rescoring(report, kind, log, completions), Path(data) if data else None
        )
    return report


# ---------------------------------------------------------------- the figure


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
        raise DiagnoseError("plotting needs matplotlib: pip install 'rewardkit[plot]'") from None
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
