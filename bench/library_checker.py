"""The ``code`` reward on Library Checker's problems (yosupo06/library-checker-problems, Apache-2.0): its
correct solutions must score 1.0 and the solutions its ``info.toml`` marks wrong 0.0, for the judge's reason.

    python bench/library_checker.py SNAPSHOT [--work DIR] [--problems N] [--max-tests-per-gen K]
                                    [--max-input-bytes B] [--only NAME,...] [--prepare-only]

``SNAPSHOT`` is a clone (or a bare git directory) of yosupo06/library-checker-problems; it is read with ``git
archive``, never written, and nothing of it is copied into this repository. ``--work`` (default
``/tmp/rewardkit-library-checker``) caches what the preparation makes, per snapshot commit.

**Preparation** (outside the sandbox, as the project's own ``generate.py`` does it; ``nice -n 10``): the
snapshot's tree is unpacked under ``--work``; for each problem its ``params.h`` is written from ``[params]``
of ``info.toml`` (our own writer, the same ``#define`` forms), its generators, ``sol/correct.cpp``,
``checker.cpp`` and wrong solutions compiled with ``g++ -O2 -std=c++17 -I common`` (the snapshot's
``testlib.h`` and ``random.h``); tests are made: the first ``K`` seeds of each generator (``K`` =
``--max-tests-per-gen``, default 1) and of each hand-written ``.in``, in ``info.toml``'s order, leaving out an
input over ``--max-input-bytes`` (default 12 MB) and a test whose input plus twice its output is over 16 MiB
(the checker's sandbox takes the three files as one stdin file, and a sandboxed file is at most 16 MiB); the
expected outputs are correct.cpp's, each accepted by the checker against itself (``generate.py``'s check).
Then the **reference judge**, ``generate.py``'s ``judge`` (``timelimit``: TLE; a non-zero exit: RE; the
checker's non-zero exit: WA) plus Library Checker's 1 GiB memory limit (a peak resident size over it: MLE;
``generate.py`` measures no memory), timed in CPU seconds rather than wall clock (see :func:`run_binary`),
runs every wrong solution unsandboxed on those tests and stops at its first failure. A problem is used when
everything compiled, it has a test and the reference judge fails every wrong solution on these tests; a
problem whose wrong solution only fails on larger tests is left out and listed with the reason. Problems with
wrong solutions come first (by name), then the others, until ``--problems`` (default 32) are used.
Everything is cached: a second run prepares nothing.

A wrong solution is one whose ``info.toml`` entry says ``expect = "WA" | "TLE" | "RE"`` (or ``wrong =
true``); ``allow_tle``/``allow_re`` solutions are slow or partial right ones and are not scored, nor are
``function = true`` ones (a grader links them).

**Scoring**: each used problem is one batch of the ``code`` reward (``rewardkit.get("code", ...)``), its
completions the correct and the wrong solutions as C++ fences (a solution's own ``#include "..."`` files
inlined, as a submission must be one file), its columns the tests, the time limit and the checker's source
(``params.h`` inlined), with the snapshot's ``common/testlib.h`` as the reward's testlib setting. Printed per
problem: the correct solution's value, each wrong one's value, reason and first failing test next to the
reference judge's and ``info.toml``'s, and the totals. A control in each batch: correct.cpp once more, with a
checker of ours that rejects every output in place of the problem's, must score 0.0 (``wrong_answer:0``): the
checker, not a comparison with the expected output, decides. The exit status is 1 unless every correct
solution scored 1.0, every wrong one 0.0 and every control 0.0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CXX = ["nice", "-n", "10", "g++", "-O2", "-std=c++17"]
WRONG = ("WA", "TLE", "RE")
GEN_TIMEOUT_S = 30.0
COMPILE_TIMEOUT_S = 180.0
MEMORY_MB = 1024  # Library Checker's memory limit, for the reference judge and the reward
CHECKER_FILES = (16 << 20) - 4096  # a test's input + 2 x its output, at most (see _fits_checker)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', re.M)


@dataclass
class Solution:
    name: str
    expect: str  # what info.toml says: WA, TLE, RE (wrong) or AC (correct.cpp)
    reference: str = ""  # the reference judge on the small tests: AC, WA, TLE, RE, MLE
    reference_test: int | None = None  # the first failing test
    seconds: float = 0.0


@dataclass
class Prepared:
    problem: str  # e.g. "tree/lca"
    timelimit: float
    tests: list[str] = field(default_factory=list)  # test names, in order (files under tests/)
    left_out: int = 0  # tests over --max-input-bytes, or too large for the checker's sandbox
    solutions: list[Solution] = field(default_factory=list)
    correct_max_s: float = 0.0
    used: bool = False
    why_not: str = ""


def git(snapshot: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={snapshot}", *args], check=True, capture_output=True, text=True
    ).stdout


def unpack(snapshot: Path, work: Path) -> Path:
    """The snapshot's tree at HEAD under ``work/<commit>/src`` (made once)."""
    commit = git(snapshot, "rev-parse", "HEAD").strip()
    root = work / commit[:12] / "src"
    if not (root / "common" / "testlib.h").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        archive = subprocess.run(
            ["git", f"--git-dir={snapshot}", "archive", "HEAD"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    return root


def info(problem_dir: Path) -> dict[str, Any]:
    with (problem_dir / "info.toml").open("rb") as handle:
        return tomllib.load(handle)


def wrong_solutions(config: dict[str, Any]) -> list[Solution]:
    out = []
    for entry in config.get("solutions", []):
        expect = entry.get("expect", "WA" if entry.get("wrong") else "")
        if expect in WRONG and not entry.get("function") and str(entry["name"]).endswith(".cpp"):
            out.append(Solution(entry["name"], expect))
    return out


def params_h(config: dict[str, Any]) -> str:
    """``params.h`` from ``[params]``: integers as ``(long long)``, floats bare, strings quoted."""
    lines = []
    for key, value in config.get("params", {}).items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"params: {key} has a type generate.py does not write ({type(value).__name__})")
        if isinstance(value, int):
            lines.append(f"#define {key} (long long){value}")
        elif isinstance(value, float):
            lines.append(f"#define {key} {value!r}")
        else:
            lines.append(f'#define {key} "{value}"')
    return "".join(line + "\n" for line in lines)


def inline(path: Path, roots: list[Path], keep: tuple[str, ...] = (), seen: set[Path] | None = None) -> str:
    """``path``'s text with its ``#include "..."`` files inlined (found beside the including file, then in
    ``roots``), each once; includes named in ``keep`` stay as they are."""
    seen = set() if seen is None else seen
    seen.add(path.resolve())

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in keep:
            return match.group(0)
        for base in (path.parent, *roots):
            found = (base / name).resolve()
            if found.is_file():
                if found in seen:
                    return ""
                return inline(found, roots, keep, seen)
        raise FileNotFoundError(f'{path.name}: #include "{name}" not found')

    return _INCLUDE.sub(one, path.read_text(encoding="utf-8"))


def compile_cpp(source: Path, binary: Path, common: Path) -> str | None:
    """``None`` when it compiled (or was already), else the compiler's first lines."""
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return None
    command = [*CXX, "-I", str(common), "-o", str(binary), str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{source.name}: compile timed out"
    return None if done.returncode == 0 else f"{source.name}: " + " | ".join(done.stderr.splitlines()[:3])


def _limits(cpu_s: float) -> Any:
    """The child's limits: an unlimited stack, as on the judge; CPU seconds just past ``cpu_s``."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        cpu = int(cpu_s) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    return apply


def run_binary(command: list[str], stdin: Path | None, stdout: Path, timeout: float) -> tuple[str, float]:
    """("AC" | "MLE" | "TLE" | "RE", seconds): a run as generate.py does it (stack unlimited, as on the
    judge), plus the judge's memory limit: a peak resident size over :data:`MEMORY_MB` is MLE (generate.py
    measures no memory; Library Checker's judge does). TLE is CPU time (user + system) over ``timeout``,
    or a wall clock of twice it plus a second: generate.py's wall clock alone made the verdict of a solution
    near the limit depend on the load of this shared machine. ``seconds``: the CPU time."""
    start = time.perf_counter()
    with stdout.open("wb") as out, stdin.open("rb") if stdin else open(os.devnull, "rb") as inp:
        proc = subprocess.Popen(
            command, stdin=inp, stdout=out, stderr=subprocess.DEVNULL, preexec_fn=_limits(timeout)
        )
        status, usage, timed_out = 0, None, False
        while usage is None:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                usage = rusage
            elif time.perf_counter() - start > 2 * timeout + 1:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
            else:
                time.sleep(0.005)
        proc.returncode = -1  # reaped here: Popen must not wait for it again
    seconds = usage.ru_utime + usage.ru_stime
    if usage.ru_maxrss > MEMORY_MB << 10:  # kilobytes
        return "MLE", seconds
    if timed_out or seconds > timeout:
        return "TLE", seconds
    return ("AC" if os.waitstatus_to_exitcode(status) == 0 else "RE"), seconds


def check(checker: Path, test_in: Path, output: Path, answer: Path) -> bool:
    done = subprocess.run(
        [str(checker), str(test_in), str(output), str(answer)], capture_output=True, timeout=60
    )
    return done.returncode == 0


def candidates(root: Path) -> list[Path]:
    """Problem folders: those with wrong solutions first, then the others, each by name."""
    folders = sorted(p.parent for p in root.glob("*/*/info.toml"))
    with_wrong = [p for p in folders if wrong_solutions(info(p))]
    return with_wrong + [p for p in folders if p not in with_wrong]


def prepare(root: Path, folder: Path, k: int, max_input: int) -> Prepared:
    """One problem compiled, its small tests made and the reference judge run (cached in ``folder``)."""
    config = info(folder)
    name = folder.relative_to(root).as_posix()
    cache = folder / "rewardkit.json"
    key = {"k": k, "max_input": max_input, "checker_files": CHECKER_FILES, "memory_mb": MEMORY_MB, "cpu": 1}
    if cache.exists():
        saved = json.loads(cache.read_text())
        if saved.get("key") == key:
            data = saved["prepared"]
            data["solutions"] = [Solution(**s) for s in data["solutions"]]
            return Prepared(**data)
    prepared = Prepared(name, float(config.get("timelimit", 2.0)))
    prepared.solutions = wrong_solutions(config)
    try:
        _prepare(root, folder, config, prepared, k, max_input)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        prepared.why_not = f"preparation failed: {exc}"
    prepared.used = not prepared.why_not
    cache.write_text(json.dumps({"key": key, "prepared": asdict(prepared)}, indent=1))
    return prepared


def _prepare(
    root: Path, folder: Path, config: dict[str, Any], prepared: Prepared, k: int, max_input: int
) -> None:
    common, bins, tests = root / "common", folder / "bin", folder / "tests"
    (folder / "params.h").write_text(params_h(config))
    bins.mkdir(exist_ok=True)
    shutil.rmtree(tests, ignore_errors=True)
    tests.mkdir()
    checker_src = folder / config.get("checker", "checker.cpp")
    sources = {"checker": checker_src, "correct": folder / "sol" / "correct.cpp"}
    for entry in config["tests"]:
        if str(entry["name"]).endswith(".cpp"):
            sources["gen_" + Path(entry["name"]).stem] = folder / "gen" / entry["name"]
    for solution in prepared.solutions:
        sources["sol_" + Path(solution.name).stem] = folder / "sol" / solution.name
    for source in sources.values():  # every submission must be one file: fail early where it cannot be
        if source.parent.name == "sol":
            inline(source, [folder, common])
    with ThreadPoolExecutor(2) as pool:
        errors = [
            e for e in pool.map(lambda kv: compile_cpp(kv[1], bins / kv[0], common), sources.items()) if e
        ]
    if errors:
        raise ValueError("; ".join(errors))
    for entry in config["tests"]:
        stem = Path(entry["name"]).stem
        for i in range(min(int(entry["number"]), k)):
            case = f"{stem}_{i:02d}"
            if str(entry["name"]).endswith(".cpp"):
                verdict, _ = run_binary(
                    [str(bins / f"gen_{stem}"), str(i)], None, tests / f"{case}.in", GEN_TIMEOUT_S
                )
                if verdict != "AC":
                    raise ValueError(f"generator {entry['name']} {i}: {verdict}")
            else:
                shutil.copyfile(folder / "gen" / f"{case}.in", tests / f"{case}.in")
            if (tests / f"{case}.in").stat().st_size > max_input:
                (tests / f"{case}.in").unlink()
                prepared.left_out += 1
                continue
            prepared.tests.append(case)
    if not prepared.tests:
        raise ValueError(f"no test of at most {max_input} bytes")
    checker = bins / "checker"
    for case in prepared.tests:
        verdict, seconds = run_binary(
            [str(bins / "correct")],
            tests / f"{case}.in",
            tests / f"{case}.out",
            max(10.0, 2 * prepared.timelimit),
        )
        prepared.correct_max_s = max(prepared.correct_max_s, seconds)
        if verdict != "AC" or not check(
            checker, tests / f"{case}.in", tests / f"{case}.out", tests / f"{case}.out"
        ):
            raise ValueError(f"correct.cpp on {case}: {verdict}, or its output fails the checker")
        prepared.left_out += not _fits_checker(tests, case)
    prepared.tests = [c for c in prepared.tests if _fits_checker(tests, c)]
    if not prepared.tests:
        raise ValueError("no test small enough for the checker's sandbox")
    scratch = folder / "scratch.out"
    for solution in prepared.solutions:
        solution.reference = "AC"
        for index, case in enumerate(prepared.tests):
            verdict, seconds = run_binary(
                [str(bins / f"sol_{Path(solution.name).stem}")],
                tests / f"{case}.in",
                scratch,
                prepared.timelimit,
            )
            solution.seconds += seconds
            if verdict == "AC" and not check(checker, tests / f"{case}.in", scratch, tests / f"{case}.out"):
                verdict = "WA"
            if verdict != "AC":
                solution.reference, solution.reference_test = verdict, index
                break
    passing = [s.name for s in prepared.solutions if s.reference == "AC"]
    if passing:
        prepared.why_not = f"the small tests do not fail {', '.join(passing)} (reference judge: AC)"


def _fits_checker(tests: Path, case: str) -> bool:
    """Whether the checker's sandbox takes the test: its input, output and answer arrive as one stdin
    file, and a sandboxed file is at most ``Limits.file_mb`` (16 MiB; the checker's limits are the
    reward's own, no setting)."""
    size = (tests / f"{case}.in").stat().st_size + 2 * (tests / f"{case}.out").stat().st_size
    return size <= CHECKER_FILES


def prepared_problems(root: Path, n: int, k: int, max_input: int, only: list[str]) -> Iterator[Prepared]:
    """Prepared problems, used or not, until ``n`` are used."""
    folders = [root / name for name in only] if only else candidates(root)
    used = 0
    for folder in folders:
        if used >= n:
            return
        started = time.perf_counter()
        prepared = prepare(root, folder, k, max_input)
        used += prepared.used
        mark = "used" if prepared.used else f"left out: {prepared.why_not}"
        print(
            f"  prepared {prepared.problem}: {len(prepared.tests)} tests, "
            f"{time.perf_counter() - started:.1f} s, {mark}",
            flush=True,
        )
        yield prepared


#: the control's checker (our own, a testlib call every checker makes): every output is wrong; correct.cpp
#: judged by it must score 0.0, so the checker column, not a comparison with the expected output, decides
REJECT_ALL = """#include "testlib.h"
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    quitf(_wa, "the control checker rejects every output");
}
"""

#: the reward's reasons, as the judge names them
JUDGE = {
    "wrong_answer": "WA",
    "timeout": "TLE",
    "runtime_error": "RE",
    "memory": "MLE",
    "output_limit": "OLE",
}


def judge_name(reason: str | None) -> str:
    """``wrong_answer:3`` -> ``WA``; ``None`` (passed) -> ``AC``; reasons with no judge's name stay."""
    if reason is None:
        return "AC"
    return JUDGE.get(reason.split(":")[0], reason)


def submissions(root: Path, p: Prepared) -> list[tuple[Solution, str]]:
    """(solution, its source as one file) for correct.cpp and each wrong solution."""
    folder = root / p.problem
    correct = Solution("correct.cpp", "AC", reference="AC")
    return [(s, inline(folder / "sol" / s.name, [folder, root / "common"])) for s in [correct, *p.solutions]]


def row(root: Path, p: Prepared) -> dict[str, Any]:
    """The problem as the ``code`` reward's columns: its tests, its time limit and its checker's source."""
    folder = root / p.problem
    tests = folder / "tests"
    config = info(folder)
    inputs = [(tests / f"{case}.in").read_text(encoding="utf-8") for case in p.tests]
    outputs = [(tests / f"{case}.out").read_text(encoding="utf-8") for case in p.tests]
    checker = inline(folder / config.get("checker", "checker.cpp"), [folder], keep=("testlib.h",))
    return {"tests": {"inputs": inputs, "outputs": outputs}, "checker": checker, "time_limit": p.timelimit}


def score_all(root: Path, used: list[Prepared]) -> int:
    """Each used problem through the ``code`` reward; per-problem lines and the totals."""
    import rewardkit

    reward = rewardkit.get("code", **reward_params(root))
    totals = dict.fromkeys(
        ("correct", "correct_1", "wrong", "wrong_0", "same_verdict", "same_test", "control_0"), 0
    )
    kinds: Counter[str] = Counter()  # the reward's verdicts on the wrong solutions
    expected = 0  # ... that are what info.toml expects
    started = time.perf_counter()
    for p in used:
        pairs = submissions(root, p)
        columns = row(root, p)
        batch: dict[str, Any] = {k: [v] * (len(pairs) + 1) for k, v in columns.items()}
        batch["checker"][-1] = REJECT_ALL  # the control: correct.cpp again, judged by a checker saying WA
        completions = [f"```cpp\n{source}\n```" for _, source in [*pairs, pairs[0]]]
        t0 = time.perf_counter()
        scored = reward.score_detailed(completions, **batch)
        seconds = time.perf_counter() - t0
        control = scored.reasons[-1]
        totals["control_0"] += scored.values[-1] == 0.0 and control == "wrong_answer:0"
        parts = [f"control {scored.values[-1]} {control}"]
        for (solution, _), value, reason, detail in zip(
            pairs, scored.values[:-1], scored.reasons[:-1], scored.details[:-1], strict=True
        ):
            got = judge_name(reason)
            first = (detail or {}).get("first_failure", {}).get("test")
            if solution.expect == "AC":
                totals["correct"] += 1
                totals["correct_1"] += value == 1.0
                mark = "ok" if value == 1.0 else f"WRONG ({reason}: {json.dumps(detail)[:300]})"
                parts.append(f"{solution.name} {value} {mark}")
                continue
            totals["wrong"] += 1
            totals["wrong_0"] += value == 0.0
            totals["same_verdict"] += got == solution.reference
            totals["same_test"] += got == solution.reference and first == solution.reference_test
            kinds[got] += 1
            expected += got == solution.expect
            mark = "ok" if value == 0.0 else "WRONG"
            parts.append(
                f"{solution.name} {value} {reason} -> {got} on test {first} (reference {solution.reference} "
                f"on test {solution.reference_test}, info.toml {solution.expect}) {mark}"
            )
        print(
            f"{p.problem} ({len(p.tests)} tests, {p.timelimit:g} s limit, {seconds:.1f} s): "
            + "; ".join(parts)
        )
    n = len(used)
    print(
        f"\ntotals over {n} problems ({time.perf_counter() - started:.0f} s): correct.cpp 1.0 in "
        f"{totals['correct_1']}/{totals['correct']}; "
        f"wrong solutions 0.0 in {totals['wrong_0']}/{totals['wrong']}, "
        f"the reference judge's verdict in {totals['same_verdict']}/{totals['wrong']} "
        f"(and its first failing test in {totals['same_test']}), info.toml's expect in {expected}; "
        f"the reward's verdicts: {', '.join(f'{k} {v}' for k, v in kinds.most_common())}; "
        f"control (correct.cpp, a checker that always says WA) 0.0 wrong_answer:0 in "
        f"{totals['control_0']}/{n}"
    )
    ok = totals["correct_1"] == totals["correct"] and totals["wrong_0"] == totals["wrong"]
    ok = ok and totals["control_0"] == n
    return 0 if ok else 1


def reward_params(root: Path) -> dict[str, Any]:
    """The ``code`` reward's settings: Library Checker's 1 GiB memory, room for its tests and outputs, the
    snapshot's testlib.h for the checkers."""
    return {
        "mode": "all",
        "memory_mb": MEMORY_MB,
        "max_tests": 500,
        "max_test_chars": 1 << 30,
        "output_bytes": 64 << 20,
        "testlib": str(root / "common" / "testlib.h"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "snapshot", type=Path, help="yosupo06/library-checker-problems: a clone or a bare git dir"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/rewardkit-library-checker"))
    parser.add_argument("--problems", type=int, default=32, help="problems to use (default 32)")
    parser.add_argument("--max-tests-per-gen", type=int, default=1, help="seeds per generator (default 1)")
    parser.add_argument(
        "--max-input-bytes", type=int, default=12_000_000, help="largest test input (default 12 MB)"
    )
    parser.add_argument("--only", default="", help="comma-separated problems (e.g. tree/lca,sample/aplusb)")
    parser.add_argument(
        "--prepare-only", action="store_true", help="prepare and run the reference judge only"
    )
    args = parser.parse_args()
    root = unpack(args.snapshot, args.work)
    only = [p for p in args.only.split(",") if p]
    print(f"snapshot {args.snapshot} unpacked at {root}", flush=True)
    problems = list(
        prepared_problems(root, args.problems, args.max_tests_per_gen, args.max_input_bytes, only)
    )
    used = [p for p in problems if p.used]
    print(f"prepared: {len(problems)} problems, {len(used)} used, {sum(len(p.tests) for p in used)} tests")
    for p in problems:
        if not p.used:
            print(f"  left out {p.problem}: {p.why_not}")
    if not used:
        raise SystemExit("no problem could be prepared: nothing to score")
    if args.prepare_only:
        return 0
    return score_all(root, used)


if __name__ == "__main__":
    raise SystemExit(main())
