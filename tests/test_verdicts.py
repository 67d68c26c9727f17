"""Verdicts that generalise (issue 19): the extraction order, multiple choice, scientific notation, units
that are units, the numeric check, Math-Verify's own suite, and `rewardkit agreement`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.agreement import half, measure, read_labelled
from rewardkit.choices import answer_letter, chosen_letter, gold_letter, read_choices
from rewardkit.core import RewardError
from rewardkit.extract import (
    before_next_turn,
    final_text,
    math_answer,
    sentence_answer,
    stated_answers,
    value_like,
)
from rewardkit.verify.fastpath import fast_verdict, plain_number, within_tolerance
from rewardkit.verify.guards import guard
from rewardkit.verify.normalise import Canonical, canonical
from tests.test_cli import run

SUITE = Path(__file__).parent / "data" / "math_verify_suite.jsonl"

# -- extraction


@pytest.mark.parametrize(
    ("completion", "mode", "answer"),
    [
        ("so she makes $18 every day. #### 18", "strict", "18"),
        ("#### 18\nso that is it", "strict", "18"),
        ("Therefore, the answer (arabic numerals) is 26.", "strict", "26"),
        ("The answer to this problem is $\\frac{1}{2}$.", "strict", "\\frac{1}{2}"),
        ("The answer should be 4.", "strict", "4"),
        ("**Final Answer:** 12", "strict", "12"),
        ("Answer \\( (9+1) \\)", "strict", "(9+1)"),
        ("The final answer is:\n\\[\nx = 5\n\\]", "strict", "5"),
        ("so *n* = **5**.", "strict", "5"),
        ("**Step 3:** add them", "strict", None),
        ("$[0,1)$", "strict", "[0,1)"),
        ("$$f(y) = y$$", "strict", "f(y) = y"),
        ("$F_n = \\sum_{k=0}^{n-1} F_k$", "strict", "F_n = \\sum_{k=0}^{n-1} F_k"),
        ("-\\frac{10}{9}", "strict", "-\\frac{10}{9}"),
        ("Thus $x <= 2$ is our answer.", "standard", "x <= 2"),
        ("So f(-2) is 18.", "strict", None),
        ("So f(-2) is 18.", "standard", "18"),
        ("It is 225.\n\nI think that's the final answer.", "standard", "225"),
        ("AC = 6. Therefore AB cannot be determined from the information given.", "standard", None),
        ("so x = (1/2", "standard", None),
        ("so x = (1/2", "lenient", "1/2"),
        ("Final Answer: Jane started growing Sphere 3 hours ago. I hope it is correct.", "strict", "3"),
        (
            "first \\boxed{200} then \\boxed{255}. Final Answer: The final answer is $10,455$.",
            "strict",
            "10,455",
        ),
        ("\\boxed{(3, 3)} \\text{ for part (a) and } \\boxed{(1, 1)}", "strict", "(3, 3), (1, 1)"),
        ("first \\boxed{18}, which gives \\boxed{210}", "strict", "210"),
        ("答案是 7。", "strict", "7"),
        ("The answer is (D).<EOS_TOKEN>", "strict", "(D)"),
        ("so the answer: x = 18 + 38 = 56", "strict", "56"),
        ("The final answer is $x-2y+z-1=0$. I hope it is correct.", "strict", "x-2y+z-1=0"),
        ("The answer is $(x, y) = (1, 2)$.", "strict", "(1, 2)"),
        ("The answer is $p=-1, p=2$.", "strict", "p=-1, p=2"),
        # a qualifier bounds the first value after it and those joined to it by "or", "and", commas
        ("The number is not 10 which is 1,000.99€.", "standard", "1,000.99"),
        ("the number is not 10 which is 1,000.99€", "lenient", "1,000.99"),
        ("n is not divisible by 3, so n = 7.", "standard", "7"),
        ("Instead of 10, it is 12.", "standard", "12"),
        ("So x is not 10 or 12.", "standard", None),
        ("It is not equal to 7.", "standard", None),
        ("7 is not possible.", "standard", None),
        # labelled boxes are one answer set; an unlabelled box before a labelled one is not
        ("\\($y_1 = \\boxed{a} \\) and \\( y_2 = \\boxed{b} \\)", "strict", "a, b"),
        ("$a = \\boxed{2}$, $b = \\boxed{3}$", "strict", "2, 3"),
        ("we get \\boxed{18}, x = \\boxed{210}", "strict", "210"),
        ("so x = \\boxed{2}, so y = \\boxed{3}", "strict", "3"),
        # Minerva's signed-off answer counts wherever it stands; an answer in quotes is read without them
        (
            "Final Answer: The final answer is $7$. I hope it is correct." + " [Note: check it.]" * 60,
            "strict",
            "7",
        ),
        ('The final answer is "12 and 13".', "strict", "12 and 13"),
        ('Final Answer: \\"$5$\\"', "strict", "5"),
    ],
)
def test_math_answer_reads_how_models_write(completion: str, mode: str, answer: str | None) -> None:
    assert math_answer(completion, mode=mode).answer == answer


def test_final_segment_markers() -> None:
    assert (
        final_text("<|begin_of_thought|>x<|end_of_thought|>\n\n<|begin_of_solution|>A<|end_of_solution|>")
        == "A"
    )
    assert final_text("<|begin_of_thought|>x<|end_of_thought|> after") == " after"
    assert final_text("<|begin_of_thought|> never ends \\boxed{3}") is None
    assert final_text("<think>a</think>b<|im_end|>") == "b"
    assert math_answer("<|begin_of_thought|> never ends \\boxed{3}").reason == "unclosed_think"


def test_next_turn_is_cut_only_after_an_answer() -> None:
    text = "The answer is 4.\n\nQuestion: what is 3+3?\nThe answer is 6."
    assert before_next_turn(text) == "The answer is 4.\n\n"
    restated = "Problem: find x.\nWe get x = 2, so the answer is 2."
    assert before_next_turn(restated) == restated
    assert (
        before_next_turn("So it is $\\boxed{3}$.\n### Problem 2\nthe answer is 5")
        == "So it is $\\boxed{3}$.\n"
    )
    assert (
        before_next_turn("<|im_start|>assistant\nthe answer is 3") == "<|im_start|>assistant\nthe answer is 3"
    )
    assert before_next_turn("the answer is 3<|im_start|>user\nhi") == "the answer is 3"


def test_value_like_and_sentences() -> None:
    assert value_like("x \\in [-2, 7]") and value_like("$28$ %") and value_like("12 cm")
    assert not value_like("Let's think step by step") and not value_like("Step 3:")
    assert sentence_answer("Thus the answer. So the total is $5$.") == "5"
    assert sentence_answer("Result: 5 apples! Let me know if you need more.") == "5"
    assert stated_answers("The answer is (A). The answer is (B).") == [(4, "(A)"), (23, "(B)")]


def test_modes_are_checked() -> None:
    with pytest.raises(ValueError, match="extract must be one of"):
        math_answer("x", mode="loose")
    with pytest.raises(ValueError, match="extract must be one of"):
        rewardkit.get("math", extract="loose")


# -- multiple choice


def test_read_choices_forms() -> None:
    assert read_choices(["Yes", "No"]) == {"A": "Yes", "B": "No"}
    assert read_choices({"a": "Yes", "B": 2}) == {"A": "Yes", "B": "2"}
    assert read_choices('["1", "2"]') == {"A": "1", "B": "2"}
    assert read_choices("not a list") is None
    assert read_choices(None) is None and read_choices([]) is None
    assert read_choices([["nested"]]) is None
    assert read_choices({"AB": "x"}) is None
    assert read_choices([str(i) for i in range(27)]) is None


@pytest.mark.parametrize(
    ("answer", "options", "letter"),
    [
        ("B", {"A": "Yes", "B": "No"}, "B"),
        ("(B)", None, "B"),
        ("\\text{B}", None, "B"),
        ("(B) No", {"A": "Yes", "B": "No"}, "B"),
        ("(B) sample A", None, "B"),
        ("B. No", {"A": "Yes", "B": "No"}, "B"),
        ("(A) No", {"A": "Yes", "B": "No"}, None),  # contradicts itself
        ("no.", {"A": "Yes", "B": "No"}, "B"),
        ("$3,628,800$", {"A": "40320", "B": "3628800"}, "B"),
        ("a", {"A": "Yes", "B": "No"}, None),  # an article, not a letter
        ("A cat", None, None),
        ("Z", {"A": "Yes", "B": "No"}, None),
    ],
)
def test_answer_letter(answer: str, options: dict[str, str] | None, letter: str | None) -> None:
    assert answer_letter(answer, options) == letter


def test_gold_letter_and_chosen_letter() -> None:
    options = {"A": "Yes", "B": "No"}
    assert gold_letter("No", options) == "B" and gold_letter("(A)", options) == "A"
    assert gold_letter("C", options) is None and gold_letter("Maybe", options) is None
    assert gold_letter("D", None) == "D" and gold_letter("12", None) is None
    assert chosen_letter("We weigh it... \\boxed{0.8}. The answer is (B).", options) == "B"
    assert chosen_letter("So the most likely option is (B).", options) == "B"
    assert chosen_letter("The answer is (A). The answer is (B). The answer is (A).", options) == "A"
    assert chosen_letter("The answer is (A). The answer is (B). The answer is (C).", None) is None


def test_math_and_choice_with_choices_column() -> None:
    completions = ["(B) No", "The answer is (A).", "No", "The answer is 2x."]
    golds = ["No", "No", "B", "B"]
    choices = [["Yes", "No"], ["Yes", "No"], ["Yes", "No"], ["x^2", "2x"]]
    assert rewardkit.get("math")(completions, solution=golds, choices=choices) == [1.0, 0.0, 1.0, 1.0]
    assert rewardkit.get("choice")(completions, solution=golds, choices=choices) == [1.0, 0.0, 1.0, 1.0]
    scored = rewardkit.get("choice").score_detailed(
        ["The answer is (A). The answer is (B). The answer is (C).", "nothing", "B"],
        solution=["B", "B", "Maybe"],
        choices=[None, None, ["Yes", "No"]],
    )
    assert scored.values == [0.0, 0.0, None]
    assert scored.reasons == ["several_choices", "no_choice", "gold_not_a_choice"]
    # a gold that is no option is compared as math
    assert rewardkit.get("math")(["\\boxed{7}"], solution=["7"], choices=[["1", "2"]]) == [1.0]


# -- numbers, units, guards


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [
        ("0.001", "1e-3", True),
        ("1.07\\times10^{16}", "1.07e16", True),
        ("6.02\\cdot10^{23}", "6.02 \\times 10^{23}", True),
        ("10^{-3}", "0.001", True),
        ("1.0e-9", "2e-9", False),  # exponents compare exactly, not to 6 decimal places
        ("4.6\\times10^{33}", "4.5e33", False),
    ],
)
def test_scientific_notation_fast_path(prediction: str, gold: str, equal: bool) -> None:
    assert fast_verdict(canonical(prediction).text, canonical(gold).text) is equal


def test_scientific_notation_is_not_read_inside_words() -> None:
    assert canonical("3e").text == "3e" and canonical("x2e5y").text == "x2e5y"
    assert plain_number("10^{9999}") is None  # too large to build exactly


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [
        ("1000,99", "1000.99", True),
        ("1.22", "1,22", True),
        ("0,111", "0.111", True),  # a leading 0 is never a group of thousands
        ("1,5", "1.6", False),
        ("1,2", "\\frac{6}{5}", None),  # against no decimal point: a list, Math-Verify's to judge
        ("-9,-1", "-9.1", None),
        ("1,234", "1.234", False),  # a group of thousands
    ],
)
def test_decimal_comma_against_a_decimal_point(prediction: str, gold: str, equal: bool | None) -> None:
    assert fast_verdict(canonical(prediction).text, canonical(gold).text) is equal


def test_rel_tol() -> None:
    assert within_tolerance("4.6\\times10^{33}", "4.5e33", 0.05) is True
    assert within_tolerance("5\\times10^{33}", "4.5e33", 0.05) is False
    assert within_tolerance("5 m", "5 cm", 0.5) is False
    assert within_tolerance("x", "1", 0.5) is None
    assert rewardkit.get("math", rel_tol=0.05)(["\\boxed{4.6e33}"], solution=["4.5e33"]) == [1.0]
    with pytest.raises(ValueError, match="rel_tol"):
        rewardkit.get("math", rel_tol=1.5)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("5 m", Canonical("5", "m")),
        ("5\\,\\mathrm{m}", Canonical("5", "m")),
        ("10.8m", Canonical("10.8", "m")),
        ("4√{3}cm²", Canonical("4\\sqrt{3}", "cm^2")),
        ("\\frac{37}{4}m", Canonical("\\frac{37}{4}m")),
        ("(x+1)m", Canonical("(x+1)m")),
        ("700°C", Canonical("700", "°C")),
        ("$125$ miles", Canonical("125", "mi")),
        ("2 & 3", Canonical("2 , 3")),
        ("9 \\& 2", Canonical("9 \\& 2")),
    ],
)
def test_units_only_where_written_as_units(answer: str, expected: Canonical) -> None:
    assert canonical(answer) == expected


def test_a_unit_the_other_side_uses_as_a_variable_is_kept() -> None:
    math = rewardkit.get("math")
    assert math(["\\boxed{5 m + 1}", "\\boxed{5 m}"], solution=["5m + 1", "5"]) == [1.0, 1.0]


def test_large_powers_inside_groups_are_numbers_not_towers() -> None:
    assert guard("\\frac{1}{10^{20}}", max_chars=1000) is None
    assert guard("\\frac{8.91 \\times 10^{23}}{2}", max_chars=1000) is None
    assert guard("2^{3+10^{20}}", max_chars=1000) == "huge_power"
    assert guard("2^ {10^{20}}", max_chars=1000) == "huge_power"


def test_numeric_check_in_the_worker() -> None:
    from rewardkit.verify.worker import _parse_answer, numeric_verdict

    def numeric(gold: str, prediction: str) -> bool | None:
        return numeric_verdict(_parse_answer(gold)[0], _parse_answer(prediction)[0])

    assert numeric("\\frac{1}{2a}(e^{at}-e^{-at})", "\\frac{\\sinh(at)}{a}") is True
    assert numeric("\\frac{1}{2a}(e^{at}-e^{-at})", "x(t) = \\frac{\\sinh(at)}{a}") is True
    assert numeric("\\frac{1}{2a}(e^{at}-e^{-at})", "\\frac{\\cosh(at)}{a}") is False
    assert numeric("x", "\\sqrt{x^2}") is False  # negative points too
    assert numeric("f(x)", "f(x)") is None  # an undefined function is no value
    assert numeric("3", "3") is None  # constants are Math-Verify's
    assert numeric("x + y", "x + 1") is False  # a variable one side lacks must cancel out of the other
    assert numeric("x + y - y", "x") is True
    assert numeric("\\text{abc}", "a b c") is None  # a name against names: Math-Verify reads them as text


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("y = 2x + 1", "2x - y + 1 = 0", True),  # sides swapped and moved over
        ("m\\ddot{x} + kx = 0", "2m\\ddot{x} = -2kx", True),  # multiplied through by a constant
        # divided by a variable: the other side may vanish with it (m = 0), so Math-Verify's solve decides
        ("m\\ddot{x} + kx = 0", "\\ddot{x} = -\\frac{k}{m}x", None),
        ("y = 2x", "xy = 2x^2", None),  # x y = 2 x^2 also holds at x = 0
        ("x = 3", "x = 3.0", True),
        ("y = 2x + 1", "y = 2x - 1", False),
        ("y = 2x", "z = 2x", False),  # a different unknown defined
        ("m\\ddot{x} + kx = 0", "\\ddot{x} = \\frac{k}{m}x", False),
        # an unknown function of t is one unknown value on both sides; a sign and a factor differ
        (
            "ml\\ddot{\\theta}(t)-mg\\sin\\theta(t)=f(t)\\cos\\theta(t)",
            "ml\\ddot{\\theta}(t)+mg\\sin\\theta(t)=f(t)",
            False,
        ),
        (
            "ml\\ddot{\\theta}(t)-mg\\sin\\theta(t)=f(t)\\cos\\theta(t)",
            "\\ddot{\\theta}(t) = \\frac{g}{l}\\sin\\theta(t) + \\frac{f(t)\\cos\\theta(t)}{ml}",
            None,
        ),
        ("x^2 + y^2 = 1", "x^2 + y^2 = 2", None),  # no variable enters linearly: Math-Verify solves them
        # letters read as a product: solving for C finds only the factor C = 0, S finds S = L against A = M
        ("SRMC=LRMC", "SRMC = LRAC", False),
        ("C(x^2+y^2-1)=0", "C(x^2+y^2-2)=0", None),  # only C is linear, and its root 0 says nothing
    ],
)
def test_equations_compared_by_their_solutions(gold: str, prediction: str, expected: bool | None) -> None:
    from rewardkit.verify.worker import _parse_answer, numeric_verdict

    assert numeric_verdict(_parse_answer(gold)[0], _parse_answer(prediction)[0]) is expected


def test_different_equations_of_motion_are_decided_fast() -> None:
    """Real pairs (Minerva's pendulum, a polytrope's pressure) that Math-Verify's solve and simplify took
    over 5 s to reject: the worker's checks settle them before Math-Verify is asked."""
    math = rewardkit.get("math", timeout_s=5.0)
    gold = "ml\\ddot{\\theta}(t)-mg\\sin\\theta(t)=f(t)\\cos\\theta(t)"
    scored = math.score_detailed(
        [
            "\\boxed{m l \\ddot{\\theta} + mg \\sin \\theta = f(t)}",
            "\\boxed{m l \\frac{d^2 \\theta}{dt^2} = m g \\sin(\\theta) + f(t)}",
            "\\boxed{P = \\left(\\frac{a}{K} z + P_0^{-2/5}\\right)^{-5/2}}",
        ],
        solution=[gold, gold, "[P_{0}^{2/5}-\\frac{2}{5}gK^{-3/5}z]^{5/2}"],
    )
    assert scored.values == [0.0, 0.0, 0.0]
    assert scored.reasons == [None, None, None]  # wrong, not "timeout"


