"""The judge under a short deadline, against an endpoint that answers with huge error bodies, and with a
secret in its base URL's query (issue 21).

Each test is a finding; the figures are from the loaded 2-core box the suite was written on, before / after:

- fencing a huge value (under an operator's large ``max_prompt_bytes``) ran to its end whatever the
  deadline: 12 M characters of ``[[1]]`` 6.8 s, 12 M of ``é`` 3.8 s; now each stops 0.02 s after it.
  Through the service, two such completions under a 2 s deadline got their 504 after 6.0-10.1 s, now
  after 2.3 s, /healthz under 0.1 s;
- a batch of 12,000 distinct calls started a task per call, seconds of the event loop to start them and as
  long to cancel them at the deadline: under a 4 s deadline, DeadlineExceeded after 7.9 s and the loop
  stalled 3.2 s; now ``max_concurrency`` workers: on time, stalls under 0.15 s;
- ``math_or_judge`` chose the judge's items on the event loop: 6,000 golds of 4 KB stalled it 2.2-3.1 s;
  now in a thread, the deadline checked per item: 0.04 s;
- an error reply's body was read whole (the SDK reads it to quote its message): of a 500 with 256 MiB,
  256 MiB read; now 64 KiB (the loopback judge got 1 MiB, its first write, out before the hang-up);
- ``https://h/v1?api-key=SECRET`` came back in the 422 of a 401, the 503 of a failing endpoint and the
  judge's repr; the query was also lost (the SDK put the path after it: ``/v1/?api-key=SECRETchat/
  completions``); now masked everywhere, log lines included, and sent as the query of every call;
- errors quoting a caller's value quoted it whole: a 1 MB column name or ``on_unavailable``, 1 MB 422s;
  now under 2 KB.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.core import DeadlineExceeded, deadline
from rewardkit.judging.calls import ERROR_BODY_BYTES
from rewardkit.judging.fence import neutralise
from rewardkit.rewards.fallback import MathOrJudge
from rewardkit.rewards.judge import JudgeConfigError, LLMJudge
from tests.security.conftest import JUDGE_KEY
from tests.support.fake_judge import FakeJudge
from tests.support.healthz import polled_healthz
from tests.support.helpers import TOKEN, Server, judge_env
from tests.support.timing import busy

DEADLINE_S = 2.0  # the service's REWARDKIT_REQUEST_TIMEOUT_S
# On an idle machine; each is stretched by how busy the machine is (tests/support/timing.py), as the
# unprotected forms are (seconds past the deadline, /healthz blocked for seconds). The idle figures, and
# the service's under hours of traffic, are bench/soak.py's (504 within 1.5 s, /healthz p99 < 100 ms).
LATE_S = 1.0  # how long after the deadline its 504 may come
HEALTHZ_S = 1.0
LAG_S = 0.5  # the longest a 10 ms tick of the event loop may come late
URL_SECRET = "s3cret-in-the-query"
AUTH = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
MARKED = "[[1]] "  # a score marker: every one is neutralised, a character at a time


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, judge: FakeJudge) -> Iterator[Server]:
    """A service whose judge URL carries a secret in its query and whose operator raised the prompt cap."""
    env = judge_env(
        f"{judge.url}?api-key={URL_SECRET}",
        "operator-model",
        JUDGE_KEY,
        REWARDKIT_REQUEST_TIMEOUT_S=str(DEADLINE_S),
        REWARDKIT_PARAMS=json.dumps({"llm_judge": {"max_prompt_bytes": 64 << 20, "verdict": "text"}}),
    )
    s = Server(env, tmp_path_factory.mktemp("judge-deadline") / "server.log")
    yield s
    s.stop()
    assert URL_SECRET not in s.log.read_text()  # start-up report, access log, errors: none shows it


@pytest.fixture(autouse=True)
def _fresh(judge: FakeJudge) -> None:
    judge.reset()


@pytest.fixture
def judge_settings(judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """An in-process judge's settings: the loopback judge, its URL with a secret in the query."""
    monkeypatch.setenv("REWARDKIT_JUDGE_API_KEY", JUDGE_KEY)
    return {"base_url": f"{judge.url}?api-key={URL_SECRET}", "model": "m", "verdict": "text"}


