"""Deeply nested JSON in a request's columns, sent to a real service (issue 33, finding 2).

Two forms. JSON *text* in a column (a code row's ``tests``, countdown's ``nums``, a row's ``choices``, an
OpenRLHF label), 200,000 levels deep: each reward reads it through :func:`rewardkit.jsontext.read_json` and
answers ``None`` with its reason; ``tests`` was a 500 (``RecursionError`` in ``sandbox/cases.py``) and
``nums`` a 0.0 with ``internal_error``. Nested *lists* in the body itself: the service parses the body with
``json.loads`` (FastAPI's ``Request.json``), which refuses what is nested near the interpreter's recursion
limit (FastAPI answers 400); a little less deep parses, and ``Cases.size``'s ``json.dumps`` then failed
deeper in the stack (a 500, at about 950 levels here). The code reward now measures the object first.
In-process forms of the same inputs are in ``tests/test_jsontext.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.helpers import TOKEN, Server

AUTH = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
LEVELS = 200_000
DEEP = "[" * LEVELS + "]" * LEVELS
ADD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
ADD_FN = "```python\ndef add(a, b):\n    return a + b\n```"
STDIO = {"inputs": ["1 2"], "outputs": ["3"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(
        {"REWARDKIT_API_TOKEN": TOKEN, "REWARDKIT_MATH_WORKERS": "1"},
        tmp_path_factory.mktemp("deep") / "server.log",
    )
    yield s
    s.stop()


def _score(
    server: Server, func: str, completions: list[str], columns: dict[str, list[Any]]
) -> dict[str, Any]:
    body = {"funcs": [func], "completions": completions, "columns": columns}
    response = httpx.post(server.url + "/score", content=json.dumps(body), headers=AUTH, timeout=120)
    assert response.status_code == 200, (func, response.status_code, response.text[:300])
    return dict(response.json())


def _no_traceback(server: Server) -> None:
    log = server.log.read_text()
    assert "Traceback" not in log and "RecursionError" not in log and " 500 " not in log, log[-3000:]


# (reward, completions, columns): the first row's JSON-text column is 200,000 levels deep, the second row is
# an honest one that scores 1.0; (value, reason) expected for the deep row
CASES: list[tuple[str, list[str], dict[str, list[Any]], tuple[float | None, str | None]]] = [
    ("code", [ADD, ADD], {"tests": [DEEP, STDIO]}, (None, "bad_tests")),
    (
        "code",
        [ADD, ADD],
        {"tests": ['{"inputs": ' + DEEP + ', "outputs": ["3"]}', json.dumps(STDIO)]},
        (None, "bad_tests"),
    ),
    ("code", [ADD, ADD], {"input_output": [DEEP, json.dumps(STDIO)]}, (None, "bad_tests")),
    (
        "code",
        [ADD, ADD],
        {
            "verification_info": [
                DEEP,
                {"test_cases": [{"input": "1 2", "output": "3", "type": "stdin_stdout"}]},
            ]
        },
        (None, "bad_tests"),
    ),
    ("code", [ADD_FN, ADD_FN], {"test_list": [DEEP, ["assert add(1, 2) == 3"]]}, (None, "bad_tests")),
    (
        "countdown",
        ["<answer>1 + 2</answer>"] * 2,
        {"target": [3, 3], "nums": [DEEP, "[1, 2]"]},
        (None, "invalid_nums"),
    ),
    (
        "choice",
        ["The answer is (B)."] * 2,
        {"solution": ["B", "B"], "choices": [DEEP, '["x", "y"]']},
        (1.0, None),
    ),
    (
        "math",
        ["The answer is (B)."] * 2,
        {"solution": ["B", "B"], "choices": [DEEP, '["x", "y"]']},
        (1.0, None),
    ),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("func", "completions", "columns", "deep"), CASES, ids=[str(list(c[2])) for c in CASES]
)
def test_each_rewards_json_text_columns_200000_levels_deep(
    server: Server, func: str, completions: list[str], columns: dict[str, list[Any]], deep: tuple[Any, Any]
) -> None:
    body = _score(server, func, completions, columns)
    reasons = body["errors"].get(func, [None, None])
    assert (body["scores"][func][0], reasons[0]) == deep
    assert (body["scores"][func][1], reasons[1]) == (1.0, None)  # the honest row beside it
    _no_traceback(server)


def test_an_openrlhf_label_200000_levels_deep_is_a_plain_label(server: Server) -> None:
    labels = ['{"target": 3, "nums": ' + DEEP + "}", '{"target": 3, "nums": [1, 2]}']
    body = {"query": ["<answer>1 + 2</answer>"] * 2, "prompts": ["", ""], "labels": labels}
    response = httpx.post(
        server.url + "/get_reward?funcs=countdown", content=json.dumps(body), headers=AUTH, timeout=60
    )
    assert response.status_code == 200, response.text[:300]
    assert response.json()["rewards"] == [0.0, 1.0]  # no target read from the first: None, sent as 0.0
    _no_traceback(server)


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.timeout(300)
def test_tests_nested_as_lists_in_the_body_are_bad_tests_or_a_400(server: Server) -> None:
    """Nested lists in the body, not text: from 800 to 995 levels (the service's own parser refuses the
    deepest with a 400; what it parses reaches the reward), and 100,000 levels."""
    answered: dict[int, int] = {}
    for levels in range(800, 1000, 5):
        for tests in (
            '{"fn_name": "f", "inputs": [' + _nested(levels) + '], "outputs": [1]}',
            '{"fn_name": "f", "inputs": [[1]], "outputs": [' + _nested(levels) + "]}",
        ):
            raw = (
                '{"funcs": ["code"], "completions": ['
                + json.dumps(ADD_FN)
                + '], "columns": {"tests": ['
                + tests
                + "]}}"
            )
            response = httpx.post(server.url + "/score", content=raw, headers=AUTH, timeout=60)
            answered[levels] = response.status_code
            assert response.status_code in (200, 400), (levels, response.status_code, response.text[:300])
            if response.status_code == 200:
                assert response.json()["errors"]["code"] == ["bad_tests"], levels
    assert max(n for n, status in answered.items() if status == 200) >= 900, answered  # the reward saw them
    raw = (
        '{"funcs": ["code"], "completions": ["x"], "columns": {"tests": [{"inputs": '
        + _nested(100_000)
        + ', "outputs": [1]}]}}'
    )
    response = httpx.post(server.url + "/score", content=raw, headers=AUTH, timeout=60)
    assert response.status_code == 400, response.text[:300]  # FastAPI: "There was an error parsing the body"
    _no_traceback(server)
