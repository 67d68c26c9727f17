"""The veRL adapter: per-sample calls as veRL makes them, against the same calls coalesced into batches.

    python bench/verl_adapter.py [--n 2048] [--threads 8]

veRL's reward loop calls ``compute_score`` once per sample: a plain function runs in the loop's thread pool,
an ``async def`` one is awaited, one task per sample. On ``n`` completions of the shared GRPO math workload
(``data_source="lighteval/MATH"``), measured in the same run, with the math verdict cache emptied before each:

* baseline: ``compute_score`` per sample in a pool of ``threads`` threads (a sync function under veRL);
* ``compute_score_async`` per sample, all awaited together (coalesced into batches in this process);
* the same in remote mode (``REWARDKIT_URL``) against a local service: samples/s and how many HTTP requests
  the ``n`` per-sample calls became.

It prints samples/s of each, the ratio to the baseline, and that every variant gave the same scores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402  (bench/, beside this file)

from rewardkit.adapters import verl  # noqa: E402
from rewardkit.verify import get_verifier  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "lighteval/MATH"


def _clear_cache() -> None:
    get_verifier(None, 2048)._cache.clear()


def per_sample(texts: list[str], golds: list[str], threads: int) -> tuple[float, list[float]]:
    _clear_cache()
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        scores = list(
            pool.map(
                lambda pair: verl.compute_score(SOURCE, pair[0], pair[1]), zip(texts, golds, strict=True)
            )
        )
    return time.perf_counter() - start, scores


def coalesced(texts: list[str], golds: list[str]) -> tuple[float, list[float]]:
    async def loop() -> list[float]:
        return list(
            await asyncio.gather(
                *(verl.compute_score_async(SOURCE, t, g) for t, g in zip(texts, golds, strict=True))
            )
        )

    _clear_cache()
    start = time.perf_counter()
    scores = asyncio.run(loop())
    return time.perf_counter() - start, scores


def _requests(url: str) -> float:
    text = httpx.get(url + "/metrics").text
    lines = [line for line in text.splitlines() if line.startswith('rewardkit_requests_total{route="/score"')]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def remote(texts: list[str], golds: list[str]) -> tuple[float, list[float], float]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "service.app:create_app",
        "--factory",
        "--fd",
        str(sock.fileno()),
    ]
    command += ["--log-level", "warning"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, pass_fds=(sock.fileno(),))
    sock.close()
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/readyz", timeout=30).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        os.environ["REWARDKIT_URL"] = url
        before = _requests(url)
        seconds, scores = coalesced(texts, golds)  # the service's own cache is cold: a fresh process
        return seconds, scores, _requests(url) - before
    finally:
        os.environ.pop("REWARDKIT_URL", None)
        proc.terminate()
        proc.wait(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    rows = load(args.workload)[: args.n]
    texts, golds = [r["completion"] for r in rows], [r["gold"] for r in rows]
    verl.compute_score(SOURCE, "\\boxed{1}", "1")  # start the math workers outside the timings
    base_s, base = per_sample(texts, golds, args.threads)
    local_s, local = coalesced(texts, golds)
    remote_s, remote_scores, requests = remote(texts, golds)
    n = len(texts)
    print(f"{n} samples of {args.workload.name}, data_source={SOURCE}")
    print(f"  per-sample compute_score, {args.threads} threads (baseline): {n / base_s:8,.0f}/s")
    for label, seconds in (("in process", local_s), ("remote", remote_s)):
        rate, ratio = n / seconds, base_s / seconds
        line = f"  compute_score_async, coalesced, {label + ':':12} {rate:17,.0f}/s  {ratio:5.2f}x"
        print(line + (f"  ({n} calls -> {requests:.0f} HTTP requests)" if label == "remote" else ""))
    print(f"  same scores: in process {local == base}, remote {remote_scores == base}")


if __name__ == "__main__":
    main()
