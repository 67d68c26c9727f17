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
>>> report.findings[1].message
'format is 0.0 at every logged step (steps 1-3): it never rewards anything.'
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

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
NOT_REWARDS = {"step", "prompt", "completion", "advantages", "entropy", "group", "solution", "scores"}


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

    def add(
        self, values: Sequence[float | None], completions: Sequence[Any], step: int | None = None
    ) -> None:
        known = [v for v in values if v is not None and isinstance(v, int | float) and math.isfinite(v)]
        if len(known) < 2:  # a group of one says nothing about variance
            return
        self.groups += 1
        mean = sum(known) / len(known)  # statistics.pstdev is exact and 20x slower: floats are enough here
        self.std_sum += math.sqrt(max(sum((v - mean) ** 2 for v in known) / len(known), 0.0))
        counts = self.by_step.setdefault(step, [0, 0]) if step is not None else None
        if counts is not None:
            counts[0] += 1
        if max(known) - min(known) <= EPS:
            self.constant += 1
            if counts is not None:
                counts[1] += 1
            self.values[round(known[0], 6)] += 1
            if len(self.examples) < EXAMPLES and completions:
                text = completions[0] if isinstance(completions[0], str) else json.dumps(completions[0])
                self.examples.append(text[:EXAMPLE_CHARS].replace("\n", "\\n"))


class GroupTracker:
    """Groups of rows seen in any order (a scored JSONL): per group key, each reward's values. Memory is
    one float per row and reward."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, list[float | None]]] = {}
        self._first: dict[str, Any] = {}

    def add(self, key: str, scores: dict[str, float | None], completion: Any) -> None:
        group = self._values.setdefault(key, {})
        self._first.setdefault(key, completion)
        for func, value in scores.items():
            group.setdefault(func, []).append(value)

    def stats(self) -> dict[str, GroupStats]:
        out: dict[str, GroupStats] = {}
        for key, funcs in self._values.items():
            for func, values in funcs.items():
                out.setdefault(func, GroupStats()).add(values, [self._first[key]])
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
            "findings": [
                {"kind": f.kind, "func": f.func, "steps": f.steps, "message": f.message, "advice": f.advice}
                for f in self.findings
            ],
        }

    def text(self) -> str:
        """The findings in plain words, then the group and rescoring figures."""
        lines = [
            f"{self.source} ({self.kind}): {len(self.steps)} logged steps, {self.completions} completions"
        ]
        if not self.findings:
            lines.append("No finding: rewards vary within groups and nothing is stuck.")
        for number, finding in enumerate(self.findings, 1):
            lines.append(f"{number}. {finding.message}")
            lines.append(f"   Try: {finding.advice}")
        for func, counts in self.rescored.items():
            total = sum(counts.values())
            shown = ", ".join(f"{reason} {count / total:.0%}" for reason, count in counts.most_common(5))
            lines.append(f"Rescored {func} ({total} completions): {shown}")
        return "\n".join(lines)


# ---------------------------------------------------------------- reading


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
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
            except ValueError as exc:
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


def _read_completions(report: Report, path: Path) -> None:
    """ms-swift's completions.jsonl, one logged step a line, streamed: memory is one line at a time."""
    known = set(report.funcs)
    for number, table in _lines(path):
        completions = table.get("completion")
        if not isinstance(completions, list):
            raise DiagnoseError(f"{path}, line {number}: no 'completion' list")
        n = len(completions)
        funcs = [k for k in table if k in known] or [
            k
            for k, v in table.items()
            if k not in NOT_REWARDS and isinstance(v, list) and v and all(_number(x) is not None for x in v)
        ]
        for func in funcs:
            if func not in report.funcs:
                report.funcs.append(func)
        prompts = table.get("prompt") or [""] * n
        steps = table.get("step") or [""] * n
        groups: dict[tuple[str, str], list[int]] = {}
        for i in range(n):
            prompt = prompts[i] if isinstance(prompts[i], str) else json.dumps(prompts[i], sort_keys=True)
            groups.setdefault((str(steps[i]), prompt), []).append(i)
        advantages = table.get("advantages")
        for (step_text, _), rows in groups.items():
            texts = [completions[i] for i in rows]
            step = int(step_text) if step_text.isdigit() else None
            for func in funcs:
                column = table[func]  # add() keeps the finite numbers only
                report.groups.setdefault(func, GroupStats()).add([column[i] for i in rows], texts, step)
            if isinstance(advantages, list) and len(advantages) == n:
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
        key = row.get("group", row.get("prompt"))
        if key is None:
            raise DiagnoseError(
                f"{path}, line {number}: no 'group' or 'prompt' field to group completions by"
            )
        tracker.add(
            key if isinstance(key, str) else json.dumps(key, sort_keys=True), scores, row.get("completion")
        )
        report.completions += 1
    report.groups = tracker.stats()
    report.funcs = [k for k in report.groups]


