"""Between the socket and the routes (issue 21): the token is checked on the headers before any body byte is
read, slow clients are cut off, SIGTERM ends within a bound, and error answers are small, redacted and shaped
as the schema says. Every case runs against a real ``rewardkit serve`` on a loopback port.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from tests.security.conftest import JUDGE_KEY
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import ROOT, TOKEN
from tests.support.timing import busy

AUTH = {"authorization": f"Bearer {TOKEN}"}
URL_SECRET = "QS3CRET-in-the-query"
BODY_TIMEOUT_S = 2.0
HEADER_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 256


class Serve:
    """``rewardkit serve`` (what the pod runs) in a subprocess, on a loopback port free when it starts."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
        command = [str(Path(sys.executable).parent / "rewardkit"), "serve", "--port", str(self.port)]
        self.log_file = log.open("w")
        self.proc = subprocess.Popen(
            command, cwd=ROOT, env={**clean, **env}, stdout=self.log_file, stderr=subprocess.STDOUT
        )
        until = time.monotonic() + 60
        while self.proc.poll() is None and time.monotonic() < until:
            try:
                httpx.get(self.url + "/healthz", timeout=1).raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"rewardkit serve did not start: {log.read_text()[-2000:]}")

    def rss_mb(self) -> float:
        return float(psutil.Process(self.proc.pid).memory_info().rss) / 2**20

    def fds(self) -> int:
        return int(psutil.Process(self.proc.pid).num_fds())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log_file.close()


def service_env(judge: FakeJudge, **extra: str) -> dict[str, str]:
    """A pod's settings: the token, one math worker, tight slow-client bounds, a judge whose base URL holds
    a secret in its query string."""
    params = {"llm_judge": {"base_url": f"{judge.url}?api-key={URL_SECRET}", "model": "operator-model"}}
    return {
        "REWARDKIT_API_TOKEN": TOKEN,
        "REWARDKIT_MATH_WORKERS": "1",
        "REWARDKIT_JUDGE_API_KEY": JUDGE_KEY,
        "REWARDKIT_PARAMS": json.dumps(params),
        "REWARDKIT_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
        "REWARDKIT_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "REWARDKIT_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        **extra,
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, judge: FakeJudge) -> Iterator[Serve]:
    s = Serve(service_env(judge), tmp_path_factory.mktemp("guarded") / "server.log")
    yield s
    s.stop()
    assert TOKEN not in s.log.read_text() and URL_SECRET not in s.log.read_text()


