"""Special judges (issue 38): a row's ``checker`` decides whether an output is right, run in a sandbox of its
own (it is the row's, so untrusted) with testlib's contract (``checker input output answer``, exit 0
accepted, 1 wrong answer, 2 presentation error, 3 fail). A checker that fails is the item's ``None`` with
``checker_error``, never the program's fault. Every program and checker here runs in a real sandbox."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rewardkit import get
from rewardkit.core import RewardError
from rewardkit.registry import info
from rewardkit.sandbox import compile as compile_module
from rewardkit.sandbox.checker import CheckerError, read_checker
from rewardkit.sandbox.compile import clear_cache
from tests.support.timing import busy


def fenced(program: str, language: str = "python") -> str:
    return f"<think>Let me write it.</think>\n```{language}\n{program}\n```"


def judge(programs: list[str], checker: Any, tests: Any, **params: Any) -> Any:
    reward = get("code", max_concurrency=4, **params)
    n = len(programs)
    return reward.score_detailed([fenced(p) for p in programs], tests=[tests] * n, checker=[checker] * n)


# Accepts any output within 1e-3 of the answer (absolute or relative), as float-answer problems do.
FLOAT_CHECKER = """
import sys
_, output, answer = (open(path).read().split() for path in sys.argv[1:4])
if len(output) != len(answer):
    print(f"expected {len(answer)} numbers, found {len(output)}")
    sys.exit(2)
for got, want in zip(output, answer):
    try:
        value = float(got)
    except ValueError:
        print(f"{got!r} is not a number")
        sys.exit(2)
    if abs(value - float(want)) > 1e-3 * max(1.0, abs(float(want))):
        print(f"{got} is not {want}")
        sys.exit(1)
"""
THIRDS = {"inputs": ["1\n", "2\n"], "outputs": ["0.333333333\n", "0.666666667\n"]}


def test_a_float_tolerance_checker() -> None:
    close = "print(round(int(input()) / 3, 4))"  # 0.3333: within 1e-3, not within the default 1e-6
    far = "print(round(int(input()) / 3, 1))"  # 0.3: off by 0.03
    words = "print('third')"
    scored = judge([close, far, words], FLOAT_CHECKER, THIRDS)
    assert scored.values == [1.0, 0.0, 0.0]
    assert scored.reasons == [None, "wrong_answer:0", "presentation_error:0"]
    assert scored.details[1]["first_failure"]["checker"] == "0.3 is not 0.333333333"
    assert scored.details[2]["first_failure"]["checker"] == "'third' is not a number"
    # without the checker the output is compared as always: 0.3333 is not 0.333333333 within 1e-6
    plain = get("code").score_detailed([fenced(close)], tests=[THIRDS])
    assert (plain.values, plain.reasons) == ([0.0], ["wrong_answer:0"])


# Any permutation of 1..n is right (the expected answer is one of many).
PERMUTATION_CHECKER = """
import sys
n = int(open(sys.argv[1]).read())
tokens = open(sys.argv[2]).read().split()
if len(tokens) != n or not all(t.lstrip("-").isdigit() for t in tokens):
    sys.exit(2)
if sorted(map(int, tokens)) != list(range(1, n + 1)):
    sys.exit(1)
