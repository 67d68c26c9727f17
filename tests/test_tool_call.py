"""The tool_call reward: each format read, each reason given, the partial formula, bounds, the hacks, and
the reward through a real service. (BFCL parity: bench/tool_call_parity.py.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.toolcalls import check_calls, partial_score, read_calls, read_gold, read_tools
from tests.support.helpers import Server

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string"},
                "days": {"type": "integer"},
                "temps": {"type": "array", "items": {"type": "float"}},
            },
            "required": ["city"],
        },
    },
}
TIME = {"name": "get_time", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}}}
TOOLS = [WEATHER, TIME]
GOLD = [{"get_weather": {"city": ["Paris"], "unit": ["", "celsius"], "days": ["", 1]}}]


def score(completions: list[Any], gold: Any = GOLD, tools: Any = TOOLS, **params: Any) -> rewardkit.Scored:
    reward = rewardkit.get("tool_call", **params)
    n = len(completions)
    return reward.score_detailed(completions, solution=[gold] * n, tools=[tools] * n, raise_on_error=True)


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ('[get_weather(city="Paris")]', None),
        ("It is sunny in Paris.", "no_call"),
        ('<tool_call>{"name": "get_weather", "arguments": </tool_call>', "unparseable_call"),
        ("<think>thinking about [get_weather(city='Paris')]", "no_answer"),
        ('[get_weather(city="Paris"), get_time(city="Paris")]', "wrong_count"),
        ('[get_time(city="Paris")]', "wrong_function:get_time"),
        ('[get_weather(unit="celsius")]', "missing_param:city"),
        ('[get_weather(city="Paris", mood="happy")]', "unexpected_param:mood"),
        ('[get_weather(city="Paris", days=1.5)]', "wrong_type:days"),
        ('[get_weather(city="Paris", days=2)]', "wrong_value:days"),
        ('[get_weather(city="Paris", temps=[1.0])]', "unexpected_param:temps"),  # in the schema, not the gold
    ],
)
def test_each_reason(completion: str, reason: str | None) -> None:
    scored = score([completion])
    assert scored.reasons == [reason]
    assert scored.values == [1.0 if reason is None else 0.0]


def test_the_same_calls_in_every_format_score_alike() -> None:
    call = {"name": "get_weather", "arguments": {"city": "PARIS", "days": 1}}
    message = {
        "role": "assistant",
        "content": "<think>ok</think>",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    forms = [
        [{"role": "user", "content": "weather?"}, message],
        f"<tool_call>\n{json.dumps(call)}\n</tool_call>",
        f"<tool_call>\n{json.dumps(call)}",  # Qwen stopped before closing its last block
        json.dumps({"name": "get_weather", "parameters": call["arguments"]}),
        "[TOOL_CALLS]" + json.dumps([call]),
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
        '```python\nget_weather(city="Paris", days=1)\n```',
        '<think>hm</think>[get_weather(city="Paris")]<|im_end|>',
    ]
    assert score(forms).values == [1.0] * len(forms)
    assert [read_calls(f).format for f in forms[1:]] == [
        "hermes",
        "hermes",
        "json",
        "mistral",
        "mistral",
        "python",
        "python",
    ]


def test_parallel_calls_any_order_and_given_order() -> None:
    gold = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}]
    swapped = '[get_weather(city="Rome"), get_weather(city="Paris")]'
    assert score([swapped], gold).values == [1.0]
    assert score([swapped], gold, order="given").reasons == ["wrong_value:city"]


def test_one_wrong_function_among_calls_equal_after_normalisation_fails() -> None:
    # BFCL parallel_116: "AA", "Aa", "aa" are one string once normalised; a matched call's reason was given
    # for the gold left over, which passed a completion with a call to a function that does not exist
    gold = [{"f": {"g": ["AA"]}}, {"f": {"g": ["Aa"]}}, {"f": {"g": ["aa"]}}]
    calls = '[f_v2(g="AA"), f(g="Aa"), f(g="aa")]'
    assert score([calls], gold, tools=None).reasons == ["wrong_function:f_v2"]


def test_the_maximum_matching_finds_what_a_greedy_one_misses() -> None:
    # the first expected call accepts both; BFCL's first-fit gives it Apple and Microsoft finds nothing
    gold = [{"q": {"c": ["Microsoft", "Apple"]}}, {"q": {"c": ["Apple"]}}]
    assert score(['[q(c="Apple"), q(c="Microsoft")]'], gold, tools=None).values == [1.0]


def test_partial_formula() -> None:
    golds = read_gold(GOLD)
    tools = read_tools(TOOLS)
    assert partial_score([("get_weather", {"city": "Paris"})], golds, tools) == 1.0
    # K = {city, unit}: city right, unit wrong
    assert partial_score([("get_weather", {"city": "Paris", "unit": "K"})], golds, tools) == 0.5
    # K = {city, days, mood}: city right only
    assert partial_score([("get_weather", {"city": "Paris", "days": 2, "mood": 1})], golds, tools) == 1 / 3
    assert partial_score([("get_weather", {"city": "Oslo", "unit": "K"})], golds, tools) == 0.0
    assert partial_score([("get_weather", {})], golds, tools) == 0.0
    # two calls where one is expected: the right one's share is half
    two = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Paris"})]
    assert partial_score(two, golds, tools) == 0.5
    # a function the row does not offer zeroes everything
    assert partial_score([("get_weather", {"city": "Paris"}), ("rm_rf", {})], golds, tools) == 0.0
    assert partial_score([], [], tools) == 1.0 and partial_score([("get_time", {})], [], tools) == 0.0


def test_partial_mode_never_pays_unparsed_text_or_garbage() -> None:
    completions = [
        "garbage text",
        '<tool_call>{"name": "get_weather"',
        '[get_weather(city="x", unit="y", days=0)]',
        '[get_weather(city="Paris")]',
    ]
    assert score(completions, mode="partial").values == [0.0, 0.0, 0.0, 1.0]


def test_types_by_schema() -> None:
    tools = [
        {
            "name": "f",
            "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]},
        }
    ]
    gold = [{"f": {"x": [2.0]}}]
    assert score(["[f(x=2)]", "[f(x=2.0)]", '[f(x="2")]', "[f(x=True)]"], gold, tools).values == [1, 1, 0, 0]
    tools_list = [
        {"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": ["integer", "null"]}}}}
    ]
    assert score(["[f(x=2)]", "[f(x=None)]"], [{"f": {"x": [2]}}], tools_list).values == [1.0, 0.0]


def test_strings_lists_and_dicts_as_bfcl_normalises_them() -> None:
    gold = [{"f": {"when": ["April 1, 2024"], "tags": [["New York", "LA"]], "opts": [{"mode": ["Fast"]}]}}]
    good = '[f(when="april 1 2024", tags=["new_york", "la"], opts={"mode": "FAST"})]'
    bad = '[f(when="april 2 2024", tags=["LA", "New York"], opts={"mode": "fast", "x": 1})]'
    assert score([good, bad], gold, tools=None).values == [1.0, 0.0]


def test_values_are_never_evaluated() -> None:
    parsed = read_calls("[f(x=__import__('os').getcwd(), y=2**100**100, z=lambda: 1)]")
    assert parsed.calls == [
        ("f", {"x": "__import__('os').getcwd()", "y": "2 ** 100 ** 100", "z": "lambda: 1"})
    ]


def test_bounds_hold_in_time() -> None:
    hostile = [
        "[" * 100_000 + "]" * 100_000,
        "<tool_call>" + "[" * 100_000 + "]" * 100_000 + "</tool_call>",
        "[" + ", ".join(["f(x=1)"] * 1000) + "]",
        "<tool_call>{}</tool_call>" * 5000,
        "f(x=" + "[" * 150 + "]" * 150 + ")",
        "x" * 2_000_000,
    ]
    start = time.monotonic()
    scored = score(hostile, tools=None)
    assert time.monotonic() - start < 10
    assert scored.values == [0.0] * len(hostile)
    assert scored.reasons == ["unparseable_call"] * 5 + ["unparseable_call"]


def test_columns_that_do_not_read_are_none_with_a_reason() -> None:
    scored = score(["[f(x=1)]"] * 1, gold="[" * 500 + "]" * 500)
    assert scored.values == [None] and scored.reasons == ["invalid_gold"]
    assert score(["[f(x=1)]"], tools="{not json").reasons == ["invalid_tools"]
    assert score(["[f(x=1)]"], gold=None).reasons == ["missing_solution"]
    assert score(["[f(x=1)]"], gold=[{"f": {"x": [1]}}] * 65).reasons == ["invalid_gold"]


def _many_tools(n: int) -> list[dict[str, Any]]:
    props = {f"p{i}": {"type": "string", "description": "a parameter " * 5} for i in range(8)}
    function = {"type": "object", "properties": props, "required": ["p0"]}
    more = [{"type": "function", "function": {"name": f"t{i}", "parameters": function}} for i in range(n)]
    return [WEATHER, *more]


@pytest.mark.parametrize(("shared", "bound"), [("one object", 20), ("equal copies", 80), ("JSON text", 20)])
def test_a_group_reads_its_row_once(shared: str, bound: int) -> None:
    """A GRPO group repeats its row: the row (here 400 tools) is read once per batch, not once per item,
    whether the rows are the same object, equal copies (as decoded from a request) or equal texts.

    Read per item, 200 items cost ~200x one. Read once, ~2x; equal copies ~30x, as each copy is still
    pickled to be told equal (a sixth of a read). The bounds leave a wide margin both ways."""
    tools: Any = _many_tools(400)
    reward = rewardkit.get("tool_call")
    completion = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'

    def batch(n: int) -> float:
        column = [tools] * n
        if shared == "equal copies":
            column = [json.loads(json.dumps(tools)) for _ in range(n)]
        elif shared == "JSON text":
            column = [json.dumps(tools) for _ in range(n)]  # equal strings, distinct objects
        start = time.perf_counter()
        values = reward([completion] * n, solution=[GOLD] * n, tools=column)
        elapsed = time.perf_counter() - start
        assert values == [1.0] * n
        return elapsed

    one = min(batch(1) for _ in range(3))
    many = min(batch(200) for _ in range(2))
    assert many < bound * one, (one, many)


def test_rows_equal_in_python_but_not_in_type_are_read_apart() -> None:
    """``[True] == [1]`` in Python: a batch's rows are told apart by type too (``True`` is no integer)."""
    golds = [{"f": {"x": [1]}}, {"f": {"x": [True]}}, {"f": {"x": [1]}}, {"f": {"x": [1.0]}}]
    golds.append(({"f": {"x": [1]}},))  # a tuple of one call: read as the list
    reward = rewardkit.get("tool_call")
    scored = reward.score_detailed(["[f(x=1)]"] * len(golds), solution=golds, raise_on_error=True)
    assert scored.values == [1.0, 0.0, 1.0, 1.0, 1.0]
    assert scored.reasons == [None, "wrong_type:x", None, None, None]
    bad = reward.score_detailed(["[f(x=1)]"] * 3, solution=["[[[", "[[[", "{}"], raise_on_error=True)
    assert bad.values == [None] * 3 and bad.reasons == ["invalid_gold"] * 3


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="mode"):
        rewardkit.get("tool_call", mode="dense")
    with pytest.raises(ValueError, match="order"):
        rewardkit.get("tool_call", order="sorted")
    with pytest.raises(ValueError, match="exact"):
        rewardkit.get("tool_call", mode="partial", wrong=-1.0)
    assert score(["no call here"], correct=1.0, wrong=-1.0).values == [-1.0]


