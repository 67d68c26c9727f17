"""A caller holding a valid token attacks the service; a second loopback server stands in for the attacker.

Every case of the trust-boundary issue is replayed against a real uvicorn: nothing reaches the attacker, no
foreign secret or file content leaves, resource parameters are refused, and no input gets a 500.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from rewardkit.client import PolicyError, RewardClient, remote_reward
from rewardkit.engine import FuncSpec
from tests.security.conftest import JUDGE_KEY
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import TOKEN, Server
from tests.support.timing import busy

PAID_KEY = "sk-some-other-paid-key"
AUTH = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}


@pytest.fixture(scope="module")
def attacker() -> Iterator[FakeJudge]:
    """A second loopback server standing in for an attacker's endpoint."""
    evil = FakeJudge()
    yield evil
    evil.close()


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("server-secrets") / "secret.txt"
    path.write_text("TOP-SECRET-FILE-CONTENT {completion}")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, judge: FakeJudge, secret_file: Path) -> Iterator[Server]:
    env = {
        "REWARDKIT_API_TOKEN": TOKEN,
        "REWARDKIT_JUDGE_BASE_URL": judge.url,
        "REWARDKIT_JUDGE_MODEL": "operator-model",
        "REWARDKIT_JUDGE_API_KEY": JUDGE_KEY,
        "MY_PAID_KEY": PAID_KEY,
        "REWARDKIT_MATH_WORKERS": "2",
        "REWARDKIT_REQUEST_TIMEOUT_S": "4",
    }
    s = Server(env, tmp_path_factory.mktemp("attacked") / "server.log")
    yield s
    s.stop()
    log = s.log.read_text()
    assert TOKEN not in log and JUDGE_KEY not in log and PAID_KEY not in log  # nothing secret was logged


@pytest.fixture(autouse=True)
def _fresh(judge: FakeJudge, attacker: FakeJudge) -> None:
    judge.reset()
    attacker.reset()


def post(server: Server, body: Any, path: str = "/score", timeout: float = 60) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server.url + path, content=content, headers=AUTH, timeout=timeout)


def judge_request(params: dict[str, Any], **columns: Any) -> dict[str, Any]:
    return {
        "funcs": [{"name": "llm_judge", "params": params}],
        "completions": ["The answer is 4."],
        "columns": {"question": ["What is 2 + 2?"], **{k: [v] for k, v in columns.items()}},
    }


