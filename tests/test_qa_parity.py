"""qa_em and qa_f1 against their references, item by item: SQuAD v1.1's official metric and veRL's
``search_r1_like_qa_em`` (Search-R1's EM and sub-EM).

SQuAD's rules are written here from the metric's published definition (``evaluate-v1.1.py``: the answer and
each ground truth normalised by lower-casing, deleting every character of ``string.punctuation``, turning
the whole words a/an/the into spaces and collapsing white space; exact match is equality; F1 is over the
normalised words, counted as multisets, 0 when none is shared; the item's value is the best over its ground
truths). veRL's module is veRL's own file (verl 0.9.1, installed by tests/test_verl.py's fixture), loaded by
path: it imports only ``re``, ``string`` and ``random``.

Where the values differ, on purpose, each difference is a listed case (``DIFFERENCES``) and asserted:
an answer or a gold that normalises to nothing (SQuAD's EM and veRL's EM pay ``"" == ""``, veRL's sub-EM
pays an empty gold against any answer; here an empty answer is 0 and an empty gold is no gold), substring
mode's defence against listed candidates (``answer_too_long``, ``hedged_answer``), and, on whole
completions, what is read as the answer (after ``</think>`` only, with fallbacks where veRL needs
``<answer>``; veRL divides a right answer by 4 past ten answer tags).
"""

from __future__ import annotations

import importlib.util
import re
import string
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rewardkit
from rewardkit.qa import best_f1, exact_match
from tests.test_verl import verl_site  # noqa: F401 - the fixture that installs veRL's files

# ---------------------------------------------------------------- SQuAD v1.1, from its definition


def squad_normalise(text: str) -> str:
    lowered = text.lower()
    kept = "".join(ch for ch in lowered if ch not in set(string.punctuation))
    no_articles = re.sub(r"\b(a|an|the)\b", " ", kept)
    return " ".join(no_articles.split())


def squad_em(answer: str, truth: str) -> float:
    return float(squad_normalise(answer) == squad_normalise(truth))


def squad_f1(answer: str, truth: str) -> float:
    a, t = squad_normalise(answer).split(), squad_normalise(truth).split()
    shared = sum((Counter(a) & Counter(t)).values())
    if shared == 0:
        return 0.0
    p, r = shared / len(a), shared / len(t)
    return 2 * p * r / (p + r)


def best(metric: Any, answer: str, truths: list[str]) -> float:
    return float(max(metric(answer, truth) for truth in truths))


# (answer, golds, the rule the case is about)
CASES: list[tuple[str, list[str], str]] = [
    ("Paris", ["Paris"], "identical"),
    ("paris", ["PARIS"], "case"),
    ("Paris.", ["Paris"], "trailing punctuation"),
    ("U.S.A.", ["USA"], "punctuation inside a word is deleted, not spaced"),
    ("rock-n-roll", ["rock n roll"], "a hyphen is deleted: one word against three"),
    ("O'Neill", ["ONeill"], "apostrophe deleted"),
    ("Paris’", ["Paris"], "a non-ASCII quote is not SQuAD punctuation: it stays"),
    ("The Beatles", ["Beatles"], "leading article"),
    ("a dog and an owl", ["dog and owl"], "articles inside"),
    ("Theatre Royal", ["theatre royal"], "'the' inside a word is no article"),
    ("another man", ["other man"], "'an' inside a word is no article"),
    ("A", ["A dog"], "an answer that is only an article"),
    ("  New\tYork \n City ", ["New York City"], "white space collapsed"),
    ("New York", ["New York City"], "F1: a part of the gold"),
    ("New York City, USA", ["New York City"], "F1: the gold and more"),
    ("the the Eiffel Eiffel", ["Eiffel Tower"], "F1: repeated words count once against the gold"),
    ("Eiffel Tower Eiffel Tower", ["Eiffel Tower"], "F1: the gold twice"),
    ("tower eiffel", ["Eiffel Tower"], "F1 ignores order; EM does not"),
    ("1,000", ["1000"], "digits: the comma deleted"),
    ("3.14", ["3 14"], "a decimal point deleted, not spaced"),
    ("Marseille", ["Paris", "Lyon"], "several golds, none"),
    ("Lyon", ["Paris", "Lyon"], "several golds, the second"),
    ("Lyon France", ["Paris", "Lyon", "Lyon, France"], "several golds: the best F1"),
    ("King George VI of the United Kingdom", ["George VI"], "F1 of a long answer"),
    ("1995", ["1995"], "a year"),
    ("in 1995", ["1995"], "a year with a preposition"),
    ("Paris, France", ["Paris"], "sub-EM: the gold with context"),
    ("parisian", ["Paris"], "sub-EM is over characters: paris is in parisian"),
    ("Lyon, Paris, Marseille, Nice", ["Paris"], "candidates listed"),
    ("London or Paris", ["Paris"], "a hedged answer"),
    ("Paris Paris Paris Paris", ["Paris"], "the gold repeated"),
    ("¿Qué?", ["que"], "non-ASCII punctuation and accents stay"),
    ("", ["Paris"], "the empty answer"),
    ("   ", ["Paris"], "a white-space answer"),
    ("the a an", ["Paris"], "an answer of articles only"),
    ("?!", ["Paris"], "an answer of punctuation only"),
    ("Paris", ["The"], "a gold that normalises to nothing"),
    ("the", ["a"], "answer and gold both normalise to nothing"),
    ("Paris", ["", "Paris"], "an empty gold beside a real one"),
    ("Lyon", ["", "Paris"], "an empty gold beside a real one, wrong answer"),
]

