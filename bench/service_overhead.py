"""What HTTP costs: the same batches scored in-process and through the service on loopback, same run.

    python bench/service_overhead.py [--runs 5]

Starts ``uvicorn service.app:create_app`` on a free loopback port, then prints:

* a 1,152-completion batch (48 prompts x 24, the seed's GRPO setup) of countdown + format: median time
  in-process vs through :class:`rewardkit.client.RewardClient`, and the absolute overhead (bar: <= 30 ms);
* 1,152 completions of the shared math workload: the same (bar: HTTP adds <= 15%). Each run uses a different
  slice of the workload for both, so neither side answers from its verdict cache;
* requests/s and p50/p99 latency with 8 concurrent clients sending the countdown + format batch.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402
from text_rewards import countdown_workload  # noqa: E402

import rewardkit  # noqa: E402
from rewardkit.client import RewardClient  # noqa: E402
from rewardkit.verify import get_verifier  # noqa: E402

BATCH = 1152


def start_server(ready: str = "/readyz", tries: int = 300) -> tuple[subprocess.Popen[bytes], str]:
    """``uvicorn service.app:create_app`` on a free loopback port, without ``REWARDKIT_*`` settings; returned
    once ``ready`` answers 200 (``/readyz``: the math workers are up; ``/healthz``: the process answers),
    polled up to ``tries`` times 0.1 s apart."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    command = [sys.executable, "-m", "uvicorn", "service.app:create_app", "--factory", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(tries):
        try:
            if httpx.get(url + ready, timeout=30).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the service did not start")


def median_ms(fn: object, runs: int) -> tuple[float, list[float]]:
    times = []
    for run in range(runs):
        start = time.perf_counter()
        fn(run)  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="math slices of 1,152 (at most 6)")
    parser.add_argument("--concurrent-requests", type=int, default=64)
    args = parser.parse_args()

    completions, targets, nums = countdown_workload(BATCH, random.Random(0))
    text_columns = {"target": targets, "nums": nums}
    text_funcs = ["countdown", "format"]
    rows = load(DEFAULT_WORKLOAD)
    slices = [rows[i * BATCH : (i + 1) * BATCH] for i in range(min(args.runs, len(rows) // BATCH))]

    proc, url = start_server()
    try:
        client = RewardClient(url)
        get_verifier().ready()
        client.score(text_funcs, completions, **text_columns)  # warm both sides
        rewardkit.score_batch(text_funcs, completions, text_columns)

        local_text, _ = median_ms(lambda _: rewardkit.score_batch(text_funcs, completions, text_columns), 20)
        remote_text, _ = median_ms(lambda _: client.score(text_funcs, completions, **text_columns), 20)

        def math_local(run: int) -> None:
            part = slices[run]
            rewardkit.math_equivalence(
                [r["completion"] for r in part], solution=["\\boxed{" + r["gold"] + "}" for r in part]
            )

        def math_remote(run: int) -> None:
            part = slices[run]
            client.score(
                ["math"],
                [r["completion"] for r in part],
                solution=["\\boxed{" + r["gold"] + "}" for r in part],
            )

        # Alternate which side goes first on each slice, so neither always meets a just-busy machine.
        local_times: list[float] = []
        remote_times: list[float] = []
        for run in range(len(slices)):
            order = [("local", math_local), ("remote", math_remote)]
            for label, fn in order if run % 2 == 0 else reversed(order):
                start = time.perf_counter()
                fn(run)
                (local_times if label == "local" else remote_times).append(
                    (time.perf_counter() - start) * 1000
                )
        local_math, remote_math = statistics.median(local_times), statistics.median(remote_times)
        # Per slice, the two sides ran back to back on the same data: the median of those ratios is the
        # figure least moved by noise on a shared machine.
        math_overhead = statistics.median(
            r / loc - 1 for r, loc in zip(remote_times, local_times, strict=True)
        )

        print(f"batch of {BATCH} completions, medians; service: 1 uvicorn worker on loopback")
        print(f"{'':<22}{'in-process':>12}{'via HTTP':>12}{'overhead':>12}")
        overhead = remote_text - local_text
        print(
            f"{'countdown + format':<22}{local_text:>10.1f}ms{remote_text:>10.1f}ms{overhead:>10.1f}ms"
            "   (bar: <= 30 ms)"
        )
        print(
            f"{'math':<22}{local_math:>10.1f}ms{remote_math:>10.1f}ms{math_overhead:>11.1%}"
            f"   (bar: <= 15%; median of per-slice ratios over {len(slices)} distinct slices of the workload)"
        )

        latencies: list[float] = []

        def one(_: int) -> None:
            start = time.perf_counter()
            with RewardClient(url) as c:
                c.score(text_funcs, completions, **text_columns)
            latencies.append((time.perf_counter() - start) * 1000)

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, range(args.concurrent_requests)))
        elapsed = time.perf_counter() - start
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(round(0.99 * len(latencies))) - 1)]
        n_req = args.concurrent_requests
        print(f"\n8 concurrent clients, {n_req} requests of {BATCH} completions (countdown + format):")
        print(
            f"  {n_req / elapsed:.1f} requests/s ({n_req * BATCH / elapsed:,.0f} completions/s), "
            f"p50 {statistics.median(latencies):.0f} ms, p99 {p99:.0f} ms"
        )
        client.close()
    finally:
        proc.terminate()
        proc.wait(15)


if __name__ == "__main__":
    main()