# -- Math-Verify's own test suite, rebuilt as data


def _suite() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SUITE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _options(case: dict[str, Any]) -> dict[str, Any]:
    """The verification options the case's test ran Math-Verify with, as `math`'s parameters."""
    options = case["options"]
    return {
        "precision": options.get("precision", 6),
        "strict": options.get("strict", True),
        "set_relations": options.get("allow_set_relation_comp", False),
    }


def _passed(mode: str, wrapping: str = "{}") -> tuple[int, list[dict[str, Any]]]:
    """Cases `math` judges as Math-Verify's tests expect, each under its test's options (one reward a set
    of options), and the cases it scores 1.0 where they expect a difference."""
    cases = _suite()
    assert len(cases) == 270
    groups: dict[tuple[tuple[str, Any], ...], list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault(tuple(sorted(_options(case).items())), []).append(case)
    assert len(groups) > 1  # the suite holds cases of other options than the defaults
    passed, wrong = 0, []
    for options, members in groups.items():
        scored = rewardkit.get("math", extract=mode, **dict(options)).score_detailed(
            [wrapping.format(c["completion"]) for c in members], solution=[c["gold"] for c in members]
        )
        for value, case in zip(scored.values, members, strict=True):
            passed += (value == 1.0) == case["expected"]
            if value == 1.0 and not case["expected"]:
                wrong.append(case)
    return passed, wrong


# today's counts (issue 34: floors 1-2 under them let a regression pass); raise them as rules improve
@pytest.mark.parametrize(("mode", "floor"), [("strict", 247), ("standard", 268), ("lenient", 268)])
def test_math_verify_suite(mode: str, floor: int) -> None:
    passed, wrong = _passed(mode)
    assert passed >= floor, f"{mode}: {passed}/270 of Math-Verify's cases pass"
    assert wrong == []  # never a false positive on the cases Math-Verify expects to differ


# the same cases as a GRPO completion carries them, inside an answer block (issue 35: a sentence around one
# math span, relations and matrices in prose, a value stated in words around it)
@pytest.mark.parametrize(("mode", "floor"), [("standard", 268), ("lenient", 268)])
def test_math_verify_suite_inside_answer_tags(mode: str, floor: int) -> None:
    passed, wrong = _passed(mode, "<answer>{}</answer>")
    assert passed >= floor, f"{mode}: {passed}/270 of Math-Verify's cases pass inside <answer>"
    assert wrong == []


# -- agreement


ROWS = [
    {"id": 1, "completion": "so \\boxed{4}", "solution": "4", "label": 1, "dataset": "a"},
    {"id": 2, "completion": "so \\boxed{5}", "solution": "4", "label": 1, "dataset": "a"},
    {"id": 3, "completion": "so \\boxed{5}", "solution": "4", "label": 0, "dataset": "b"},
    {"id": 4, "completion": "so \\boxed{4}", "solution": "4", "label": 0.0, "dataset": "b"},
    {"id": 5, "completion": "so \\boxed{4}", "solution": "4", "label": None, "dataset": "b"},
]


def test_measure_counts_and_groups() -> None:
    overall, group_a, group_b = measure(ROWS, "math", by="dataset", show=5)
    assert (overall.n, overall.agree, overall.false_positives, overall.false_negatives) == (4, 2, 1, 1)
    assert overall.positives == 2 and overall.rate == 0.5 and overall.fp_rate == 0.5
    assert overall.examples[0]["id"] == 4 and overall.examples[0]["label"] == 0.0  # false positives first
    assert overall.examples[1]["answer"] == "5"  # what the reward read
    assert (group_a.group, group_a.n, group_a.agree) == ("a", 2, 1)
    assert (group_b.group, group_b.n, group_b.false_positives) == ("b", 2, 1)
    assert overall.as_dict()["rate"] == 0.5


def test_measure_maps_columns_and_names_missing_ones() -> None:
    rows = [{"completion": "\\boxed{7}", "gold": "7", "label": 1}]
    [report] = measure(rows, "math", columns={"solution": "gold"})
    assert report.agree == 1
    with pytest.raises(RewardError, match="reads the 'solution' field, and no labelled row has one"):
        measure(rows, "math")
    with pytest.raises(RewardError, match="unknown reward"):
        measure(rows, "nope")


def test_half_is_stable_and_splits() -> None:
    rows = [{"solution": str(i)} for i in range(200)]
    halves = [half(row) for row in rows]
    assert halves == [half(row) for row in rows] and 60 < halves.count("A") < 140


def _write(path: Path, rows: list[dict[str, Any]], *, gz: bool = False) -> Path:
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text + "\n", encoding="utf-8")
    return path