def assert_refused(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    for word in words:
        assert word in str(detail), detail


def processes(server: Server) -> int:
    return len(psutil.Process(server.proc.pid).children(recursive=True))


# ---------------------------------------------------------------- where the server's secrets go


@pytest.mark.parametrize(
    "params",
    [
        {"base_url": "ATTACKER"},
        {"base_url": "ATTACKER", "api_key_env": "MY_PAID_KEY"},
        {"api_key_env": "REWARDKIT_API_TOKEN"},
        {"api_key_env": "PATH"},
        {"model": "the-most-expensive-model"},
        {"cache_size": 10**9},
        {"local_files": True},
        {"image_urls": True},
        {"max_total_concurrency": 100_000},
    ],
)
def test_server_settings_are_refused_and_nothing_reaches_the_attacker(
    server: Server, judge: FakeJudge, attacker: FakeJudge, params: dict[str, Any]
) -> None:
    params = {k: attacker.url if v == "ATTACKER" else v for k, v in params.items()}
    response = post(server, judge_request(params))
    assert_refused(response, "server setting", next(iter(params)))
    assert attacker.requests == 0 and judge.requests == 0


def test_the_judge_gets_only_the_operators_key(server: Server, judge: FakeJudge, attacker: FakeJudge) -> None:
    response = post(server, judge_request({"temperature": 0.5}))
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["llm_judge"] == [0.7]
    assert judge.authorizations == [f"Bearer {JUDGE_KEY}"] and attacker.requests == 0


# ---------------------------------------------------------------- which files it reads


@pytest.mark.parametrize("template", ["SECRET", "/etc/passwd", "/etc/hostname"])
def test_a_template_naming_a_server_file_is_refused(
    server: Server, judge: FakeJudge, secret_file: Path, template: str
) -> None:
    template = str(secret_file) if template == "SECRET" else template
    response = post(server, judge_request({"template": template}))
    assert_refused(response, "template", "{completion}")
    assert judge.requests == 0


def test_an_inline_template_is_used_as_text_never_as_a_path(
    server: Server, judge: FakeJudge, secret_file: Path
) -> None:
    template = f"{secret_file} {{completion}} SCORE:3"
    response = post(server, judge_request({"template": template}))
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["llm_judge"] == [0.3]
    assert judge.plain_texts == [f"{secret_file} The answer is 4. SCORE:3"]
    assert "TOP-SECRET" not in judge.texts[0]


@pytest.mark.parametrize(
    "template, words",
    [
        ("{completion:>20000000}", ["plain {name}"]),
        ("{completion} {x.y}", ["plain {name}"]),
        ("{completion} {x[0]}", ["plain {name}"]),
        ("{completion!r}", ["plain {name}"]),
        ("{completion} {0}", ["plain {name}"]),
        ("{completion} }", ["template"]),
        ("{completion} {", ["template"]),
        ("no placeholder at all", ["{completion}"]),
        ("{completion}" + "x" * 30_000, ["at most"]),
    ],
)
def test_bad_templates_are_422_not_500(server: Server, template: str, words: list[str]) -> None:
    before = psutil.Process(server.proc.pid).memory_info().rss
    assert_refused(post(server, judge_request({"template": template})), *words)
    assert psutil.Process(server.proc.pid).memory_info().rss - before < 50 * 2**20


def test_a_template_placeholder_must_come_as_a_column(server: Server) -> None:
    response = post(server, judge_request({"template": "{completion} {rubric}"}))
    assert_refused(response, "rubric")


def _png(size: tuple[int, int] = (8, 8)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_image_paths_on_the_server_are_never_read_and_do_not_reveal_existence(
    server: Server, judge: FakeJudge, tmp_path: Path
) -> None:
    real = tmp_path / "real.png"
    real.write_bytes(_png())
    unreadable = tmp_path / "unreadable.png"
    unreadable.write_bytes(_png())
    unreadable.chmod(0)
    paths = [str(real), str(tmp_path / "missing.png"), str(unreadable), "/etc/passwd", str(tmp_path)]
    body = {
        "funcs": ["llm_judge"],
        "completions": ["4"] * len(paths),
        "columns": {"question": ["q"] * len(paths), "images": [[p] for p in paths]},
    }
    response = post(server, body)
    assert response.status_code == 200, response.text
    reasons = response.json()["errors"]["llm_judge"]
    assert set(reasons) == {"bad_image:0:not_inline"}, reasons  # one reason, whatever is on the disk
    assert judge.requests == 0


def test_inline_images_are_judged_and_http_urls_are_not_fetched(server: Server, judge: FakeJudge) -> None:
    raw = _png((40, 20))
    data_url = "data:image/png;base64," + base64.b64encode(raw).decode()
    bare = base64.b64encode(raw).decode()
    body = {
        "funcs": ["llm_judge"],
        "completions": ["4", "4", "4"],
        "columns": {
            "question": ["q SCORE:5", "q SCORE:6", "q"],
            "images": [[data_url], [bare], ["http://169.254.169.254/latest/meta-data"]],
        },
    }
    response = post(server, body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["scores"]["llm_judge"][:2] == [0.5, 0.6]
    assert data["errors"]["llm_judge"] == [None, None, "bad_image:0:url_not_allowed"]
    assert judge.image_sizes == [(40, 20), (40, 20)]
    assert not any(url.startswith("http") for url in judge.image_urls)


def test_a_decompression_bomb_is_refused_from_its_header(server: Server, judge: FakeJudge) -> None:
    bomb = base64.b64encode(_png((6000, 6000))).decode()  # 36 Mpx, over the 25 Mpx server default
    body = {
        "funcs": ["llm_judge"],
        "completions": ["4"],
        "columns": {"question": ["q"], "images": [["data:image/png;base64," + bomb]]},
    }
    response = post(server, body)
    assert response.status_code == 200, response.text
    assert response.json()["errors"]["llm_judge"] == ["bad_image:0:too_many_pixels"]
    assert judge.requests == 0


# ---------------------------------------------------------------- how many processes it runs


@pytest.mark.parametrize("params", [{"workers": 16}, {"memory_mb": 4096}, {"memory_mb": 0}])
def test_math_pool_settings_are_refused_and_start_no_process(server: Server, params: dict[str, Any]) -> None:
    body = {"funcs": ["math"], "completions": ["\\boxed{x^2}"], "columns": {"solution": ["x*x"]}}
    assert post(server, body).status_code == 200  # the pool is up
    before = processes(server)
    response = post(server, {**body, "funcs": [{"name": "math", "params": params}]})
    assert_refused(response, "server setting", next(iter(params)))
    assert processes(server) == before


def test_caller_params_of_math_share_one_pool(server: Server) -> None:
    body = {"funcs": ["math"], "completions": ["\\boxed{x^2+1}"], "columns": {"solution": ["1+x^2"]}}
    assert post(server, body).status_code == 200
    before = processes(server)
    for timeout_s, chars in ((1.0, 10), (2.5, 5000), (60, 100_000)):
        spec = {"name": "math", "params": {"timeout_s": timeout_s, "max_answer_chars": chars}}
        response = post(server, {**body, "funcs": [spec]})
        assert response.status_code == 200 and response.json()["scores"]["math"] == [1.0]
    assert processes(server) == before


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("math", {"timeout_s": 61}, ["'timeout_s' is 61", "cap of 60"]),
        ("math", {"max_answer_chars": 1_000_000_000}, ["max_answer_chars", "cap of 100000"]),
        ("llm_judge", {"timeout_s": 1e9}, ["timeout_s", "cap of 300"]),
        ("llm_judge", {"max_concurrency": 100_000}, ["max_concurrency", "cap of 256"]),
        ("llm_judge", {"max_retries": 11}, ["max_retries", "cap of 10"]),
        ("llm_judge", {"max_image_side": 100_000}, ["max_image_side", "cap of 4096"]),
    ],
)
def test_sizes_over_the_caps_are_refused(
    server: Server, judge: FakeJudge, name: str, params: dict[str, Any], words: list[str]
) -> None:
    body = (
        judge_request(params)
        if name == "llm_judge"
        else {
            "funcs": [{"name": name, "params": params}],
            "completions": ["\\boxed{1}"],
            "columns": {"solution": ["1"]},
        }
    )
    assert_refused(post(server, body), *words)
    assert judge.requests == 0


# ---------------------------------------------------------------- a request cannot freeze the server


def _healthz_latencies(server: Server, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        start = time.monotonic()
        httpx.get(server.url + "/healthz", timeout=30)
        out.append(time.monotonic() - start)
        time.sleep(0.05)


def test_a_huge_power_answer_is_prompt_and_the_server_stays_live(server: Server) -> None:
    answer = "\\boxed{" + "1" * 80_000 + "^}"  # froze the whole server for 61 s (a quadratic guard)
    body = {
        "funcs": [{"name": "math", "params": {"max_answer_chars": 100_000, "timeout_s": 2}}],
        "completions": [answer, "<answer>" + "9" * 99_000 + "^{9^{9}}</answer>", "\\boxed{2}"],
        "columns": {"solution": ["1", "1", "2"]},
    }
    latencies: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_healthz_latencies, args=(server, stop, latencies))
    watcher.start()
    start = time.monotonic()
    try:
        response = post(server, body)
    finally:
        took = time.monotonic() - start
        stop.set()
        watcher.join()
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["math"] == [0.0, 0.0, 1.0]
    slow = busy()  # the slack stretched by how busy the machine is, as the 61 s freeze would be
    assert took < 2 + 3 * slow, (took, slow)  # the per-pair limit plus slack
    assert latencies and max(latencies) < 0.75 * slow, (latencies, slow)


@pytest.mark.timeout(120)
def test_a_silent_judge_costs_the_request_a_504_and_nobody_else_anything(
    server: Server, judge: FakeJudge
) -> None:
    judge.mode = "hang"
    results: dict[str, Any] = {}

    def slow() -> None:
        start = time.monotonic()
        results["judge"] = post(server, judge_request({"timeout_s": 300, "max_retries": 10}))
        results["judge_s"] = time.monotonic() - start
        results.setdefault("judge_end", time.monotonic())

    threads = [threading.Thread(target=slow) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    start = time.monotonic()
    format_body = {"funcs": ["format"], "completions": ["<think>a</think><answer>b</answer>"] * 64}
    responses = [post(server, format_body, timeout=60) for _ in range(20)]
    first_answered = start + responses[0].elapsed.total_seconds()
    unrelated = time.monotonic() - start
    for thread in threads:
        thread.join()
    stretch = busy()  # bounds stretched by how busy the machine is
    assert all(r.status_code == 200 for r in responses) and unrelated < 5.0 * stretch, (unrelated, stretch)
    assert first_answered < results["judge_end"]  # answered while the judge's requests still waited
    response = results["judge"]
    assert response.status_code == 504 and response.headers["x-rewardkit-timeout"] == "request"
    assert "REWARDKIT_REQUEST_TIMEOUT_S" in response.json()["detail"]
    assert results["judge_s"] < 4 + 3 * stretch  # the server's 4 s deadline, then cancelled


@pytest.mark.timeout(120)
def test_a_slow_math_batch_is_cut_at_the_deadline_and_frees_the_workers(server: Server) -> None:
    # No guard refuses these, and each keeps SymPy busy for over 20 s on this machine.
    body = {
        "funcs": [{"name": "math", "params": {"timeout_s": 60}}],
        "completions": [f"\\boxed{{\\sin(x)^{{{900 + k}}}+\\cos(x)^{{900}}}}" for k in range(6)],
        "columns": {"solution": ["1"] * 6},
    }
    start = time.monotonic()
    response = post(server, body)
    assert response.status_code == 504, response.text
    assert response.headers["x-rewardkit-timeout"] == "request"
    assert time.monotonic() - start < 4 + 3 * busy()  # unchecked: 6 items of 20 s+ on 2 workers
    quick = {"funcs": ["math"], "completions": ["\\boxed{x+1}"], "columns": {"solution": ["1+x"]}}
    start = time.monotonic()
    assert post(server, quick).json()["scores"]["math"] == [1.0]
    assert time.monotonic() - start < 3.0 * busy()  # no worker is still busy with the cancelled batch


# ---------------------------------------------------------------- no 500 from input


@pytest.mark.parametrize(
    "raw",
    [
        b'{"funcs": [{"name": "format", "weight": NaN}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "weight": Infinity}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "weight": -Infinity}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "weight": 1e308}, {"name": "format", "weight": 1e308}],'
        b' "completions": ["<think>a</think><answer>b</answer>"]}',
        b'{"funcs": [{"name": "format", "weight": 1e999}], "completions": ["x"]}',
        b'{"funcs": ["form\\ud800at"], "completions": ["x"]}',
        b'{"funcs": [{"name": "\\udfff"}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "weight": "\\ud800"}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "params": {"tags": ["\\ud800"]}}], "completions": ["x"]}',
        b'{"funcs": [{"name": "format", "params": {"\\ud800": 1}}], "completions": ["x"]}',
        b'{"funcs": [{"name": "countdown", "params": {"format_score": NaN}}], "completions": ["x"],'
        b' "columns": {"target": [1], "nums": [[1]]}}',
        b'{"funcs": [{"name": "llm_judge", "params": {"template": "{completion} {x.y}"}}],'
        b' "completions": ["x"], "columns": {"question": ["q"]}}',
        b'{"funcs": [{"name": "llm_judge", "params": {"template": ["not", "text"]}}],'
        b' "completions": ["x"], "columns": {"question": ["q"]}}',
        b'{"funcs": [{"name": "nope\\ud800"}], "completions": ["x"]}',
    ],
)
def test_bad_input_is_a_4xx_with_a_readable_body(server: Server, raw: bytes) -> None:
    response = post(server, raw)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["detail"]  # the body is valid JSON and says something


def test_a_surrogate_inside_a_completion_stays_a_per_item_reason(server: Server) -> None:
    raw = (
        b'{"funcs": ["math", "format"], "completions": ["\\\\boxed{\\ud800}", "\\\\boxed{2}"],'
        b' "columns": {"solution": ["1", "2"]}}'
    )
    response = post(server, raw)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["scores"]["math"] == [0.0, 1.0] and data["errors"]["math"][0] == "invalid_unicode"


# ---------------------------------------------------------------- what clients learn


def test_rewards_publishes_the_policy_and_the_limits(server: Server) -> None:
    data = httpx.get(server.url + "/rewards", headers=AUTH).json()
    rewards = {r["name"]: r["params"] for r in data["rewards"]}
    assert rewards["llm_judge"]["base_url"] == {
        "settable": False,
        "default": None,
        "cap": None,
        "inline_file": False,
        "reward_spec": False,
        "reward_spec_map": False,
    }
    assert judge_url_absent(data)
    assert rewards["llm_judge"]["template"]["settable"] and rewards["llm_judge"]["template"]["inline_file"]
    assert rewards["math"]["timeout_s"] == {
        "settable": True,
        "default": 5.0,
        "cap": 60.0,
        "inline_file": False,
        "reward_spec": False,
        "reward_spec_map": False,
    }
    assert not rewards["math"]["workers"]["settable"] and not rewards["math"]["memory_mb"]["settable"]
    assert data["max_batch"] == 16_384 and data["max_body_mb"] == 64 and data["request_timeout_s"] == 4
    assert data["version"]


def judge_url_absent(data: dict[str, Any]) -> bool:
    """Server settings are not published: a caller learns that they exist, not their values."""
    text = json.dumps(data)
    return "operator-model" not in text and "127.0.0.1" not in text


def test_clients_send_template_files_inline_and_refuse_server_settings_up_front(
    server: Server, judge: FakeJudge, attacker: FakeJudge, tmp_path: Path
) -> None:
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("CLIENT RUBRIC {completion} SCORE:8")
    reward = remote_reward("llm_judge", server.url, TOKEN, template=str(rubric))
    assert reward(["It is 4."], question=["2+2?"]) == [0.8]
    assert judge.plain_texts == ["CLIENT RUBRIC It is 4. SCORE:8"]  # read on the client, sent as text
    reward.close()
    with pytest.raises(PolicyError, match="'api_key_env' is a server setting"):
        remote_reward("llm_judge", server.url, TOKEN, api_key_env="MY_PAID_KEY")
    with (
        RewardClient(server.url, TOKEN) as client,
        pytest.raises(PolicyError, match="'base_url' is a server"),
    ):
        client.score([FuncSpec("llm_judge", {"base_url": attacker.url})], ["4"], question=["q"])
    script = Path(sys.executable).parent / "rewardkit"
    proc = subprocess.run(
        [str(script), "score", "--url", server.url, "-f", "math:workers=4", str(tmp_path / "rows.jsonl")],
        env={**os.environ, "REWARDKIT_API_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "'workers' is a server setting" in proc.stderr  # before the file is read
    assert attacker.requests == 0


def test_nested_reward_specs_are_checked_and_junk_token_ids_are_per_item(server: Server) -> None:
    nested = {"name": "math", "params": {"workers": 64}}
    body = {
        "funcs": [{"name": "cosine", "params": {"max_len": 100, "accuracy": nested}}],
        "completions": ["\\boxed{1}"],
        "columns": {"solution": ["1"], "completion_ids": [[1] * 10]},
    }
    assert_refused(post(server, body), "'workers' is a server setting")
    deep: Any = "math"
    for _ in range(8):
        deep = {"name": "cosine", "params": {"max_len": 10, "accuracy": deep}}
    assert_refused(post(server, {**body, "funcs": [deep]}), "nested deeper")
    junk = {
        "funcs": [{"name": "cosine", "params": {"max_len": 100}}, {"name": "length"}],
        "completions": ["\\boxed{1}"] * 4,
        "columns": {
            "solution": ["1"] * 4,
            "completion_ids": [5, "abc", {"a": 1}, [[1], 7]],
            "prompt": [None, 3, {"x": [1]}, "p"],
        },
    }
    response = post(server, junk)
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["cosine"] == [None] * 4


def test_a_custom_templates_columns_are_published_and_sent(server: Server, judge: FakeJudge) -> None:
    """A template's own placeholders are columns of that configuration: /rewards/columns says so, and
    remote_reward sends them (the registry's class-level columns do not have them)."""
    template = "Rubric: {rubric}\nAnswer: {completion} SCORE:7"
    found = httpx.post(
        server.url + "/rewards/columns",
        json={"name": "llm_judge", "params": {"template": template}},
        headers=AUTH,
    ).json()
    assert found["columns"] == ["rubric"] and "prompts" not in found["optional_columns"]  # its placeholders
    reward = remote_reward("llm_judge", server.url, TOKEN, template=template, alias="rubric_judge")
    try:
        assert reward.__name__ == "rubric_judge"
        assert reward(["It is 4."], prompts=["2+2?"], rubric=["be strict"], trainer_state=object()) == [0.7]
        assert judge.plain_texts[-1] == "Rubric: be strict\nAnswer: It is 4. SCORE:7"
    finally:
        reward.close()