def _locate(path: Path) -> tuple[str, Path | None, Path | None]:
    """(kind, log file, completions file) for a file or a directory searched below."""
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
    for name in ("logging.jsonl", "completions.jsonl", "trainer_state.json"):
        found = sorted(path.rglob(name), key=lambda p: p.stat().st_mtime)
        if found:
            return _locate(found[-1])  # the newest run below PATH
    raise DiagnoseError(f"{path}: no logging.jsonl, completions.jsonl or trainer_state.json below it")


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


def _constant_words(report: Report, steps: set[int]) -> str:
    """Which rewards are constant in most groups of ``steps`` (from the completions log, if any)."""
    parts = []
    for func in report.funcs:
        stats = report.groups.get(func)
        if stats is None or not stats.groups:
            continue
        groups, constant = stats.within(steps) if stats.by_step else (stats.groups, stats.constant)
        if not groups or constant / groups <= ZERO_STD_SHARE:
            continue  # constant in at most half the groups: not what kills them
        values = ", ".join(f"{v:g} in {c}" for v, c in stats.values.most_common(3))
        example = f'; e.g. "{stats.examples[0]}"' if stats.examples else ""
        parts.append(
            f"{func} is constant in {constant}/{groups} groups ({constant / groups:.0%}; values over the "
            f"run: {values}){example}"
        )
    return " ".join(p + "." for p in parts)


