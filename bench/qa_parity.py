"""qa_em and qa_f1 against SQuAD v1.1's metric and veRL's ``search_r1_like_qa_em``, case by case.

    python bench/qa_parity.py

The cases and the SQuAD reference (written from the metric's published definition) are
``tests/test_qa_parity.py``'s; veRL's is its own file (verl 0.9.1), loaded from the venv's ``verl-site``
(``tests/test_verl.py`` installs it there). Prints, per reference and metric, how many cases give equal
values, and each case that does not, with the reason the test file records for it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewardkit.qa import best_f1, exact_match  # noqa: E402
from tests.test_qa_parity import (  # noqa: E402
    CASES,
    SQUAD_DIFFERENCES,
    VERL_DIFFERENCES,
    best,
    squad_em,
    squad_f1,
)

VERL_FILE = Path(sys.prefix) / "verl-site" / "verl" / "utils" / "reward_score" / "search_r1_like_qa_em.py"


def _verl() -> ModuleType | None:
    if not VERL_FILE.is_file():
        return None
    spec = importlib.util.spec_from_file_location("search_r1_like_qa_em", VERL_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    rows: dict[str, list[tuple[str, float | None, float]]] = {}
    verl = _verl()
    for answer, golds, rule in CASES:
        g = tuple(golds)
        pairs: dict[str, tuple[float | None, float]] = {
            "SQuAD EM": (exact_match(answer, g)[0], best(squad_em, answer, golds)),
            "SQuAD F1": (best_f1(answer, g)[0], best(squad_f1, answer, golds)),
        }
        if verl is not None:
            pairs["veRL em_check"] = (exact_match(answer, g)[0], float(verl.em_check(answer, golds)))
            pairs["veRL subem_check"] = (
                exact_match(answer, g, substring=True)[0],
                float(verl.subem_check(answer, golds)),
            )
        for metric, (ours, theirs) in pairs.items():
            rows.setdefault(metric, []).append((rule, ours, theirs))
    print(f"{len(CASES)} cases" + ("" if verl else f"; veRL's file not found at {VERL_FILE}: skipped"))
    for metric, results in rows.items():
        differ = [(rule, ours, theirs) for rule, ours, theirs in results if ours != theirs]
        print(f"{metric:<18} equal on {len(results) - len(differ)}/{len(results)}")
        why = SQUAD_DIFFERENCES if metric.startswith("SQuAD") else VERL_DIFFERENCES
        for rule, ours, theirs in differ:
            print(f"    {rule}: ours {ours}, theirs {theirs} ({why.get(rule, 'UNLISTED')})")


if __name__ == "__main__":
    main()