# The cases whose values differ from the reference, and why (asserted: no other case may differ).
SQUAD_DIFFERENCES = {
    "answer and gold both normalise to nothing": "EM 1.0 there; here the gold is no gold (None)",
    "a gold that normalises to nothing": "EM/F1 0.0 there; here None (empty_gold): nothing to judge by",
}
VERL_DIFFERENCES = {
    "answer and gold both normalise to nothing": "EM and sub-EM 1 there (empty == empty); here None",
    "a gold that normalises to nothing": "sub-EM 1 there (the empty gold is in any answer); here None",
    "an empty gold beside a real one, wrong answer": "sub-EM 1 there (the empty gold); here 0",
    "candidates listed": "sub-EM 1 there; here 0, answer_too_long (4 words > 3 x the 1-word gold)",
    "a hedged answer": "sub-EM 1 there; here 0, hedged_answer",
    "the gold repeated": "sub-EM 1 there; here 0, answer_too_long",
}


def _ours_em(answer: str, golds: list[str], substring: bool = False) -> float | None:
    return exact_match(answer, tuple(golds), substring=substring)[0]


def test_em_and_f1_equal_squads_on_every_case_but_the_listed_ones() -> None:
    differ = {}
    for answer, golds, rule in CASES:
        ours = (_ours_em(answer, golds), best_f1(answer, tuple(golds))[0])
        theirs = (best(squad_em, answer, golds), best(squad_f1, answer, golds))
        if ours != theirs:
            differ[rule] = (ours, theirs)
    assert set(differ) == set(SQUAD_DIFFERENCES), differ
    assert differ["answer and gold both normalise to nothing"] == ((None, None), (1.0, 0.0))
    assert differ["a gold that normalises to nothing"] == ((None, None), (0.0, 0.0))


def test_the_rewards_give_squads_values_on_answers_in_answer_blocks() -> None:
    """The same cases through qa_em and qa_f1, the answer written as Search-R1 writes it."""
    usable = [(a, g, r) for a, g, r in CASES if r not in SQUAD_DIFFERENCES and a.strip() and "’" not in a]
    completions = [f"<think>searching</think>\n<answer>{answer}</answer>" for answer, _, _ in usable]
    golds = [g for _, g, _ in usable]
    em = rewardkit.get("qa_em")(completions, solution=golds)
    f1 = rewardkit.get("qa_f1")(completions, solution=golds)
    assert em == [best(squad_em, a, g) for a, g, _ in usable]
    assert f1 == [best(squad_f1, a, g) for a, g, _ in usable]
    assert len(usable) >= 30