def timed(server: Server, body: Any) -> tuple[httpx.Response, float, list[float]]:
    """POST /score: the answer, how long it took, and /healthz's latencies meanwhile."""
    content = json.dumps(body).encode()
    with polled_healthz(server.url) as healthz:
        start = time.monotonic()
        response = httpx.post(server.url + "/score", content=content, headers=AUTH, timeout=120)
        took = time.monotonic() - start
    return response, took, healthz


def assert_on_time(response: httpx.Response, took: float, healthz: list[float]) -> None:
    slow = busy()
    print(
        f"\n{response.status_code} after {took:.2f} s (deadline {DEADLINE_S} s), "
        f"/healthz max {max(healthz, default=0):.3f} s, machine {slow:.1f}x slower than idle"
    )
    assert response.status_code == 504, response.text[:500]
    assert took < DEADLINE_S + LATE_S * slow, (took, slow)
    assert healthz and max(healthz) < HEALTHZ_S * slow, (max(healthz), slow)


# ---------------------------------------------------------------- deadlines


@pytest.mark.parametrize(
    "text",
    [MARKED * 2_000_000, "é" * 12_000_000],  # markers to neutralise; non-ASCII text read for markers
    ids=["markers", "non-ascii"],
)
def test_fencing_a_huge_value_stops_at_the_deadline(text: str) -> None:
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="fencing"), deadline(0.3):
        neutralise(text)
    assert time.monotonic() - start < 0.3 + LATE_S * busy()  # unchecked: 3.8-6.8 s idle


def test_huge_completions_get_their_504_within_a_second_of_the_deadline(server: Server) -> None:
    body = {
        "funcs": ["llm_judge"],
        "completions": [MARKED * 2_000_000] * 2,
        "columns": {"question": ["q"] * 2},
    }
    assert_on_time(*timed(server, body))


def test_many_large_completions_get_their_504_within_a_second_of_the_deadline(server: Server) -> None:
    n = 100  # each under the default prompt cap of 256 KiB; together seconds of fencing
    completions = [f"{i} " + MARKED * 40_000 for i in range(n)]
    body = {"funcs": ["llm_judge"], "completions": completions, "columns": {"question": ["q"] * n}}
    assert_on_time(*timed(server, body))


def lagged(work: Callable[[], Awaitable[Any]], within_s: float) -> tuple[float, list[float]]:
    """Run ``work`` on an event loop under a deadline it cannot meet: when its DeadlineExceeded came and
    how late each 10 ms tick of the loop was meanwhile (what /healthz would have waited); asserts both
    on time for how busy the machine is (the loop stalled for seconds unprotected, 0.15 s idle now)."""
    lags: list[float] = []

    async def run() -> float:
        async def tick() -> None:
            while True:
                start = time.monotonic()
                await asyncio.sleep(0.01)
                lags.append(time.monotonic() - start - 0.01)

        ticker = asyncio.create_task(tick())
        start = time.monotonic()
        try:
            with pytest.raises(DeadlineExceeded), deadline(within_s):
                await work()
            return time.monotonic() - start
        finally:
            ticker.cancel()

    took = asyncio.run(run())
    slow = busy()
    print(
        f"\nDeadlineExceeded after {took:.2f} s (deadline {within_s:.1f} s), loop lag max {max(lags):.3f} s, "
        f"machine {slow:.1f}x slower than idle"
    )
    assert took < within_s + LATE_S * slow, (took, slow)
    assert max(lags) < LAG_S * slow, (max(lags), slow)
    return took, lags


def test_a_batch_of_many_calls_keeps_the_event_loop_free(
    judge: FakeJudge, judge_settings: dict[str, Any]
) -> None:
    judge.mode = "hang"  # the calls wait for the deadline: what is measured is the loop before and at it
    n = 12_000
    reward = LLMJudge(**judge_settings)
    reward.ready(30)  # as the service at start-up: the SDK's import (1-2 s on a busy machine) is not timed
    # 0.3 s of CPU before the first call (prompts 0.22 s, the client 0.1 s): on time however busy
    within_s = 2.0 + 2.0 * busy()
    lagged(lambda: reward.ascore_detailed([f"answer {i}" for i in range(n)], question=["q"] * n), within_s)
    assert judge.requests > 0  # the calls had started: the deadline cancelled calls in flight


