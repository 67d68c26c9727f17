"""Outputs compared as the code datasets' judges do (:mod:`rewardkit.sandbox.compare`): the expected token
decides (issue 33, finding 4). An expected integer matches only the same integer (or a decimal form of
exactly its value); the tolerance applies where the expected number has a decimal point or an exponent.
The same rules, run through real programs in a sandbox, are golden cases in ``tests/data/code_golden.jsonl``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rewardkit.sandbox.compare import same_stdout, same_value

# (got, expected, matches, why): printed output against the expected output
STDOUT = [
    # issue 33, as reported: integers compared as floats
    ("12345678901234567891.0", "12345678901234567890", False, "a 20-digit integer one off, written with .0"),
    ("1e20", "100000000000000000001", False, "1e20 is not 10**20 + 1"),
    ("1e+20", "100000000000000000001", False, "nor in Python's float print"),
    ("3.0000009", "3", False, "an integer expected takes no tolerance"),
    ("2.9999999999", "3", False, "not from below either"),
    ("-0.0000001", "0", False, "nor around zero"),
    ("7 3.0000009", "7 3", False, "token by token"),
    # the decision: a decimal form of exactly the expected integer's value matches (LiveCodeBench's Decimal)
    ("3.0", "3", True, "3.0 is exactly 3"),
    ("3.000", "3", True, "trailing zeros"),
    ("+3", "3", True, "a sign"),
    ("003", "3", True, "leading zeros"),
    ("-0", "0", True, "minus zero is zero"),
    ("-0.0", "0", True, "and as a decimal"),
    ("1e20", "100000000000000000000", True, "1e20 is exactly 10**20"),
    ("1e+20", "100000000000000000000", True, "Python's print of float(10**20)"),
    ("12345678901234567890.000", "12345678901234567890", True, "exact however large"),
    ("1e99999999999999999999999", "1", False, "an exponent past Decimal's range is no match, not an error"),
    ("3.5", "3", False, "another value"),
    ("three", "3", False, "a word is text"),
    # integers, as before: exact, however large
    ("12345678901234567890", "12345678901234567891", False, "exact integers, one off"),
    ("1267650600228229401496703205376", "1267650600228229401496703205376", True, "2**100"),
    ("9" * 5000, "9" * 5000, True, "more digits than int() converts"),
    ("9" * 5000, "9" * 4999 + "8", False, "and one off"),
    # a decimal expected keeps its tolerance (real datasets' float outputs)
    ("0.3333333", "0.333333333", True, "within 1e-6"),
    ("0.33", "0.333333333", False, "0.003 off"),
    ("3", "3.0000001", True, "an integer printed for a decimal expected, within 1e-6"),
    ("3.0000009", "3.0", True, "3.0 expected is a decimal"),
    ("1500.0000001", "1.5e3", True, "an exponent makes it a decimal"),
    ("100000000000000000001", "1e20", True, "within the relative tolerance of a decimal expected"),
    ("1.2346e-7", "1.2345e-7", True, "absolute tolerance near zero, as before"),
    ("nan", "nan", True, "the same text"),
    ("inf", "1e400", False, "inf is text; 1e400 is no finite number"),
]


@pytest.mark.parametrize(("got", "expected", "matches", "why"), STDOUT, ids=[c[3] for c in STDOUT])
def test_printed_numbers_compare_as_the_expected_token_says(
    got: str, expected: str, matches: bool, why: str
) -> None:
    assert same_stdout(got, expected) is matches
    assert same_stdout(f"a {got}\n", f"a {expected}") is matches  # inside a line of tokens too


# (the program's return value as JSON, expected value, matches, why): call-based tests
VALUES: list[tuple[str, Any, bool, str]] = [
    ("1e20", 100000000000000000001, False, "issue 33: a float for an int expected, not exactly it"),
    ("2.0000000001", 2, False, "an int expected takes no tolerance"),
    ("[1, 2.0000000001]", [[1, 2]], False, "inside a list too"),
    ("2.0", 2, True, "a float of exactly the int's value"),
    ("1e20", 100000000000000000000, True, "1e20 is exactly 10**20"),
    ("100000000000000000001", 100000000000000000001, True, "exact ints"),
    ("2", 2.0000000001, True, "a float expected: within the tolerance"),
    ("[1, 2.0000000001]", [[1, 2.0]], True, "a float expected in a list, the list wrapped as TACO's"),
    ("3.1415926", 3.1415926535, True, "within 1e-6"),
    ("3.14", 3.1415926535, False, "outside it"),
    ("true", 1, True, "true == 1, as in Python (unchanged)"),
    ("1.0", True, True, "and 1.0 == True"),
    ('"2"', 2, False, "text is not a number"),
    ("1e400", 1, False, "infinity is no int"),
    ("[" * 70 + "]" * 70, [], False, "nested past the comparison's depth: no match, no error"),
    ("[" * 200_000 + "]" * 200_000, [], False, "nested 200,000 levels: no match, no RecursionError"),
]


@pytest.mark.parametrize(("got", "expected", "matches", "why"), VALUES, ids=[c[3] for c in VALUES])
def test_returned_values_compare_as_the_expected_value_says(
    got: str, expected: Any, matches: bool, why: str
) -> None:
    assert same_value(got, expected) is matches


def test_the_tolerance_is_the_callers() -> None:
    assert same_stdout("0.51", "0.5", tol=0.05) and not same_stdout("0.51", "0.5")
    assert not same_stdout("3.01", "3", tol=0.05)  # an integer expected: exact, whatever the tolerance
    assert same_value("0.51", 0.5, tol=0.05) and not same_value("2.01", 2, tol=0.05)
