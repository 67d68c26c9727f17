"""LLM-judge throughput against an OpenAI-compatible server on loopback that answers after 100 ms.

    python bench/judge_throughput.py [--n 1152] [--concurrency 64] [--delay 0.1] [--runs 3]

Scores 1,152 distinct judgments (48 prompts x 24 completions) with ``max_concurrency`` 64 through the real
``openai`` SDK and prints the wall time next to the ideal (n / concurrency x delay = 1.8 s); bar: the median
of ``--runs`` batches (new prompts each) within 1.5x of the ideal. It also prints a batch served from the
judge's cache. The server (tests/support/fake_judge.py, an asyncio app under uvicorn, as vLLM serves) runs
in its own process.

Where the time goes: each run also prints the CPU the client process used per judgment, the share of the
wall it was busy, the server's CPU and the load average. Waiting costs nothing; each call's CPU does, and
the calls of one batch share one event loop: at 64 in flight and 100 ms a call the loop must finish a call
in 1.56 ms (1.8 s / 1,152) to keep up, so a client busy most of the wall is the bound, and anything else
running on the machine's two cores shows up as a slower run.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402


def cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used, where /proc tells (Linux); else ``None``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1152)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3, help="timed batches, new prompts each")
    args = parser.parse_args()

    # The server runs in a process of its own, so that it does not compete with the client for the GIL.
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "fake_judge.py"), "--delay", str(args.delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    os.environ["REWARDKIT_JUDGE_API_KEY"] = "sk-bench"
    try:
        judge = rewardkit.get(
            "llm_judge", base_url=url, model="bench-judge", max_concurrency=args.concurrency
        )
        completions = [f"answer {i % 24}" for i in range(args.n)]
        judge(["warm-up"], question=["warm-up SCORE:1"])  # connection set-up, imports
        ideal = math.ceil(args.n / args.concurrency) * args.delay
        print(
            f"{args.n} judgments, max_concurrency {args.concurrency}, server answers after "
            f"{args.delay * 1000:.0f} ms; ideal {ideal:.2f} s"
        )
        ratios = []
        for run in range(args.runs):
            questions = [f"prompt {i // 24} run {run} SCORE:{i % 11}" for i in range(args.n)]
            server_before, client_before = cpu_s(server.pid), time.process_time()
            start = time.perf_counter()
            values = judge(completions, question=questions)
            wall = time.perf_counter() - start
            client = time.process_time() - client_before
            server_after = cpu_s(server.pid)
            assert values == [(i % 11) / 10 for i in range(args.n)], "wrong scores"
            ratios.append(wall / ideal)
            served = (
                f", server {server_after - server_before:.2f} s CPU"
                if server_before is not None and server_after is not None
                else ""
            )
            busy = (
                f"client {client * 1000 / args.n:.2f} ms CPU a judgment, busy {client / wall:.0%} of the wall"
            )
            load = f"load {os.getloadavg()[0]:.2f}"
            print(f"  run {run + 1}: wall {wall:.2f} s, {wall / ideal:.2f}x of ideal; {busy}{served}; {load}")
        print(f"  median {statistics.median(ratios):.2f}x of ideal (bar: <= 1.5x)")
        start = time.perf_counter()
        judge(completions, question=questions)
        print(f"  same batch again: {time.perf_counter() - start:.3f} s (served from the judge's cache)")
    finally:
        server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
