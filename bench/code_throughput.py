"""Code reward throughput: sandboxed (bubblewrap, one sandbox a completion) against veRL-style unsandboxed
multiprocessing, on the same GRPO-shaped batch, in the same run.

    python bench/code_throughput.py [--problems 64] [--group 16] [--workers N] [--timeout 1.0] [--seed 0]
                                    [--cgroup auto|off|PATH] [--language python|cpp] [--pch-samples 5]
                                    [--peer-first] [--pch-only]

``--language cpp`` runs the C++ batch instead (compiled programs against unsandboxed ``g++`` + run, and
the precompiled header's gain): ``bench/code_cpp.py``.

The batch: ``--problems`` stdin/stdout problems (APPS-style: sums, maxima, sorting, string and number
puzzles), each with 5-20 tests, and ``--group`` completions a problem: about half right, a quarter wrong
(off by one), a sixth crashing and the rest looping forever. Each completion's program is distinct (a
comment tells it apart), so neither side gains by deduplication.

The peer does what veRL's ``prime_code`` does: a ``multiprocessing`` process forked for each completion
(``--workers`` at a time) runs its tests in that process one after the other, each under a ``SIGALRM``
timer, stops at the first failure, and is killed when its overall time is up; no isolation at all. The
sandboxed side is ``rewardkit.get("code")`` (``mode="all"``, the same per-test timeout and stop rule,
``max_concurrency=--workers``). Both compare outputs with the same rules
(:mod:`rewardkit.sandbox.compare`) and must agree on every completion.

It prints completions/s of each, their ratio (the goal: the sandboxed reward within 1.5x of the peer), the
mean start-up of a sandbox (spawning bwrap to the harness's first line: bwrap, the namespaces and Python's
start) and what that costs a completion.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import random
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rewardkit.rewards.code  # noqa: E402, F401 - registers "code"
from rewardkit import get  # noqa: E402
from rewardkit.sandbox.compare import same_stdout  # noqa: E402

# (name, right program, the answer as a function of the input's numbers)
PROBLEMS: list[tuple[str, str]] = [
    ("sum", "import sys\nprint(sum(map(int, sys.stdin.read().split())))"),
    ("max", "import sys\nprint(max(map(int, sys.stdin.read().split())))"),
    ("sorted", "import sys\nprint(*sorted(map(int, sys.stdin.read().split())))"),
    ("distinct", "import sys\nprint(len(set(sys.stdin.read().split())))"),
    ("reverse", "import sys\nprint(*reversed(sys.stdin.read().split()))"),
    ("squares", "import sys\nprint(sum(int(x) ** 2 for x in sys.stdin.read().split()))"),
    ("evens", "import sys\nprint(sum(1 for x in sys.stdin.read().split() if int(x) % 2 == 0))"),
    (
        "prefix",
        "import sys\nxs = list(map(int, sys.stdin.read().split()))\nacc = 0\nout = []\n"
        "for x in xs:\n    acc += x\n    out.append(acc)\nprint(*out)",
    ),
]


def reference(name: str, numbers: list[int]) -> str:
    if name == "sum":
        return str(sum(numbers))
    if name == "max":
        return str(max(numbers))
    if name == "sorted":
        return " ".join(map(str, sorted(numbers)))
    if name == "distinct":
        return str(len(set(numbers)))
    if name == "reverse":
        return " ".join(map(str, reversed(numbers)))
    if name == "squares":
        return str(sum(x * x for x in numbers))
    if name == "evens":
        return str(sum(1 for x in numbers if x % 2 == 0))
    out, acc = [], 0
    for x in numbers:
        acc += x
        out.append(acc)
    return " ".join(map(str, out))


def batch(problems: int, group: int, rng: random.Random) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """(programs, tests a completion, the kind of each program)."""
    programs: list[str] = []
    tests: list[dict[str, Any]] = []
    kinds: list[str] = []
    for p in range(problems):
        name, right = PROBLEMS[p % len(PROBLEMS)]
        cases = [
            [rng.randint(1, 1000) for _ in range(rng.randint(1, 200))] for _ in range(rng.randint(5, 20))
        ]
        row = {
            "inputs": [" ".join(map(str, c)) + "\n" for c in cases],
            "outputs": [reference(name, c) + "\n" for c in cases],
        }
        for c in range(group):
            roll = rng.random()
            if roll < 0.5:
                kind, program = "right", right
            elif roll < 0.75:
                kind, program = (
                    "wrong",
                    right.replace("print(", "print(1 + ", 1) if name != "sorted" else "print(0)",
                )
            elif roll < 0.92:
                kind, program = (
                    "crashing",
                    "import sys\nxs = sys.stdin.read().split()\nprint(1 // (len(xs) - len(xs)))",
                )
            else:
                kind, program = "looping", "while True:\n    pass"
            programs.append(f"# completion {p}-{c}\n{program}")
            tests.append(row)
            kinds.append(kind)
    return programs, tests, kinds


class _Alarm(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Alarm


def _run_tests(program: str, row: dict[str, Any], timeout_s: float, answer: Any) -> None:
    """veRL prime_code style, in the forked process: every test in turn under a timer, first failure stops."""
    signal.signal(signal.SIGALRM, _on_alarm)
    passed = True
    try:
        code = compile(program, "<program>", "exec")
    except SyntaxError:
        answer.put(False)
        return
    for given, expected in zip(row["inputs"], row["outputs"], strict=True):
        out = io.StringIO()
        sys.stdin, sys.stdout = io.StringIO(given), out
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            exec(code, {"__name__": "__main__"})
            ok = True
        except BaseException:
            ok = False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout = sys.__stdout__
        if not ok or not same_stdout(out.getvalue(), expected):
            passed = False
            break
    answer.put(passed)


def peer(programs: list[str], tests: list[dict[str, Any]], workers: int, timeout_s: float) -> list[float]:
    context = multiprocessing.get_context("fork")

    def one(i: int) -> float:
        answer = context.SimpleQueue()
        process = context.Process(target=_run_tests, args=(programs[i], tests[i], timeout_s, answer))
        process.start()
        process.join(timeout=timeout_s * len(tests[i]["inputs"]) + 1)
        if process.is_alive():
            process.kill()
            process.join()
        return 1.0 if not answer.empty() and answer.get() else 0.0

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(programs))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--group", type=int, default=16)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cgroup", default="auto", help="the sandboxes' memory cgroup: auto, off or a path")
    parser.add_argument("--language", choices=("python", "cpp"), default="python")
    parser.add_argument("--pch-samples", type=int, default=5, help="C++: compiles timed for the PCH's gain")
    parser.add_argument("--peer-first", action="store_true", help="C++: time the unsandboxed side first")
    parser.add_argument("--pch-only", action="store_true", help="C++: the precompiled header's gain alone")
    args = parser.parse_args()
    programs, tests, kinds = batch(args.problems, args.group, random.Random(args.seed))
    if args.language == "cpp" and args.pch_only:
        from code_cpp import report_pch  # bench/, beside this file

        report_pch(args)
        return
    if args.language == "cpp":
        from code_cpp import run_cpp  # bench/, beside this file

        names = [PROBLEMS[p % len(PROBLEMS)][0] for p in range(args.problems)]
        run_cpp(args, tests[:: args.group], names)
        return
    n = len(programs)
    completions = [f"```python\n{p}\n```" for p in programs]
    mix = {k: kinds.count(k) for k in ("right", "wrong", "crashing", "looping")}
    print(
        f"{n} completions ({args.problems} problems x {args.group}), {mix}, {args.workers} workers, "
        f"timeout {args.timeout} s a test"
    )

    reward = get("code", timeout_s=args.timeout, max_concurrency=args.workers, cgroup=args.cgroup)
    print(f"sandbox memory bound: {reward.notes()['memory_bound']}")
    reward([completions[0]], tests=[tests[0]])  # the readiness probe and the interpreter copy, once
    before = reward.stats()
    start = time.perf_counter()
    ours = reward(completions, tests=tests)
    sandboxed_s = time.perf_counter() - start
    stats = reward.stats()

    start = time.perf_counter()
    theirs = peer(programs, tests, args.workers, args.timeout)
    peer_s = time.perf_counter() - start

    disagree = [i for i in range(n) if ours[i] != theirs[i]]
    runs = stats["runs"] - before["runs"]
    startup = (stats["startup_s_mean"] * stats["runs"] - before["startup_s_mean"] * before["runs"]) / runs
    print(f"sandboxed (rewardkit code): {n / sandboxed_s:8.1f} completions/s ({sandboxed_s:.2f} s)")
    print(f"unsandboxed (veRL-style):   {n / peer_s:8.1f} completions/s ({peer_s:.2f} s)")
    print(f"ratio sandboxed/unsandboxed time: {sandboxed_s / peer_s:.2f}x (goal: <= 1.5x)")
    print(
        f"sandbox start-up: {startup * 1000:.1f} ms mean (bwrap to the harness's first line), "
        f"{startup * 1000 / args.workers:.1f} ms of wall time a completion at {args.workers} at once"
    )
    print(f"agreement: {n - len(disagree)}/{n}" + (f"; differ at {disagree[:10]}" if disagree else ""))
    print(f"pass rate: {sum(v == 1.0 for v in ours if v is not None) / n:.3f}")


if __name__ == "__main__":
    main()