def _find(report: Report) -> list[Finding]:
    found: list[Finding] = []
    m, steps = report.metrics, report.steps
    if steps:
        std = m.get("reward_std") or [None] * len(steps)
        frac = m.get("frac_reward_zero_std") or [None] * len(steps)
        dead = [_le(std[i], EPS) or _ge(frac[i], ZERO_STD_SHARE) for i in range(len(steps))]
        stretches = _stretches(steps, dead)
        # a few stretches: one finding each; many (dead steps scattered over the run): one finding for all
        blocks = [[s] for s in stretches] if len(stretches) <= 3 else [stretches]
        for block in blocks:
            covered = {s for s, d in zip(steps, dead, strict=True) if d and block[0][0] <= s <= block[-1][1]}
            shares = [v for s, v in zip(steps, frac, strict=True) if s in covered and v is not None]
            share = (
                f"; on average {statistics.fmean(shares):.0%} of groups have zero reward std"
                if shares
                else ""
            )
            first, last = block[0][0], block[-1][1]
            where = f"{_span(first, last)} ({len(covered)} of {len(steps)} logged steps)"
            if len(block) > 1:
                longest = max(block, key=lambda s: s[2])
                where = (
                    f"{len(covered)} of {len(steps)} logged steps ({len(covered) / len(steps):.0%}), in "
                    f"{len(block)} stretches between steps {first} and {last} (the longest: "
                    f"{_span(longest[0], longest[1])})"
                )
            found.append(
                Finding(
                    "zero_std",
                    f"{where}: reward_std is ~0{share}. Every completion of such a group gets the same "
                    f"reward, so its advantages, and the gradient, are zero. "
                    f"{_constant_words(report, covered)}".rstrip(),
                    ADVICE["zero_std"],
                    (first, last),
                    spans=tuple((a, b) for a, b, _ in block),
                )
            )
        for func in report.funcs or [k.split("/", 1)[1] for k in m if k.startswith("rewards/")]:
            values = [v for v in m.get(f"rewards/{func}", []) if v is not None]
            if len(values) < 2:
                continue
            for level, words, advice in (
                (0.0, "it never rewards anything", ADVICE["stuck_0"]),
                (1.0, "it rewards everything", ADVICE["stuck_1"]),
            ):
                if all(abs(v - level) <= EPS for v in values):
                    span = _span(steps[0], steps[-1])
                    found.append(
                        Finding(
                            "stuck",
                            f"{func} is {level:.1f} at every logged step ({span}): {words}.",
                            advice,
                            (steps[0], steps[-1]),
                            func,
                        )
                    )
        found.extend(_length_findings(report))
    elif report.groups:
        for func, stats in report.groups.items():
            if stats.groups and stats.constant_share >= ZERO_STD_SHARE:
                seen = ", ".join(f"{v:g} in {c}" for v, c in stats.values.most_common(3))
                share = f"{stats.constant}/{stats.groups} groups ({stats.constant_share:.0%})"
                found.append(
                    Finding(
                        "zero_std_groups",
                        f"{func}: {share} have zero std (values: {seen}).",
                        ADVICE["zero_std_groups"],
                        func=func,
                    )
                )
    return found


