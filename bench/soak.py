"""A soak test of the service (not run in CI): a real ``rewardkit serve`` under mixed traffic, valid and
hostile, for ``--minutes``, its memory and latencies watched throughout.

    python bench/soak.py [--minutes 30] [--clients 4] [--warmup-minutes M] [--no-judge]

Starts ``rewardkit serve`` on a loopback port (a token set, ``REWARDKIT_REQUEST_TIMEOUT_S=10``) and, unless
``--no-judge``, the asyncio loopback judge of the tests (``tests/support/fake_judge.py``, 50 ms a reply) as
its operator's judge. ``--clients`` threads then send, at random:

* GRPO-shaped ``/score`` batches of 64-256 completions of math + format + countdown + repetition (the math
  workload's completions and golds, countdown's generated ones, each made unique so no cache answers them);
* ``/get_reward`` calls (OpenRLHF's shape, 16-64 samples) and, with the judge, small ``llm_judge`` batches;
* hostile bodies: large ones without a token, invalid JSON, a 5 MB func name, 50,000-deep nesting, a batch
  over ``REWARDKIT_MAX_BATCH``, four 99,000-character golds, lone surrogates; and one more thread keeps a slow
  body going (a byte a second, with and without a token).

The server's RSS with its children (the math worker host) is sampled every ``--sample-s`` seconds and
``/healthz`` is polled every 50 ms from a process of its own. It prints the requests by kind and status, the
5xx, the RSS at the end of the warm-up and at the end (each the median of the last 30 s; the server's own
too) with the drift, and the p50/p99 of ``/healthz`` and of the valid ``/score`` batches. The 99,000-character
golds are built to need more than the deadline (each pair runs to math's 5 s ``timeout_s``): their answer is
a 504 within 1.5 s of the deadline, counted apart (``504@deadline``); a later 504 counts as a 5xx. Exit code 1
when any other answer was a 5xx, the server died, the RSS drifted 5% or more after the warm-up, or
``/healthz``'s p99 was 100 ms or more.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
import psutil  # noqa: E402
from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402
from text_rewards import countdown_workload  # noqa: E402

from tests.support.healthz import polled_healthz  # noqa: E402

TOKEN = "soak-token"
AUTH = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
REQUEST_TIMEOUT_S = 10.0  # the server's deadline
DEADLINE_SLACK_S = 1.5  # a 504 this soon after the deadline is the deadline's answer, on time
MAX_BATCH = 16_384  # the server's default REWARDKIT_MAX_BATCH
WINDOW_S = 30.0  # the RSS at a moment: the median of the samples of the 30 s before it
DRIFT_LIMIT = 0.05
HEALTHZ_P99_LIMIT_S = 0.100
GRPO_FUNCS = ["math", "format", "countdown", "repetition"]
Sample = tuple[float, int, int]  # when, the server's own RSS, its children's


@dataclass
class Tally:
    """What the clients saw: every answer's status by kind, and how long the valid batches took."""

    statuses: Counter[tuple[str, str]] = field(default_factory=Counter)
    score_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, status: str, took: float | None = None) -> None:
        with self.lock:
            self.statuses[(kind, status)] += 1
            if took is not None:
                self.score_s.append(took)


