"""The route reward: each row scored by the reward its column names (mixed datasets)."""

from __future__ import annotations

from typing import Any

import pytest

import rewardkit
from rewardkit.policy import PolicyError, RemotePolicy

MIXED: dict[str, Any] = {
    "completions": [
        "<answer>6 * 4</answer>",  # countdown, right
        "so the total is 7.\n#### 7",  # gsm8k, right
        "<answer>6 + 4</answer>",  # countdown, wrong
        "The answer is $\\boxed{\\frac{1}{2}}$",  # MATH, right
        "#### 8",  # gsm8k, wrong
    ],
    "task": ["cd", "openai/gsm8k", "cd", "lighteval/MATH", "openai/gsm8k"],
    "target": [24, None, 24, None, None],
    "nums": [[4, 6], None, [4, 6], None, None],
    "answer": [None, "7", None, "0.5", "7"],
}
ROUTES = {
    "cd": "countdown",
    "openai/*": {"name": "math", "columns": {"solution": "answer"}},
    "lighteval/MATH": {
        "name": "math",
        "params": {"correct": 1.0, "wrong": -1.0},
        "columns": {"solution": "answer"},
    },
}


def _call(route: rewardkit.Reward) -> rewardkit.Scored:
    columns = {k: v for k, v in MIXED.items() if k != "completions"}
    return route.score_detailed(MIXED["completions"], **columns)


def test_rows_go_to_their_reward_and_need_only_its_columns() -> None:
    route = rewardkit.get("route", column="task", routes=ROUTES)
    scored = _call(route)
    assert scored.values == [1.0, 1.0, 0.0, 1.0, 0.0]
    assert scored.reasons[2] == "wrong_value" or scored.values[2] == 0.0
    assert route.required_columns == ("task",)
    assert set(route.optional) == {"target", "nums", "answer", "choices"}


def test_a_route_missing_its_column_names_it_and_other_routes_do_not_care() -> None:
    route = rewardkit.get("route", column="task", routes={"cd": "countdown", "m": "math"})
    # only countdown rows: no solution column needed
    assert route(["<answer>6 * 4</answer>"], task=["cd"], target=[24], nums=[[4, 6]]) == [1.0]
    with pytest.raises(rewardkit.ColumnError, match="'solution' is missing"):
        route(["#### 7"], task=["m"])


def test_unknown_keys_raise_naming_the_value_and_the_routes_or_score_none() -> None:
    route = rewardkit.get("route", column="task", routes={"cd": "countdown"})
    with pytest.raises(rewardkit.RewardError, match="task='gsm9k', which no route matches; routes: cd"):
        route(["x"], task=["gsm9k"])
    lenient = rewardkit.get("route", column="task", routes={"cd": "countdown"}, unknown="none")
    scored = lenient.score_detailed(["x"], task=["gsm9k"])
    assert scored.values == [None] and scored.reasons == ["no_route"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"routes": {}}, "routes must map"),
        ({"routes": {"a": "nope"}}, "unknown reward 'nope'"),
        ({"routes": {"a": "math"}, "unknown": "skip"}, "unknown must be"),
        ({"routes": {"x" * 257: "math"}}, "1 to 256 characters"),
        ({"routes": {"a": {"name": "math", "param": {"extract": "lenient"}}}}, "not param"),
    ],
)
def test_bad_routes_are_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(rewardkit.RewardError, match=message):
        rewardkit.get("route", **params)


def test_in_process_a_route_may_have_many_routes_and_forwards_the_lifecycle() -> None:
    many = rewardkit.get("route", routes={f"k{i}": "format" for i in range(100)} | {"m": "math"})
    assert many(["<think>a</think><answer>1</answer>"], task=["k99"]) == [1.0]
    assert many.ready(30.0) is True  # the math reward's workers answer
    assert "cache_hits" in many.stats()


def test_remote_routes_pass_the_caller_policy() -> None:
    policy = RemotePolicy()
    route = policy.build("route", {"column": "task", "routes": ROUTES})
    assert _call(route).values == [1.0, 1.0, 0.0, 1.0, 0.0]
    with pytest.raises(PolicyError, match="'workers' is a server setting"):
        policy.build("route", {"routes": {"m": {"name": "math", "params": {"workers": 64}}}})
    with pytest.raises(PolicyError, match="over this server's cap"):
        policy.build("route", {"routes": {"m": {"name": "math", "params": {"timeout_s": 3600}}}})
    with pytest.raises(PolicyError, match="at most 64"):
        policy.build("route", {"routes": {f"k{i}": "format" for i in range(65)}})
    with pytest.raises(PolicyError, match="nested deeper"):
        inner: object = "format"
        for _ in range(6):
            inner = {"name": "route", "params": {"routes": {"x": inner}}}
        policy.build("route", {"routes": {"x": inner}})
    assert policy.describe("route")["routes"]["reward_spec_map"] is True


def test_one_spec_builds_a_bounded_number_of_rewards() -> None:
    """64 routes of 64 routes of 64 ... would build millions of rewards from one request: refused."""
    policy = RemotePolicy()
    wide = {f"k{i}": "format" for i in range(64)}
    assert len(policy.build("route", {"routes": wide}).params()["routes"]) == 64
    nested = {f"k{i}": {"name": "route", "params": {"routes": wide}} for i in range(64)}
    with pytest.raises(PolicyError, match="builds at most 256 rewards"):
        policy.build("route", {"routes": nested})


def test_the_client_refuses_what_the_service_would_before_sending() -> None:
    from rewardkit.client import check_funcs
    from rewardkit.engine import FuncSpec

    server = {
        "rewards": [
            {"name": "route", "params": {"routes": {"settable": True, "reward_spec_map": True}}},
            {"name": "format", "params": {}},
        ]
    }
    many = FuncSpec("route", {"routes": {f"k{i}": "format" for i in range(65)}})
    with pytest.raises(PolicyError, match="holds 65 rewards; at most 64"):
        check_funcs(server, [many])
    with pytest.raises(PolicyError, match="65 funcs in one request; the service takes at most 64"):
        check_funcs(server, ["format"] * 65)
    assert check_funcs(server, ["format"] * 64) == ["format"] * 64
