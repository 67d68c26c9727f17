"""The ``code`` reward's scoring modes (issue 38): ``all``, ``fraction``, open-r1's Codeforces
``weighted_sum`` (the values ``cf_scoring.py``'s ``score_submission`` gives) and IOI subtasks (the points of
the subtasks all of whose tests pass, as ``ioi_scoring.py`` scores a subtask). The table checks the
arithmetic; the rest runs real programs in the sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from rewardkit import get
from rewardkit.core import RewardError
from rewardkit.sandbox.cases import TestFormatError, read_cases
from rewardkit.sandbox.scoring import (
    MODES,
    SubtaskError,
    compile_error_score,
    no_program_score,
    read_subtasks,
    score,
)


def fenced(program: str, language: str = "python") -> str:
    return f"<think>Let me write it.</think>\n```{language}\n{program}\n```"


def open_r1_weighted_sum(passed: int, total: int) -> float:
    """open-r1's cf_scoring.score_submission, weighted_sum branch, written out from its source."""
    pass_fail_score = 1.0 if passed == total else 0.0
    return pass_fail_score + 0.1 * (passed / total)


# (mode, passed per test, expected score): why
SCORES = [
    ("all", [True, True, True], 1.0),  # every test passes
    ("all", [True, False, True], 0.0),  # one fails: nothing
    ("fraction", [True, False, True, False], 0.5),  # the share passed (veRL's prime_code)
    ("fraction", [False], 0.0),
    ("weighted_sum", [True] * 10, 1.1),  # open-r1: pass_fail 1 + 0.1 x 1
    ("weighted_sum", [True] * 9 + [False], 0.09),  # 0 + 0.1 x 9/10
    ("weighted_sum", [False] * 4, 0.0),  # ran, passed nothing: 0, not the compile error's -0.1
    ("weighted_sum", [True, False, False], 0.1 / 3),
]


@pytest.mark.parametrize(("mode", "passed", "expected"), SCORES)
def test_the_score_of_each_mode(mode: str, passed: list[bool], expected: float) -> None:
    assert score(mode, passed) == pytest.approx(expected, abs=1e-12)
    if mode == "weighted_sum":
        assert score(mode, passed) == pytest.approx(open_r1_weighted_sum(sum(passed), len(passed)), abs=1e-12)


def test_open_r1_s_rewards_for_no_program_and_compile_errors() -> None:
    # cf_scoring.score_submission(no_compile_reward=-0.1, no_submission_reward=-1.0); our other modes keep
    # their [0, 1] range
    assert (compile_error_score("weighted_sum"), no_program_score("weighted_sum")) == (-0.1, -1.0)
    assert {compile_error_score(m) for m in MODES if m != "weighted_sum"} == {0.0}
    assert {no_program_score(m) for m in MODES if m != "weighted_sum"} == {0.0}


# (each test's subtasks, points, passed, subtasks score, subtask_points score): why
SUBTASKS = [
    ([1, 1, 2, 2], {"1": 30, "2": 70}, [True, True, True, False], 0.3, 30.0),  # subtask 2 has a failure
    ([1, 1, 2, 2], {"1": 30, "2": 70}, [True] * 4, 1.0, 100.0),
    ([1, 1, 2, 2], {"1": 30, "2": 70}, [False, True, True, True], 0.7, 70.0),  # one failure loses subtask 1
    # IOI shares tests: test 1 is in both subtasks, so its failure loses both
    ([1, [1, 2], 2], {"1": 40, "2": 60}, [True, False, True], 0.0, 0.0),
    ([0, 1, 2], [0, 25, 75], [False, True, True], 1.0, 100.0),  # samples as subtask 0, worth nothing
    (["a", "b"], None, [True, False], 0.5, 1.0),  # no points given: one each
]


@pytest.mark.parametrize(("of_test", "points", "passed", "normalised", "raw"), SUBTASKS)
def test_subtask_scores(
    of_test: list[Any], points: Any, passed: list[bool], normalised: float, raw: float
) -> None:
    subtasks = read_subtasks(of_test, points)
    assert score("subtasks", passed, subtasks) == pytest.approx(normalised)
    assert score("subtask_points", passed, subtasks) == pytest.approx(raw)


def test_a_subtask_whose_tests_were_cut_counts_neither_way() -> None:
    subtasks = read_subtasks([1, 1, 2], {"1": 50, "2": 50}).cut(2)  # max_tests=2: subtask 2 never ran
    assert score("subtasks", [True, True], subtasks) == 1.0
    assert score("subtask_points", [True, True], subtasks) == 50.0


@pytest.mark.parametrize(
    ("of_test", "points", "message"),
    [
        ([1, 2], {"1": 10}, "test 1's subtask '2' has no points"),
        ([1], {"1": 0}, "sum to 0"),
        ([1], {"1": -5}, "must be a number >= 0"),
        ([True], None, "must be a name or a number"),
        ([[]], None, "belongs to no subtask"),
        ([1], "100", "must be a mapping or a list"),
    ],
)
def test_unreadable_subtasks_are_errors(of_test: list[Any], points: Any, message: str) -> None:
    with pytest.raises(SubtaskError, match=message):
        read_subtasks(of_test, points)


