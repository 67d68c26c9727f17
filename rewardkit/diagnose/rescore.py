"""Rescoring a run's logged completions with rewards, to count why they score as they do; a dataset's columns
(``solution``...) are joined to the logged prompts when the rewards need them.

>>> from rewardkit.diagnose.report import Report
>>> report = Report(source="scored.jsonl", kind="scored")
>>> rows = [{"completion": "<think>x</think><answer>1</answer>"}, {"completion": "no tags"}]
>>> rescore(report, ["format"], rows, None)
>>> sorted(report.rescored["format"].items())
[('= 1', 1), ('missing:think', 1)]
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from rewardkit.chat import question_text
from rewardkit.diagnose.logs import lines, tables
from rewardkit.diagnose.report import DiagnoseError, Report, count

__all__ = ["logged_name", "rescore", "rows_for_rescoring"]

PROMPT_FIELDS = ("prompt", "query", "problem", "question")
#: what trainers' plugins put before a registry name: the ms-swift plugin's rk_, ms-swift's external_
TRAINER_PREFIXES = ("rk_", "external_")
#: the last user turn inside a templated prompt: ChatML (Qwen), Llama 3, and a plain "user:" line
_USER_TURN = re.compile(
    r"<\|im_start\|>user\n(.*?)<\|im_end\|>|<\|start_header_id\|>user<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>",
    re.DOTALL,
)


def _dataset_index(data: Path) -> dict[str, dict[str, Any]]:
    """Dataset rows by their question: ``prompt``/``query``/``problem``/``question``, else the last user
    message of ``messages``."""
    index: dict[str, dict[str, Any]] = {}
    for number, row in lines(data):
        found = next((row[f] for f in PROMPT_FIELDS if row.get(f) is not None), None)
        text = question_text(found if found is not None else row.get("messages"))
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
        text = question_text(prompt) or ""
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


def rows_for_rescoring(
    report: Report, kind: str, log: Path | None, completions: Path | None
) -> Iterable[dict[str, Any]]:
    if kind == "scored" and log is not None:
        for _, row in lines(log):
            yield row
    elif completions is not None:
        for _, table in tables(completions):
            names = [k for k, v in table.items() if isinstance(v, list)]
            for i in range(len(table.get("completion", []))):
                yield {k: table[k][i] for k in names if i < len(table[k])}


def logged_name(spec: Any) -> Any:
    """A reward as a run logged it, to the registry's: the ms-swift plugin's ``rk_NAME`` and ms-swift's
    ``external_NAME`` are ``NAME``, counted under the logged name (the one ``diagnose`` reports).

    >>> logged_name("rk_countdown")
    RewardSpec(name='countdown', params={}, weight=1.0, alias='rk_countdown', columns=None)
    """
    from rewardkit.registry import list_rewards
    from rewardkit.spec import RewardSpec

    if isinstance(spec, str):
        spec = RewardSpec(spec)
    if not isinstance(spec, RewardSpec):
        return spec
    known = {info.name for info in list_rewards()}
    for prefix in TRAINER_PREFIXES:
        name = spec.name.removeprefix(prefix)
        if spec.name not in known and name != spec.name and name in known:
            return dataclasses.replace(spec, name=name, alias=spec.alias or spec.name)
    return spec


def rescore(
    report: Report, specs: Sequence[Any], rows: Iterable[dict[str, Any]], data: Path | None, batch: int = 1024
) -> None:
    """Score the logged completions again; count each reward's reasons ("= 0" for a verdict without one:
    the answer was read and judged on its merits). A reward may be named as the run logged it
    (:func:`logged_name`)."""
    from rewardkit.core import ColumnError
    from rewardkit.engine import resolve

    resolved = resolve([logged_name(spec) for spec in specs])
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
        report.notes.append(f"--data: {count(join.missed, 'logged completion')} matched no dataset prompt")