def head(path: str = "/score", length: int = 1_000, token: bool = True) -> bytes:
    """A POST's request head announcing a JSON body of ``length`` bytes."""
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: test",
        "Content-Type: application/json",
        f"Content-Length: {length}",
    ]
    if token:
        lines.append(f"Authorization: Bearer {TOKEN}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(server: Serve, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    if data:
        sock.sendall(data)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (what it answered first is read and dropped)."""
    sock.settimeout(0.05)
    try:
        while chunk := sock.recv(65536):
            del chunk
    except (TimeoutError, BlockingIOError):
        return False
    except OSError:  # reset
        return True
    return True


def trickle(socks: list[socket.socket], stop: threading.Event, every_s: float = 1.0) -> None:
    """One byte to each socket every ``every_s`` until ``stop`` (a slow client; errors mean it was cut)."""
    while not stop.wait(every_s):
        for sock in socks:
            try:
                sock.send(b" ")
            except OSError:
                pass


def wait_until(check: Callable[[], bool], seconds: float) -> float:
    """Seconds until ``check()`` held (polled), or ``inf`` when it never did within ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    return float("inf")


def assert_cut(
    server: Serve, socks: list[socket.socket], trickling: list[socket.socket], bound_s: float
) -> None:
    """All of ``socks`` (``trickling`` sending a byte a second) are closed by the server within ``bound_s``
    (plus a margin, stretched by how busy the machine is: unprotected, they stay open as long as the
    client trickles), and its file descriptors go with them."""
    stop = threading.Event()
    sender = threading.Thread(target=trickle, args=(trickling, stop))
    sender.start()
    try:
        assert wait_until(lambda: server.fds() >= len(socks), 60) < 60  # all accepted (a wait, no bound)
        held = server.fds()
        margin = 6 * busy()
        took = wait_until(lambda: all(closed_by_server(s) for s in socks), bound_s + margin)
        assert took < bound_s + margin, sum(not closed_by_server(s) for s in socks)
        released = wait_until(lambda: server.fds() <= held - len(socks) + 10, 5 * busy())
        assert released < float("inf"), (held, server.fds())
    finally:
        stop.set()
        sender.join()
        for sock in socks:
            sock.close()


# ---------------------------------------------------------------- authentication before the body


def test_no_token_gets_401_before_the_body_is_read(server: Serve) -> None:
    """Before: a body without a token was read and parsed first (60 MiB: 401 after 0.5-1.2 s here, none
    within 5 s while the client had sent 1 MiB of it; 8 at once took the server from 79 to 703 MB). Now
    the 401 goes out on the headers (7-25 ms) and the memory stays flat."""
    start = time.monotonic()
    with connect(server, head(length=60 * 2**20, token=False) + b"{" + b"x" * 2**20) as sock:
        sock.settimeout(30)  # unprotected: no answer until the 59 MiB never sent arrive
        first = sock.recv(4096)
    took = time.monotonic() - start
    assert first.startswith(b"HTTP/1.1 401 ") and took < 0.5 * busy(), (first[:100], took)
    body = b'{"funcs": ["format"], "completions": ["' + b"x" * (60 * 2**20) + b'"]}'
    response = httpx.post(server.url + "/score", content=body)  # a client that sends it all sees the 401
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"

    before, peak, stop = server.rss_mb(), [0.0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], server.rss_mb())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            statuses = list(
                pool.map(lambda _: httpx.post(server.url + "/score", content=body).status_code, range(8))
            )
    finally:
        stop.set()
        sampler.join()
    assert statuses == [401] * 8
    assert peak[0] - before < 40, (before, peak[0])


def test_the_token_in_the_query_counts_only_for_get_reward(server: Serve) -> None:
    body = {"query": ["\\boxed{2}"], "labels": ["2"]}
    assert httpx.post(server.url + f"/get_reward?token={TOKEN}", json=body, timeout=30).status_code == 200
    refused = httpx.post(
        server.url + f"/score?token={TOKEN}", json={"funcs": ["format"], "completions": ["x"]}
    )
    assert refused.status_code == 401
    assert httpx.post(server.url + "/get_reward?token=wrong", json=body).status_code == 401


def test_the_body_limit_holds_for_the_unauthenticated_too(server: Serve) -> None:
    """An open route (``/healthz``) refuses an oversized body from its headers, without a token."""
    sock = connect(server, head("/healthz", length=65 * 2**20, token=False))
    with sock:
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 413 ")


def test_401s_carry_no_replica_header(server: Serve) -> None:
    """Before: 401s named the replica (host:pid) to anyone."""
    refused = httpx.get(server.url + "/rewards")
    assert refused.status_code == 401 and "x-rewardkit-replica" not in refused.headers
    assert "x-rewardkit-replica" in httpx.get(server.url + "/rewards", headers=AUTH).headers


@pytest.mark.parametrize(
    "path", ["/docs", "/redoc", "/openapi.json", "/docs-static/swagger-ui.css", "/metrics"]
)
def test_docs_schema_and_metrics_need_the_token(server: Serve, path: str) -> None:
    """Before: /docs, /redoc and /openapi.json answered without a token (REWARDKIT_DOCS_PUBLIC opens them;
    tests/test_docs_offline.py runs with it)."""
    assert httpx.get(server.url + path).status_code == 401
    assert httpx.get(server.url + path, headers=AUTH).status_code == 200
    assert httpx.get(server.url + "/healthz").status_code == 200


# ---------------------------------------------------------------- slow clients


def test_slow_bodies_are_cut_at_the_body_timeout(server: Serve) -> None:
    """Before: 200 POSTs sending a byte a second were all still open 6 s later. Now each gets 408 and its
    connection closes once REWARDKIT_BODY_TIMEOUT_S (2 s here) has passed."""
    socks = [connect(server, head() + b"{") for _ in range(200)]
    assert_cut(server, socks, socks, BODY_TIMEOUT_S)


