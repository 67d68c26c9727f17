"""LLM-judge throughput against an OpenAI-compatible server on loopback that answers after 100 ms.

    python bench/judge_throughput.py [--n 1152] [--concurrency 64] [--delay 0.1]

Scores 1,152 distinct judgments (48 prompts x 24 completions) with ``max_concurrency`` 64 through the real
``openai`` SDK and prints the wall time next to the ideal (n / concurrency x delay = 1.8 s); bar: within
1.5x of the ideal. It also prints a second run of the same
batch, served from the judge's cache. The server (tests/support/fake_judge.py, an asyncio app under uvicorn,
as vLLM serves) runs in its own process.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1152)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.1)
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
        questions = [f"prompt {i // 24} SCORE:{i % 11}" for i in range(args.n)]
        judge(["warm-up"], question=["warm-up SCORE:1"])  # connection set-up, imports

        start = time.perf_counter()
        values = judge(completions, question=questions)
        wall = time.perf_counter() - start
        ideal = math.ceil(args.n / args.concurrency) * args.delay
        assert values == [(i % 11) / 10 for i in range(args.n)], "wrong scores"
        delay_ms = args.delay * 1000
        print(
            f"{args.n} judgments, max_concurrency {args.concurrency}, server answers after {delay_ms:.0f} ms"
        )
        print(f"  wall {wall:.2f} s, ideal {ideal:.2f} s: {wall / ideal:.2f}x of ideal (bar: <= 1.5x)")
        start = time.perf_counter()
        judge(completions, question=questions)
        print(f"  same batch again: {time.perf_counter() - start:.3f} s (served from the judge's cache)")
    finally:
        server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
