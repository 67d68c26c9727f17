"""Scale-out overhead: the same math+format batches from 8 concurrent clients against one process,
`rewardkit serve --workers 2`, and Ray Serve with 1 and 2 replicas, in one run.

    python bench/scale_out.py [--clients 8] [--rounds 2] [--batch 1152]

Each client sends ``--rounds`` requests of ``--batch`` completions of the shared GRPO math workload (math and
format), every request a different slice, to a server started fresh for each configuration (a cold verdict
cache each time). It prints completions/s, p50 and p99 request latency per configuration, the ratio to the
single process, and that every configuration gave the same rewards. On this 2-core machine the point is the
overhead and that the values agree, not a speed-up: every configuration shares the same two cores.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402  (bench/, beside this file)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CONFIGS = {
    "1 process": [],
    "--workers 2": ["--workers", "2"],
    "Ray Serve, 1 replica": ["--ray", "--replicas", "1", "--cpus-per-replica", "2"],
    "Ray Serve, 2 replicas": ["--ray", "--replicas", "2", "--cpus-per-replica", "1"],
}


def start(args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REWARDKIT_", "RAY_ADDRESS"))}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    proc = subprocess.Popen(
        [str(BIN / "rewardkit"), "serve", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=60).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.5)
    stop(proc)
    raise RuntimeError(f"{args}: the server did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def run(url: str, batches: list[dict[str, Any]], clients: int) -> tuple[float, list[float], list[Any]]:
    def one(body: dict[str, Any]) -> tuple[float, Any]:
        begin = time.perf_counter()
        response = httpx.post(url + "/score", json=body, timeout=600)
        response.raise_for_status()
        return time.perf_counter() - begin, response.json()["rewards"]

    begin = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(one, batches))
    return time.perf_counter() - begin, [r[0] for r in results], [r[1] for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1152)
    args = parser.parse_args()
    rows = load(args.workload)
    batches = []
    for k in range(args.clients * args.rounds):
        chosen = [rows[(k * args.batch + i) % len(rows)] for i in range(args.batch)]
        batches.append(
            {
                "funcs": ["math", "format"],
                "completions": [r["completion"] for r in chosen],
                "columns": {"solution": [r["gold"] for r in chosen]},
            }
        )
    total = len(batches) * args.batch
    print(f"{len(batches)} requests of {args.batch} completions (math + format), {args.clients} clients")
    figures: dict[str, tuple[float, float, float]] = {}
    reference: list[Any] | None = None
    for name, options in CONFIGS.items():
        proc, url = start(options)
        try:
            seconds, latencies, rewards = run(url, batches, args.clients)
        finally:
            stop(proc)
        quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
        figures[name] = (total / seconds, quantiles[49], quantiles[98])
        same = "reference" if reference is None else ("same rewards" if rewards == reference else "DIFFERENT")
        reference = reference or rewards
        base = figures["1 process"][0]
        rate, p50, p99 = figures[name]
        print(
            f"  {name:24} {rate:8,.0f}/s  {rate / base:5.2f}x  p50 {p50:6.2f} s  p99 {p99:6.2f} s  ({same})"
        )


if __name__ == "__main__":
    main()
