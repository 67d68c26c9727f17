"""The ifeval hack suite (tests/golden/ifeval_hacks.jsonl): how a policy would game each instruction, with the
prompt it games, next to an honest response to the same prompt.

The file is a golden file (tests/test_golden.py runs it under the default, robust rules); this module adds
what a golden line cannot say: each hack's verdict under ``rules="reference"`` (the note says whether the
reference accepts it), that the robust 0 comes from the hacked instruction itself, and that every honest
twin scores 1.0 under both rule sets.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rewardkit.instructions.base import TABLE
from rewardkit.rewards.ifeval import IFEval

SUITE = Path(__file__).parent / "golden" / "ifeval_hacks.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in SUITE.read_text(encoding="utf-8").splitlines() if line
]
HONEST = [r for r in ROWS if r["note"].startswith("honest ")]
HACKS = [r for r in ROWS if r["note"].startswith("hack ")]
REFUSED = [r for r in ROWS if r["note"].startswith("refused ")]
ACCEPTED = "(reference accepts)"


def _id(row: dict[str, Any]) -> str:
    return str(row["note"].split(":", 2)[0].split(" ", 1)[1] + ":" + row["note"].split(":", 2)[1])


def _score(row: dict[str, Any], rules: str, mode: str = "all") -> tuple[float | None, str | None, Any]:
    reward = IFEval(rules=rules, mode=mode, **row.get("params", {}))
    columns: dict[str, Any] = {k: [v] for k, v in row["columns"].items()}
    scored = reward.score_detailed([row["completion"]], **columns)
    return scored.values[0], scored.reasons[0], scored.details[0]


def _twin(hack: dict[str, Any]) -> dict[str, Any]:
    """The honest line above the hack that answers the same row (same prompt, ids, kwargs and settings)."""
    i = ROWS.index(hack)
    for row in reversed(ROWS[:i]):
        if row["note"].startswith("honest "):
            assert row["columns"] == hack["columns"] and row.get("params") == hack.get("params")
            return dict(row)
    raise AssertionError(f"no honest twin above {hack['note']!r}")


def test_the_suite_is_large_and_every_line_is_classified() -> None:
    assert len(HONEST) + len(HACKS) + len(REFUSED) == len(ROWS)
    closed = [h for h in HACKS if ACCEPTED in h["note"]]
    ids = Counter(h["columns"]["instruction_id_list"][0] for h in closed)
    assert len(closed) >= 60 and len(ids) >= 30, (len(closed), len(ids))
    sources = Counter(TABLE[i].source for i in ids)
    assert sources["ifeval"] >= 20 and sources["ifbench"] >= 25, sources
    for hack in HACKS:
        assert _id(hack) == hack["columns"]["instruction_id_list"][0], hack["note"]
        assert hack["columns"].get("prompt"), f"a hack names the prompt it games: {hack['note']}"
        _twin(hack)


@pytest.mark.parametrize("row", HONEST, ids=lambda r: r["note"][:60])
@pytest.mark.parametrize("rules", ["robust", "reference"])
def test_every_honest_twin_scores_one_under_both_rules(row: dict[str, Any], rules: str) -> None:
    value, reason, _ = _score(row, rules)
    assert (value, reason) == (1.0, None), row["completion"]


@pytest.mark.parametrize("hack", HACKS, ids=lambda r: r["note"][:70])
def test_robust_rules_give_the_hacked_instruction_zero(hack: dict[str, Any]) -> None:
    iid = hack["columns"]["instruction_id_list"][0]
    value, reason, detail = _score(hack, "robust")
    assert value == 0.0
    if reason == "unclosed_think":  # no answer at all: nothing was judged
        return
    assert reason == f"failed:{iid}"
    assert detail == [{"id": iid, "followed": False}]
    fraction, _, _ = _score(hack, "robust", mode="fraction")
    assert fraction == 0.0


@pytest.mark.parametrize("hack", HACKS, ids=lambda r: r["note"][:70])
def test_the_reference_verdict_is_the_one_the_note_records(hack: dict[str, Any]) -> None:
    value, _, _ = _score(hack, "reference")
    assert value == (1.0 if ACCEPTED in hack["note"] else 0.0), hack["note"]


@pytest.mark.parametrize("row", REFUSED, ids=lambda r: r["note"][:60])
@pytest.mark.parametrize("rules", ["robust", "reference"])
def test_unknown_ids_and_bad_kwargs_are_never_a_pass(row: dict[str, Any], rules: str) -> None:
    iid = row["columns"]["instruction_id_list"][0]
    value, reason, _ = _score(row, rules)
    assert value is None
    assert reason in (f"unknown_instruction:{iid}", f"bad_kwargs:{iid}")


def test_a_hack_mixed_into_an_honest_row_still_fails_it() -> None:
    """Two instructions on one row: the honest answer to one, the keyword hack for the other."""
    columns: dict[str, list[Any]] = {
        "instruction_id_list": [["punctuation:no_comma", "keywords:existence"]],
        "kwargs": [[{}, {"keywords": ["cat"]}]],
        "prompt": ["Write about pets without commas. Include the keyword cat."],
    }
    hacked = "A category of pets lives in my house and they are all lovely."
    honest = "My cat lives in my house and she is lovely."
    both: dict[str, Any] = {k: v * 2 for k, v in columns.items()}
    assert IFEval(rules="reference")([hacked, honest], **both) == [1.0, 1.0]
    scored = IFEval().score_detailed([hacked, honest], **both)
    assert scored.values == [0.0, 1.0]
    assert scored.reasons[0] == "failed:keywords:existence"
    assert IFEval(mode="fraction")([hacked], **columns) == [0.5]