def test_a_408_says_why(server: Serve) -> None:
    with connect(server, head() + b"{") as sock:
        sock.settimeout(BODY_TIMEOUT_S + 5)
        answer = b"".join(iter(lambda: sock.recv(65536), b""))  # until the server closes
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"REWARDKIT_BODY_TIMEOUT_S" in answer and b"connection: close" in answer.lower()


def test_slow_heads_are_cut_at_the_header_timeout(server: Serve) -> None:
    """Before: connections that never finish their request head stayed open for good (uvicorn has no
    header timeout). Now they close once REWARDKIT_HEADER_TIMEOUT_S (2 s here) has passed, as do
    connections that send nothing."""
    trickling = [connect(server, b"POST /score HTTP/1.1\r\nHost: test\r\nX-Slow: ") for _ in range(100)]
    silent = [connect(server) for _ in range(100)]
    assert_cut(server, trickling + silent, trickling, HEADER_TIMEOUT_S)


def test_connections_over_the_cap_get_503(server: Serve) -> None:
    """Before: no cap on connections. Now the request that finds REWARDKIT_MAX_CONNECTIONS (256 here) open
    gets 503, and answers resume once they close."""
    idle = [connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        assert wait_until(lambda: server.fds() >= MAX_CONNECTIONS, 60) < 60  # all accepted (a wait)
        assert httpx.get(server.url + "/healthz").status_code == 503
    finally:
        for sock in idle:
            sock.close()
    answering = wait_until(lambda: httpx.get(server.url + "/healthz").status_code == 200, 5 * busy())
    assert answering < float("inf")  # answers resume once the connections close


@pytest.mark.timeout(120)
def test_sigterm_drains_then_ends_within_the_bound(tmp_path: Path, judge: FakeJudge) -> None:
    """Before: a SIGTERMed server with a slow body in flight stayed up as long as the client kept sending
    (still up after 15 s here). Now: idle connections close at once, a request whose body completes in
    time is answered, and the process is gone within REWARDKIT_SHUTDOWN_TIMEOUT_S (3 s here) plus the
    rewards' shutdown."""
    slow = {
        "REWARDKIT_BODY_TIMEOUT_S": "60",
        "REWARDKIT_HEADER_TIMEOUT_S": "60",
        "REWARDKIT_SHUTDOWN_TIMEOUT_S": "3",
    }
    server = Serve(service_env(judge, **slow), tmp_path / "server.log")
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(server.stop)
        body = json.dumps({"funcs": ["format"], "completions": ["x"]}).encode()
        anonymous = cleanup.enter_context(connect(server, head(length=1_000, token=False) + b"{"))
        trickling = cleanup.enter_context(connect(server, head(length=1_000) + b"{"))
        finishing = cleanup.enter_context(connect(server, head(length=len(body)) + body[:5]))
        idle = cleanup.enter_context(httpx.Client(base_url=server.url, headers=AUTH))
        assert idle.get("/rewards").status_code == 200  # a kept-alive connection, idle from now on
        stop = threading.Event()
        sender = threading.Thread(target=trickle, args=([anonymous, trickling], stop, 0.5))
        sender.start()
        time.sleep(1)
        server.proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        time.sleep(1)
        finishing.sendall(body[5:])
        finishing.settimeout(30)
        answer = finishing.recv(65536)
        bound_s = 3 + 7 * busy()  # unprotected: up as long as the client trickles
        gone = wait_until(lambda: server.proc.poll() is not None, bound_s)
        stop.set()
        sender.join()
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        assert gone < bound_s, f"still running {time.monotonic() - start:.1f} s after SIGTERM"


# ---------------------------------------------------------------- what error answers hold


def test_a_judge_url_secret_is_not_echoed(server: Serve, judge: FakeJudge) -> None:
    """Before: a judge answering 401 gave a 422 naming the operator's base_url, ?api-key= included."""
    judge.reset()
    judge.script = [(401, {})] * 4
    body = {"funcs": ["llm_judge"], "completions": ["4"], "columns": {"question": ["2+2?"]}}
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=30)
    assert response.status_code == 422 and "answered 401" in response.text, response.text
    assert URL_SECRET not in response.text and "api-key=***" in response.text
    assert URL_SECRET not in server.log.read_text()


