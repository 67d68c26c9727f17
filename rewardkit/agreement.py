"""How far a reward agrees with labelled data: the check a user runs before trusting a verifier.

A labelled file is JSON lines (optionally gzipped; :mod:`rewardkit.jsonl` reads it), one completion a line
with the columns the reward reads and a label. A label is read in the forms datasets write it: ``1``/``0``
(``1.0``, ``"1"``), ``true``/``false``, ``"yes"``/``"no"``, ``"correct"``/``"incorrect"`` (any case); any
other value is refused by name (:class:`LabelError`), and rows without one (no field, ``null``, ``""``) are
skipped and counted (``skipped``). A figure is never shown over nothing: no labelled row at all is an error
naming the field and the fields the rows have, and a report over fewer than :data:`MIN_ROWS` rows says so
(``too_few``). A reward's value counts as "correct" when it reaches ``threshold`` (0.5: 1.0 of a binary
reward is correct, 0.0 and ``None`` are not). A graded reward is measured the same way: ``llm_judge`` gives
N/10, so ``threshold=0.7`` counts a judge's 7/10 and up as "correct" (its rows need the question, and usually
the ``solution``); a disagreement shows the judge's reply.

Reported per reward (and per group with ``by``): agreement, false positives (label 0 scored correct: the
errors a policy can learn to exploit), false negatives (label 1 scored wrong: lost signal), the commonest
reasons among the disagreements and a few of them with where they are (``where``: ``file:line`` when the
caller says, else ``row N``) and what the reward read (its ``details``).

>>> rows = [{"completion": "so \\\\boxed{4}", "solution": "4", "label": "yes"},
...         {"completion": "so \\\\boxed{5}", "solution": "4", "label": 1},
...         {"completion": "so \\\\boxed{5}", "solution": "4"}]
>>> [report] = measure(rows, "format:tags=[\\"think\\"]")
>>> report.n, report.agree, report.false_negatives, report.skipped, report.too_few
(2, 0, 2, 1, True)
>>> report.examples[0]["where"]
'row 1'
>>> measure(rows, "format", label="lable")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardkit.agreement.LabelError: none of the 3 rows has a label in 'lable'; ... (did you mean 'label'?)
"""

from __future__ import annotations

import difflib
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.core import RewardError, Scored
from rewardkit.engine import resolve
from rewardkit.jsonl import read_jsonl
from rewardkit.redact import clip, shown
from rewardkit.spec import RewardSpec

__all__ = [
    "MIN_ROWS",
    "AgreementReport",
    "LabelError",
    "compare",
    "fields_hint",
    "half",
    "label_value",
    "measure",
    "read_labelled",
]

SHOW_CHARS = 160  # how much of an answer, a gold or a completion's end a shown disagreement keeps
MIN_ROWS = 20  #: under this many labelled rows, a report says its figure is too rough to trust

#: the label forms datasets write, lower-cased, and what they mean (1.0 correct, 0.0 wrong)
LABEL_WORDS = {
    "1": 1.0,
    "1.0": 1.0,
    "true": 1.0,
    "yes": 1.0,
    "correct": 1.0,
    "0": 0.0,
    "0.0": 0.0,
    "false": 0.0,
    "no": 0.0,
    "incorrect": 0.0,
}
LABEL_FORMS = '1/0, true/false, "yes"/"no" or "correct"/"incorrect"'


class LabelError(RewardError):
    """A label in a form that is not 1/0, true/false, yes/no or correct/incorrect (names it and its row), or
    no labelled row at all (names the field and the fields the rows have)."""


@dataclass
class AgreementReport:
    """One reward's agreement with the labels over one group of rows."""

    func: str
    group: str | None
    n: int  # labelled rows
    agree: int
    positives: int  # rows labelled correct
    false_positives: int  # labelled wrong, scored correct
    false_negatives: int  # labelled correct, scored wrong
    reasons: dict[str, int] = field(default_factory=dict)  # among the disagreements
    examples: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # rows of the group without a label, left out

    @property
    def rate(self) -> float:
        """Agreement, 0-1; NaN over no rows (never 100% over nothing)."""
        return self.agree / self.n if self.n else math.nan

    @property
    def fp_rate(self) -> float:
        """False positives as a share of the rows labelled wrong; NaN when no row is labelled wrong."""
        negatives = self.n - self.positives
        return self.false_positives / negatives if negatives else math.nan

    @property
    def too_few(self) -> bool:
        """Fewer than :data:`MIN_ROWS` labelled rows: the figure is a rough one."""
        return self.n < MIN_ROWS

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view; a rate over nothing is ``None`` (JSON ``null``)."""
        rates = {"rate": self.rate, "fp_rate": self.fp_rate}
        return {
            **asdict(self),
            **{k: None if math.isnan(v) else v for k, v in rates.items()},
            "too_few": self.too_few,
        }


def read_labelled(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON lines file (gzipped or not; ``-`` reads standard input). ``RewardError`` names a bad
    line (:class:`rewardkit.jsonl.JsonlError`)."""
    return read_jsonl(path)


