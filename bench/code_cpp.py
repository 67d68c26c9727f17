"""The C++ batch of ``bench/code_throughput.py`` (``--language cpp``): compiled programs, sandboxed against
unsandboxed ``g++`` + run in ``multiprocessing``, and the precompiled header's gain.

The batch: the same problems and tests as the Python batch, each solved in C++ with ``bits/stdc++.h``
(as competitive programmers write it), ``--group`` completions a problem: about half right, a fifth wrong
(off by one), a tenth crashing (a null write: SIGSEGV), a tenth looping, a tenth not compiling. Every
program is distinct (a comment), so each is compiled on both sides.

The peer: a ``multiprocessing`` pool (``--workers`` processes) in which each completion is compiled by the
host's ``g++`` with the same flags (open-r1's ``-std=c++17 -O2 -DONLINE_JUDGE``) and the same precompiled
header, then run on each test in turn (``subprocess``, the same timeout, first failure stops); no isolation.
The sandboxed side is ``rewardkit.get("code")`` (``max_concurrency=--workers``: each distinct program
compiled once in a compile sandbox, then its tests in a test sandbox). Both compare with the same rules.

The precompiled header's gain: ``--pch-samples`` distinct sort-and-sum solutions compiled in compile
sandboxes, and by the host's ``g++``, with and without it (``pch_dir="off"``), one at a time, the mean wall
clock and CPU seconds of each (CPU: of the reaped sandbox or compiler, which a busy machine does not move).
``--pch-only`` measures that alone.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

from rewardkit import get
from rewardkit.sandbox import SandboxConfig
from rewardkit.sandbox.compare import same_stdout
from rewardkit.sandbox.compile import CompileLimits, clear_cache, compile_program
from rewardkit.sandbox.languages import CPP
from rewardkit.sandbox.pch import include_dir

HEAD = "#include <bits/stdc++.h>\nusing namespace std;\n"
READ = "vector<long long> xs; long long x; while (cin >> x) xs.push_back(x);\n"
# (problem name, the body of main after reading xs, printing the answer)
SOLUTIONS: dict[str, str] = {
    "sum": "cout << accumulate(xs.begin(), xs.end(), 0LL) << '\\n';",
    "max": "cout << *max_element(xs.begin(), xs.end()) << '\\n';",
    "sorted": "sort(xs.begin(), xs.end()); for (size_t i = 0; i < xs.size(); i++) cout << xs[i] << "
    "(i + 1 < xs.size() ? ' ' : '\\n');",
    "distinct": "cout << set<long long>(xs.begin(), xs.end()).size() << '\\n';",
    "reverse": "reverse(xs.begin(), xs.end()); for (size_t i = 0; i < xs.size(); i++) cout << xs[i] << "
    "(i + 1 < xs.size() ? ' ' : '\\n');",
    "squares": "long long s = 0; for (auto v : xs) s += v * v; cout << s << '\\n';",
    "evens": "cout << count_if(xs.begin(), xs.end(), [](long long v) { return v % 2 == 0; }) << '\\n';",
    "prefix": "long long acc = 0; for (size_t i = 0; i < xs.size(); i++) { acc += xs[i]; cout << acc << "
    "(i + 1 < xs.size() ? ' ' : '\\n'); }",
}


def program(name: str, kind: str, tag: str) -> str:
    body = SOLUTIONS[name]
    if kind == "wrong":
        body = "xs.push_back(1); " + body if name != "max" else "xs.push_back(1 << 30); " + body
    elif kind == "crashing":
        body = "volatile int *p = nullptr; *p = (int)xs.size(); " + body
    elif kind == "looping":
        body = "volatile unsigned long spin = 0; for (;;) spin++; " + body
    elif kind == "not compiling":
        body = body + " return undefined_name;"
    return f"// completion {tag}\n{HEAD}int main() {{\n{READ}{body}\n}}\n"


def cpp_batch(
    rows: list[dict[str, Any]], names: list[str], group: int, rng: random.Random
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """(programs, tests a completion, the kind of each) for the problems ``names`` with tests ``rows``."""
    programs, tests, kinds = [], [], []
    for p, (name, row) in enumerate(zip(names, rows, strict=True)):
        for c in range(group):
            roll = rng.random()
            kind = (
                "right"
                if roll < 0.5
                else "wrong"
                if roll < 0.7
                else "crashing"
                if roll < 0.8
                else "looping"
                if roll < 0.9
                else "not compiling"
            )
            programs.append(program(name, kind, f"{p}-{c}"))
            tests.append(row)
            kinds.append(kind)
    return programs, tests, kinds


def _peer_one(job: tuple[str, dict[str, Any], float, list[str]]) -> float:
    """Compile with the host's g++ and run each test (no isolation), first failure stops."""
    source, row, timeout_s, argv = job
    with tempfile.TemporaryDirectory(prefix="cpp-peer-") as work:
        path = os.path.join(work, "main.cpp")
        with open(path, "w") as out:
            out.write(source)
        binary = os.path.join(work, "prog")
        made = subprocess.run([*argv, path, "-o", binary], capture_output=True, timeout=60, check=False)
        if made.returncode != 0:
            return 0.0
        for given, expected in zip(row["inputs"], row["outputs"], strict=True):
            try:
                ran = subprocess.run([binary], input=given.encode(), capture_output=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return 0.0
            if ran.returncode != 0 or not same_stdout(ran.stdout.decode(errors="replace"), expected):
                return 0.0
    return 1.0


def cpp_peer(
    programs: list[str], tests: list[dict[str, Any]], workers: int, timeout_s: float, include: str | None
) -> list[float]:
    compiler = shutil.which("g++") or "g++"
    argv = [compiler, *CPP.flags(), *(["-I", include] if include else [])]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        jobs = [(p, t, timeout_s, argv) for p, t in zip(programs, tests, strict=True)]
        return list(pool.imap(_peer_one, jobs, chunksize=1))  # one at a time: no worker idles at the end


def _cpu() -> float:
    """CPU seconds of this process's reaped descendants: a sandbox's compiler and harness, once bwrap is."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pch_gain(samples: int, config: SandboxConfig) -> dict[str, tuple[float, float]]:
    """Mean wall and CPU seconds of a typical solution's compile, sandboxed and on the host (plain
    ``g++``), with the precompiled header and without: ``{"with"|"without": (wall, cpu)}`` per side."""
    include = include_dir(CPP, shutil.which("g++") or "g++", config.pch_dir)
    out: dict[str, tuple[float, float]] = {}
    for pch in (config.pch_dir, "off"):
        clear_cache()
        seen = SandboxConfig(cgroup=config.cgroup, pch_dir=pch)
        for side in ("sandboxed", "host"):
            wall = cpu = 0.0
            for i in range(samples):
                source = program("sorted", "right", f"pch-{pch}-{side}-{i}")
                start, began = time.perf_counter(), _cpu()
                if side == "sandboxed":
                    made = asyncio.run(compile_program(source, CPP, CompileLimits(), seen))
                    assert not hasattr(made, "message"), made
                else:
                    with tempfile.TemporaryDirectory() as work:
                        path = os.path.join(work, "main.cpp")
                        with open(path, "w") as text:
                            text.write(source)
                        extra = ["-I", include] if include and pch != "off" else []
                        argv = [shutil.which("g++") or "g++", *CPP.flags(), *extra, path, "-o", path + ".out"]
                        subprocess.run(argv, check=True, timeout=120)
                wall += time.perf_counter() - start
                cpu += _cpu() - began
            out[f"{side} {'with' if pch != 'off' else 'without'}"] = (wall / samples, cpu / samples)
    return out


def run_cpp(args: Any, rows: list[dict[str, Any]], names: list[str]) -> None:
    programs, tests, kinds = cpp_batch(rows, names, args.group, random.Random(args.seed))
    n = len(programs)
    mix = {k: kinds.count(k) for k in ("right", "wrong", "crashing", "looping", "not compiling")}
    print(
        f"C++: {n} completions ({len(rows)} problems x {args.group}), {mix}, {args.workers} workers, "
        f"timeout {args.timeout} s a test"
    )
    reward = get("code", timeout_s=args.timeout, max_concurrency=args.workers, cgroup=args.cgroup)
    include = include_dir(CPP, shutil.which("g++") or "g++", "auto")  # built once, outside both timings
    print(f"precompiled header: {include}")
    reward([f"```cpp\n{program('sum', 'right', 'warm-up')}```"], tests=[rows[0]])  # readiness, once
    clear_cache()
    before = reward.stats()
    timed: dict[str, tuple[list[Any], float]] = {}

    def run_ours() -> list[Any]:
        return list(reward([f"```cpp\n{p}```" for p in programs], tests=tests))

    def run_theirs() -> list[Any]:
        return cpp_peer(programs, tests, args.workers, args.timeout, include)

    sides: dict[str, Callable[[], list[Any]]] = {"ours": run_ours, "theirs": run_theirs}
    for side in ("theirs", "ours") if args.peer_first else ("ours", "theirs"):  # load drifts: swap to check
        start = time.perf_counter()
        timed[side] = (sides[side](), time.perf_counter() - start)
    stats = reward.stats()
    (ours, sandboxed_s), (theirs, peer_s) = timed["ours"], timed["theirs"]
    disagree = [i for i in range(n) if ours[i] != theirs[i]]
    print(f"compiled: {stats['compiles'] - before['compiles']:.0f} distinct programs in compile sandboxes")
    print(f"sandboxed (rewardkit code):  {n / sandboxed_s:8.2f} completions/s ({sandboxed_s:.2f} s)")
    print(f"unsandboxed (g++ + run, mp): {n / peer_s:8.2f} completions/s ({peer_s:.2f} s)")
    print(f"ratio sandboxed/unsandboxed time: {sandboxed_s / peer_s:.2f}x (goal: <= 1.5x)")
    print(f"agreement: {n - len(disagree)}/{n}" + (f"; differ at {disagree[:10]}" if disagree else ""))
    report_pch(args)


def report_pch(args: Any) -> None:
    """The precompiled header's gain, wall clock and CPU (the CPU figure is the one load does not move)."""
    if not args.pch_samples:
        return
    got = pch_gain(args.pch_samples, SandboxConfig(cgroup=args.cgroup))
    for side in ("sandboxed", "host"):
        (wall_with, cpu_with), (wall_without, cpu_without) = got[f"{side} with"], got[f"{side} without"]
        print(
            f"precompiled bits/stdc++.h, {side} compile of a sort-and-sum solution (mean of "
            f"{args.pch_samples}): wall {wall_with:.2f} s with, {wall_without:.2f} s without "
            f"({wall_without / wall_with:.1f}x); CPU {cpu_with:.2f} s with, {cpu_without:.2f} s without "
            f"({cpu_without / cpu_with:.1f}x; goal >= 4x)"
        )
