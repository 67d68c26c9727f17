"""The math reward's verification options (Math-Verify's ``verify`` options under our names): ``precision``,
``strict``, ``set_relations``. Each changes a verdict, bad values are refused, and verdicts are kept per
options: two rewards with other options in one process (one verifier, one cache, one worker host) never
share one. ``tests/golden/math_options.jsonl`` holds the verdicts per option, run in-process and through the
service by the golden tests."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sympy

import rewardkit
from rewardkit.policy import RemotePolicy
from rewardkit.verify import Check, MathVerifier, get_verifier
from rewardkit.verify.options import DEFAULT_OPTIONS, Options, Pair
from rewardkit.verify.plan import Plan
from rewardkit.verify.rows import digest, read_rows
from tests.support.helpers import Server

# a pair only Math-Verify decides (a matrix): 0.33 is 1/3 to two places, not to six
MATRIX = "\\begin{pmatrix}0.33\\\\0.2\\end{pmatrix}"
MATRIX_GOLD = "\\begin{pmatrix}\\frac{1}{3}\\\\\\frac{1}{5}\\end{pmatrix}"


def _one(completion: str, gold: str, **params: Any) -> float | None:
    return rewardkit.get("math", **params)([completion], solution=[gold])[0]


# -- each option changes a verdict: with and without it


@pytest.mark.parametrize(
    ("completion", "gold", "params"),
    [
        ("\\boxed{0.33}", "\\frac{1}{3}", {"precision": 2}),  # decided without SymPy (a fast path)
        (f"\\boxed{{{MATRIX}}}", MATRIX_GOLD, {"precision": 2}),  # decided by Math-Verify in a worker
        ("\\boxed{0.333}", "0.33", {"precision": 2}),  # two decimals round alike
        ("\\boxed{f(y)}", "f(x)", {"strict": False}),  # variables matched by position
        ("\\boxed{y+1}", "x+1", {"strict": False}),  # the worker's numeric check steps aside
        ("\\boxed{-2 \\le x \\le 7}", "x \\in [-2,7]", {"set_relations": True}),  # a relation as a set
    ],
)
def test_each_option_changes_a_verdict(completion: str, gold: str, params: dict[str, Any]) -> None:
    assert _one(completion, gold) == 0.0
    assert _one(completion, gold, **params) == 1.0


@pytest.mark.parametrize(
    ("completion", "gold", "params"),
    [
        ("\\boxed{0.34}", "\\frac{1}{3}", {"precision": 2}),
        ("\\boxed{1.4142136}", "\\sqrt{2}", {"precision": 8}),  # equal to six places, not to eight
        ("\\boxed{y^2+1}", "x^2+2", {"strict": False}),
        ("\\boxed{-2 \\le x \\le 8}", "x \\in [-2,7]", {"set_relations": True}),
    ],
)
def test_an_option_does_not_make_a_wrong_answer_right(
    completion: str, gold: str, params: dict[str, Any]
) -> None:
    assert _one(completion, gold, **params) == 0.0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"precision": -1}, "precision must be an integer number of decimal places in \\[0, 15\\], got -1"),
        ({"precision": 16}, "precision must be .* got 16"),
        ({"precision": 2.5}, "precision must be .* got 2.5"),
        ({"precision": True}, "precision must be .* got True"),
        ({"precision": "2"}, "precision must be .* got '2'"),
        ({"strict": "no"}, "strict must be true or false, got 'no'"),
        ({"strict": 0}, "strict must be true or false, got 0"),
        ({"set_relations": 1}, "set_relations must be true or false, got 1"),
        ({"set_relations": None}, "set_relations must be true or false, got None"),
    ],
)
def test_bad_values_are_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rewardkit.get("math", **params)


def test_params_name_the_options_and_callers_may_set_them() -> None:
    reward = rewardkit.get("math", precision=3, strict=False, set_relations=True)
    assert {k: reward.params()[k] for k in ("precision", "strict", "set_relations")} == {
        "precision": 3,
        "strict": False,
        "set_relations": True,
    }
    defaults = rewardkit.get("math").params()
    assert (defaults["precision"], defaults["strict"], defaults["set_relations"]) == (6, True, False)
    policy = RemotePolicy()
    built = policy.build("math", {"precision": 2, "strict": False, "set_relations": True}).params()
    assert (built["precision"], built["strict"], built["set_relations"]) == (2, False, True)
    described = policy.describe("math")
    for name, default in (("precision", 6), ("strict", True), ("set_relations", False)):
        assert described[name]["default"] == default
        assert described[name].get("settable", True) is not False
    with pytest.raises(ValueError, match="precision must be"):
        policy.build("math", {"precision": 99})


# -- verdicts are kept per options


def test_two_rewards_with_other_options_share_the_verifier_never_a_verdict() -> None:
    default, rounded = rewardkit.get("math"), rewardkit.get("math", precision=2)
    verifier = get_verifier()  # the one both rewards use: one pool, one verdict cache
    verifier._cache.clear()  # (earlier tests judged this pair)
    completions, gold = [f"\\boxed{{{MATRIX}}}"] * 2, [MATRIX_GOLD] * 2
    assert rounded(completions, solution=gold) == [1.0, 1.0]
    hits = default.stats().get("cache_hits", 0)
    assert default(completions, solution=gold) == [0.0, 0.0]  # not the other reward's verdict
    assert default.stats().get("cache_hits", 0) == hits
    assert rounded(completions, solution=gold) == [1.0, 1.0]  # its own verdict, from the cache now
    assert default.stats()["cache_hits"] > hits
    assert default(completions, solution=gold) == [0.0, 0.0]


def test_one_batch_judges_one_pair_under_two_options_twice() -> None:
    verifier = get_verifier()
    checks = [
        Check(MATRIX_GOLD, MATRIX),
        Check(MATRIX_GOLD, MATRIX, Options(precision=2)),
        Check("\\frac{1}{3}", "0.33"),  # decided without SymPy: under its options too
        Check("\\frac{1}{3}", "0.33", Options(precision=2)),
        Check("f(x)", "f(y)", Options(strict=False)),
        Check("f(x)", "f(y)"),
    ]
    results = verifier.verify_many(checks, timeout_s=10.0)
    assert [equal for equal, _ in results] == [False, True, False, True, True, False]
    assert digest(checks[0]) != digest(checks[1])
    assert digest(Check("1", "2")) == digest(Check("1", "2", DEFAULT_OPTIONS))


@pytest.mark.timeout(180)
def test_a_large_batch_read_in_the_workers_keeps_its_options() -> None:
    rows = [("\\frac{1}{3}", f"\\boxed{{0.33}} #{i}", None) for i in range(80)]
    verifier = MathVerifier(workers=2, memory_mb=1024, overdue_slots=0)
    try:
        assert verifier.ready(60)  # the host is up: a batch of 64 rows or more is read by its workers
        for options, equal in ((Options(precision=2), True), (DEFAULT_OPTIONS, False)):
            read = verifier.read_many(rows, mode="standard", rel_tol=0.0, max_chars=1000, options=options)
            assert read == read_rows(rows, "standard", 0.0, 1000, options)
            assert {one.decided for one in read} == {(equal, None)}  # type: ignore[union-attr]
    finally:
        verifier.close()


def test_the_plan_groups_pairs_by_gold_and_options() -> None:
    two = Options(precision=2)
    pairs: list[Pair] = [("1", "x"), ("1", "x", two), ("1", "y"), ("1", "y", two)]
    plan = Plan(pairs, workers=1)
    tasks = []
    while plan:
        tasks.append(plan.next())
    # a gold's pairs go together under one options, then under the other (each gold parsed once a batch)
    assert [i for task in tasks for i in task] == [0, 2, 1, 3]
    assert tasks[0] == [0, 2]


def test_the_worker_compares_under_the_options() -> None:
    from rewardkit.verify.worker import check, check_many, numeric_verdict

    assert check("f(x)", "f(y)", 5.0) == (False, None)
    assert check("f(x)", "f(y)", 5.0, Options(strict=False)) == (True, None)
    assert check_many([("f(x)", "f(y)"), ("f(x)", "f(y)", Options(strict=False))], 5.0) == [
        (False, None),
        (True, None),
    ]
    x, y = sympy.symbols("x y")
    assert numeric_verdict(x + 1, y + 1) is False
    assert numeric_verdict(x + 1, y + 1, Options(strict=False)) is None  # Math-Verify decides
    assert numeric_verdict(x / 3, sympy.Float("0.3333") * x) is False
    assert numeric_verdict(x / 3, sympy.Float("0.3333") * x, Options(precision=4)) is None


# -- through the service: callers set the options, two in one request keep their own verdicts


@pytest.mark.timeout(180)
def test_the_service_takes_the_options_from_callers(tmp_path: Any) -> None:
    server = Server({}, tmp_path / "server.log")
    try:
        body = {
            "funcs": [
                "math",
                {"name": "math", "params": {"precision": 2}, "alias": "math_2_places"},
                {"name": "math", "params": {"strict": False, "set_relations": True}, "alias": "math_loose"},
            ],
            "completions": ["\\boxed{0.33}", "\\boxed{f(y)}", "\\boxed{-2 \\le x \\le 7}"],
            "columns": {"solution": ["\\frac{1}{3}", "f(x)", "x \\in [-2,7]"]},
        }
        scored = httpx.post(server.url + "/score", json=body, timeout=120)
        refused = httpx.post(
            server.url + "/score",
            json={**body, "funcs": [{"name": "math", "params": {"precision": 99}}]},
            timeout=60,
        )
    finally:
        server.stop()
    assert scored.status_code == 200, scored.text
    scores = scored.json()["scores"]
    assert scores["math"] == [0.0, 0.0, 0.0]
    assert scores["math_2_places"] == [1.0, 0.0, 0.0]
    assert scores["math_loose"] == [0.0, 1.0, 1.0]
    assert refused.status_code == 422 and "precision" in refused.text
