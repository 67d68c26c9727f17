"""The scoring service, run for real: uvicorn in a subprocess on a loopback port, spoken to over HTTP."""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.client import (
    AsyncRewardClient,
    PolicyError,
    RewardClient,
    RewardServiceError,
    json_body,
    remote_reward,
)
from rewardkit.testing import iter_golden_files, load_golden
from tests.support.helpers import JSON, ROOT, TOKEN, Server
from tests.support.timing import busy

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("plain") / "server.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"REWARDKIT_API_TOKEN": TOKEN, "REWARDKIT_MAX_BATCH": "100", "REWARDKIT_MAX_BODY_MB": "0.5"}
    s = Server(env, tmp_path_factory.mktemp("secured") / "server.log")
    yield s
    s.stop()


def _golden_groups() -> dict[tuple[str, str], list[Any]]:
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for file in iter_golden_files([GOLDEN]):
        for case in load_golden(file):
            if case.columns or case.func == "format":
                groups[(case.func, json.dumps(dict(case.params), sort_keys=True))].append(case)
    return groups


@pytest.mark.timeout(180)
def test_scores_equal_the_in_process_functions_on_the_golden_files(server: Server) -> None:
    for (func, params), cases in _golden_groups().items():
        names = sorted({k for c in cases for k in c.columns})
        completions = [c.completion for c in cases]
        columns: dict[str, Any] = {k: [c.columns.get(k) for c in cases] for k in names}
        body = {
            "funcs": [{"name": func, "params": json.loads(params)}],
            "completions": completions,
            "columns": columns,
        }
        response = httpx.post(server.url + "/score", content=json_body(body), headers=JSON, timeout=120)
        assert response.status_code == 200, response.text
        local = rewardkit.get(func, **json.loads(params)).score_detailed(completions, **columns)
        assert response.json()["scores"][func] == local.values
        assert response.json()["scores"][func] == [c.expected for c in cases]


def test_client_matches_score_batch_and_splits_batches(server: Server) -> None:
    completions = [f"<think>x</think><answer>{i} * 2</answer>" for i in range(25)]
    columns = {"target": [2 * i if i % 3 else 0 for i in range(25)], "nums": [[i, 2] for i in range(25)]}
    funcs: list[str | rewardkit.FuncSpec] = ["countdown", rewardkit.FuncSpec("format", weight=0.5)]
    local = rewardkit.score_batch(funcs, completions, columns)
    with RewardClient(server.url, max_batch=7) as client:  # 4 requests
        remote = client.score(funcs, completions, **columns)
    assert remote.rewards == local.rewards
    assert remote.scores == local.scores
    assert remote.errors == local.errors


def test_async_client(server: Server) -> None:
    import asyncio

    async def main() -> list[float | None]:
        async with AsyncRewardClient(server.url, max_batch=2) as client:
            result = await client.score(
                ["r1v_acc"], ["<answer>3</answer>", "<answer>4</answer>", "x"], solution=[3, 3, 3]
            )
            return result.rewards

    assert asyncio.run(main()) == [1.0, 0.0, 0.0]


def test_remote_reward_is_a_reward_contract_callable(server: Server) -> None:
    reward = remote_reward("countdown", server.url, format_score=0.1)
    assert reward.__name__ == "countdown"
    try:
        values = reward(
            ["<answer>4 * 6</answer>", "<answer>4 + 6</answer>"],
            target=[24, 24],
            nums=[[4, 6], [4, 6]],
            trainer_state=object(),  # not JSON: must not be sent
            prompts=["p", "p"],
        )
        assert values == [1.0, 0.1]
        clone = pickle.loads(pickle.dumps(reward))
        assert clone(["<answer>4 * 6</answer>"], target=[24], nums=[[4, 6]]) == [1.0]
        clone.close()
    finally:
        reward.close()