def test_check_calls_is_the_engine_the_reward_uses() -> None:
    assert check_calls([("get_weather", {"city": "paris"})], read_gold(GOLD), read_tools(TOOLS)) is None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("tool_call") / "server.log")
    yield s
    s.stop()


def test_through_the_service(server: Server) -> None:
    listed = httpx.get(server.url + "/rewards", timeout=30).json()["rewards"]
    (entry,) = [r for r in listed if r["name"] == "tool_call"]
    assert entry["columns"] == ["solution"] and entry["optional_columns"] == ["tools"]
    message = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        }
    ]
    completions = [message, '[get_weather(city="Rome")]', "[" * 100_000]
    body = {
        "funcs": [{"name": "tool_call", "params": {"mode": "partial"}}],
        "completions": completions,
        "columns": {"solution": [GOLD] * 3, "tools": [json.dumps(TOOLS)] * 3},
        "details": True,
    }
    response = httpx.post(server.url + "/score", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["tool_call"] == [1.0, 0.0, 0.0]
    over_cap = {**body, "funcs": [{"name": "tool_call", "params": {"max_calls": 10_000}}]}
    refused = httpx.post(server.url + "/score", json=over_cap, timeout=60)
    assert refused.status_code == 422 and "over this server's cap" in refused.text, refused.text


def test_golden_file_has_hacks_next_to_honest_cases() -> None:
    text = (Path(__file__).parent / "golden" / "tool_call.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines()]
    hacks = [c for c in lines if c["note"].startswith("HACK")]
    assert len(hacks) >= 10 and all(c["expected"] in (0.0, 0.25) for c in hacks)
    assert sum(c["expected"] == 1.0 for c in lines) >= 10


def test_verl_data_sources() -> None:
    from rewardkit.adapters.verl import compute_score, compute_score_detailed

    tools = [TIME, WEATHER]
    right = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert compute_score("bfcl_simple_python", right, {"ground_truth": GOLD, "tools": tools}) == 1.0
    assert compute_score("gorilla-llm/Berkeley-Function-Calling-Leaderboard", right, json.dumps(GOLD)) == 1.0
    xlam = {"answers": '[{"name": "get_weather", "arguments": {"city": "Rome"}}]'}
    assert compute_score_detailed("Salesforce/xlam-function-calling-60k", right, xlam) == {
        "score": 0.0,
        "reason": "wrong_value:city",
    }
