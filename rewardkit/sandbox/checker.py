"""Special judges (checkers): a program of the row's that decides whether an output is right, for problems
with more than one right output. It runs sandboxed, exactly like the program it judges: it comes from the
row, so it is untrusted.

The contract is testlib's (``checker input output answer``): the checker reads three files named by its
arguments, the test's input, the program's output and the expected answer (the dataset's output), and says
its verdict by its exit code, testlib's numbers: 0 accepted, 1 wrong answer, 2 presentation error (and 4,
testlib's ``_dirt``, and 8, its unexpected end of file, read as presentation errors too), 3 ``_fail``: the
checker itself failed. What it prints (stdout, and stderr, where testlib writes its message) is its
message, cut, in the reward's details.

- **Python** (a ``checker`` text that parses as Python, or ``{"language": "python", "source": ...}``): run
  by the sandbox's interpreter with ``sys.argv`` as above; ``sys.exit(code)`` (or ending normally: 0) gives
  the verdict, ``sys.exit("message")`` is 1 as in Python. An exception, ``os._exit`` or going past its
  limits is a checker that failed.
- **C++** (a ``checker`` holding ``#include``, or ``{"language": "cpp", "source": ...}``): a testlib-style
  checker, compiled once per distinct checker (and kept, in a bounded cache of the process) by the code
  sandbox's compiler. ``#include "testlib.h"`` is replaced by the header the operator's ``testlib`` setting
  names (a real ``testlib.h``), else by rewardkit's own small compatible header
  (``rewardkit/sandbox/data/testlib_lite.h``: :data:`TESTLIB_LITE`), so nothing outside the sandbox is
  mounted into it.

A checker that fails (``_fail``, another exit code, an exception or a signal, a timeout, too much memory or
output, a compile error, or one of unknown language) makes the item ``None`` with ``checker_error`` (details
say why): never the program's fault. Checkers get their own limits (:data:`CHECKER_LIMITS`, the operator's).

How a run goes: the program runs all its tests first (with a checker, ``mode="all"`` cannot stop at a
wrong output it has not judged yet: it stops at the first test that crashes or times out), its outputs are
held in the service (each at most ``output_bytes``), then one sandbox a distinct (checker, outputs) runs
the checker over them, test by test, and the tests are judged in order (:mod:`rewardkit.sandbox.tally`).

Not read: open-r1's Codeforces ``generated_checker`` column (Python checkers run by its Piston package,
whose calling convention is not documented where this was written), and interactors (interactive
problems). Partial points from a checker (testlib's ``quitp``, exit code 7) are a checker error.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.concurrency import SharedLimit
from rewardkit.sandbox.compile import Compiled, CompileError, CompilerMissing, compile_all, run_fields
from rewardkit.sandbox.languages import CPP
from rewardkit.sandbox.pool import Job, SandboxPool
from rewardkit.sandbox.run import Limits, RunResult, TestResult

__all__ = [
    "CHECKER_LIMITS",
    "TESTLIB_LITE",
    "VERDICTS",
    "Checked",
    "Checker",
    "CheckerError",
    "Request",
    "cpp_source",
    "header",
    "read_checker",
    "run_checkers",
]

#: rewardkit's own testlib-compatible header (not testlib: written here, covering what checkers call)
TESTLIB_LITE = Path(__file__).parent / "data" / "testlib_lite.h"
#: a checker's limits: a test's wall clock (its CPU the next whole second), memory, what it may print
CHECKER_LIMITS = Limits(timeout_s=10.0, memory_mb=512, output_bytes=1 << 16)
#: testlib's exit codes (testlib.h: OK 0, WA 1, PE 2, FAIL 3, DIRT 4, POINTS 7, UNEXPECTED_EOF 8)
VERDICTS = {
    0: "ok",
    1: "wrong_answer",
    2: "presentation_error",
    4: "presentation_error",
    8: "presentation_error",
}
FAIL = 3
_COMPILES = SharedLimit(os.cpu_count() or 1)  # checkers compiled at once in the process
MAX_CHECKER_CHARS = 1_000_000
SHOWN = 300
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]testlib\.h[>"][^\n]*$', re.MULTILINE)
_FN = "_rewardkit_check"
# The Python checker's frame, run by the harness as a call-based test of (input, output, answer) texts.
_PYTHON_FRAME = """
import os as _os, sys as _sys
_SOURCE = {source!r}

def {fn}(input_text, output_text, answer_text):
    _os.makedirs("/tmp/checker", exist_ok=True)
    paths = []
    for name, text in (("input", input_text), ("output", output_text), ("answer", answer_text)):
        paths.append("/tmp/checker/" + name + ".txt")
        with open(paths[-1], "w", encoding="utf-8", errors="replace") as file:
            file.write(text)
    _sys.argv = ["checker", *paths]
    _sys.stderr = _sys.stdout
    namespace = {{"__name__": "__main__", "__builtins__": __builtins__}}
    try:
        exec(compile(_SOURCE, "<checker>", "exec", dont_inherit=True), namespace)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code)
        return 1
    return 0