def test_rewards_health_ready_docs_metrics(server: Server) -> None:
    listed = httpx.get(server.url + "/rewards").json()
    assert {"countdown", "format", "math", "r1v_acc"} <= {r["name"] for r in listed["rewards"]}
    assert listed["max_batch"] == 16_384
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz", timeout=60)
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert httpx.get(server.url + "/docs").status_code == 200
    httpx.post(
        server.url + "/score",
        json={"funcs": ["math"], "completions": ["\\boxed{9^{9^{9^{9}}}}"], "columns": {"solution": ["3"]}},
    )
    text = httpx.get(server.url + "/metrics").text
    assert 'rewardkit_requests_total{route="/score",status="200"}' in text
    assert 'rewardkit_items_scored_total{func="math"}' in text
    assert 'rewardkit_item_reasons_total{func="math",reason="huge_power"}' in text
    assert "rewardkit_request_seconds_bucket" in text


def test_a_body_that_is_not_json_is_a_422_as_the_readme_says(server: Server) -> None:
    """Issue 34.5: service/README.md said invalid JSON is a 400, while a body cut short was a 422. FastAPI
    answers 422 (``json_invalid``) for both, as FastAPI users expect; the README says so, and where the JSON
    breaks; bytes that are not UTF-8 inside a string stay the 400 it names."""
    readme = " ".join((ROOT / "service" / "README.md").read_text().split())
    assert "A body that is not JSON, malformed or cut short, is a 422" in readme
    assert "invalid JSON is a 400" not in readme
    headers = {"content-type": "application/json"}
    whole = b'{"funcs": ["format"], "completions": ["a"]}'
    for body in (whole[:38], b"funcs=format", whole + b" x"):  # cut short, not JSON, trailing text
        answer = httpx.post(server.url + "/score", content=body, headers=headers, timeout=60)
        assert answer.status_code == 422, (body, answer.text)
        (error,) = answer.json()["errors"]
        assert error["type"] == "json_invalid" and error["loc"][0] == "body", error
    assert httpx.post(server.url + "/score", content=whole, headers=headers, timeout=60).status_code == 200
    not_utf8 = httpx.post(server.url + "/score", content=b'{"funcs": ["\xff"]}', headers=headers, timeout=60)
    assert not_utf8.status_code == 400 and "parsing the body" in not_utf8.json()["detail"]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "REWARDKIT_PARAMS",
            '{"math": {"timeuot_s": 5}}',
            "reward 'math' has no parameter(s) timeuot_s; parameters: correct, extract,",
        ),
        (
            "REWARDKIT_PARAMS",
            '{"math": {"timeout_s": 5}',
            "is not valid JSON (Expecting ',' delimiter at line 1, column 26)",
        ),
        ("REWARDKIT_CAPS", '{"math": {"workers": 4}}', "math.workers is not a parameter callers may set"),
        ("REWARDKIT_MAX_BATCH", "ten", "Input should be a valid integer, unable to parse string"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, variable: str, value: str, said: str) -> None:
    """Issue 34.5: a bad REWARDKIT_PARAMS printed a 136-line traceback through uvicorn before the useful
    line, and JSON that does not parse did not name the variable. Through the real `rewardkit serve`: one
    line naming the variable and the problem, exit 2, nothing started."""
    script = Path(sys.executable).parent / "rewardkit"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    env.update({variable: value, "COLUMNS": "1000"})  # a wide terminal: no wrapping by the console
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    command = [str(script), "serve", "--port", port]
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith(f"error: {variable}: ") and said in lines[0], lines[0]
    assert proc.stdout == ""


