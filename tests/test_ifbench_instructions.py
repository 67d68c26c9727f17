"""IFBench's test constraints and its IF-RLVR training constraints, checked through the instruction table.

The cases are ``tests/ifbench_cases.py``'s (an honest pass, an honest fail, and the hacks the robust rules
close, for every id); each runs under both rule sets.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from rewardkit.instructions import TABLE, BadKwargs, Context, read_args
from rewardkit.instructions.base import Rules
from tests.ifbench_cases import IFBENCH, TRAIN, Case

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


def _verdict(case: Case, rules: str) -> bool:
    iid, kwargs, text, *_ = case
    spec = TABLE[iid]
    return spec.check(text, read_args(spec, kwargs), Context(rules=rules))  # type: ignore[arg-type]


def test_every_ifbench_id_is_registered_with_its_source() -> None:
    assert len(IFBENCH_IDS) == 58 and len(TRAIN_IDS) == 29
    assert {i for i, s in TABLE.items() if s.source == "ifbench"} == set(IFBENCH_IDS)
    assert {i for i, s in TABLE.items() if s.source == "ifbench-train"} == set(TRAIN_IDS)
    for iid in IFBENCH_IDS + TRAIN_IDS:
        spec = TABLE[iid]
        assert spec.rule and "\n" not in spec.rule
        assert spec.robust is None or "\n" not in spec.robust


@pytest.mark.parametrize("cases", [IFBENCH, TRAIN], ids=["ifbench", "train"])
def test_three_cases_per_id_and_every_robust_rule_has_a_case_where_it_differs(cases: list[Case]) -> None:
    per_id = Counter(c[0] for c in cases)
    ids = IFBENCH_IDS if cases is IFBENCH else TRAIN_IDS
    assert {i: per_id[i] for i in ids if per_id[i] < 3} == {}
    assert set(per_id) <= set(ids)
    differs = {c[0] for c in cases if c[3] != c[4]}
    assert {i for i in ids if TABLE[i].robust} == differs, (
        "a robust line with no case, or a case with no line"
    )
    for iid in ids:  # both an honest pass and an honest fail
        assert {c[3] for c in cases if c[0] == iid} == {True, False} or {
            c[4] for c in cases if c[0] == iid
        } == {
            True,
            False,
        }


@pytest.mark.parametrize("case", IFBENCH + TRAIN, ids=lambda c: f"{c[0]}:{c[5]}"[:80])
def test_case(case: Case) -> None:
    iid, _, _, reference, robust, why = case
    assert _verdict(case, "reference") is reference, f"{iid} reference ({why})"
    assert _verdict(case, "robust") is robust, f"{iid} robust ({why})"


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
    kwargs = next(c[1] for c in IFBENCH + TRAIN if c[0] == iid)
    spec = TABLE[iid]
    args = read_args(spec, kwargs)
    for text in ODD:
        for rules in RULES:
            assert spec.check(text, args, Context(rules=rules)) in (True, False)
