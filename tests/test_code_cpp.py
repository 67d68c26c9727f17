"""The ``code`` reward's compiled languages (issue 38): C++ and C programs compiled in a sandbox and run per
test, with the verdicts judges give (right, wrong, crashing, looping, not compiling, over memory, over
output), HumanEval-X-style C++ problems of our own (stdin through ``main``) whose canonical solutions pass
and whose broken variants fail with their reasons, the language rules, time limits from the row, a batch
compiled once per distinct program, and the precompiled header. Every program runs in a real sandbox."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rewardkit import get
from rewardkit.core import Scored
from rewardkit.sandbox import SandboxConfig, shared_pool
from rewardkit.sandbox.compile import Compiled, CompileError, clear_cache, compile_program
from rewardkit.sandbox.languages import CPP
from rewardkit.sandbox.pch import cache_dir, include_dir
from tests.support.processes import settled

ROOT = Path(__file__).resolve().parent.parent
SUM = {"inputs": ["1 2\n", "40 2\n"], "outputs": ["3\n", "42\n"]}


def fenced(program: str, tag: str = "cpp") -> str:
    return f"<think>Let me write it.</think>\n```{tag}\n{textwrap.dedent(program).strip()}\n```"


def score(completions: list[str], tests: Any = SUM, **params: Any) -> Scored:
    columns: dict[str, Any] = {
        k: params.pop(k) for k in ("time_limit", "language", "memory_limit") if k in params
    }
    reward = get("code", timeout_s=params.pop("timeout_s", 2.0), max_concurrency=2, **params)
    n = len(completions)
    columns = {key: [value] * n for key, value in columns.items()}
    return reward.score_detailed(completions, tests=[tests] * n, **columns)


CPP_RIGHT = """
    #include <bits/stdc++.h>
    using namespace std;
    int main() { long long a, b; cin >> a >> b; cout << a + b << "\\n"; }
    """
C_RIGHT = """
    #include <stdio.h>
    int main(void) { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); return 0; }
    """
# (note, tag, program, reason): each must score 0.0 with that reason, next to the right ones scoring 1.0
BROKEN = [
    (
        "C++ wrong",
        "cpp",
        "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a*b;}",
        "wrong_answer:0",
    ),
    ("C++ null write", "c++", "int main(){ volatile int *p = nullptr; *p = 1; }", "runtime_error:SIGSEGV"),
    ("C++ abort", "cc", "#include <cstdlib>\nint main(){ std::abort(); }", "runtime_error:SIGABRT"),
    (
        "C++ uncaught throw",
        "cpp",
        '#include <stdexcept>\nint main(){ throw std::runtime_error("x"); }',
        "runtime_error:SIGABRT",
    ),
    (
        "C++ divide by zero",
        "cpp",
        '#include <cstdio>\nint main(){ volatile int z = 0; int a = 100; printf("%d", a / z); }',
        "runtime_error:SIGFPE",
    ),
    ("C++ loop", "cpp", "int main(){ volatile unsigned long x = 0; for (;;) x++; }", "timeout"),
    ("C++ sleep (wall clock, no CPU)", "cpp", "#include <unistd.h>\nint main(){ sleep(30); }", "timeout"),
    ("C++ not compiling", "cpp", "int main() { return undeclared; }", "compile_error"),
    ("C++ exit code", "cpp", "int main() { return 3; }", "runtime_error:exit:3"),
    (
        "C++ output flood",
        "cpp",
        '#include <cstdio>\nint main(){ for(;;) puts("yyyyyyyyyyyyyyyy"); }',
        "output_limit",
    ),
    ("C wrong", "c", '#include <stdio.h>\nint main(void){ puts("3"); return 0; }', "wrong_answer:1"),
    (
        "C crash",
        "c",
        "#include <string.h>\nint main(void){ memset((char *)16, 1, 64); return 0; }",
        "runtime_error:SIGSEGV",
    ),
    ("C loop", "c", "int main(void){ volatile long x = 0; for (;;) x++; }", "timeout"),
    ("C not compiling", "c", "int main(void) { return 0 }", "compile_error"),
    (
        "C++ in a C fence does not compile",
        "c",
        "#include <vector>\nint main(){ std::vector<int> v; }",
        "compile_error",
    ),
]


def test_right_programs_pass_and_broken_ones_fail_with_their_reason() -> None:
    completions = [fenced(CPP_RIGHT), fenced(C_RIGHT, "c")] + [fenced(p, tag) for _, tag, p, _ in BROKEN]
    scored = score(completions, mode="all", output_bytes=4096)
    assert scored.values[:2] == [1.0, 1.0], scored.details[:2]
    got = [
        (note, value, reason)
        for (note, *_), value, reason in zip(BROKEN, scored.values[2:], scored.reasons[2:], strict=False)
    ]
    assert got == [(note, 0.0, reason) for note, _, _, reason in BROKEN], scored.details
    error = scored.details[2 + [note for note, *_ in BROKEN].index("C++ not compiling")]["error"]
    assert "undeclared" in error and "was not declared" in error, error  # the compiler's first lines
    assert settled() == [], "a process of a run survived it"


# HumanEval-X-style problems of our own: each is a C++ function called through main on stdin, with a
# canonical solution and broken variants (the reason each must fail with).
HUMANEVAL_X: list[dict[str, Any]] = [
    {
        "name": "has_close_elements",
        "main": "int main(){int n; double t; cin>>n>>t; vector<double> v(n); for(auto&x:v)cin>>x; "
        'cout<<(has_close_elements(v,t)?"true":"false")<<endl;}',
        "solution": "bool has_close_elements(vector<double> v, double t){ for(size_t i=0;i<v.size();i++) "
        "for(size_t j=i+1;j<v.size();j++) if (fabs(v[i]-v[j])<t) return true; return false; }",
        "tests": {
            "inputs": ["3 0.5\n1.0 2.0 3.0\n", "6 0.3\n1.0 2.8 3.0 4.0 5.0 2.0\n", "0 1\n\n"],
            "outputs": ["false\n", "true\n", "false\n"],
        },
        "broken": [
            (
                "j starts at i, so every element is close to itself",
                "bool has_close_elements(vector<double> v, double t){ for(size_t i=0;i<v.size();i++) "
                "for(size_t j=i;j<v.size();j++) if (fabs(v[i]-v[j])<t) return true; return false; }",
                "wrong_answer:0",
            ),
            (
                "reads past the end on the empty list",
                "bool has_close_elements(vector<double> v, double t){ volatile double *p = nullptr; "
                "if (v.empty()) return p[1 << 20] > 0; for(size_t i=0;i+1<v.size();i++) "
                "for(size_t j=i+1;j<v.size();j++) if (fabs(v[i]-v[j])<t) return true; return false; }",
                "runtime_error:SIGSEGV",
            ),
        ],
    },
    {
        "name": "below_zero",
        "main": "int main(){int n; cin>>n; vector<int> v(n); for(auto&x:v)cin>>x; "
        'cout<<(below_zero(v)?"true":"false")<<endl;}',
        "solution": "bool below_zero(vector<int> ops){ long long b=0; for(int o:ops){ b+=o; "
        "if(b<0) return true; } return false; }",
        "tests": {
            "inputs": ["3\n1 2 3\n", "4\n1 2 -4 5\n", "0\n\n"],
            "outputs": ["false\n", "true\n", "false\n"],
        },
        "broken": [
            (
                "only the final balance",
                "bool below_zero(vector<int> ops){ long long b=0; for(int o:ops) b+=o; return b<0; }",
                "wrong_answer:1",
            ),
            (
                "waits for a negative balance forever",
                "bool below_zero(vector<int> ops){ volatile long long b=0; while(b>=0) b = b + 0; "
                "return true; }",
                "timeout",
            ),
        ],
    },
    {
        "name": "fib",
        "main": "int main(){int n; cin>>n; cout<<fib(n)<<endl;}",
        "solution": "long long fib(int n){ long long a=0,b=1; for(int i=0;i<n;i++){ long long c=a+b; a=b; "
        "b=c; } "
        "return a; }",
        "tests": {"inputs": ["10\n", "1\n", "80\n"], "outputs": ["55\n", "1\n", "23416728348467685\n"]},
        "broken": [
            (
                "int overflows at 80",
                "int fib(int n){ int a=0,b=1; for(int i=0;i<n;i++){ int c=a+b; a=b; b=c; } return a; }",
                "wrong_answer:2",
            ),
            (
                "naive recursion: exponential",
                "long long fib(int n){ return n<2 ? n : fib(n-1)+fib(n-2); }",
                "timeout",
            ),
            (
                "a typo",
                "long long fib(int n){ long long a=0,b=1; for(int i=0;i<n;i++){ long long c=a+b a=b; b=c; } "
                "return a; }",
                "compile_error",
            ),
        ],
    },
    {
        "name": "sort_array",
        "main": "int main(){int n; cin>>n; vector<int> v(n); for(auto&x:v)cin>>x; for(int x: sort_array(v)) "
        "cout<<x<<' '; cout<<endl;}",
        "solution": "vector<int> sort_array(vector<int> v){ sort(v.begin(), v.end()); return v; }",
        "tests": {
            "inputs": ["5\n5 2 3 1 4\n", "1\n7\n", "3\n-1 -3 2\n"],
            "outputs": ["1 2 3 4 5", "7", "-3 -1 2"],
        },
        "broken": [
            (
                "descending",
                "vector<int> sort_array(vector<int> v){ sort(v.rbegin(), v.rend()); return v; }",
                "wrong_answer:0",
            ),
            (
                "a million copies: memory",
                "vector<int> sort_array(vector<int> v){ static vector<vector<int>> keep; "
                "for(int i=0;i<2000000;i++) keep.push_back(vector<int>(64, i)); sort(v.begin(), v.end()); "
                "return v; }",
                "memory",
            ),
        ],
    },
]


def _program(problem: dict[str, Any], body: str) -> str:
    return f"#include <bits/stdc++.h>\nusing namespace std;\n{body}\n{problem['main']}\n"


def test_humaneval_x_style_problems_pass_and_their_broken_variants_fail_with_reasons() -> None:
    completions, tests, expected = [], [], []
    for problem in HUMANEVAL_X:
        completions.append(fenced(_program(problem, problem["solution"])))
        tests.append(problem["tests"])
        expected.append((problem["name"], 1.0, None))
        for note, body, reason in problem["broken"]:
            completions.append(fenced(_program(problem, body)))
            tests.append(problem["tests"])
            expected.append((f"{problem['name']}: {note}", 0.0, reason))
    reward = get("code", timeout_s=4.0, memory_mb=256, max_concurrency=2)  # a loaded machine allocates slowly
    scored = reward.score_detailed(completions, tests=tests)
    got = [
        (note, value, reason)
        for (note, _, _), value, reason in zip(expected, scored.values, scored.reasons, strict=True)
    ]
    assert got == expected, scored.details


def test_memory_is_the_cgroups_and_the_peak_resident_size() -> None:
    """Where a memory cgroup holds the sandbox (this host, as root: v1), a compiled program has no
    address-space limit: memory it reserves but never touches is free, as on a judge, and what it touches
    past memory_mb is ``memory`` (killed by the cgroup, or over memory_mb at its peak resident size)."""
    reserve_only = """
        #include <cstdio>
        #include <cstdlib>
        int main() { char *p = (char *)malloc(3UL << 30); long long a, b; scanf("%lld %lld", &a, &b);
                     printf("%lld\\n", p ? a + b : -1); }
        """
    touch = """
        #include <cstdio>
        #include <cstring>
        #include <cstdlib>
        int main() { size_t n = %dUL << 20; volatile char *p = (volatile char *)malloc(n);
                     for (size_t i = 0; i < n; i += 4096) p[i] = 1;  /* volatile: every page touched */
                     long long a, b; scanf("%%lld %%lld", &a, &b); printf("%%lld\\n", a + b + p[0] - 1); }
        """
    static_array = "int big[1 << 28]; int main(){ return big[12345]; }"  # 1 GiB of .bss, untouched
    programs = [reserve_only, touch % 200, touch % 300, touch % 2000]
    scored = score([fenced(p) for p in programs], memory_mb=256, timeout_s=5.0)
    assert (scored.values, scored.reasons) == (
        [1.0, 1.0, 0.0, 0.0],
        [None, None, "memory", "memory"],
    ), scored.details
    assert score([fenced(static_array)], {"inputs": [""], "outputs": [""]}, memory_mb=256).values == [1.0]


def test_without_a_cgroup_the_address_space_limit_holds_and_says_how() -> None:
    """``cgroup="off"``: the address-space limit is memory_mb; a refused allocation ends as the program
    handles it (C++'s std::bad_alloc aborts: ``runtime_error:SIGABRT``), one that fits but is touched past
    memory_mb at its peak is ``memory``."""
    grows = "#include <vector>\nint main(){ std::vector<char> v(1UL << 30, 1); return v[5] - 1; }"
    scored = score([fenced(grows)], {"inputs": [""], "outputs": [""]}, memory_mb=256, cgroup="off")
    assert (scored.values, scored.reasons) == ([0.0], ["runtime_error:SIGABRT"]), scored.details


def test_time_limit_from_the_row_in_seconds_or_ms_times_the_factor() -> None:
    spin = """
        #include <chrono>
        #include <cstdio>
        int main() { auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
                     volatile long x = 0; while (std::chrono::steady_clock::now() < end) x++; puts("ok"); }
        """
    tests = {"inputs": [""], "outputs": ["ok"]}
    assert score([fenced(spin)], tests, time_limit=200).reasons == ["timeout"]  # 200 ms
    assert score([fenced(spin)], tests, time_limit="0.25 s").reasons == ["timeout"]
    assert score([fenced(spin)], tests, time_limit=10).values == [1.0]  # seconds
    assert score([fenced(spin)], tests, time_limit={"seconds": 0, "nanos": 250_000_000}).reasons == [
        "timeout"
    ]
    assert score([fenced(spin)], tests, time_limit=250, time_factor=20.0).values == [1.0]  # 5 s
    bad = score([fenced(spin)], tests, time_limit="soon")
    assert (bad.values, bad.reasons) == ([None], ["bad_tests"])


def test_the_language_comes_from_the_fence_or_the_row() -> None:
    python = fenced("print(sum(map(int, input().split())))", "python")
    both = python + "\n" + fenced(CPP_RIGHT)  # the last block in a known language is the program
    untagged_cpp = f"```\n{textwrap.dedent(CPP_RIGHT).strip()}\n```"
    scored = score([python, both, fenced(CPP_RIGHT, "rust"), untagged_cpp, untagged_cpp], language="cpp")
    assert scored.reasons == ["wrong_language:python", None, "unsupported_language:rust", None, None]
    assert scored.values == [0.0, 1.0, 0.0, 1.0, 1.0]
    anything = score(
        [python, fenced(CPP_RIGHT), fenced(C_RIGHT, "c")]
    )  # no language column: any of the table
    assert anything.values == [1.0, 1.0, 1.0], anything.details
    java = score([fenced(CPP_RIGHT)], language="java")
    assert (java.values, java.reasons) == ([None], ["unsupported_language:java"])
    open_r1 = {"language": "cpp", "test_cases": [{"input": "1 2\n", "output": "3\n", "type": "stdin_stdout"}]}
    reward = get("code", max_concurrency=2)
    assert reward([fenced(CPP_RIGHT), python], verification_info=[open_r1] * 2) == [1.0, 0.0]
    calls = score([fenced(CPP_RIGHT)], {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]})
    assert (calls.values, calls.reasons) == ([0.0], ["wrong_language:cpp"])  # call-based tests are Python's


def test_a_batch_compiles_each_distinct_program_once() -> None:
    clear_cache()
    pool = shared_pool(2, SandboxConfig())
    before = pool.stats()
    programs = [CPP_RIGHT] * 6 + [C_RIGHT.replace("\\n", " \\n")] * 3 + ["int main() { return x; }"] * 3
    tags = ["cpp"] * 6 + ["c"] * 3 + ["cpp"] * 3
    scored = get("code", max_concurrency=2).score_detailed(
        [fenced(p, t) for p, t in zip(programs, tags, strict=False)], tests=[SUM] * 12
    )
    assert scored.values == [1.0] * 9 + [0.0] * 3, scored.details
    after = pool.stats()
    assert after["compiles"] - before["compiles"] == 3  # three distinct programs
    assert after["compile_errors"] - before["compile_errors"] == 1
    assert after["runs"] - before["runs"] == 2  # the one that did not compile never runs


def test_compile_program_is_sandboxed_with_its_own_limits() -> None:
    """What a checker's compile (the judge's) gets: the binary or the compiler's words; an include of a
    host file outside the sandbox finds nothing; a template bomb stops at the compiler's wall clock."""
    made = asyncio.run(compile_program("int main() { return 0; }", "cpp"))
    assert isinstance(made, Compiled) and made.binary.startswith(b"\x7fELF")
    secret = ROOT / "pyproject.toml"
    leak = asyncio.run(compile_program(f'#include "{secret}"\nint main() {{}}', "c"))
    assert isinstance(leak, CompileError) and "No such file" in leak.message, leak
    from rewardkit.sandbox.compile import CompileLimits

    bomb = "template<int N> struct F { enum { v = F<N - 1>::v + F<N - 2>::v }; };\n"
    bomb += "template<> struct F<0> { enum { v = 0 }; }; template<> struct F<1> { enum { v = 1 }; };\n"
    bomb += "int main() { return F<100000>::v; }"
    slow = asyncio.run(compile_program(bomb, CPP, CompileLimits(timeout_s=2.0)))
    assert isinstance(slow, CompileError), slow
    assert settled() == []


