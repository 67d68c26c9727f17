"""Scaling out for real: Ray Serve with 2 replicas on loopback, `rewardkit serve --workers 2` metrics that
add up, the service image's install line in a fresh venv, and the deployment files linted and validated
offline."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

import rewardkit
from rewardkit.client import RewardClient
from tests.support.helpers import ROOT

BIN = Path(sys.executable).parent
COMPLETIONS = ["<think>a</think><answer>\\boxed{2}</answer>", "\\boxed{3}", "no answer"] * 4
COLUMNS = {"solution": ["2"] * len(COMPLETIONS)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Serving:
    """`rewardkit serve ...` in its own session (a signal to the tests never reaches it by accident)."""

    def __init__(self, args: list[str], log: Path, timeout_s: float = 180) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REWARDKIT_", "RAY_ADDRESS"))}
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        self.log = log
        self.output = log.open("w")
        self.proc = subprocess.Popen(
            [str(BIN / "rewardkit"), "serve", "--port", str(self.port), *args],
            stdout=self.output,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.output.close()
                raise RuntimeError(f"serve exited: {log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.kill()
        raise RuntimeError(f"serve did not answer in {timeout_s} s: {log.read_text()[-3000:]}")

    def descendants(self) -> list[psutil.Process]:
        children: list[psutil.Process] = psutil.Process(self.proc.pid).children(recursive=True)
        return children

    def kill(self) -> None:
        if self.proc.poll() is None:
            with_children = [psutil.Process(self.proc.pid), *self.descendants()]
            for process in with_children:
                try:
                    process.kill()
                except psutil.Error:
                    pass
            self.proc.wait(30)
        self.output.close()


def score(url: str, attempts: int = 1) -> tuple[list[float | None], str]:
    body = {"funcs": ["math", "format"], "completions": COMPLETIONS, "columns": COLUMNS}
    for attempt in range(attempts):  # attempts > 1: what a retrying client does while a replica is replaced
        response = httpx.post(url + "/score", json=body, timeout=60)
        if response.status_code == 200 or attempt == attempts - 1:
            break
        time.sleep(1)
    assert response.status_code == 200, response.text
    return response.json()["rewards"], response.headers["x-rewardkit-replica"]


@pytest.fixture(scope="module")
def ray_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    serving = Serving(
        ["--ray", "--replicas", "2", "--cpus-per-replica", "0.5"], tmp_path_factory.mktemp("ray") / "log"
    )
    yield serving
    serving.kill()


@pytest.mark.timeout(600)
def test_ray_serve_spreads_requests_over_two_replicas_with_equal_values(ray_service: Serving) -> None:
    expected = rewardkit.score_batch(["math", "format"], COMPLETIONS, COLUMNS).rewards
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: score(ray_service.url), range(40)))
    assert all(values == expected for values, _ in results)
    replicas = {replica for _, replica in results}
    assert len(replicas) == 2, replicas  # host:pid of each replica that answered


@pytest.mark.timeout(600)
def test_a_killed_replica_is_replaced_and_the_clients_retries_hide_it(ray_service: Serving) -> None:
    _, replica = score(ray_service.url)
    victim = int(replica.rsplit(":", 1)[1])
    os.kill(victim, signal.SIGKILL)
    expected = rewardkit.score_batch(["math"], COMPLETIONS, COLUMNS).rewards
    seen: set[str] = set()
    deadline = time.monotonic() + 120
    with RewardClient(ray_service.url, http_max_retries=8, http_backoff_s=0.5) as client:
        while time.monotonic() < deadline:
            assert client.score(["math"], COMPLETIONS, **COLUMNS).rewards == expected  # never an error
            seen |= {score(ray_service.url, attempts=5)[1] for _ in range(4)}
            if len(seen - {replica}) == 2:  # the survivor and a replacement answer
                break
            time.sleep(1)
    assert replica not in seen and len(seen) == 2, seen


@pytest.mark.timeout(600)
def test_sigterm_stops_everything_it_started(tmp_path: Path) -> None:
    serving = Serving(["--ray", "--replicas", "1", "--cpus-per-replica", "0.5"], tmp_path / "log")
    started = serving.descendants()
    assert any("raylet" in " ".join(p.cmdline()) for p in started if p.is_running())
    os.kill(serving.proc.pid, signal.SIGTERM)
    assert serving.proc.wait(90) == 0
    serving.output.close()
    assert [p.pid for p in started if _alive(p)] == []


def _alive(process: psutil.Process) -> bool:
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@pytest.mark.timeout(300)
def test_metrics_add_up_over_uvicorn_workers(tmp_path: Path) -> None:
    serving = Serving(["--workers", "2"], tmp_path / "log")
    try:
        workers: set[str] = set()
        sent = 0
        while len(workers) < 2 and sent < 400:  # until both workers have scored some
            with ThreadPoolExecutor(8) as pool:
                workers |= {replica for _, replica in pool.map(lambda _: score(serving.url), range(16))}
            sent += 16
        assert len(workers) == 2, workers
        scrapes: dict[str, str] = {}
        for _ in range(200):  # until each worker has answered a scrape
            response = httpx.get(serving.url + "/metrics", timeout=30)
            scrapes[response.headers["x-rewardkit-replica"]] = response.text
            if len(scrapes) == 2:
                break
        assert len(scrapes) == 2
        line = f'rewardkit_items_scored_total{{func="format"}} {float(sent * len(COMPLETIONS))}'
        for text in scrapes.values():  # whichever worker answers, the totals are over both
            assert line in text, text[:2000]
    finally:
        serving.kill()


@pytest.mark.timeout(300)
def test_each_replica_sizes_its_math_pool_to_its_cpus_and_metrics_add_up(ray_service: Serving) -> None:
    """Half a CPU each: one math worker under each replica's verifier host; /metrics from either replica
    holds the totals of both (they share a metrics directory on this machine)."""
    replicas: dict[int, None] = {}
    before = _items(httpx.get(ray_service.url + "/metrics", timeout=30).text)
    sent = 0
    symbolic = {
        "funcs": ["math"],
        "completions": ["\\boxed{x^2 - 1}"],
        "columns": {"solution": ["(x-1)(x+1)"]},
    }
    while len(replicas) < 2 and sent < 64:
        replicas[int(score(ray_service.url)[1].rsplit(":", 1)[1])] = None
        sent += 1
        # a pair only SymPy decides: the replica that answers starts its math pool
        assert httpx.post(ray_service.url + "/score", json=symbolic, timeout=120).json()["rewards"] == [1.0]
    for _ in range(16):  # both replicas get a symbolic pair
        httpx.post(ray_service.url + "/score", json=symbolic, timeout=120)
    assert len(replicas) == 2
    for pid in replicas:
        hosts = [p for p in psutil.Process(pid).children(recursive=True) if "rewardkit.verify" in p.cmdline()]
        assert len(hosts) == 1, hosts
        config = json.loads(hosts[0].cmdline()[-1])  # the host's pool settings, as the replica started it
        assert config["workers"] == 1, config  # floor(0.5 CPU), at least one
    counts = {
        response.headers["x-rewardkit-replica"]: _items(response.text)
        for response in (httpx.get(ray_service.url + "/metrics", timeout=30) for _ in range(40))
    }
    assert len(counts) == 2 and set(counts.values()) == {before + sent * len(COMPLETIONS)}


def _items(metrics: str) -> float:
    prefix = 'rewardkit_items_scored_total{func="format"} '
    return next((float(line[len(prefix) :]) for line in metrics.splitlines() if line.startswith(prefix)), 0.0)