def test_read_labelled(tmp_path: Path) -> None:
    assert len(read_labelled(_write(tmp_path / "rows.jsonl.gz", ROWS, gz=True))) == 5
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(RewardError, match="bad.jsonl:2: not JSON"):
        read_labelled(bad)


def test_agreement_command(tmp_path: Path) -> None:
    path = _write(tmp_path / "rows.jsonl", ROWS)
    out = run("agreement", str(path), "-f", "math", "-f", "math:extract=strict", "--by", "dataset")
    assert out.returncode == 0, out.stderr
    assert "50.0%" in out.stdout and "false positives first" in out.stdout
    reports = json.loads(run("agreement", str(path), "-f", "math", "--json").stdout)
    assert [(r["n"], r["agree"], r["false_positives"]) for r in reports] == [(4, 2, 1)]
    mapped = _write(
        tmp_path / "mapped.jsonl", [{**r, "answer": r["solution"], "solution": None} for r in ROWS]
    )
    reports = json.loads(
        run("agreement", str(mapped), "-f", "math", "-c", "solution=answer", "--json").stdout
    )
    assert reports[0]["agree"] == 2
    # every row has the gold "4": one half holds the 4 labelled rows, the other none, which is an error
    halves = {h: run("agreement", str(path), "-f", "math", "--half", h, "--json") for h in "AB"}
    full, empty = sorted(halves.values(), key=lambda proc: proc.returncode)
    assert json.loads(full.stdout)[0]["n"] == 4
    assert empty.returncode == 2 and empty.stdout == "" and "has no rows" in empty.stderr
    for bad in (["-c", "solution"], ["--half", "C"], ["-f", "nope"]):
        failed = run("agreement", str(path), "-f", "math", *bad)
        assert failed.returncode == 2 and "error" in failed.stderr
    assert run("agreement", str(tmp_path / "missing.jsonl"), "-f", "math").returncode == 2