"""


# A C++ checker's own start: the test's three texts, framed on stdin (their sizes in bytes on the first
# line), become the files its argv names before main runs; its messages (stderr) go to stdout.
_CPP_FRAME = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
__attribute__((constructor(101))) static void rewardkit_checker_files() {
    dup2(1, 2);
    std::string all;
    char chunk[1 << 16];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, stdin)) > 0) all.append(chunk, got);
    size_t sizes[3];
    size_t at = all.find('\n');
    if (at == std::string::npos) std::_Exit(3);
    if (std::sscanf(all.c_str(), "%zu %zu %zu", &sizes[0], &sizes[1], &sizes[2]) != 3) std::_Exit(3);
    ++at;
    mkdir("/tmp/checker", 0700);
    const char* paths[3] = {"/tmp/checker/input.txt", "/tmp/checker/output.txt", "/tmp/checker/answer.txt"};
    for (int i = 0; i < 3; ++i) {
        FILE* file = std::fopen(paths[i], "wb");
        if (file == nullptr || at + sizes[i] > all.size()) std::_Exit(3);
        std::fwrite(all.data() + at, 1, sizes[i], file);
        std::fclose(file);
        at += sizes[i];
    }
}
"""
_PATHS = ["/tmp/checker/input.txt", "/tmp/checker/output.txt", "/tmp/checker/answer.txt"]


class CheckerError(ValueError):
    """A row's checker cannot be read (its language unknown, its source missing or too long)."""


@dataclass(frozen=True)
class Checker:
    """A row's checker: its language (``python`` or ``cpp``) and source."""

    language: str
    source: str

    @property
    def key(self) -> str:
        """Its identity: the same checker of many rows is compiled once."""
        return hashlib.sha256(f"{self.language}\0{self.source}".encode("utf-8", "surrogatepass")).hexdigest()


def _is_python(source: str) -> bool:
    if len(source) > MAX_CHECKER_CHARS:
        return False
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def read_checker(value: Any) -> Checker:
    """A ``checker`` column's value: a source text (Python when it parses as Python, C++ when it holds an
    ``#include``), or ``{"language": "python" | "cpp", "source": ...}``. Raises :class:`CheckerError`.

    >>> read_checker("import sys\\nsys.exit(0)").language
    'python'
    >>> read_checker('#include "testlib.h"\\nint main() { quitf(_ok, "yes"); }').language
    'cpp'
    >>> read_checker({"language": "rust", "source": "fn main() {}"})
    Traceback (most recent call last):
    ...
    rewardkit.sandbox.checker.CheckerError: checkers in 'rust' are not supported (python, cpp)
    """
    if isinstance(value, Mapping):
        language, source = str(value.get("language") or "").lower(), value.get("source", value.get("code"))
        language = {"py": "python", "python3": "python", "c++": "cpp", "cc": "cpp"}.get(language, language)
        if language not in ("python", "cpp"):
            raise CheckerError(f"checkers in {language[:40]!r} are not supported (python, cpp)")
    else:
        language, source = "", value
    if not isinstance(source, str) or not source.strip():
        raise CheckerError("a checker must be its source text")
    if len(source) > MAX_CHECKER_CHARS:
        raise CheckerError(f"the checker is over {MAX_CHECKER_CHARS} characters (the limit)")
    if not language:
        if _is_python(source):
            language = "python"
        elif re.search(r"^\s*#\s*include\b", source, re.MULTILINE):
            language = "cpp"
        else:
            raise CheckerError("the checker is neither Python nor C++ (name its language)")
    return Checker(language, source)


@dataclass
class Checked:
    """What a checker said of one program's outputs: each test's verdict (``ok``, ``wrong_answer``,
    ``presentation_error``) and message, or why the checker failed (``error``)."""

    verdicts: dict[int, str] = field(default_factory=dict)
    messages: dict[int, str] = field(default_factory=dict)
    error: str | None = None


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters in all)"


def _failure(test: TestResult, code: Any, limits: Limits) -> str:
    """How a checker failed on one test, in words."""
    if code == FAIL:
        return "failed (testlib's _fail, exit code 3)"
    if code is not None:
        return f"exited with {code!r:.40}, not a verdict ({', '.join(map(str, VERDICTS))} or 3)"
    return {
        "timeout": f"ran past its {limits.timeout_s:g} s limit",
        "memory": f"went past its {limits.memory_mb} MB",
        "output_limit": f"printed more than {limits.output_bytes} bytes",
    }.get(test.status, f"ended with {test.error or test.status}")


