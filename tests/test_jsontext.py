"""JSON text from columns read within bounds (:mod:`rewardkit.jsontext`), and every column parser that uses
it (issue 33, finding 2): text nested 200,000 levels deep, or an object nested 100,000 levels deep, is a
reward of ``None`` with a reason (or a plain label), never a ``RecursionError``. The same requests sent to a
real service are in ``tests/security/test_deep_json.py``."""

from __future__ import annotations

import json
import math
import random
import time
from typing import Any

import pytest

from rewardkit import get
from rewardkit.adapters.openrlhf import read_request
from rewardkit.choices import read_choices
from rewardkit.jsontext import MAX_DEPTH, JSONTextError, check_depth, nesting_depth, read_json
from rewardkit.rewards.countdown import parse_nums
from rewardkit.sandbox.cases import TestFormatError, read_cases

LEVELS = 200_000
DEEP_TEXT = "[" * LEVELS + "]" * LEVELS
PROGRAM = "```python\nprint(input())\n```"


def deep_list(levels: int, leaf: Any = None) -> Any:
    value: Any = [] if leaf is None else leaf
    for _ in range(levels):
        value = [value]
    return value


def test_the_reader_refuses_deep_text_before_parsing_it() -> None:
    for text in (DEEP_TEXT, '{"a": ' + DEEP_TEXT + "}", "[" * LEVELS, "{" * LEVELS):
        start = time.perf_counter()
        with pytest.raises(JSONTextError, match="nested more than 100 levels"):
            read_json(text)
        assert time.perf_counter() - start < 2  # about 30 ms here
    assert read_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) == deep_list(MAX_DEPTH - 1)
    with pytest.raises(JSONTextError, match="nested more than 3"):
        read_json("[[[[]]]]", max_depth=3)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"inputs": ["[" * 500, '\\"[[[', "]]]}"], "outputs": ["{" * 500]})
    assert read_json(text, max_depth=2)["inputs"][0] == "[" * 500
    assert read_json(r'["\\", "[", {"k": "\"["}]', max_depth=2) == ["\\", "[", {"k": '"['}]


def test_the_reader_refuses_long_text_and_text_that_is_not_json() -> None:
    with pytest.raises(JSONTextError, match="of 9 characters; the limit is 7"):
        read_json("[1, 2, 3]", max_chars=7)
    assert read_json("[1, 2, 3]", max_chars=9) == read_json("[1, 2, 3]", max_chars=None) == [1, 2, 3]
    for text in ("[1, 2", "{'a': 1}", "", "1" * 5000):  # the last: more digits than int() converts
        with pytest.raises(JSONTextError, match="not JSON"):
            read_json(text)
    assert math.isnan(read_json("NaN"))  # what json.loads reads, the reader reads


def test_the_depth_of_a_parsed_object_is_counted_without_recursion() -> None:
    start = time.perf_counter()
    assert nesting_depth(deep_list(100_000)) == MAX_DEPTH + 1  # stops past the limit
    assert nesting_depth(deep_list(100_000), limit=10**6) == 100_001  # recursion would fail long before
    assert time.perf_counter() - start < 20  # 0.5 s here; the point is no recursion, and no quadratic walk
    loop: list[Any] = []
    loop.append(loop)
    assert nesting_depth(loop) == MAX_DEPTH + 1
    assert nesting_depth({"a": ({"b": [1]},)}) == 4 and nesting_depth("[[[]]]") == nesting_depth(7) == 0
    with pytest.raises(JSONTextError, match="the tests nested more than 100 levels"):
        check_depth({"inputs": deep_list(99)}, what="the tests")
    check_depth({"inputs": deep_list(98)})


def test_a_large_test_column_reads_quickly() -> None:
    rng = random.Random(0)
    args = [[[rng.randint(0, 10**6) for _ in range(50)], [[1, 2], [3, 4]]] for _ in range(12_000)]
    tests = {"fn_name": "f", "inputs": args, "outputs": [[1, 'a"[[['] for _ in range(12_000)]}
    text = json.dumps(tests)  # 5 MB
    start = time.perf_counter()
    assert read_json(text) == tests
    check_depth(tests)
    assert time.perf_counter() - start < 5  # 0.3 s here (json.loads alone: 0.2 s)


def test_every_column_parser_reads_deep_text_as_unreadable() -> None:
    for tests in (DEEP_TEXT, '{"inputs": ' + DEEP_TEXT + ', "outputs": [1]}'):
        with pytest.raises(TestFormatError, match="the tests: JSON text nested more than 100 levels"):
            read_cases(tests)
    assert read_choices(DEEP_TEXT) is None
    assert parse_nums(DEEP_TEXT) is None and parse_nums('{"a": ' + DEEP_TEXT + "}") is None
    assert parse_nums("[" + "1, " * 50_000 + "1]") is None  # over MAX_NUMS_CHARS
    label = '{"nums": ' + DEEP_TEXT + "}"
    assert read_request(["x"], None, [label])[1] == {"solution": [label]}  # a plain label, as before


def test_deep_test_objects_are_bad_tests_not_a_recursion_error() -> None:
    """An object already parsed (from Python, or nested lists in a request's body) is measured too: these
    raised RecursionError from ``Cases.size``'s ``json.dumps`` before."""
    forms = [
        {"inputs": deep_list(100_000), "outputs": [1]},
        {"fn_name": "f", "inputs": [deep_list(100_000)], "outputs": [1]},
        {"fn_name": "f", "inputs": [[1]], "outputs": [deep_list(100_000)]},
        {"test_cases": deep_list(100_000)},
        deep_list(100_000),
    ]
    for tests in forms:
        with pytest.raises(TestFormatError, match="nested more than 100 levels"):
            read_cases(tests)
    scored = get("code").score_detailed([PROGRAM] * len(forms), tests=forms)
    assert scored.values == [None] * len(forms) and scored.reasons == ["bad_tests"] * len(forms)
    assert all("nested more than 100 levels" in d["error"] for d in scored.details)


def test_each_rewards_json_text_columns_200000_levels_deep_in_process() -> None:
    """Each reward's columns read from JSON text, 200,000 levels deep: ``None`` with the reward's reason."""
    code = get("code")
    for column in ("tests", "verification_info", "input_output", "test_list"):
        columns: dict[str, Any] = {column: [DEEP_TEXT]}
        scored = code.score_detailed([PROGRAM], **columns)
        assert (scored.values, scored.reasons) == ([None], ["bad_tests"]), column
    countdown = get("countdown").score_detailed(["<answer>1 + 2</answer>"], target=[3], nums=[DEEP_TEXT])
    assert (countdown.values, countdown.reasons) == ([None], ["invalid_nums"])  # 0.0, internal_error before
    for name in ("choice", "math"):  # without options, a gold that is no letter is judged as text
        scored = get(name).score_detailed(["The answer is (B)."], solution=["B"], choices=[DEEP_TEXT])
        assert scored.values == [1.0], name
