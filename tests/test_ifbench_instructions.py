"""IFBench's test constraints and its IF-RLVR training constraints: every id registered, its golden cases
(``tests/golden/ifbench.jsonl``, run through the ``ifeval`` reward by ``tests/test_golden.py``) cover it,
unusable kwargs are refused, and odd responses get a verdict.

A golden line without ``params`` scores with the robust rules (the default); a line with
``{"rules": "reference"}`` follows each robust line whose verdict the reference differs on: a hack (the
reference pays it, robust does not) or a reference bug the robust rules fix.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from rewardkit.instructions import TABLE, BadKwargs, Context, read_args
from rewardkit.instructions.base import Rules
from rewardkit.testing import GoldenCase, load_golden

# IFBench's instructions_registry.py at c94da02, in its order
IFBENCH_IDS = """
count:word_count_range count:unique_word_count ratio:stop_words ratio:sentence_type ratio:sentence_balance
count:conjunctions count:person_names ratio:overlap count:numbers words:alphabet words:vowel
words:consonants sentence:alliteration_increment words:palindrome count:punctuation format:parentheses
format:quotes words:prime_lengths format:options format:newline format:emoji ratio:sentence_words
count:words_japanese words:start_verb words:repeats sentence:keyword count:pronouns words:odd_even_syllables
words:last_first words:paragraph_last_first sentence:increment words:no_consecutive format:line_indent
format:quote_unquote format:list format:thesis format:sub-bullets format:no_bullets_bullets custom:multiples
custom:mcq_count_length custom:reverse_newline custom:word_reverse custom:character_reverse
custom:sentence_alphabet custom:european_capitals_sort custom:csv_city custom:csv_special_character
custom:csv_quotes custom:date_format_list count:keywords_multiple words:keywords_specific_position
words:words_position repeat:repeat_change repeat:repeat_simple repeat:repeat_span format:title_case
format:output_template format:no_whitespace
""".split()

# open-instruct's IFEvalG ids that are neither IFEval's 25 nor IFBench's test ids
TRAIN_IDS = """
copy:repeat_phrase copy:copy new:copy_span_idx detectable_format:sentence_hyphens
keywords:no_adjacent_consecutive detectable_format:square_brackets keywords:word_once
keywords:word_count_different_numbers keywords:exclude_word_harder paragraphs:paragraphs
paragraphs:paragraphs2 first_word:first_word_sent first_word:first_word_answer last_word:last_word_sent
last_word:last_word_answer detectable_format:bigram_wrapping copy:copying_simple copy:copying_multiple
punctuation:punctuation_dot punctuation:punctuation_exclamation count:lowercase_counting
letters:letter_counting letters:letter_counting2 count:counting_composition count:count_unique
count:count_increment_word keywords:palindrome keywords:keyword_specific_position keywords:start_end
""".split()


GOLDEN = Path(__file__).parent / "golden" / "ifbench.jsonl"


def _by_id() -> dict[str, dict[str, list[GoldenCase]]]:
    """The golden cases of each instruction id, split by rule set."""
    out: dict[str, dict[str, list[GoldenCase]]] = defaultdict(lambda: {"robust": [], "reference": []})
    for case in load_golden(GOLDEN):
        (iid,) = case.columns["instruction_id_list"]
        out[iid][dict(case.params).get("rules", "robust")].append(case)
    return out


def test_every_ifbench_id_is_registered_with_its_source() -> None:
    assert len(IFBENCH_IDS) == 58 and len(TRAIN_IDS) == 29
    assert {i for i, s in TABLE.items() if s.source == "ifbench"} == set(IFBENCH_IDS)
    assert {i for i, s in TABLE.items() if s.source == "ifbench-train"} == set(TRAIN_IDS)
    for iid in IFBENCH_IDS + TRAIN_IDS:
        spec = TABLE[iid]
        assert spec.rule and "\n" not in spec.rule
        assert spec.robust is None or "\n" not in spec.robust


def test_golden_cases_cover_every_id_and_every_robust_rule() -> None:
    cases = _by_id()
    assert set(cases) == set(IFBENCH_IDS + TRAIN_IDS)
    for iid, sets in cases.items():
        robust, reference = sets["robust"], sets["reference"]
        assert len(robust) >= 3, f"{iid}: fewer than 3 golden cases"
        assert {c.expected for c in robust} == {0.0, 1.0}, f"{iid}: needs an honest pass and an honest fail"
        assert bool(reference) == bool(TABLE[iid].robust), f"{iid}: a robust line needs a case, and only it"
        by_text = {c.completion: c.expected for c in robust}
        for case in reference:  # each reference line shows where the rules differ, with the prompt it games
            assert by_text[case.completion] != case.expected and "prompt" in case.columns, case.note
    hacks = sum(1 for sets in cases.values() for c in sets["reference"] if c.expected == 1.0)
    assert hacks >= 50


@pytest.mark.parametrize(
    ("iid", "kwargs"),
    [
        ("count:word_count_range", {"min_words": 3}),
        ("count:unique_word_count", {"N": "many"}),
        ("sentence:keyword", {"word": "", "N": 1}),
        ("format:options", {}),
        ("letters:letter_counting2", {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}),
        ("keywords:word_count_different_numbers", {"keyword": "cat", "frequency": 1, "relation": "about"}),
        ("copy:repeat_phrase", {"phrase": "two words", "small_n": 2}),
        ("repeat:repeat_span", {"prompt_to_repeat": "a b c"}),
    ],
)
def test_unusable_kwargs_are_bad_kwargs(iid: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(BadKwargs):
        read_args(TABLE[iid], kwargs)


RULES: tuple[Rules, ...] = ("reference", "robust")
ODD = ["", " ", "\n\n", "*", "...", "?!", "\u200b", "🐱", "((((", '"', "a" * 5000, "\t-\t*\t"]


@pytest.mark.parametrize("iid", IFBENCH_IDS + TRAIN_IDS)
def test_odd_responses_get_a_verdict_not_an_exception(iid: str) -> None:
    kwargs = _by_id()[iid]["robust"][0].columns["kwargs"][0]
    spec = TABLE[iid]
    args = read_args(spec, kwargs)
    for text in ODD:
        for rules in RULES:
            assert spec.check(text, args, Context(rules=rules)) in (True, False)