def test_the_precompiled_header_is_built_once_safely_and_used(tmp_path: Path) -> None:
    """Two processes building into one fresh cache at once: one directory, readable by all, no leftover
    work directory; compiling through it gives a binary that runs."""
    builder = (
        "import sys; from rewardkit.sandbox.languages import CPP; "
        "from rewardkit.sandbox.pch import include_dir;"
        "print(include_dir(CPP, '/usr/bin/g++', sys.argv[1]))"
    )
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", builder, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        for _ in range(2)
    ]
    said = {racer.communicate(timeout=300)[0].strip() for racer in racers}
    assert len(said) == 1 and "None" not in said, said
    (built,) = said
    assert os.listdir(tmp_path) == [os.path.basename(built)]  # no .build-* left behind
    gch = Path(built) / "bits" / "stdc++.h.gch"
    assert gch.stat().st_mode & 0o777 == 0o644 and gch.stat().st_size > 1 << 20
    assert include_dir(CPP, "/usr/bin/g++", str(tmp_path)) == built
    assert cache_dir("off") is None
    reward = get("code", pch_dir=str(tmp_path), max_concurrency=2)
    assert reward([fenced(CPP_RIGHT + "\n// with the header")], tests=[SUM]) == [1.0]


def test_memory_limit_from_the_row_lowers_memory_mb_never_raises_it() -> None:
    touch = """
        #include <cstdio>
        #include <cstring>
        #include <cstdlib>
        int main() { size_t n = 150UL << 20; volatile char *p = (volatile char *)malloc(n);
                     for (size_t i = 0; i < n; i += 4096) p[i] = 1;
                     puts(p[n / 2] ? "ok" : ""); }
        """
    tests = {"inputs": [""], "outputs": ["ok"]}
    assert score([fenced(touch)], tests, memory_mb=512).values == [1.0]
    assert score([fenced(touch)], tests, memory_mb=512, memory_limit="100 MB").reasons == ["memory"]
    assert score([fenced(touch)], tests, memory_mb=100, memory_limit=4096).reasons == ["memory"]  # capped
    bad = score([fenced(touch)], tests, memory_limit="lots")
    assert (bad.values, bad.reasons) == ([None], ["bad_tests"])


def test_a_host_without_the_compiler_makes_its_rows_none_never_a_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no g++, no gcc
    monkeypatch.setattr("rewardkit.sandbox.compile._SYSTEM_PATH", str(tmp_path))  # nor the fallback
    scored = score([fenced(CPP_RIGHT), fenced(C_RIGHT, "c")])
    assert (scored.values, scored.reasons) == ([None, None], ["compiler_unavailable"] * 2)
    assert "apt-get install g++" in scored.details[0]["error"]