"""
PERMUTATIONS = {"inputs": ["3", "5"], "outputs": ["1 2 3", "1 2 3 4 5"]}


def test_an_any_valid_permutation_checker() -> None:
    ascending = "print(*range(1, int(input()) + 1))"
    descending = "print(*range(int(input()), 0, -1))"
    repeated = "print(*[1] * int(input()))"  # n numbers, not a permutation
    short = "input()\nprint(1)"
    scored = judge([ascending, descending, repeated, short], PERMUTATION_CHECKER, PERMUTATIONS)
    assert scored.values == [1.0, 1.0, 0.0, 0.0]
    assert scored.reasons == [None, None, "wrong_answer:0", "presentation_error:0"]
    # the descending answer is not the expected output: only the checker accepts it
    plain = get("code").score_detailed([fenced(descending)], tests=[PERMUTATIONS])
    assert plain.values == [0.0]


def test_checker_verdicts_follow_the_scoring_mode() -> None:
    right_once = "n = int(input())\nprint(*range(1, n + 1) if n == 3 else [1] * n)"
    fraction = judge([right_once], PERMUTATION_CHECKER, PERMUTATIONS, mode="fraction")
    assert (fraction.values, fraction.reasons) == ([0.5], ["wrong_answer:1"])
    weighted = judge([right_once], PERMUTATION_CHECKER, PERMUTATIONS, mode="weighted_sum")
    assert weighted.values == pytest.approx([0.05])
    # the first failure in test order, whether the checker or the run found it
    crash_later = "n = int(input())\nassert n == 3\nprint(*[1] * n)"
    first = judge([crash_later], PERMUTATION_CHECKER, PERMUTATIONS, mode="fraction")
    assert first.reasons == ["wrong_answer:0"] and first.details[0]["passed"] == 0


PERMUTATION = "print(*range(1, int(input()) + 1))"
# (checker, what its failure says): each makes the item None with checker_error, never 0 for the program
FAILING = [
    ("import sys\nsys.exit(3)", "testlib's _fail"),  # FAIL
    ("raise RuntimeError('the checker broke')", "RuntimeError: the checker broke"),  # crashes
    ("import sys\nsys.exit(42)", "exited with 42, not a verdict"),  # an exit code no judge knows
    ("import os\nos._exit(0)", "NoReport"),  # leaves without a verdict
    ({"language": "python", "source": "def ("}, "SyntaxError"),  # does not compile
    ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),  # dies on a signal
    ({"language": "cpp", "source": "int main() { return 0; }"}, None),  # C++ without testlib: fine, AC
]


@pytest.mark.parametrize(("checker", "said"), FAILING)
def test_a_failing_checker_is_a_checker_error(checker: Any, said: str | None) -> None:
    scored = judge([PERMUTATION], checker, PERMUTATIONS)
    if said is None:
        assert scored.values == [1.0]
        return
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])
    assert said in scored.details[0]["error"]


def test_a_hanging_checker_is_cut_at_its_own_limit() -> None:
    began = time.monotonic()
    scored = judge([PERMUTATION], "while True:\n    pass", PERMUTATIONS, checker_timeout_s=1.0)
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])
    assert "ran past its 1 s limit" in scored.details[0]["error"]
    assert time.monotonic() - began < 15.0 * busy()


def test_unreadable_checkers() -> None:
    for checker, said in [
        ("Accept when it looks right.", "neither Python nor C++"),
        ({"language": "rust", "source": "fn main() {}"}, "'rust' are not supported"),
        ({"language": "python"}, "its source text"),
    ]:
        scored = judge([PERMUTATION], checker, PERMUTATIONS)
        assert (scored.values, scored.reasons) == ([None], ["checker_error"]), checker
        assert said in scored.details[0]["error"]
    with pytest.raises(CheckerError, match="over 1000000 characters"):
        read_checker("#" * 1_000_001)
    # an empty checker is no checker (datasets leave the column empty where outputs are compared)
    assert judge([PERMUTATION], "", PERMUTATIONS).values == [1.0]


def test_a_checker_judges_stdin_stdout_tests_only() -> None:
    call = {"fn_name": "f", "inputs": [[1]], "outputs": [2]}
    scored = judge(["def f(x):\n    return 2 * x"], PERMUTATION_CHECKER, call)
    assert (scored.values, scored.reasons) == ([None], ["bad_tests"])


def test_the_checker_is_sandboxed(tmp_path: Path) -> None:
    marker = tmp_path / "written-by-checker"
    escaping = f"""
import socket, sys
try:
    open({str(marker)!r}, "w").write("out")
except OSError:
    pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    sys.exit(0)
except OSError:
    sys.exit(1)
"""
    scored = judge([PERMUTATION], escaping, PERMUTATIONS)
    assert (scored.values, scored.reasons) == ([0.0], ["wrong_answer:0"])  # no network: its exit 1
    assert not marker.exists()


def test_the_program_never_sees_the_answer_the_checker_reads() -> None:
    # the checker's files live in its own sandbox: a program looking for them finds nothing
    peeking = """