def test_math_or_judge_chooses_its_judged_items_off_the_event_loop(
    judge: FakeJudge, judge_settings: dict[str, Any]
) -> None:
    judge.mode = "hang"
    n = 6_000  # golds of 4 KB: 0.25 ms each to read, 1.5 s in all
    gold = "\\boxed{" + "1+" * 2_000 + "1}"
    reward = MathOrJudge(
        rule="choice",  # no worker pool: every item is "gold_not_a_choice" at once, for the judge
        undecided=["gold_not_a_choice"],
        judge={"name": "llm_judge", "params": judge_settings},
    )
    completions = [f"It is {i}." for i in range(n)]
    lagged(lambda: reward.ascore_detailed(completions, solution=[gold] * n, question=["q"] * n), 5.0)


# ---------------------------------------------------------------- error bodies


def test_an_error_body_is_read_only_as_far_as_its_message(
    judge: FakeJudge, judge_settings: dict[str, Any]
) -> None:
    judge.error_bytes = 256 << 20
    judge.script = [(500, {})]
    reward = rewardkit.get("llm_judge", max_retries=0, on_unavailable="none", **judge_settings)
    scored = reward.score_detailed(["an answer"], question=["q"])
    assert scored.values == [None] and scored.reasons == ["judge_error:500"]
    print(f"\nof a 500 with a body of {judge.error_bytes >> 20} MiB, {judge.error_bytes_sent >> 10} KiB sent")
    assert ERROR_BODY_BYTES <= judge.error_bytes_sent < 16 << 20, judge.error_bytes_sent
    judge.reset()
    judge.error_bytes = 256 << 20
    judge.script = [(401, {})]
    with pytest.raises(JudgeConfigError, match="answered 401"):  # a configuration error still says so
        reward.score_detailed(["another answer"], question=["q"])
    assert judge.error_bytes_sent < 16 << 20, judge.error_bytes_sent


# ---------------------------------------------------------------- what is echoed


def test_a_secret_in_the_judge_url_is_sent_but_never_shown(server: Server, judge: FakeJudge) -> None:
    def judged(tag: str) -> httpx.Response:
        body = {
            "funcs": [{"name": "llm_judge", "params": {"max_retries": 0}}],
            "completions": [f"answer {tag}"],
            "columns": {"question": ["q"]},
        }
        return httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=30)

    assert judged("ok").status_code == 200
    assert judge.paths[-1] == f"/v1/chat/completions?api-key={URL_SECRET}"  # the query goes with the call
    judge.script = [(401, {})]
    refused = judged("refused")
    assert refused.status_code == 422 and "answered 401" in refused.text and "api-key=***" in refused.text
    judge.script = [(500, {})]
    down = judged("down")
    assert down.status_code == 503 and "api-key=***" in down.text
    for answer in (
        refused,
        down,
        *(httpx.get(server.url + path, headers=AUTH, timeout=60) for path in ("/rewards", "/readyz")),
    ):
        assert URL_SECRET not in answer.text


def test_the_judge_logs_and_repr_mask_the_secret(
    judge_settings: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    reward = rewardkit.get("llm_judge", **judge_settings)
    with caplog.at_level(logging.DEBUG):
        assert reward(["logged"], question=["SCORE:5"]) == [0.5]
    assert URL_SECRET not in repr(reward) and "api-key=***" in repr(reward)
    lines = [record.getMessage() for record in caplog.records]
    assert any("api-key=***" in line for line in lines), lines  # the client's request line, masked
    assert not any(URL_SECRET in line for line in lines)


@pytest.mark.parametrize(
    "func, columns, named",
    [
        (
            {"name": "llm_judge", "params": {"on_unavailable": "x" * 1_000_000}},
            {"question": ["q"]},
            "on_unavailable must be",
        ),
        ("llm_judge", {"c" * 1_000_000: ["v"]}, "columns given"),  # no question: the columns are named
        (
            {"name": "math_or_judge", "params": {"undecided": ["y" * 1_000_000]}},
            {"solution": ["4"]},
            "reason names",
        ),
    ],
    ids=["on_unavailable", "column-name", "undecided"],
)
def test_errors_quote_at_most_200_characters_of_what_the_caller_sent(
    server: Server, func: Any, columns: dict[str, Any], named: str
) -> None:
    body = {"funcs": [func], "completions": ["an answer"], "columns": columns}
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 422 and named in response.text, response.text[:500]
    assert len(response.content) < 2_000