def test_the_test_formats_carry_subtasks() -> None:
    listed = read_cases(
        [{"input": "1", "output": "1", "subtask": 1}, {"input": "2", "output": "2", "subtask": 2}]
    )
    assert listed.subtasks is not None and listed.subtasks.of_test == (("1",), ("2",))
    inline = read_cases({"inputs": ["1"], "outputs": ["1"], "subtasks": ["s"], "subtask_points": {"s": 7}})
    assert inline.subtasks is not None and inline.subtasks.points == (("s", 7.0),)
    column = read_cases(
        [{"input": "1", "output": "1", "subtask": "s"}], subtask_points={"s": 3}
    )  # the row's subtask_points column wins
    assert column.subtasks is not None and column.subtasks.points == (("s", 3.0),)
    assert read_cases({"inputs": ["1"], "outputs": ["1"]}).subtasks is None
    with pytest.raises(TestFormatError, match="every test needs a subtask"):
        read_cases([{"input": "1", "output": "1", "subtask": 1}, {"input": "2", "output": "2"}])


DOUBLE = "print(2 * int(input()))"
SMALL_ONLY = "n = int(input())\nprint(2 * n if n < 100 else 0)"  # right on the small tests only
TESTS = {"inputs": ["1", "2", "500", "700"], "outputs": ["2", "4", "1000", "1400"]}
SUBTASK_TESTS = [
    {"input": "1", "output": "2", "subtask": 1},
    {"input": "2", "output": "4", "subtask": 1},
    {"input": "500", "output": "1000", "subtask": 2},
    {"input": "700", "output": "1400", "subtask": 2},
]


def run(mode: str, programs: list[str], **columns: Any) -> Any:
    reward = get("code", mode=mode, max_concurrency=4)
    return reward.score_detailed(programs, raise_on_error=True, **columns)


def test_weighted_sum_through_the_sandbox_matches_open_r1() -> None:
    programs = [fenced(DOUBLE), fenced(SMALL_ONLY), fenced("print(2 * int(input())"), "No code, sorry."]
    scored = run("weighted_sum", programs, tests=[TESTS] * 4)
    expected = [open_r1_weighted_sum(4, 4), open_r1_weighted_sum(2, 4), -0.1, -1.0]
    assert scored.values == pytest.approx(expected)
    assert scored.reasons == [None, "wrong_answer:2", "compile_error", "no_code"]
    assert scored.details[1]["passed"] == 2


def test_all_and_fraction_through_the_sandbox() -> None:
    assert run("all", [fenced(DOUBLE), fenced(SMALL_ONLY)], tests=[TESTS] * 2).values == [1.0, 0.0]
    assert run("fraction", [fenced(DOUBLE), fenced(SMALL_ONLY)], tests=[TESTS] * 2).values == [1.0, 0.5]
    # a timeout ends a fraction run: the tests after it count as failed (bounded time for a looping program)
    slow = "import time\nn = int(input())\nif n == 2:\n    time.sleep(60)\nprint(2 * n)"
    reward = get("code", mode="fraction", timeout_s=1.0)
    scored = reward.score_detailed([fenced(slow)], tests=[TESTS], raise_on_error=True)
    assert (scored.values, scored.reasons) == ([0.25], ["timeout"])


def test_ioi_subtasks_through_the_sandbox() -> None:
    points = {"1": 30, "2": 70}
    scored = run(
        "subtasks",
        [fenced(DOUBLE), fenced(SMALL_ONLY)],
        tests=[SUBTASK_TESTS] * 2,
        subtask_points=[points] * 2,
    )
    assert scored.values == pytest.approx([1.0, 0.3])
    assert scored.reasons == [None, "wrong_answer:2"]
    scored = run(
        "subtask_points",
        [fenced(DOUBLE), fenced(SMALL_ONLY)],
        tests=[SUBTASK_TESTS] * 2,
        subtask_points=[points] * 2,
    )
    assert scored.values == pytest.approx([100.0, 30.0])


def test_same_program_and_tests_with_other_points_are_scored_apart() -> None:
    scored = run(
        "subtask_points",
        [fenced(SMALL_ONLY)] * 2,
        tests=[SUBTASK_TESTS] * 2,
        subtask_points=[{"1": 30, "2": 70}, {"1": 60, "2": 40}],
    )
    assert scored.values == pytest.approx([30.0, 60.0])


def test_subtask_modes_need_subtasks_and_unknown_modes_are_refused() -> None:
    scored = run("subtasks", [fenced(DOUBLE)], tests=[TESTS])
    assert (scored.values, scored.reasons) == ([None], ["bad_tests"])
    assert "needs each test's subtask" in scored.details[0]["error"]
    bad_points = run("subtasks", [fenced(DOUBLE)], tests=[SUBTASK_TESTS], subtask_points=[{"1": 30}])
    assert (bad_points.values, bad_points.reasons) == ([None], ["bad_tests"])
    with pytest.raises(RewardError, match="mode must be one of"):
        get("code", mode="partial")


CPP_DOUBLE = '#include <cstdio>\nint main() { long long n; scanf("%lld", &n); printf("%lld\\n", 2 * n); }'
CPP_SMALL_ONLY = (
    '#include <cstdio>\nint main() { int n; scanf("%d", &n); printf("%d\\n", n < 100 ? 2 * n : 0); }'
)
CPP_BROKEN = '#include <cstdio>\nint main() { printf("%d\\n", undeclared); }'


def test_weighted_sum_and_subtasks_with_cpp_programs() -> None:
    programs = [fenced(p, "cpp") for p in (CPP_DOUBLE, CPP_SMALL_ONLY, CPP_BROKEN)]
    scored = run("weighted_sum", programs, tests=[TESTS] * 3)
    assert scored.values == pytest.approx([1.1, 0.05, -0.1])  # open-r1's no_compile_reward for g++'s error
    assert scored.reasons == [None, "wrong_answer:2", "compile_error"]
    subtasks = run("subtasks", programs, tests=[SUBTASK_TESTS] * 3, subtask_points=[{"1": 30, "2": 70}] * 3)
    assert subtasks.values == pytest.approx([1.0, 0.3, 0.0])