import glob
found = glob.glob("/tmp/**/answer*", recursive=True)
print(open(found[0]).read() if found else "nothing")
"""
    scored = judge([peeking], PERMUTATION_CHECKER, PERMUTATIONS)
    assert scored.values == [0.0]
    assert scored.details[0]["first_failure"]["got"] == "nothing\n"


# testlib-style C++ checkers, compiled with rewardkit's own header (sandbox/data/testlib_lite.h) in place of
# testlib.h, each once, and run sandboxed like the Python ones.
CPP_PERMUTATION = """#include "testlib.h"
#include <set>
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::set<int> seen;
    for (int i = 0; i < n; ++i) {
        int x = ouf.readInt(1, n, "p_i");
        if (!seen.insert(x).second) quitf(_wa, "%d appears twice", x);
    }
    ans.readToken();
    quitf(_ok, "a permutation of %d", n);
}
"""
CPP_FLOAT = """#include "testlib.h"
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = 0;
    while (!ans.seekEof()) {
        double want = ans.readDouble(), got = ouf.readDouble();
        ++n;
        if (!doubleCompare(want, got, 1e-3))
            quitf(_wa, "%d%s number: expected %.6f, found %.6f", n, englishEnding(n).c_str(), want, got);
    }
    quitf(_ok, "%d numbers", n);
}
"""


def test_a_testlib_permutation_checker_in_cpp() -> None:
    ascending = "print(*range(1, int(input()) + 1))"
    descending = "print(*range(int(input()), 0, -1))"
    repeated = "print(*[1] * int(input()))"
    short = "input()\nprint(1)"
    extra = "n = int(input())\nprint(*range(1, n + 1), 7)"  # right, then more: testlib's "extra information"
    outside = "n = int(input())\nprint(*range(2, n + 2))"  # a value outside readInt's range: WA
    scored = judge([ascending, descending, repeated, short, extra, outside], CPP_PERMUTATION, PERMUTATIONS)
    assert scored.values == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert scored.reasons == [
        None,
        None,
        "wrong_answer:0",
        "presentation_error:0",
        "presentation_error:0",
        "wrong_answer:0",
    ]
    messages = [d["first_failure"]["checker"] for d in scored.details[2:]]
    assert messages[0] == "wrong answer 1 appears twice"
    assert messages[1].startswith("wrong output format unexpected end of file")
    assert messages[2] == "wrong output format Extra information in the output file"
    assert messages[3] == "wrong answer p_i = 4 is outside [1, 3] (output)"


def test_a_testlib_float_checker_in_cpp() -> None:
    close = "print(round(int(input()) / 3, 4))"
    far = "print(round(int(input()) / 3, 1))"
    scored = judge([close, far, "print('third')"], CPP_FLOAT, THIRDS)
    assert scored.reasons == [None, "wrong_answer:0", "presentation_error:0"]
    assert scored.details[1]["first_failure"]["checker"].startswith(
        "wrong answer 1st number: expected 0.333333"
    )


CPP_BODY = (
    '#include "testlib.h"\nint main(int argc, char* argv[]) {{\n    registerTestlibCmd(argc, argv);\n{}\n}}\n'
)
# (checker's body, what its failure says): a C++ checker that fails is None with checker_error too
CPP_FAILING = [
    ('    quitf(_fail, "the jury\'s answer is broken");', "testlib's _fail"),
    ("    volatile int* p = nullptr;\n    return *p;", "SIGSEGV"),
    ("    return 42;", "exited with 42"),
    ('    ans.quitf(_pe, "the answer is malformed");', "testlib's _fail"),  # any verdict through ans: FAIL
    ("    undefined_call();", "does not compile"),
    (
        '    for (int i = 0; i < 9; ++i) ans.readInt();\n    quitf(_ok, "");',
        "testlib's _fail",
    ),  # short answer
]


@pytest.mark.parametrize(("body", "said"), CPP_FAILING)
def test_a_failing_cpp_checker_is_a_checker_error(body: str, said: str) -> None:
    scored = judge([PERMUTATION], CPP_BODY.format(body), PERMUTATIONS)
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])
    assert said in scored.details[0]["error"]


def test_a_hanging_cpp_checker_is_cut_at_its_own_limit() -> None:
    began = time.monotonic()
    scored = judge([PERMUTATION], CPP_BODY.format("    for (;;) {}"), PERMUTATIONS, checker_timeout_s=1.0)
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])
    assert "ran past its 1 s limit" in scored.details[0]["error"]
    assert time.monotonic() - began < 60.0 * busy()  # the compile (once), then one test's limit


def test_a_cpp_checker_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_cache()
    compiles: list[str] = []
    real = compile_module.compile_program

    async def counted(source: str, *args: Any, **kwargs: Any) -> Any:
        compiles.append(source)
        return await real(source, *args, **kwargs)

    monkeypatch.setattr(compile_module, "compile_program", counted)  # the real compile, counted
    programs = [f"print(*range(1, int(input()) + 1)){' ' * i}" for i in range(6)]  # six distinct programs
    scored = judge(programs, CPP_PERMUTATION, PERMUTATIONS)
    assert scored.values == [1.0] * 6 and len(compiles) == 1  # six programs judged, one compile
    began = time.monotonic()
    assert judge(["print(*range(int(input()), 0, -1))"], CPP_PERMUTATION, PERMUTATIONS).values == [1.0]
    assert time.monotonic() - began < 30.0 * busy()  # the next batch takes the kept binary


def test_the_operator_names_a_real_testlib(tmp_path: Path) -> None:
    # an operator's testlib.h (here a stand-in of ours whose quitf says who it is) replaces our header
    own = tmp_path / "testlib.h"
    own.write_text(
        "#include <cstdio>\n#include <cstdlib>\nenum TResult { _ok, _wa };\n"
        "inline void registerTestlibCmd(int, char**) {}\n"
        "inline void quitf(TResult r, const char*) {\n"
        '    std::fprintf(stderr, "operator\'s header");\n'
        "    std::exit(r);\n}\n"
    )
    checker = CPP_BODY.format('    quitf(_wa, "no");')
    scored = judge([PERMUTATION], checker, PERMUTATIONS, testlib=str(own))
    assert scored.reasons == ["wrong_answer:0"]
    assert scored.details[0]["first_failure"]["checker"] == "operator's header"
    assert "testlib" not in info("code").caller_params  # a server setting, never a caller's
    with pytest.raises(RewardError, match="testlib must be the path of a testlib.h"):
        get("code", testlib=str(tmp_path / "missing.h"))


def test_cpp_programs_with_a_cpp_checker() -> None:
    reward = get("code", max_concurrency=4)
    program = (
        "#include <bits/stdc++.h>\nint main() { int n; std::cin >> n; "
        "for (int i = n; i >= 1; --i) std::cout << i << ' '; std::cout << '\\n'; }"
    )
    broken = (
        '#include <cstdio>\nint main() { int n; scanf("%d", &n); for (int i = 0; i < n; ++i) printf("1 "); }'
    )
    scored = reward.score_detailed(
        [fenced(program, "cpp"), fenced(broken, "cpp")],
        tests=[PERMUTATIONS] * 2,
        checker=[CPP_PERMUTATION] * 2,
    )
    assert scored.values == [1.0, 0.0]
    assert scored.reasons == [None, "wrong_answer:0"]


def test_a_checker_gets_the_programs_limits_too() -> None:
    # no process: a Python checker's fork is refused (its exception: the checker failed) ...
    forking = "import os\nos.fork()"
    scored = judge([PERMUTATION], forking, PERMUTATIONS)
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])
    assert "BlockingIOError" in scored.details[0]["error"]
    # ... and a C++ checker's: it says so as a wrong answer, where a fork that worked would accept
    fork_cpp = CPP_BODY.format('    if (fork() < 0) quitf(_wa, "fork refused");\n    quitf(_ok, "forked");')
    scored = judge([PERMUTATION], "#include <unistd.h>\n" + fork_cpp, PERMUTATIONS)
    assert scored.reasons == ["wrong_answer:0"]
    assert scored.details[0]["first_failure"]["checker"] == "wrong answer fork refused"
    # memory past checker_memory_mb ends the checker, not the host
    hungry = CPP_BODY.format(
        '    std::vector<char> big(size_t(2) << 30, 1);\n    quitf(big[12345] ? _ok : _wa, "touched");'
    )
    scored = judge([PERMUTATION], hungry, PERMUTATIONS, checker_memory_mb=256)
    assert (scored.values, scored.reasons) == ([None], ["checker_error"])


# More of the header's calls: lines, words, 64-bit ranges, quitif, ensuref, expectedButFound, lowerCase.
CPP_LINES = r"""#include "testlib.h"
using namespace std;
int main(int argc, char* argv[]) {
    setName("compares lines, then a yes/no and a 64-bit sum");
    registerTestlibCmd(argc, argv);
    int n = inf.readInt(1, 100, "n");
    inf.readEoln();
    for (int i = 1; i <= n; ++i) {
        string want = ans.readLine(), got = ouf.readLine();
        if (want != got) quitf(_wa, "line %d differs", i);
    }
    string verdict = lowerCase(ouf.readWord());
    quitif(verdict != "yes" && verdict != "no", _pe, "expected yes or no, found %s", verdict.c_str());
    long long sum = ouf.readLong(LLONG_MIN, LLONG_MAX, "sum");
    ensuref(ans.readWord().size() > 0, "the answer has its verdict");
    long long want_sum = ans.readLong();
    if (sum != want_sum) expectedButFound(_wa, want_sum, sum, "sum");
    quitf(_ok, "%d lines", n);
}
"""


def test_a_cpp_checker_using_more_of_the_header() -> None:
    tests = {"inputs": ["2\n"], "outputs": ["a b\nc\nyes 5000000000\n"]}
    right = "print('a b'); print('c'); print('YES', 5 * 10**9)"  # case-insensitive yes
    wrong_line = "print('a b'); print('d'); print('yes', 5 * 10**9)"
    not_yes = "print('a b'); print('c'); print('maybe', 5 * 10**9)"
    wrong_sum = "print('a b'); print('c'); print('yes', 6)"
    scored = judge([right, wrong_line, not_yes, wrong_sum], CPP_LINES, tests)
    assert scored.reasons == [None, "wrong_answer:0", "presentation_error:0", "wrong_answer:0"]
    said = [d["first_failure"]["checker"] for d in scored.details[1:]]
    assert said == [
        "wrong answer line 2 differs",
        "wrong output format expected yes or no, found maybe",
        "wrong answer sum: expected '5000000000', but found '6'",
    ]