def test_readyz_says_which_judge_url_nothing_answers_at(tmp_path: Path) -> None:
    """Issue 34.5: /readyz said ``llm_judge: ready`` with nothing listening at the judge's URL, and the first
    /score was a 503. The verdict-mode probe finds it: ``unreachable`` with the URL, for every reward that
    calls the judge; the other rewards are served (200), and the judge's requests are the 503 it foretold."""
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    env = {
        "REWARDKIT_JUDGE_BASE_URL": dead,
        "REWARDKIT_JUDGE_MODEL": "test-judge",
        "REWARDKIT_JUDGE_API_KEY": "sk-test-secret-key",
        "REWARDKIT_PARAMS": json.dumps({"math": {"workers": 1}}),
    }
    server = Server(env, tmp_path / "server.log")
    try:
        ready = httpx.get(server.url + "/readyz", timeout=60)
        body = {"funcs": ["llm_judge"], "completions": ["a"], "columns": {"question": ["q"]}}
        scored = httpx.post(server.url + "/score", json=body, timeout=60)
    finally:
        server.stop()
    assert ready.status_code == 200, ready.text
    states = ready.json()["rewards"]
    for name in ("llm_judge", "math_or_judge"):
        assert states[name] == f"unreachable: {dead} (no connection: nothing listens there, or no such host)"
    assert states["math"] == "ready" and states["format"] == "ready"
    assert scored.status_code == 503 and dead in scored.json()["detail"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"funcs": ["nope"], "completions": ["x"]}, 422, "unknown reward 'nope'"),
        (
            {
                "funcs": [{"name": "countdown", "params": {"bogus": 1}}],
                "completions": ["x"],
                "columns": {"target": [1], "nums": [[1]]},
            },
            422,
            "no parameter",
        ),
        (
            {
                "funcs": [{"name": "countdown", "params": {"format_score": 5}}],
                "completions": ["x"],
                "columns": {"target": [1], "nums": [[1]]},
            },
            422,
            "format_score",
        ),
        (
            {
                "funcs": ["countdown"],
                "completions": ["x", "y"],
                "columns": {"target": [1], "nums": [[1], [1]]},
            },
            422,
            "column 'target' has 1 values but there are 2 completions",
        ),
        (
            {"funcs": ["countdown"], "completions": ["x"], "columns": {"nums": [[1]]}},
            422,
            "required column 'target' is missing",
        ),
        ({"funcs": [], "completions": ["x"]}, 422, ""),
        ({"funcs": [{"name": "format", "weight": "heavy"}], "completions": ["x"]}, 422, ""),
        ({"completions": ["x"]}, 422, ""),
    ],
)
def test_bad_requests_get_clear_4xx(server: Server, body: dict[str, Any], status: int, message: str) -> None:
    response = httpx.post(server.url + "/score", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["detail"] if message else "detail" in response.json()
    if "unknown reward" in message:
        assert "countdown" in response.json()["available"]


def test_client_raises_4xx_without_retrying(server: Server) -> None:
    start = time.monotonic()
    with (
        RewardClient(server.url, http_max_retries=3, http_backoff_s=5.0) as client,
        pytest.raises(RewardServiceError) as info,
    ):
        client.score(["countdown"], ["x"], target=[24])  # the server finds 'nums' missing: 422
    assert info.value.status_code == 422 and "'nums' is missing" in str(info.value)
    # no backoff happened: three would sleep 17.5 s at least, however busy the machine
    assert time.monotonic() - start < min(4.0 * busy(), 15.0)


def test_client_refuses_what_the_server_would_before_sending(server: Server) -> None:
    with RewardClient(server.url) as client:
        with pytest.raises(PolicyError, match="has no reward 'nope'"):
            client.score(["nope"], ["x"])
        with pytest.raises(PolicyError, match="'workers' is a server setting"):
            client.score([rewardkit.FuncSpec("math", {"workers": 8})], ["x"], solution=["1"])
        with pytest.raises(PolicyError, match="over the cap of 60"):
            client.score([rewardkit.FuncSpec("math", {"timeout_s": 61})], ["x"], solution=["1"])


@pytest.mark.timeout(120)
def test_largest_batch(server: Server) -> None:
    n = 16_384
    body = {
        "funcs": ["countdown", "format"],
        "completions": ["<think>a</think><answer>6 * 4</answer>"] * n,
        "columns": {"target": [24] * n, "nums": [[4, 6]] * n},
    }
    response = httpx.post(server.url + "/score", json=body, timeout=60)
    assert response.status_code == 200
    assert response.json()["rewards"] == [2.0] * n
    too_many = dict(body, completions=[*body["completions"], "x"])
    assert httpx.post(server.url + "/score", json=too_many, timeout=60).status_code == 413


@pytest.mark.timeout(120)
def test_twenty_concurrent_requests(server: Server) -> None:
    def one(i: int) -> list[float | None]:
        body = {
            "funcs": ["countdown", "math"],
            "completions": [f"<answer>{i} + 1</answer>", f"\\boxed{{{i + 1}}}"],
            "columns": {
                "target": [i + 1, i + 1],
                "nums": [[i, 1], [i, 1]],
                "solution": [str(i + 1), str(i + 1)],
            },
        }
        response = httpx.post(server.url + "/score", json=body, timeout=60)
        assert response.status_code == 200, response.text
        return list(response.json()["rewards"])

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(one, range(2, 22)))
    assert results == [[2.0, 1.0]] * 20