def _length_findings(report: Report) -> list[Finding]:
    m, steps = report.metrics, report.steps
    lengths = m.get("completion_length", [])
    points = [(s, v) for s, v in zip(steps, lengths, strict=False) if v is not None]
    if len(points) < 2:
        return []
    values = [v for _, v in points]
    clipped = [v for v in m.get("clipped_ratio", []) if v is not None]
    limit = [v for v in m.get("max_length", []) if v is not None]
    first, last = points[0][0], points[-1][0]
    if clipped and statistics.fmean(clipped) >= 0.9:
        return [
            Finding(
                "length_clipped",
                f"completions hit the length limit: {statistics.fmean(clipped):.0%} are clipped on average "
                f"({_span(first, last)}; mean length {statistics.fmean(values):.0f}).",
                ADVICE["length_clipped"],
                (first, last),
            )
        ]
    out = []
    mean = statistics.fmean(values)
    if len(values) >= 3 and mean > 0 and (max(values) - min(values)) <= 0.02 * mean:
        pinned = f", at the maximum of {limit[0]:g}" if limit and min(limit) <= mean * 1.001 else ""
        out.append(
            Finding(
                "length_flat",
                f"completion length does not move: {min(values):.0f}-{max(values):.0f} over "
                f"{_span(first, last)}{pinned}.",
                ADVICE["length_flat"],
                (first, last),
            )
        )
    rewards = [v for v in m.get("reward", []) if v is not None]
    if len(values) >= 4 and len(rewards) >= 4:
        third = max(1, len(values) // 3)
        reward_gain = statistics.fmean(rewards[-third:]) - statistics.fmean(rewards[:third])
        early, late = statistics.fmean(values[:third]), statistics.fmean(values[-third:])
        if reward_gain >= 0.1 and early > 0 and late <= 0.7 * early:
            out.append(
                Finding(
                    "reward_up_length_down",
                    f"the reward rises by {reward_gain:.2f} while completion length falls from {early:.0f} "
                    f"to {late:.0f} (means of the first and last third of {_span(first, last)}).",
                    ADVICE["reward_up_length_down"],
                    (first, last),
                )
            )
    return out


# ---------------------------------------------------------------- rescoring


def _dataset_index(data: Path) -> dict[str, dict[str, Any]]:
    """Dataset rows by their prompt text (``prompt``, else the last user message of ``messages``)."""
    index: dict[str, dict[str, Any]] = {}
    for number, row in _lines(data):
        prompt = row.get("prompt")
        if isinstance(prompt, list) or prompt is None:
            messages = prompt if isinstance(prompt, list) else row.get("messages") or []
            users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
            prompt = users[-1] if users else None
        if not isinstance(prompt, str) or not prompt:
            raise DiagnoseError(f"{data}, line {number}: no prompt (a 'prompt' or 'messages' field)")
        index[prompt] = row
    return index


def _joined(
    prompt: Any, index: dict[str, dict[str, Any]], cache: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The dataset row of a logged prompt: the same text, or (a chat template around it) one that holds it."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    if text not in cache:
        row = index.get(text)
        if row is None:
            row = next((r for key, r in index.items() if key in text), {})
        cache[text] = row
    return cache[text]


def _rows_for_rescoring(
    report: Report, kind: str, log: Path | None, completions: Path | None
) -> Iterable[dict[str, Any]]:
    if kind == "scored" and log is not None:
        for _, row in _lines(log):
            yield row
    elif completions is not None:
        for _, table in _lines(completions):
            names = [k for k, v in table.items() if isinstance(v, list)]
            for i in range(len(table.get("completion", []))):
                yield {k: table[k][i] for k in names if i < len(table[k])}
    else:
        raise DiagnoseError(
            f"{report.source}: nothing to rescore: the run has no completions log "
            "(ms-swift: --log_completions true)"
        )


def _rescore(
    report: Report, specs: Sequence[Any], rows: Iterable[dict[str, Any]], data: Path | None, batch: int = 1024
) -> None:
    from rewardkit.engine import resolve

    resolved = resolve(list(specs))
    index = _dataset_index(data) if data is not None else {}
    cache: dict[str, dict[str, Any]] = {}
    counts = {key: Counter[str]() for key, _, _ in resolved}

    def flush(chunk: list[dict[str, Any]]) -> None:
        names = {k for row in chunk for k in row} - {"completion"}
        columns = {name: [row.get(name) for row in chunk] for name in names}
        for key, reward, _ in resolved:
            texts: list[Any] = [row.get("completion") for row in chunk]
            scored = reward.score_detailed(texts, **cast(dict[str, Any], columns))
            counts[key].update(reason or "ok" for reason in scored.reasons)

    chunk: list[dict[str, Any]] = []
    for row in rows:
        if index:
            row = {**_joined(row.get("prompt"), index, cache), **row}
        chunk.append(row)
        if len(chunk) >= batch:
            flush(chunk)
            chunk = []
    if chunk:
        flush(chunk)
    report.rescored.update(counts)


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
        DiagnoseError: the input cannot be read (naming the file and line).
    """
    root = Path(path)
    kind, log, completions = _locate(root)
    report = Report(source=str(root), kind=kind)
    if kind == "trl" and log is not None:
        _read_trainer_state(report, log)
    elif kind == "ms-swift":
        if log is not None:
            _read_swift_log(report, log)
        report.funcs = [k.split("/", 1)[1] for k in report.metrics if k.startswith("rewards/")]
        if completions is not None:
            _read_completions(report, completions)
    elif log is not None:
        _read_scored(report, log)
    if kind != "scored":
        report.funcs = report.funcs or [
            k.split("/", 1)[1] for k in report.metrics if k.startswith("rewards/")
        ]
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
        if axis.get_legend_handles_labels()[0]:
            axis.legend(loc="lower right", fontsize=8)
    figure.suptitle(f"{report.source} ({report.kind}): {len(report.findings)} finding(s)", fontsize=10)
    figure.tight_layout()
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
            f"<ol>{items or '<li>No finding.</li>'}</ol>",
            encoding="utf-8",
        )
    plt.close(figure)
    return out


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
