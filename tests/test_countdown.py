"""Countdown: the parse step, the compare step, and adversarial input. Rule-by-rule cases are golden files."""

from __future__ import annotations

from fractions import Fraction

import pytest

import rewardkit
from rewardkit.rewards.countdown import (
    ExpressionError,
    evaluate,
    evaluate_tokens,
    judge,
    parse_nums,
    parse_target,
    tokenize,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", 7),  # precedence
        ("(1 + 2) * 3", 9),
        ("8 - 3 - 2", 3),  # left associative
        ("8 / 4 / 2", 1),
        ("2 * 3 / 4", Fraction(3, 2)),
        ("--3", 3),
        ("2 * -(3)", -6),
        ("-2 * 3 + 10", 4),
        ("2 - -3", 5),
        ("-6 / -4", Fraction(3, 2)),
        ("8 / (3 - 8 / 3)", 24),  # exact: floats give 23.999999999999996
        ("((((((7))))))", 7),
        ("1 + 2\n * 3", 7),  # answers may span lines
    ],
)
def test_evaluate_follows_precedence_and_is_exact(text: str, value: Fraction) -> None:
    assert evaluate(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "2 ** 3",
        "6 // 2",
        "7 % 2",
        "1.5 + 2",
        "x",
        "1 +",
        "(1",
        "1)",
        "()",
        "1 2",
        "+1",
        "2^3",
        "2(3)",
    ],
)
def test_evaluate_rejects_what_is_outside_the_grammar(text: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(text)


def test_tokens_keep_literals_whole_and_division_by_zero_is_kept_to_the_end() -> None:
    assert tokenize("8 / (3 - 8/3)") == ["8", "/", "(", "3", "-", "8", "/", "3", ")"]
    assert tokenize("1234 +\n 5") == ["1234", "+", "5"]
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")
    with pytest.raises(ZeroDivisionError):
        evaluate("5 / (1 / 0)")  # an undefined divisor does not become 0
    assert evaluate_tokens(tokenize("1 / 0 + 3"))[1] == 0
    with pytest.raises(ExpressionError):  # the grammar is still checked after a division by zero
        evaluate("1 / 0 )")


def test_judge_reports_why() -> None:
    target, nums = Fraction(24), [4, 6]
    assert judge("4 * 6", target, nums, 0.1) == (1.0, None)
    assert judge("4 + 6", target, nums, 0.1) == (0.1, None)
    assert judge("4 ** 6", target, nums, 0.1) == (0.1, "invalid_expression")
    assert judge("4 * 6 * 1", target, nums, 0.1) == (0.1, "wrong_numbers")
    assert judge("4 * 6 = 25", target, nums, 0.1) == (0.1, "rhs_not_target")
    assert judge("4 * 6 = 24 = 24", target, nums, 0.1) == (0.1, "multiple_equals")
    assert judge("", target, nums, 0.1) == (0.0, "empty_answer")
    assert judge("4 / (6 - 6)", target, [4, 6, 6], 0.1) == (0.1, "division_by_zero")
    assert judge("1+" * 600 + "1", target, nums, 0.1) == (0.1, "answer_too_long")


def test_column_parsing() -> None:
    assert parse_target(True) is None
    assert parse_target(float("inf")) is None
    assert parse_target("1e3") is None
    assert parse_target(-7) == -7
    assert parse_nums([1, True]) is None
    assert parse_nums([1.5]) is None
    assert parse_nums(["3", " 4 "]) == [3, 4]
    assert parse_nums("not json") is None
    assert parse_nums(17) is None
    assert parse_nums((2, 3)) == [2, 3]


def test_reasons_reach_the_caller() -> None:
    scored = rewardkit.get("countdown", format_score=0.1).score_detailed(
        ["<answer>4 * 6</answer>", "<answer>4 ** 6</answer>", "nothing", "<answer>4*6</answer>"],
        target=[24, 24, 24, 24],
        nums=[[4, 6], [4, 6], [4, 6], "[4,"],
    )
    assert scored.values == [1.0, 0.1, 0.0, None]
    assert scored.reasons == [None, "invalid_expression", "no_answer", "invalid_nums"]


# Adversarial inputs: each must come back with a defined value, fast (pytest-timeout guards the suite).
ADVERSARIAL = [
    ("<answer>" + "9**" * 300 + "9</answer>", [9] * 301, "power tower"),
    ("<answer>" + "(" * 5000 + "1" + ")" * 5000 + "</answer>", [1], "10k parentheses"),
    ("<answer>" + "-" * 999 + "1</answer>", [1], "999 unary minuses"),
    ("<answer>" + "9" * 999 + "</answer>", [int("9" * 999)], "999-digit literal"),
    ("<answer>" * 200_000, [1], "200k opening tags, no closing tag"),
    ("<answer>" * 100_000 + "1</answer>", [1], "100k opening tags before one closing tag"),
    ("x" * 1_000_000 + "<answer>1</answer>", [1], "1 MB completion"),
    ("<answer>\ud800 + 1</answer>", [1], "lone surrogate"),
    ("<answer>\x00 1</answer>", [1], "NUL byte"),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("completion", "nums", "note"), ADVERSARIAL, ids=[a[2] for a in ADVERSARIAL])
def test_adversarial_answers_end_with_a_defined_value(completion: str, nums: list[int], note: str) -> None:
    target = nums[0] if note in ("999-digit literal", "1 MB completion") else 10**9
    scored = rewardkit.get("countdown", format_score=0.1).score_detailed(
        [completion], target=[target], nums=[nums], raise_on_error=True
    )
    assert scored.values[0] in (0.0, 0.1, 1.0)
    if note == "1 MB completion":
        assert scored.values == [1.0]
    if note == "999-digit literal":
        assert scored.values == [1.0]


def test_a_whole_batch_of_power_towers_is_fast() -> None:
    """The ms-swift example evals `90**50**3**2` and hangs; 10k of them here are plain wrong answers."""
    completions = ["<answer>90**50**3**2</answer>"] * 10_000
    values = rewardkit.countdown(completions, target=[24] * 10_000, nums=[[90, 50, 3, 2]] * 10_000)
    assert values == [0.0] * 10_000