class Workload:
    """The valid requests' material: math rows (completion, gold) and countdown items, made unique per use."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.math = [(row["completion"], row["gold"]) for row in load(DEFAULT_WORKLOAD)]
        completions, targets, nums = countdown_workload(2_000, random.Random(0))
        self.countdown = list(zip(completions, targets, nums, strict=True))
        self.serial = 0
        self.lock = threading.Lock()

    def tag(self) -> str:
        with self.lock:
            self.serial += 1
            return f"\n\n(sample {self.serial})"

    def grpo_batch(self) -> dict[str, Any]:
        """64-256 completions, half math and half countdown, every column for every reward (a row's
        missing gold is a per-item None with a reason, as in a mixed training set)."""
        n = self.rng.choice((64, 128, 192, 256))
        math_rows = self.rng.sample(self.math, n // 2)
        count_rows = self.rng.sample(self.countdown, n - n // 2)
        completions = [c + self.tag() for c, _ in math_rows] + [c + self.tag() for c, _, _ in count_rows]
        return {
            "funcs": GRPO_FUNCS,
            "completions": completions,
            "columns": {
                "solution": [g for _, g in math_rows] + [None] * len(count_rows),
                "target": [None] * len(math_rows) + [t for _, t, _ in count_rows],
                "nums": [None] * len(math_rows) + [ns for _, _, ns in count_rows],
            },
        }

    def openrlhf(self) -> dict[str, Any]:
        rows = self.rng.sample(self.math, self.rng.choice((16, 32, 64)))
        prompts = [f"Question {i}: solve it.\n" for i in range(len(rows))]
        return {
            "query": [p + c + self.tag() for p, (c, _) in zip(prompts, rows, strict=True)],
            "prompts": prompts,
            "labels": [g for _, g in rows],
        }

    def judged(self) -> dict[str, Any]:
        completions = [c[-2_000:] + self.tag() for c, _ in self.rng.sample(self.math, 8)]
        return {
            "funcs": ["llm_judge"],
            "completions": completions,
            "columns": {"question": ["Grade it."] * 8},
        }


def hostile_bodies(rng: random.Random, tag: Callable[[], str]) -> dict[str, Callable[[], tuple[bytes, bool]]]:
    """Each hostile kind: a function giving its body and whether it goes with the token."""

    def dumped(body: Any) -> bytes:
        return json.dumps(body).encode()

    def golds_99k() -> tuple[bytes, bool]:  # 4 of them: each one's comparison runs to math's timeout_s
        golds = ["\\boxed{" + "1+" * 49_490 + f"{rng.randrange(10**9)}}}" for _ in range(4)]
        return dumped(
            {"funcs": ["math"], "completions": ["\\boxed{2}" + tag()] * 4, "columns": {"solution": golds}}
        ), True

    return {
        "no_token_large": lambda: (
            b'{"funcs": ["math"], "completions": ["' + b"x" * (24 << 20) + b'"]}',
            False,
        ),
        "invalid_json": lambda: (b'{"funcs": ["math"], "completions": ["a", ' + b"x" * 10_000, True),
        "huge_func_name": lambda: (dumped({"funcs": ["f" * 5_000_000], "completions": ["a"]}), True),
        "deep_nesting": lambda: (
            b'{"funcs": ["math"], "completions": ["a"], "columns": {"solution": '
            + b"[" * 50_000
            + b"]" * 50_000
            + b"}}",
            True,
        ),
        "oversized_batch": lambda: (
            dumped({"funcs": ["format"], "completions": ["a"] * (MAX_BATCH + 1)}),
            True,
        ),
        "golds_99k": golds_99k,
        "surrogates": lambda: (
            dumped(
                {
                    "funcs": ["math", "format", "repetition"],
                    "completions": ["\\boxed{\ud800}" + tag(), "<think>\udfff</think><answer>1</answer>"],
                    "columns": {"solution": ["\ud800", "1"]},
                }
            ),
            True,
        ),
    }


def status_of(response: httpx.Response) -> str:
    return str(response.status_code)


def hostile_status(response: httpx.Response, took: float) -> str:
    """A hostile request built to need more than the deadline (99,000-character golds) gets the deadline's
    answer: a 504 within a second and a half of the deadline is that answer (``504@deadline``, the property
    under test), a later one is a failure like any other 5xx (``504``)."""
    if response.status_code == 504 and took <= REQUEST_TIMEOUT_S + DEADLINE_SLACK_S:
        return "504@deadline"
    return status_of(response)


def client_loop(url: str, until: float, tally: Tally, workload: Workload, judge: bool, seed: int) -> None:
    """One client: valid traffic mostly, a hostile body one time in six."""
    rng = random.Random(seed)
    hostile = hostile_bodies(rng, workload.tag)
    kinds = ["score_batch"] * 6 + ["get_reward"] * 2 + (["judge_batch"] if judge else []) + ["hostile"] * 2
    with httpx.Client(timeout=120) as http:
        while time.monotonic() < until:
            kind = rng.choice(kinds)
            try:
                if kind == "score_batch":
                    start = time.monotonic()
                    response = http.post(url + "/score", json=workload.grpo_batch(), headers=AUTH)
                    took = time.monotonic() - start
                    tally.add(kind, status_of(response), took if response.status_code == 200 else None)
                elif kind == "get_reward":
                    response = http.post(url + f"/get_reward?token={TOKEN}", json=workload.openrlhf())
                    tally.add(kind, status_of(response))
                elif kind == "judge_batch":
                    tally.add(
                        kind, status_of(http.post(url + "/score", json=workload.judged(), headers=AUTH))
                    )
                else:
                    kind = rng.choice(sorted(hostile))
                    body, with_token = hostile[kind]()
                    headers = AUTH if with_token else {"content-type": "application/json"}
                    start = time.monotonic()
                    response = http.post(url + "/score", content=body, headers=headers)
                    tally.add(kind, hostile_status(response, time.monotonic() - start))
            except httpx.HTTPError as exc:  # the server closed a hostile request's connection, say
                tally.add(kind, type(exc).__name__)


def slow_body(port: int, with_token: bool, seconds: float) -> str:
    """A POST whose body comes a byte a second: what the server answers, or how it ended the connection."""
    head = (
        "POST /score HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
    )
    head += f"Authorization: Bearer {TOKEN}\r\n" if with_token else ""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=seconds + 30) as sock:
            sock.sendall((head + "\r\n").encode())
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sock.sendall(b" ")
                time.sleep(1.0)
            first = sock.recv(4096).split(b"\r\n", 1)[0].split()
            return first[1].decode() if len(first) > 1 else "closed"
    except OSError as exc:
        return type(exc).__name__


def slow_loop(port: int, until: float, tally: Tally) -> None:
    """Slow bodies one after the other, 20 s each, with and without the token in turn."""
    with_token = False
    while time.monotonic() + 20 < until:
        kind = "slow_body" + ("" if with_token else "_no_token")
        tally.add(kind, slow_body(port, with_token, 20.0))
        with_token = not with_token


def server_rss(process: psutil.Process) -> tuple[int, int]:
    """The server's resident memory, and that of every process below it (the math worker host and its
    workers) together."""
    own = int(process.memory_info().rss)
    children = 0
    for child in process.children(recursive=True):
        try:
            children += child.memory_info().rss
        except psutil.Error:  # a worker that just went
            pass
    return own, children


def sample_rss(process: psutil.Process, until: float, every_s: float, samples: list[Sample]) -> None:
    while time.monotonic() < until:
        try:
            samples.append((time.monotonic(), *server_rss(process)))
        except psutil.Error:
            return  # the server is gone: said at the end
        time.sleep(every_s)


def rss_at(samples: list[Sample], moment: float, children: bool = True) -> float:
    """The median RSS (the server's, with its children's by default) of the ``WINDOW_S`` seconds before
    ``moment``."""
    window = [
        own + (below if children else 0) for at, own, below in samples if moment - WINDOW_S < at <= moment
    ]
    return float(statistics.median(window)) if window else float("nan")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_judge() -> tuple[subprocess.Popen[str], str]:
    """The asyncio loopback judge (the tests' protocol, served by uvicorn), answering after 50 ms."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "fake_judge.py"), "--delay", "0.05"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def start_server(port: int, judge_url: str | None, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    env.update(REWARDKIT_API_TOKEN=TOKEN, REWARDKIT_REQUEST_TIMEOUT_S=str(REQUEST_TIMEOUT_S))
    if judge_url:
        env.update(
            REWARDKIT_JUDGE_BASE_URL=judge_url,
            REWARDKIT_JUDGE_MODEL="soak-judge",
            REWARDKIT_JUDGE_API_KEY="soak",
        )
    command = [sys.executable, "-c", "from rewardkit.cli import main; main()", "serve", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/readyz", headers=AUTH, timeout=60).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the service did not start; its log: {log}")


def report(
    tally: Tally,
    samples: list[Sample],
    healthz: list[float],
    times: tuple[float, float, float],
    server_alive: bool,
) -> list[str]:
    """Print the figures; the failures, if any."""
    start, warm, end = times
    kinds = sorted({kind for kind, _ in tally.statuses})
    statuses = sorted({status for _, status in tally.statuses})
    print(f"\nrequests by kind and status ({sum(tally.statuses.values())} in all):")
    widths = [max(len(s), 5) + 2 for s in statuses]
    print(f"  {'kind':<18}" + "".join(f"{s:>{w}}" for s, w in zip(statuses, widths, strict=True)))
    for kind in kinds:
        counts = (tally.statuses[(kind, s)] or "" for s in statuses)
        print(f"  {kind:<18}" + "".join(f"{n:>{w}}" for n, w in zip(counts, widths, strict=True)))
    server_errors = {
        key: n for key, n in tally.statuses.items() if key[1].startswith("5") and key[1] != "504@deadline"
    }
    on_time = sum(n for key, n in tally.statuses.items() if key[1] == "504@deadline")
    print(f"5xx: {sum(server_errors.values())} {dict(server_errors) if server_errors else ''}")
    print(f"504 within {DEADLINE_SLACK_S:g} s of the {REQUEST_TIMEOUT_S:g} s deadline: {on_time}")
    at_warm, at_end = rss_at(samples, warm), rss_at(samples, end)
    drift = (at_end - at_warm) / at_warm
    peak = max((own + children for _, own, children in samples), default=0)
    own_warm, own_end = (rss_at(samples, moment, children=False) / 2**20 for moment in (warm, end))
    print(
        f"RSS (server + children, median of {WINDOW_S:.0f} s): warm-up end {at_warm / 2**20:.1f} MB, "
        f"end {at_end / 2**20:.1f} MB, drift {drift:+.1%} (the server alone {own_warm:.1f} -> "
        f"{own_end:.1f} MB; peak {peak / 2**20:.1f} MB, {len(samples)} samples over "
        f"{(end - start) / 60:.1f} min)"
    )
    h50, h99 = percentile(healthz, 0.50), percentile(healthz, 0.99)
    s50, s99 = percentile(tally.score_s, 0.50), percentile(tally.score_s, 0.99)
    print(
        f"/healthz: p50 {h50 * 1000:.1f} ms, p99 {h99 * 1000:.1f} ms, "
        f"max {max(healthz, default=0) * 1000:.0f} ms ({len(healthz)} polls)"
    )
    print(
        f"/score (valid GRPO batches, 200): p50 {s50 * 1000:.0f} ms, p99 {s99 * 1000:.0f} ms "
        f"({len(tally.score_s)} batches)"
    )
    failures = []
    if server_errors:
        failures.append(f"{sum(server_errors.values())} answers were 5xx")
    if not server_alive:
        failures.append("the server died")
    if not drift < DRIFT_LIMIT:
        failures.append(f"RSS drift {drift:+.1%} after the warm-up (limit {DRIFT_LIMIT:.0%})")
    if not h99 < HEALTHZ_P99_LIMIT_S:
        failures.append(f"/healthz p99 {h99 * 1000:.1f} ms (limit {HEALTHZ_P99_LIMIT_S * 1000:.0f} ms)")
    return failures


def drive(url: str, port: int, server: subprocess.Popen[bytes], args: argparse.Namespace) -> list[str]:
    """The traffic, the RSS samples and the /healthz polls for ``--minutes``; the report's failures."""
    warmup = args.warmup_minutes if args.warmup_minutes is not None else args.minutes / 5
    print(f"soak: {args.minutes:g} min (warm-up {warmup:g} min), {args.clients} clients, pid {server.pid}")
    workload = Workload(random.Random(args.seed))
    tally = Tally()
    samples: list[Sample] = []
    start = time.monotonic()
    until = start + args.minutes * 60
    judged = not args.no_judge
    with polled_healthz(url) as healthz:
        threads = [
            threading.Thread(
                target=sample_rss, args=(psutil.Process(server.pid), until, args.sample_s, samples)
            ),
            threading.Thread(target=slow_loop, args=(port, until, tally)),
            *(
                threading.Thread(
                    target=client_loop, args=(url, until, tally, workload, judged, args.seed + i)
                )
                for i in range(args.clients)
            ),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    end = min(time.monotonic(), until)
    return report(tally, samples, healthz, (start, start + warmup * 60, end), server.poll() is None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the traffic runs")
    parser.add_argument("--warmup-minutes", type=float, default=None, help="default: a fifth of --minutes")
    parser.add_argument("--clients", type=int, default=4, help="client threads (besides the slow body's)")
    parser.add_argument("--sample-s", type=float, default=5.0, help="seconds between two RSS samples")
    parser.add_argument("--no-judge", action="store_true", help="no llm_judge traffic (no loopback judge)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    log = Path(tempfile.mkdtemp(prefix="rewardkit-soak-")) / "server.log"
    judge_proc, judge_url = start_judge() if not args.no_judge else (None, None)
    try:
        port = free_port()
        server = start_server(port, judge_url, log)
        try:
            failures = drive(f"http://127.0.0.1:{port}", port, server, args)
        finally:
            server.terminate()
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
    finally:
        if judge_proc is not None:
            judge_proc.communicate(timeout=30)  # closing its stdin stops it
    tracebacks = log.read_text(errors="replace").count("Traceback")
    print(f"server log: {log} ({tracebacks} tracebacks)")
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