def test_openrlhf_shape_and_prompt_stripping(server: Server) -> None:
    prompt = "Example: <answer>2</answer>\nQuestion: what is 1+1? Answer:"
    body = {
        "query": [prompt + " \\boxed{2}", prompt + " I do not know", prompt + " \\boxed{3}"],
        "prompts": [prompt] * 3,
        "labels": ["2", "2", "2"],
    }
    response = httpx.post(server.url + "/get_reward", json=body, timeout=60)
    assert response.status_code == 200, response.text
    data = response.json()
    # Without stripping, the example's <answer>2</answer> in the prompt would score the second sample 1.0.
    assert data == {
        "rewards": [1.0, 0.0, 0.0],
        "scores": [1.0, 0.0, 0.0],
        "extra_logs": {"math": [1.0, 0.0, 0.0]},
    }
    bad = httpx.post(server.url + "/get_reward", json={"query": ["a", "b"], "labels": ["1"]})
    assert bad.status_code == 422 and "'labels' has 1 items but 'query' has 2" in bad.json()["detail"]


def test_auth(secured: Server) -> None:
    body = {"funcs": ["format"], "completions": ["<think>a</think><answer>b</answer>"]}
    assert httpx.get(secured.url + "/healthz").status_code == 200
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
    ):
        response = httpx.post(secured.url + "/score", json=body, headers=headers)
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in response.text
    for path in ("/rewards", "/metrics", "/readyz"):
        assert httpx.get(secured.url + path).status_code == 401
    ok = httpx.post(secured.url + "/score", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.json()["rewards"] == [1.0]
    os.environ["REWARDKIT_API_TOKEN"] = TOKEN  # the client reads the token from the environment
    try:
        with RewardClient(secured.url) as client:
            assert client.score(["format"], ["x"]).rewards == [0.0]
    finally:
        del os.environ["REWARDKIT_API_TOKEN"]
    assert TOKEN not in secured.log.read_text()


def test_limits(secured: Server) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    many = {"funcs": ["format"], "completions": ["x"] * 101}
    response = httpx.post(secured.url + "/score", json=many, headers=headers)
    assert response.status_code == 413 and "limit is 100" in response.json()["detail"]
    big = {"funcs": ["format"], "completions": ["x" * 600_000]}
    response = httpx.post(secured.url + "/score", json=big, headers=headers)
    assert response.status_code == 413 and "0.5 MiB" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while reading
        yield b'{"funcs": ["format"], "completions": ["'
        for _ in range(100):
            yield b"x" * 10_000
        yield b'"]}'

    response = httpx.post(
        secured.url + "/score", content=chunks(), headers={**headers, "content-type": "application/json"}
    )
    assert response.status_code == 413
    with RewardClient(secured.url, token=TOKEN, max_batch=100) as small:  # 250 go as 3 requests
        assert small.score(["format"], ["x"] * 250).rewards == [0.0] * 250


def test_the_client_splits_at_the_servers_limits(secured: Server) -> None:
    """The server allows 100 completions and 0.5 MiB a request; the client's own limit is 16,384."""
    good = "<think>a</think><answer>4</answer>"
    with RewardClient(secured.url, token=TOKEN) as client:
        assert client.score(["format"], [good] * 250).rewards == [1.0] * 250  # 100 + 100 + 50
        long = [good + " " + "x" * 60_000] * 20  # 1.2 MB: over the body limit in one request
        result = client.score(["format", "repetition"], long)
        assert result.scores["format"] == [0.0] * 20 and len(result.rewards) == 20
        with pytest.raises(RewardServiceError, match="completion 0 alone is over .* bytes") as info:
            client.score(["format"], ["x" * 600_000])
        assert info.value.status_code == 413


def test_the_client_never_cuts_a_group_across_requests(secured: Server) -> None:
    """length compares completions within their group: 15 groups of 16 (240 > the server's 100) are sent
    whole, so the scores equal one in-process batch."""
    completions = [f"<answer>\\boxed{{{i % 3}}}</answer>" + " pad" * (i % 16) for i in range(240)]
    prompts = [f"question {i // 16}" for i in range(240)]
    solutions = ["1"] * 240
    with RewardClient(secured.url, token=TOKEN) as client:
        remote = client.score(["length"], completions, prompt=prompts, solution=solutions).scores["length"]
        local = rewardkit.get("length")(completions, prompt=prompts, solution=solutions)
        assert remote == local
        with pytest.raises(RewardServiceError, match="the group starting at completion 0 alone is over"):
            client.score(["format"], ["x"] * 120, prompt=["same"] * 120)
        shuffled = [f"q{i % 3}" for i in range(240)]  # groups interleaved: a split would cut them
        with pytest.raises(RewardServiceError, match="not next to each other"):
            client.score(["format"], ["x"] * 240, prompt=shuffled)
        interleaved = [f"q{i % 3}" for i in range(90)]  # fits one request: nothing to cut
        assert client.score(["format"], ["x"] * 90, prompt=interleaved).rewards == [0.0] * 90


def test_rewards_columns_reports_a_configured_rewards_columns(secured: Server) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def columns(func: dict[str, Any]) -> Any:
        return httpx.post(secured.url + "/rewards/columns", json=func, headers=headers)

    renamed = columns({"name": "math", "columns": {"solution": "answer"}})
    assert renamed.json() == {"columns": ["answer"], "optional_columns": ["choices"]}
    route = columns({"name": "route", "params": {"routes": {"cd": "countdown", "m": "math"}}})
    optional = ["target", "nums", "solution", "choices"]
    assert route.json() == {"columns": ["task"], "optional_columns": optional}
    assert columns({"name": "math", "params": {"workers": 3}}).status_code == 422
    assert columns({"name": "math", "columns": {"nope": "x"}}).status_code == 422
    assert httpx.post(secured.url + "/rewards/columns", json={"name": "math"}).status_code == 401


@pytest.mark.timeout(300)
def test_schemathesis_finds_every_answer_as_the_schema_says(secured: Server, tmp_path: Path) -> None:
    """Every check schemathesis has (no 5xx, every status, header and body as documented, 401 without the
    token, ...). A body valid by the schema may still be a 422 (a reward that reads no such column, an
    unknown reward's name) or a 413 (this server's limits): the schema cannot say those, the answer does."""
    st = Path(sys.executable).parent / "schemathesis"
    (tmp_path / "schemathesis.toml").write_text(
        '[checks.positive_data_acceptance]\nexpected-statuses = ["2xx", "413", "422"]\n'
    )
    proc = subprocess.run(
        [
            str(st),
            "run",
            secured.url + "/openapi.json",
            "--header",
            f"Authorization: Bearer {TOKEN}",
            "--checks",
            "all",
            "--max-examples",
            "100",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=280,
        cwd=tmp_path,  # its cache stays out of the checkout, its configuration is read from there
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_cli_scores_a_file_through_the_service(server: Server, tmp_path: Path) -> None:
    rows = [
        {"completion": "<think>a</think><answer>4 * 6</answer>", "target": 24, "nums": [4, 6]},
        {"completion": "<answer>4 + 6</answer>", "target": 24, "nums": [4, 6]},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = Path(sys.executable).parent / "rewardkit"
    remote = subprocess.run(
        [str(script), "score", "--url", server.url, "-f", "countdown", "-f", "format", str(src)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    local = subprocess.run(
        [str(script), "score", "-f", "countdown", "-f", "format", str(src)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert [json.loads(line)["reward"] for line in remote.stdout.splitlines()] == [2.0, 0.0]


def test_aliases_and_column_maps_over_http(server: Server) -> None:
    body = {
        "funcs": [
            {"name": "format", "alias": "fmt_strict"},
            {"name": "format", "alias": "fmt_prefilled", "params": {"think_prefilled": True}},
            {"name": "math", "alias": "gsm8k_acc", "columns": {"solution": "answer"}},
        ],
        "completions": ["<think>a</think><answer>7</answer>", "a</think><answer>8</answer>"],
        "columns": {"answer": ["7", "7"]},
    }
    response = httpx.post(server.url + "/score", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["scores"] == {
        "fmt_strict": [1.0, 0.0],
        "fmt_prefilled": [0.0, 1.0],
        "gsm8k_acc": [1.0, 0.0],
    }
    metrics = httpx.get(server.url + "/metrics").text
    assert 'rewardkit_items_scored_total{func="format"}' in metrics  # by registry key: no series per alias
    assert "fmt_strict" not in metrics and "gsm8k_acc" not in metrics
    for bad in ({"alias": "1bad"}, {"alias": "x" * 65}, {"alias": "a b"}, {"columns": {"nope": "answer"}}):
        func = {"name": "math", **bad}
        refused = httpx.post(server.url + "/score", json={**body, "funcs": [func]}, timeout=60)
        assert refused.status_code == 422, (bad, refused.text)
    missing = {**body, "funcs": [{"name": "math", "columns": {"solution": "gold"}}]}
    refused = httpx.post(server.url + "/score", json=missing, timeout=60)
    assert refused.status_code == 422 and "'gold' (read as 'solution') is missing" in refused.json()["detail"]


def test_a_caller_sending_an_oversized_body_reads_the_413_not_a_reset(secured: Server) -> None:
    """A client that sends its whole body before it reads (``requests``) met a reset connection, not
    the 413: the server answered from the headers and closed with the body unread (schemathesis failed one
    run in four on it). A caller's refused body is now drained first; bodies larger than the socket
    buffers (4 MB here, against a 0.5 MB limit) make the reset certain without it."""
    import requests  # schemathesis's client; ms-swift brings it

    body = b'{"funcs": ["format"], "completions": ["' + b"x" * (4 << 20) + b'"]}'
    headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    for _ in range(5):  # without the drain: 8 of 10 such posts raised ChunkedEncodingError here
        response = requests.post(secured.url + "/score", data=body, headers=headers, timeout=30)
        assert response.status_code == 413, response.text
        assert "REWARDKIT_MAX_BODY_MB" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # streamed, no Content-Length: refused once past the limit
        for start in range(0, len(body), 1 << 16):
            yield body[start : start + (1 << 16)]

    streamed = httpx.post(secured.url + "/score", content=chunks(), headers=headers, timeout=30)
    assert streamed.status_code == 413, streamed.text