# -- found in review: wrong answers that must not score, inputs that must not hang or crash

OPTIONS = ["10", "20", "30", "40"]


@pytest.mark.parametrize(
    ("completion", "gold", "choices"),
    [
        ("The answer is 12, which is more than 10.", "10", None),
        ("The answer is 12 (greater than the 10 we had before).", "10", None),
        ("The final answer is 12 apples, not 10.", "10", None),
        ("So the answer is 8 since each of the 4 sides counts twice.", "4", None),
        ("**Final Answer:** 8 for each of the 3 workers", "3", None),
        ("The answer is definitely not $\\frac{1}{2}$.", "\\frac12", None),
        ("So the result is not 7.", "7", None),
        ("It cannot be 7.", "7", None),
        ("The answer is less than 7.", "7", None),
        ("The answer is at least 7.", "7", None),
        ("\\boxed{1.6\\times10^{-19} V}", "3.2\\times10^{-19} V", None),
        ("\\boxed{\\frac{x}{10^{8}}}", "\\frac{x}{10^{7}}", None),
        ("\\boxed{10^{-7} x^2}", "3 \\cdot 10^{-7} x", None),
        ("\\boxed{\\min(x,3)}", "x", None),
        ("\\boxed{\\lfloor x/3 \\rfloor}", "\\lfloor x/2 \\rfloor", None),
        ("\\boxed{y = 2x}", "z = 2x", None),
        ("\\boxed{5 \\text{ million}}", "5", None),
        ("\\boxed{3\\mathrm{i}}", "3", None),
        ("\\boxed{2 \\text{ or more}}", "2", None),
        ("The answer is not (D).", "D", OPTIONS),
        ("After checking, (A), (B) and (C) are all incorrect.", "C", OPTIONS),
        ("So f(A) = 7.", "A", OPTIONS),
        ("I think it is 42.", "I", [str(i) for i in range(10)]),
        ("A cat sat on 7 mats.", "A", OPTIONS),
        ("A cat sat on 7 mats.", "A", None),
        ("\\boxed{A, B, C, D}", "A", OPTIONS),
        ("\\boxed{A}\\boxed{B}\\boxed{C}\\boxed{D}", "A", OPTIONS),
        ("The answer is (A), (B), (C) or (D).", "A", OPTIONS),
    ],
)
def test_wrong_answers_do_not_score(completion: str, gold: str, choices: list[str] | None) -> None:
    for name in ("math", "choice") if choices is not None else ("math",):
        assert rewardkit.get(name)([completion], solution=[gold], choices=[choices]) in ([0.0], [None]), name


