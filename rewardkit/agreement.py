"""How far a reward agrees with labelled data: the check a user runs before trusting a verifier.

A labelled file is JSON lines (optionally gzipped), one completion a line with the columns the reward reads
and a label (1 correct, 0 wrong; rows without a label are skipped). A reward's value counts as "correct"
when it reaches ``threshold`` (0.5: 1.0 of a binary reward is correct, 0.0 and ``None`` are not). A
graded reward is measured the same way: ``llm_judge`` gives N/10, so ``threshold=0.7`` counts a judge's
7/10 and up as "correct" (its rows need the question, and usually the ``solution``); a disagreement
shows the judge's reply.

Reported per reward (and per group with ``by``): agreement, false positives (label 0 scored correct: the
errors a policy can learn to exploit), false negatives (label 1 scored wrong: lost signal), the commonest
reasons among the disagreements and a few of them with what the reward read (its ``details``).

>>> rows = [{"completion": "so \\\\boxed{4}", "solution": "4", "label": 1},
...         {"completion": "so \\\\boxed{5}", "solution": "4", "label": 1}]
>>> [report] = measure(rows, "format:tags=[\\"think\\"]")
>>> report.n, report.agree, report.false_negatives
(2, 0, 2)
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.core import RewardError, Scored
from rewardkit.engine import resolve
from rewardkit.spec import RewardSpec

__all__ = ["AgreementReport", "compare", "half", "measure", "read_labelled"]

SHOW_CHARS = 160  # how much of an answer, a gold or a completion's end a shown disagreement keeps


@dataclass
class AgreementReport:
    """One reward's agreement with the labels over one group of rows."""

    func: str
    group: str | None
    n: int
    agree: int
    positives: int  # rows labelled correct
    false_positives: int  # labelled wrong, scored correct
    false_negatives: int  # labelled correct, scored wrong
    reasons: dict[str, int] = field(default_factory=dict)  # among the disagreements
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Agreement, 0-1 (1.0 for no rows)."""
        return self.agree / self.n if self.n else 1.0

    @property
    def fp_rate(self) -> float:
        """False positives as a share of the rows labelled wrong."""
        negatives = self.n - self.positives
        return self.false_positives / negatives if negatives else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rate": self.rate, "fp_rate": self.fp_rate}


def read_labelled(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON lines file (``.gz`` read as gzip). ``RewardError`` names a bad line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    rows: list[dict[str, Any]] = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise RewardError(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise RewardError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


def half(row: Mapping[str, Any], key: str = "solution") -> str:
    """``"A"`` or ``"B"``: a stable split of rows by ``key`` (the gold, by default: every completion of one
    problem falls in the same half), for tuning on one half and measuring on the other."""
    return "A" if zlib.crc32(str(row.get(key)).encode("utf-8", "replace")) % 2 == 0 else "B"


def _label(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number in (0.0, 1.0) else None


def _short(value: object) -> object:
    if isinstance(value, str) and len(value) > SHOW_CHARS:
        return value[: SHOW_CHARS // 2] + " ... " + value[-SHOW_CHARS // 2 :]
    return value


def measure(
    rows: Sequence[Mapping[str, Any]],
    func: str | RewardSpec,
    *,
    label: str = "label",
    by: str | None = None,
    columns: Mapping[str, str] | None = None,
    threshold: float = 0.5,
    show: int = 5,
) -> list[AgreementReport]:
    """Score ``rows`` with ``func`` and compare with their labels: one report over all rows, then one per
    value of the ``by`` column (sorted). ``columns`` maps the reward's columns to the file's
    (``{"choices": "options"}``); ``show`` disagreements are kept per report, false positives first.

    Raises :class:`RewardError` for an unknown reward, bad parameters or a column the rows lack.
    """
    spec = RewardSpec.parse(func)
    if columns:
        spec = spec.replace(columns={**(spec.columns or {}), **columns})
    labelled = [(row, _label(row.get(label))) for row in rows]
    kept = [(row, value) for row, value in labelled if value is not None]
    [(key, reward, _)] = resolve([spec])
    required, optional = reward.caller_columns()
    for name in required:
        if kept and all(row.get(name) is None for row, _ in kept):
            raise RewardError(f"{key}: the rows have no {name!r} column (map one with columns=)")
    names = (*required, *optional)
    every: dict[str, list[Any]] = {name: [row.get(name) for row, _ in kept] for name in names}
    batch: dict[str, Any] = {
        name: values
        for name, values in every.items()
        if name in required or any(v is not None for v in values)
    }
    scored = (
        reward.score_detailed([row.get("completion", "") for row, _ in kept], **batch) if kept else Scored([])
    )
    return _reports(key, kept, scored, by, threshold, show)


def compare(
    rows: Sequence[Mapping[str, Any]],
    scored: Scored,
    *,
    func: str,
    label: str = "label",
    by: str | None = None,
    threshold: float = 0.5,
    show: int = 5,
) -> list[AgreementReport]:
    """:func:`measure` for values scored elsewhere (another verifier, a trainer's log): ``scored.values[i]``
    belongs to ``rows[i]``; rows without a label are left out."""
    kept: list[tuple[Mapping[str, Any], float]] = []
    index: list[int] = []
    for i, row in enumerate(rows):
        want = _label(row.get(label))
        if want is not None:
            kept.append((row, want))
            index.append(i)
    subset = Scored(
        [scored.values[i] for i in index],
        [scored.reasons[i] for i in index],
        [scored.details[i] for i in index],
    )
    return _reports(func, kept, subset, by, threshold, show)


def _reports(
    func: str,
    kept: Sequence[tuple[Mapping[str, Any], float]],
    scored: Scored,
    by: str | None,
    threshold: float,
    show: int,
) -> list[AgreementReport]:
    """One report over all ``kept`` rows, then one per value of ``by`` (sorted)."""
    groups: dict[str | None, list[int]] = {None: list(range(len(kept)))}
    if by is not None:
        for i, (row, _) in enumerate(kept):
            groups.setdefault(str(row.get(by)), []).append(i)
    return [
        _report(func, group, groups[group], kept, scored, threshold, show)
        for group in sorted(groups, key=lambda g: (g is not None, g or ""))
    ]


def _report(
    func: str,
    group: str | None,
    indices: Iterable[int],
    kept: Sequence[tuple[Mapping[str, Any], float]],
    scored: Scored,
    threshold: float,
    show: int,
) -> AgreementReport:
    report = AgreementReport(func, group, 0, 0, 0, 0, 0)
    reasons: Counter[str] = Counter()
    misses: list[tuple[int, dict[str, Any]]] = []
    for i in indices:
        row, want = kept[i]
        value = scored.values[i]
        got = value is not None and value >= threshold
        report.n += 1
        report.positives += want == 1.0
        if got == (want == 1.0):
            report.agree += 1
            continue
        if got:
            report.false_positives += 1
        else:
            report.false_negatives += 1
        reason = scored.reasons[i] or ("accepted" if got else "not_equal")
        reasons[reason] += 1
        detail = scored.details[i]
        shown: dict[str, Any] = {}
        if isinstance(detail, Mapping):
            shown = {k: _short(v) for k, v in detail.items()}
        elif isinstance(detail, str):  # a judge's reply
            shown = {"reply": _short(detail)}
        example = {
            "id": row.get("id", i),
            "label": want,
            "value": value,
            "reason": scored.reasons[i],
            **shown,
            "completion_end": _short(str(row.get("completion", ""))[-SHOW_CHARS:]),
        }
        misses.append((0 if got else 1, example))
    report.reasons = dict(reasons.most_common(8))
    report.examples = [example for _, example in sorted(misses, key=lambda m: m[0])[:show]]
    return report