# ---------------------------------------------------------------- veRL's search_r1_like_qa_em


@pytest.fixture(scope="module")
def verl_qa(verl_site: Path) -> ModuleType:  # noqa: F811 - the fixture imported above
    path = verl_site / "verl" / "utils" / "reward_score" / "search_r1_like_qa_em.py"
    spec = importlib.util.spec_from_file_location("search_r1_like_qa_em", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_em_and_sub_em_equal_verls_on_every_case_but_the_listed_ones(verl_qa: ModuleType) -> None:
    differ = {}
    for answer, golds, rule in CASES:
        ours = (_ours_em(answer, golds), _ours_em(answer, golds, substring=True))
        theirs = (float(verl_qa.em_check(answer, golds)), float(verl_qa.subem_check(answer, golds)))
        if ours != theirs:
            differ[rule] = (ours, theirs)
    assert set(differ) == set(VERL_DIFFERENCES), differ
    for rule in ("candidates listed", "a hedged answer", "the gold repeated"):
        assert differ[rule] == ((0.0, 0.0), (0.0, 1.0))  # EM agrees; only the substring defence differs
    # EM differs only where a gold normalises to nothing (None here: no gold to judge by)
    em_differs = {rule for rule, (ours, theirs) in differ.items() if ours[0] != theirs[0]}
    assert em_differs == {"answer and gold both normalise to nothing", "a gold that normalises to nothing"}


COMPLETIONS: list[tuple[str, list[str], str]] = [  # (Search-R1 completion, golds, what it shows)
    (
        "<think>I need the capital.</think>\n<search>capital of France</search>\n\n<information>Doc 1(Title: "
        "Paris) Paris is the capital and largest city of France.</information>\n\n<think>It is Paris."
        "</think>\n<answer> Paris </answer>",
        ["Paris", "City of Light"],
        "a full rollout, right",
    ),
    ("<think>hm</think><answer>Lyon</answer>", ["Paris"], "wrong"),
    ("<answer>Lyon</answer> then <answer>Paris</answer>", ["Paris"], "the last answer block"),
    ("<answer>the  Paris.</answer>", ["paris"], "normalised"),
    ("<answer>Paris, France</answer>", ["Paris"], "sub-EM only"),
    ("<answer></answer>", ["Paris"], "empty answer block"),
    ("Paris", ["Paris"], "no answer block: a final line here, nothing for veRL"),
    ("<think>maybe <answer>Paris</answer></think>Lyon", ["Paris"], "an answer inside the reasoning"),
    ("<answer>Paris</answer>" * 11, ["Paris"], "more than ten answer tags"),
]
COMPLETION_DIFFERENCES = {
    "no answer block: a final line here, nothing for veRL": "1.0 here (the final line), 0 there",
    "an answer inside the reasoning": "0.0 here (after </think>: Lyon), 1 there (the last <answer> anywhere)",
    "more than ten answer tags": "1.0 here (the last block), 0.25 there (score / 4 past ten tags)",
}


def test_whole_completions_against_verls_compute_score(verl_qa: ModuleType) -> None:
    completions = [c for c, _, _ in COMPLETIONS]
    golds = [{"target": g} for _, g, _ in COMPLETIONS]  # the ground_truth Search-R1's data gives veRL
    em = rewardkit.get("qa_em")(completions, solution=golds)
    sub = rewardkit.get("qa_em", substring=True)(completions, solution=golds)
    differ = {}
    for (completion, gold, what), ours_em, ours_sub in zip(COMPLETIONS, em, sub, strict=True):
        truth = {"target": gold}
        theirs = (
            float(verl_qa.compute_score(completion, truth)),
            float(verl_qa.compute_score_subem(completion, truth)),
        )
        if (ours_em, ours_sub) != theirs:
            differ[what] = ((ours_em, ours_sub), theirs)
    assert set(differ) == set(COMPLETION_DIFFERENCES), differ
    assert differ["more than ten answer tags"] == ((1.0, 1.0), (0.25, 1.0))