@pytest.mark.parametrize(
    ("completion", "gold", "choices"),
    [
        ("The answer is 12, which is more than 10.", "12", None),
        ("The final answer is 12 apples, not 10.", "12", None),
        ("\\boxed{300 \\text{ km/s}}", "300", None),
        ("\\boxed{\\frac{x}{10^{8}}}", "\\frac{x}{10^{8}}", None),
        ("\\boxed{y=2x}", "y = 2x", None),
        ("Thus, the answer is B (plants increase).", "plants increase", ["plants fall", "plants increase"]),
        ("In the figure, the greatest angle is (D).", "D", OPTIONS),
    ],
)
def test_right_answers_still_score(completion: str, gold: str, choices: list[str] | None) -> None:
    assert rewardkit.get("math")([completion], solution=[gold], choices=[choices]) == [1.0]


@pytest.mark.parametrize("prefix", ["Q", "Question", "**Problem", " #### User", "answer"])
def test_long_runs_of_blanks_stay_linear(prefix: str) -> None:
    # a line starting like a new turn, then blanks and no colon, backtracked cubically once (hours at 1 MB)
    text = (prefix + " " * 100_000 + "x\n") * 3
    assert math_answer(text).reason == "no_answer"
    assert chosen_letter(text, {"A": "1", "B": "2"}) is None


def test_bad_choices_and_golds_give_a_verdict_not_an_error() -> None:
    for bad in (["[" * 100_000], [[10**5000, 1]], [{"A": "x", "AB": "y"}], [[None, ["x"]]], [b"AB"]):
        assert rewardkit.get("math")(["\\boxed{1}"], solution=["1"], choices=bad) == [1.0]
    huge_gold = rewardkit.get("math").score_detailed(["\\boxed{1}"], solution=[10**5000])
    assert huge_gold.reasons == ["missing_solution"]
