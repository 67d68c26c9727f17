"""Format and R1-V: extraction and reasons (rule-by-rule cases are golden files)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import rewardkit
from rewardkit.extract import gold_answer, last_tag_block
from rewardkit.rewards.format import check_format
from rewardkit.rewards.r1v import extract_numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>a</answer>", "a"),
        ("<answer>a</answer><answer>b</answer>", "b"),
        ("<answer>a</answer> junk </answer>", "a"),
        ("<answer>a<answer>b</answer>", "b"),
        ("<answer></answer>", ""),
        ("<answer>a", None),
        ("a</answer>", None),
        ("</answer><answer>", None),
        ("", None),
    ],
)
def test_last_tag_block(text: str, expected: str | None) -> None:
    assert last_tag_block(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<think>a</think><answer>b</answer>", None),
        ("<answer>b</answer>", "missing:think"),
        ("<think>a</think>", "missing:answer"),
        ("<think>a", "unclosed:think"),
        ("<think><answer>x</answer></think><answer>b</answer>", "nested:think"),
        ("<think>a</think><answer> </answer>", "empty:answer"),
        ("<think>a</think><answer>b</answer> c", "trailing_text"),
    ],
)
def test_format_reasons(text: str, reason: str | None) -> None:
    assert check_format(text) == reason


def test_format_reasons_reach_the_caller() -> None:
    scored = rewardkit.get("format").score_detailed(["<think>a</think><answer>b</answer>", "b"])
    assert scored.values == [1.0, 0.0] and scored.reasons == [None, "missing:think"]


@pytest.mark.timeout(10)
def test_format_is_linear_on_hostile_input() -> None:
    hostile = ["<think>" + "<think>" * 200_000, "<think>" + "a" * 1_000_000 + "</think><answer>" * 1000]
    assert rewardkit.format_tags(hostile) == [0.0, 0.0]


def test_extract_numbers_and_gold() -> None:
    assert extract_numbers("I see 2 red and three blue") == {Fraction(2), Fraction(3)}
    assert extract_numbers("x = -4") == {Fraction(-4)}
    assert extract_numbers("3-4") == {Fraction(3), Fraction(4)}
    assert extract_numbers("none") == set()
    assert gold_answer(float("nan")) is None
    assert gold_answer(True) is None
    assert gold_answer("<answer>a</answer> b <answer> c </answer>") == "c"


def test_r1v_reasons_reach_the_caller() -> None:
    scored = rewardkit.get("r1v_acc").score_detailed(
        ["<answer>3</answer>", "3", "<answer>3 or 4</answer>", "<answer>many</answer>", "<answer>3</answer>"],
        solution=[3, 3, 3, 3, None],
    )
    assert scored.values == [1.0, 0.0, 0.0, 0.0, None]
    assert scored.reasons == [None, "no_answer", "several_numbers", "no_number", "missing_solution"]
