"""Client errors that no retry can fix fail at once and say what to do: a URL without a scheme, a service
that is not running, a keyword of an older release; the judge's errors carry no event-loop noise."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import rewardkit
from rewardkit.client import AsyncRewardClient, RemoteReward, RewardClient, RewardServiceError, remote_reward
from rewardkit.rewards.judge import JudgeConfigError, JudgeUnavailableError
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import send_json
from tests.support.timing import busy

REWARDS = {"rewards": [{"name": "format", "columns": [], "optional_columns": [], "params": {}}]}
OK = {"rewards": [1.0], "scores": {"format": [1.0]}, "errors": {}, "timing_ms": {"format": 0.1}}


def _dead_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nobody listens there
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "localhost:8000"])
def test_a_url_without_a_scheme_fails_when_the_client_is_made(url: str) -> None:
    start = time.monotonic()
    for make in (
        lambda: RewardClient(url),
        lambda: AsyncRewardClient(url),
        lambda: remote_reward("math", url, connect=False),
    ):
        with pytest.raises(ValueError, match=f"has no scheme: use 'http://{url}'"):
            make()
    with pytest.raises(ValueError, match="is not http"):
        RewardClient("ftp://127.0.0.1:8000")
    assert time.monotonic() - start < 1.0 * busy()  # nothing was tried


def test_a_dead_service_fails_within_seconds_asking_whether_it_runs() -> None:
    url = f"http://127.0.0.1:{_dead_port()}"
    running = f"is the service running at {url}\\?"
    start = time.monotonic()
    with RewardClient(url) as client, pytest.raises(RewardServiceError, match=running):
        client.score(["format"], ["x"])
    with pytest.raises(RewardServiceError, match=running):
        remote_reward("math", url)  # a trainer's start-up

    async def asynchronous() -> None:
        async with AsyncRewardClient(url) as client:
            await client.rewards()

    with pytest.raises(RewardServiceError, match=running):
        asyncio.run(asynchronous())
    # each under ~1.5 s; it was 8-15 s each with every retry (sleeps, however busy the machine)
    assert time.monotonic() - start < min(3 * 4.0 * busy(), 22.0)


class _Service(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._answer(REWARDS)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self._answer(OK)

    def _answer(self, body: object) -> None:
        send_json(self, body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(port: int) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _Service)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture
def restarting() -> Iterator[tuple[str, list[ThreadingHTTPServer]]]:
    first = _serve(0)
    servers = [first]
    yield f"http://127.0.0.1:{first.server_address[1]}", servers
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def test_a_client_that_reached_the_service_rides_out_a_restart(
    restarting: tuple[str, list[ThreadingHTTPServer]],
) -> None:
    url, servers = restarting
    port = servers[0].server_address[1]
    with RewardClient(url, http_backoff_s=0.2) as client:
        assert client.score(["format"], ["x"]).rewards == [1.0]
        servers[0].shutdown()
        servers[0].server_close()  # refused from now on, for longer than a new client would wait
        threading.Timer(1.5, lambda: servers.append(_serve(port))).start()
        start = time.monotonic()
        assert client.score(["format"], ["x"]).rewards == [1.0]
        assert time.monotonic() - start >= 1.4
    with RewardClient(f"http://127.0.0.1:{_dead_port()}", http_backoff_s=0.2) as fresh:
        start = time.monotonic()
        with pytest.raises(RewardServiceError, match="is the service running"):
            fresh.score(["format"], ["x"])
        # never reached: the short refusal window only (else 3.1 s+ of sleeps, however busy the machine)
        assert time.monotonic() - start < min(2.5 * busy(), 3.0)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("timeout_s", "http_timeout_s"),
        ("max_retries", "http_max_retries"),
        ("backoff_s", "http_backoff_s"),
        ("max_backoff_s", "http_max_backoff_s"),
    ],
)
def test_an_old_keyword_names_its_new_name(old: str, new: str) -> None:
    url = f"http://127.0.0.1:{_dead_port()}"
    options: dict[str, Any] = {old: 3}
    for make in (
        lambda: RewardClient(url, **options),
        lambda: AsyncRewardClient(url, **options),
        lambda: RemoteReward("math", url, connect=False, http=options),
    ):
        with pytest.raises(TypeError, match=f"'{old}' was renamed to '{new}'") as info:
            make()
        assert "_Retrying" not in str(info.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'retries'; its HTTP settings are http_"):
        RewardClient(url, retries=3)


def _shown(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def _chain(error: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def test_judge_errors_carry_no_event_loop_error(fake_judge: FakeJudge) -> None:
    fake_judge.script = [(401, {})] * 5
    with pytest.raises(JudgeConfigError) as config:
        rewardkit.get("llm_judge")(["a"], question=["q"])
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    with pytest.raises(JudgeUnavailableError) as unavailable:
        rewardkit.get("llm_judge", base_url=url, max_retries=0)(["a"], question=["q"])
    for error in (config.value, unavailable.value):
        assert "no running event loop" not in _shown(error)
        assert not [e for e in _chain(error) if "no running event loop" in str(e)], _chain(error)