def test_validation_errors_are_small_and_say_what_failed(server: Serve) -> None:
    """Before: a 20 MB weight came back whole in a 422 (~20 MB, `detail` a list). Now `detail` is a string
    and `errors` lists what failed, without the values sent."""
    huge = "9" * (20 * 2**20)
    body = {"funcs": [{"name": "format", "weight": huge}], "completions": ["x"]}
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 422 and len(response.content) < 5_000, len(response.content)
    data = response.json()
    assert isinstance(data["detail"], str) and "weight" in data["detail"]
    assert [e["loc"] for e in data["errors"]][0][:3] == ["body", "funcs", 0]
    assert all("input" not in e for e in data["errors"])
    long_name = httpx.post(
        server.url + "/score", json={"funcs": ["n" * 10**6], "completions": ["x"]}, headers=AUTH
    )
    assert long_name.status_code == 422 and len(long_name.content) < 5_000, len(long_name.content)


def test_invalid_json_and_undecodable_bodies(server: Serve) -> None:
    headers = {**AUTH, "content-type": "application/json"}
    bad_json = httpx.post(server.url + "/score", content=b'{"funcs": [', headers=headers)
    assert bad_json.status_code == 422 and isinstance(bad_json.json()["detail"], str)
    not_utf8 = httpx.post(server.url + "/score", content=b'{"funcs": ["\xff"]}', headers=headers)
    assert not_utf8.status_code == 400 and isinstance(not_utf8.json()["detail"], str)
    schema = httpx.get(server.url + "/openapi.json", headers=AUTH).json()
    responses = schema["paths"]["/score"]["post"]["responses"]
    assert {"400", "401", "408", "413", "422", "503", "504"} <= set(responses)


def test_an_empty_openrlhf_batch_is_an_empty_answer(server: Serve) -> None:
    """Before: {"query": []} got 422 "missing solution". An empty batch is answered as /score answers one."""
    bodies: list[dict[str, list[str]]] = [{"query": []}, {"query": [], "labels": []}]
    for body in bodies:
        response = httpx.post(server.url + "/get_reward", json=body, headers=AUTH)
        assert response.status_code == 200, response.text
        assert response.json() == {"rewards": [], "scores": [], "extra_logs": {"math": []}}
    unknown = httpx.post(server.url + "/get_reward?funcs=nope", json={"query": []}, headers=AUTH)
    assert unknown.status_code == 422


# ---------------------------------------------------------------- start-up


def test_the_math_workers_are_up_before_the_first_request(tmp_path: Path, judge: FakeJudge) -> None:
    """Before: the math worker host started with the first math request (which could then miss a short
    deadline on a loaded machine). Now start-up starts it: it is running before any request."""
    server = Serve(service_env(judge), tmp_path / "server.log")
    try:
        workers = psutil.Process(server.proc.pid).children(recursive=True)
        assert len(workers) >= 2, workers  # the host and its worker
        ready = httpx.get(server.url + "/readyz", headers=AUTH, timeout=30)
        assert ready.status_code == 200 and ready.json()["rewards"]["math"] == "ready"
    finally:
        server.stop()


def test_the_pods_shutdown_bound_fits_in_its_grace_period() -> None:
    """The pod's SIGTERM comes after its preStop sleep; the drain must end before Kubernetes kills it."""
    documents = list(yaml.safe_load_all((ROOT / "deploy" / "kubernetes.yaml").read_text()))
    pod = next(d for d in documents if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {v["name"]: v.get("value") for v in container["env"]}
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    drain = int(env["REWARDKIT_SHUTDOWN_TIMEOUT_S"])
    assert drain > float(env["REWARDKIT_REQUEST_TIMEOUT_S"])  # the longest request still finishes
    assert pre_stop + drain + 10 <= pod["terminationGracePeriodSeconds"]  # 10 s to close the math pool