def _read(run: RunResult, indices: Sequence[int], python: bool, limits: Limits) -> Checked:
    """The checker's verdicts from its run, test by test (the first failure of the checker ends it)."""
    checked = Checked()
    if run.compile_error is not None:
        checked.error = f"the checker does not compile: {_cut(run.compile_error)}"
        return checked
    for test in run.tests:
        index = indices[test.index]
        code: Any = None
        if test.status == "ok":
            code = json.loads(test.value) if python and test.value else 0
        elif test.status == "error" and (test.error or "").startswith("Exit: "):
            code = int((test.error or "").split()[1])
        if not isinstance(code, int) or isinstance(code, bool) or code not in VERDICTS:
            checked.error = f"test {index}: the checker {_failure(test, code, limits)}"
            if test.stdout.strip():
                checked.error += f"; it said: {_cut(test.stdout.strip())}"
            return checked
        checked.verdicts[index] = VERDICTS[code]
        if test.stdout.strip():
            checked.messages[index] = _cut(test.stdout.strip())
    if len(checked.verdicts) < len(indices):
        checked.error = f"the checker's sandbox ended early ({run.ended}): {_cut(run.detail or '')}".rstrip(
            ": "
        )
    return checked


def _python_job(checker: Checker, tests: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    program = _PYTHON_FRAME.format(source=checker.source, fn=_FN)
    return {"kind": "call", "program": program, "fn_name": _FN, "inputs": [list(test) for test in tests]}


def _framed(texts: tuple[str, str, str]) -> str:
    """A test's three texts as a C++ checker's start reads them on stdin."""
    sizes = " ".join(str(len(text.encode("utf-8", "replace"))) for text in texts)
    return f"{sizes}\n{''.join(texts)}"


def header(testlib: str | None = None) -> str:
    """The text ``#include "testlib.h"`` stands for: the operator's ``testlib.h``, else our own header."""
    return Path(testlib or TESTLIB_LITE).read_text(encoding="utf-8", errors="replace")


def cpp_source(checker: Checker, testlib: str | None = None) -> str:
    """What is compiled for a C++ checker: its source, the testlib include replaced by the header's text
    (nothing from the host is mounted for it), and the start that writes the test's files."""
    text = header(testlib)
    return _INCLUDE.sub(lambda _: text, checker.source) + "\n" + _CPP_FRAME


def _cpp_job(
    compiled: Compiled | CompileError | str, tests: Sequence[tuple[str, str, str]]
) -> dict[str, Any] | str:
    """The job that runs a compiled C++ checker over ``tests``, or why there is none."""
    if isinstance(compiled, str):
        return compiled
    if isinstance(compiled, CompileError):
        return f"the checker does not compile: {compiled.message}"
    fields = run_fields(compiled)
    fields["run"] = [fields["run"][0], *_PATHS]
    return {"kind": "stdio", "program": "", "fn_name": None, "inputs": [_framed(t) for t in tests], **fields}


async def _compile(
    checkers: Sequence[Checker], pool: SandboxPool, testlib: str | None
) -> list[Compiled | CompileError | str]:
    """Each C++ checker compiled, each distinct one once (and kept by :mod:`.compile` for later batches),
    at most :data:`_COMPILES` compiles at once in the process; a missing compiler is said as text."""
    if not checkers:
        return []
    sources = [(cpp_source(checker, testlib), CPP) for checker in checkers]
    try:
        return list(await compile_all(sources, pool.compile_limits, pool.config, _COMPILES))
    except CompilerMissing as exc:
        return [str(exc)] * len(checkers)


@dataclass(frozen=True)
class Request:
    """One program's outputs for one checker: ``(test index, input, output, answer)`` each."""

    checker: Checker
    tests: tuple[tuple[int, str, str, str], ...]


async def run_checkers(
    requests: Sequence[Request],
    pool: SandboxPool,
    limits: Limits = CHECKER_LIMITS,
    testlib: str | None = None,
) -> list[Checked]:
    """Run each request's checker over its outputs, one sandbox a request, all at once within the pool's
    bound; identical requests run once, a C++ checker is compiled once (:mod:`rewardkit.sandbox.compile`
    keeps it). ``testlib``: the operator's ``testlib.h`` (default: :data:`TESTLIB_LITE`). Requests without
    tests get an empty :class:`Checked`."""
    out: list[Checked] = [Checked() for _ in requests]
    todo = [i for i, request in enumerate(requests) if request.tests]

    cpp = [i for i in todo if requests[i].checker.language == "cpp"]
    compiled = dict(zip(cpp, await _compile([requests[i].checker for i in cpp], pool, testlib), strict=True))
    made: list[dict[str, Any] | str] = []
    for i in todo:
        texts = [(inp, output, answer) for _, inp, output, answer in requests[i].tests]
        made.append(
            _cpp_job(compiled[i], texts) if i in compiled else _python_job(requests[i].checker, texts)
        )
    jobs: list[Job] = []
    runnable: list[int] = []
    for i, job in zip(todo, made, strict=True):
        if isinstance(job, str):
            out[i].error = job
            continue
        digest = json.dumps([requests[i].checker.key, job["inputs"]], default=str)
        jobs.append(Job(job, limits, hashlib.sha256(digest.encode("utf-8", "surrogatepass")).hexdigest()))
        runnable.append(i)
    results = await pool.run(jobs)
    for i, result in zip(runnable, results, strict=True):
        indices = [index for index, *_ in requests[i].tests]
        out[i] = _read(result, indices, requests[i].checker.language == "python", limits)
    return out