def half(row: Mapping[str, Any], key: str = "solution") -> str:
    """``"A"`` or ``"B"``: a stable split of rows by ``key`` (the gold, by default: every completion of one
    problem falls in the same half), for tuning on one half and measuring on the other."""
    return "A" if zlib.crc32(str(row.get(key)).encode("utf-8", "replace")) % 2 == 0 else "B"


def label_value(value: object, where: str = "a row") -> float | None:
    """A label as 1.0 (correct) or 0.0 (wrong); ``None`` for no label (``null``, ``""``). Any other value
    raises :class:`LabelError` naming it and ``where``.

    >>> [label_value(v) for v in (1, 0.0, True, "1", " Yes", "incorrect", None, "")]
    [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, None, None]
    >>> label_value("maybe", "rows.jsonl:3")
    Traceback (most recent call last):
    ...
    rewardkit.agreement.LabelError: rows.jsonl:3: the label 'maybe' is not one of 1/0, true/false, "yes"/"no" or "correct"/"incorrect"
    """  # noqa: E501
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and value in (0, 1):
        return float(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if not word:
            return None
        if word in LABEL_WORDS:
            return LABEL_WORDS[word]
    raise LabelError(f"{where}: the label {shown(value)} is not one of {LABEL_FORMS}")


def _short(value: object) -> object:
    if isinstance(value, str) and len(value) > SHOW_CHARS:
        return value[: SHOW_CHARS // 2] + " ... " + value[-SHOW_CHARS // 2 :]
    return value


@dataclass
class _Rows:
    """The rows split by their labels: the labelled ones with their label and place, and the skipped ones."""

    kept: list[tuple[Mapping[str, Any], float]]
    where: list[str]
    index: list[int]  # each kept row's index in the rows given
    skipped: list[Mapping[str, Any]]


def _split(rows: Sequence[Mapping[str, Any]], label: str, where: Sequence[str] | None) -> _Rows:
    """Read every row's label; no labelled row at all is an error naming ``label`` and the rows' fields."""
    if where is not None and len(where) != len(rows):
        raise RewardError(f"where has {len(where)} places for {len(rows)} rows")
    split = _Rows([], [], [], [])
    for i, row in enumerate(rows):
        place = where[i] if where is not None else f"row {i + 1}"
        value = label_value(row.get(label), place)
        if value is None:
            split.skipped.append(row)
        else:
            split.kept.append((row, value))
            split.where.append(place)
            split.index.append(i)
    if not split.kept:
        raise LabelError(_no_label(rows, label))
    return split


def _no_label(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    if not rows:
        return "there are no rows to compare with labels"
    have = sum(1 for row in rows if label in row)
    message = (
        f"the row has no label in {label!r}"
        if len(rows) == 1
        else f"none of the {len(rows):,} rows has a label in {label!r}"
    )
    if have:
        message += " (the field is there, empty)" if have == len(rows) else f" ({have:,} with it empty)"
    return message + fields_hint(rows, label, suggest=not have)


def fields_hint(rows: Iterable[Mapping[str, Any]], name: str, *, suggest: bool = True) -> str:
    """``; the rows have: a, b (did you mean 'nmae'?)``: what to say after "no row has ``name``".

    >>> fields_hint([{"completion": "x", "dataset": "a"}], "datset")
    "; the rows have: completion, dataset (did you mean 'dataset'?)"
    """
    fields = sorted({str(k) for row in rows for k in row})
    hint = f"; the rows have: {clip(', '.join(fields)) or 'no field'}"
    close = difflib.get_close_matches(name, fields, n=3, cutoff=0.6) if suggest else []
    return hint + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else "")


def measure(
    rows: Sequence[Mapping[str, Any]],
    func: str | RewardSpec,
    *,
    label: str = "label",
    by: str | None = None,
    columns: Mapping[str, str] | None = None,
    threshold: float = 0.5,
    show: int = 5,
    where: Sequence[str] | None = None,
) -> list[AgreementReport]:
    """Score ``rows`` with ``func`` and compare with their labels: one report over all rows, then one per
    value of the ``by`` column (sorted). ``columns`` maps the reward's columns to the file's
    (``{"choices": "options"}``); ``show`` disagreements are kept per report, false positives first, each
    with its place: ``where[i]`` (``"rows.jsonl:3"``) when given, else ``"row i+1"``.

    Raises :class:`RewardError` for an unknown reward, bad parameters or a column the rows lack, and
    :class:`LabelError` for a label it cannot read or no labelled row.
    """
    spec = RewardSpec.parse(func)
    if columns:
        spec = spec.replace(columns={**(spec.columns or {}), **columns})
    split = _split(rows, label, where)
    kept = split.kept
    _check_by(kept, by)
    [(key, reward, _)] = resolve([spec])
    required, optional = reward.caller_columns()
    for name in required:
        if all(row.get(name) is None for row, _ in kept):
            fields = clip(", ".join(sorted({str(k) for row, _ in kept for k in row})))
            raise RewardError(
                f"reward {key!r} reads the {name!r} field, and no labelled row has one "
                f"({len(kept):,} labelled; their fields: {fields}); read it from another field with "
                f"-c {name}=FIELD (columns={{{name!r}: FIELD}} in Python)"
            )
    names = (*required, *optional)
    every: dict[str, list[Any]] = {name: [row.get(name) for row, _ in kept] for name in names}
    batch: dict[str, Any] = {
        name: values
        for name, values in every.items()
        if name in required or any(v is not None for v in values)
    }
    scored = reward.score_detailed([row.get("completion", "") for row, _ in kept], **batch)
    return _reports(key, split, scored, by, threshold, show)


def compare(
    rows: Sequence[Mapping[str, Any]],
    scored: Scored,
    *,
    func: str,
    label: str = "label",
    by: str | None = None,
    threshold: float = 0.5,
    show: int = 5,
    where: Sequence[str] | None = None,
) -> list[AgreementReport]:
    """:func:`measure` for values scored elsewhere (another verifier, a trainer's log): ``scored.values[i]``
    belongs to ``rows[i]``; rows without a label are left out and counted. Raises as :func:`measure` does for
    labels."""
    split = _split(rows, label, where)
    _check_by(split.kept, by)
    subset = Scored(
        [scored.values[i] for i in split.index],
        [scored.reasons[i] for i in split.index],
        [scored.details[i] for i in split.index],
    )
    return _reports(func, split, subset, by, threshold, show)


def _check_by(kept: Sequence[tuple[Mapping[str, Any], float]], by: str | None) -> None:
    """Groups by a field no labelled row has would be one group, ``None``: an error naming the fields."""
    if by is not None and all(by not in row for row, _ in kept):
        rows = [row for row, _ in kept]
        raise RewardError(f"no labelled row has the field {by!r} to group by" + fields_hint(rows, by))


def _reports(
    func: str, split: _Rows, scored: Scored, by: str | None, threshold: float, show: int
) -> list[AgreementReport]:
    """One report over all labelled rows, then one per value of ``by`` (sorted)."""
    groups: dict[str | None, list[int]] = {None: list(range(len(split.kept)))}
    skipped: Counter[str | None] = Counter({None: len(split.skipped)})
    if by is not None:
        for i, (row, _) in enumerate(split.kept):
            groups.setdefault(str(row.get(by)), []).append(i)
        skipped.update(str(row.get(by)) for row in split.skipped)
    reports = []
    for group in sorted(groups, key=lambda g: (g is not None, g or "")):
        report = _report(func, group, groups[group], split, scored, threshold, show)
        report.skipped = skipped[group]
        reports.append(report)
    return reports


def _report(
    func: str,
    group: str | None,
    indices: Iterable[int],
    split: _Rows,
    scored: Scored,
    threshold: float,
    show: int,
) -> AgreementReport:
    report = AgreementReport(func, group, 0, 0, 0, 0, 0)
    reasons: Counter[str] = Counter()
    misses: list[tuple[int, dict[str, Any]]] = []
    for i in indices:
        row, want = split.kept[i]
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
        shown_detail: dict[str, Any] = {}
        if isinstance(detail, Mapping):
            shown_detail = {k: _short(v) for k, v in detail.items()}
        elif isinstance(detail, str):  # a judge's reply
            shown_detail = {"reply": _short(detail)}
        example = {
            "where": split.where[i],
            **({"id": row["id"]} if "id" in row else {}),
            "label": want,
            "value": value,
            "reason": scored.reasons[i],
            **shown_detail,
            "completion_end": _short(str(row.get("completion", ""))[-SHOW_CHARS:]),
        }
        misses.append((0 if got else 1, example))
    report.reasons = dict(reasons.most_common(8))
    report.examples = [example for _, example in sorted(misses, key=lambda m: m[0])[:show]]
    return report
