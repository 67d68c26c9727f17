"""The client's retry policy, against a real HTTP server on loopback that misbehaves on purpose."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rewardkit.client import RewardClient, RewardServiceError
from tests.support.helpers import send_json
from tests.support.timing import busy

OK = {"rewards": [1.0], "scores": {"format": [1.0]}, "errors": {}, "timing_ms": {"format": 0.1}}
REWARDS = {"rewards": [{"name": "format", "columns": [], "optional_columns": [], "params": {}}]}


class Flaky(BaseHTTPRequestHandler):
    """Answers the scripted statuses in order, then 200 with a valid /score body."""

    script: list[tuple[int, dict[str, str]]] = []
    seen: list[float] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        Flaky.seen.append(time.monotonic())
        status, headers = Flaky.script.pop(0) if Flaky.script else (200, {})
        body = json.dumps(OK if status == 200 else {"detail": f"status {status}"}).encode()
        self.send_response(status)
        for key, value in {"content-type": "application/json", **headers}.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - /rewards, which the client reads once before scoring
        send_json(self, REWARDS)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[str]:
    Flaky.script, Flaky.seen = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_429_and_5xx_are_retried_honouring_retry_after(flaky: str) -> None:
    Flaky.script = [(429, {"Retry-After": "1"}), (503, {}), (500, {})]
    with RewardClient(flaky, http_backoff_s=0.05) as client:
        assert client.score(["format"], ["x"]).rewards == [1.0]
    assert len(Flaky.seen) == 4
    assert Flaky.seen[1] - Flaky.seen[0] >= 0.95  # waited the server's Retry-After
    assert Flaky.seen[3] - Flaky.seen[1] < min(1.0 * busy(), 1.9)  # then short exponential backoff (0.3 s)


def test_4xx_is_not_retried(flaky: str) -> None:
    Flaky.script = [(422, {}), (200, {})]
    with RewardClient(flaky, http_backoff_s=0.05) as client, pytest.raises(RewardServiceError) as info:
        client.score(["format"], ["x"])
    assert info.value.status_code == 422 and len(Flaky.seen) == 1


def test_a_504_past_the_server_deadline_is_not_retried_but_a_gateway_504_is(flaky: str) -> None:
    Flaky.script = [(504, {"X-Rewardkit-Timeout": "request"}), (200, {})]
    with RewardClient(flaky, http_backoff_s=0.05) as client, pytest.raises(RewardServiceError) as info:
        client.score(["format"], ["x"])
    assert info.value.status_code == 504 and len(Flaky.seen) == 1  # the same batch would time out again
    Flaky.script, Flaky.seen = [(504, {}), (200, {})], []  # a proxy's 504 says nothing of the batch
    with RewardClient(flaky, http_backoff_s=0.05) as client:
        assert client.score(["format"], ["x"]).rewards == [1.0]
    assert len(Flaky.seen) == 2


def test_gives_up_after_max_retries(flaky: str) -> None:
    Flaky.script = [(503, {})] * 10
    with (
        RewardClient(flaky, http_backoff_s=0.01, http_max_retries=2) as client,
        pytest.raises(RewardServiceError) as info,
    ):
        client.score(["format"], ["x"])
    assert info.value.status_code == 503 and len(Flaky.seen) == 3


def test_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    with RewardClient(f"http://127.0.0.1:{port}", http_backoff_s=0.05, http_max_retries=3) as client:
        with pytest.raises(RewardServiceError, match="could not reach the reward service"):
            client.score(["format"], ["x"])
    assert time.monotonic() - start >= 0.05 * (1 + 2 + 4) * 0.5  # three backoffs happened (with jitter)


def test_retry_after_as_an_http_date_is_honoured(flaky: str) -> None:
    from email.utils import formatdate

    Flaky.script = [(503, {"Retry-After": formatdate(time.time() + 2, usegmt=True)})]
    with RewardClient(flaky, http_backoff_s=0.01) as client:
        assert client.score(["format"], ["x"]).rewards == [1.0]
    assert Flaky.seen[1] - Flaky.seen[0] >= 0.9  # the date is whole seconds: 1 to 2 s from now
