"""One program's tests as they end, and its verdict: the reasons of the ``code`` reward and its score.

A :class:`Tally` sees each test's result as the sandbox reports it (``see``: whether the run goes on), and
:func:`verdict` turns the tally and the run into the reward's value, reason and details. With a checker
(:mod:`rewardkit.sandbox.checker`), the tests are held until the checker has judged the outputs
(:meth:`Tally.to_check`, then :meth:`Tally.settle`), and then seen in order. The score is the scoring
mode's (:mod:`rewardkit.sandbox.scoring`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import Explained
from rewardkit.sandbox.cases import Cases
from rewardkit.sandbox.checker import Checked, Checker, Request
from rewardkit.sandbox.compare import same_stdout, same_value
from rewardkit.sandbox.run import RunResult, TestResult
from rewardkit.sandbox.scoring import compile_error_score, score, stops_at_first_failure

__all__ = ["SHOWN", "TYPE_NAME", "Tally", "cut", "verdict"]

SHOWN = 300
TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")  # an exception's type or a signal's name


def cut(value: Any) -> str:
    """A value as details show it: text, at most :data:`SHOWN` characters and how many there were."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters in all)"


@dataclass
class Tally:
    """One job's tests as they end: passed or not, the first failure, whether to go on."""

    cases: Cases
    mode: str
    tol: float
    checker: Checker | None = None
    passed: int = 0
    bad_test: str | None = None
    failure: tuple[str, dict[str, Any]] | None = None
    seen: set[int] = field(default_factory=set)
    ok: set[int] = field(default_factory=set)
    held: list[TestResult] = field(default_factory=list)
    outputs: dict[int, str] = field(default_factory=dict)
    checked: Checked | None = None

    def see(self, test: TestResult) -> bool:
        self.seen.add(test.index)
        if self.checker is not None and self.checked is None and self.cases.kind == "stdio":
            self.held.append(test)  # judged once the checker has spoken
            if test.status == "ok":
                self.outputs[test.index] = test.stdout  # whole: the sandbox cuts what it keeps after this
                return True
            return not stops_at_first_failure(self.mode) and test.status != "timeout"
        if test.status == "bad_test":
            self.bad_test = test.error or "the test does not compile"
            return False
        reason = self._reason(test)
        if reason is None:
            self.passed += 1
            self.ok.add(test.index)
            return True
        if self.failure is None:
            expected = self.cases.expected[test.index]
            detail = {"test": test.index, "input": cut(self.cases.inputs[test.index])}
            if expected is not None:
                detail["expected"] = cut(expected)
            got = test.value if self.cases.kind == "call" else test.stdout
            detail["got"] = cut(got or "")
            if test.error:
                detail["error"] = cut(test.error)
            if self.checked is not None and test.index in self.checked.messages:
                detail["checker"] = self.checked.messages[test.index]
            self.failure = (reason, detail)
        return not stops_at_first_failure(self.mode) and test.status != "timeout"

    def to_check(self) -> Request:
        """The checker's work: each held test that ran to its end, with its input, output and answer."""
        if self.checker is None:
            raise ValueError("no checker")
        tests = tuple(
            (i, self.cases.inputs[i], self.outputs[i], self.cases.expected[i]) for i in sorted(self.outputs)
        )
        return Request(self.checker, tests)

    def settle(self, checked: Checked) -> None:
        """Take the checker's verdicts, then see the held tests in order, as a run without a checker would."""
        self.checked = checked
        if checked.error is not None:
            return
        for test in sorted(self.held, key=lambda t: t.index):
            if not self.see(test):
                break

    def _reason(self, test: TestResult) -> str | None:
        kind, index = self.cases.kind, test.index
        if test.status == "ok":
            if self.checked is not None:
                said = self.checked.verdicts.get(index, "wrong_answer")
                return None if said == "ok" else f"{said}:{index}"
            if kind == "stdio" and not same_stdout(test.stdout, self.cases.expected[index], self.tol):
                return f"wrong_answer:{index}"
            if kind == "call" and not same_value(test.value or "null", self.cases.expected[index], self.tol):
                return f"wrong_answer:{index}"
            return None
        if test.status == "error":
            name, _, said = (test.error or "").partition(":")
            if kind == "assert" and name == "AssertionError":
                return f"wrong_answer:{index}"
            if name == "Exit" and said.strip().isdigit():  # a compiled program's nonzero exit status
                return f"runtime_error:exit:{said.strip()}"
            match = TYPE_NAME.match(said.strip() if name == "Signal" else name.strip())  # "Signal: SIGSEGV"
            return f"runtime_error:{match.group(0) if match else 'unknown'}"
        return (
            test.status if test.status in ("timeout", "memory", "output_limit") else "runtime_error:unknown"
        )


def verdict(tally: Tally, run: RunResult) -> Explained:
    """The reward's value, reason and details for one program's run."""
    total = len(tally.cases.inputs)
    if run.compile_error is not None:
        return Explained(compile_error_score(tally.mode), "compile_error", {"error": cut(run.compile_error)})
    if tally.bad_test is not None:
        return Explained(None, "bad_tests", {"error": cut(tally.bad_test)})
    if tally.checked is not None and tally.checked.error is not None:
        return Explained(None, "checker_error", {"error": tally.checked.error})
    detail: dict[str, Any] = {"passed": tally.passed, "tests": total}
    reason = tally.failure[0] if tally.failure else None
    if tally.failure:
        detail["first_failure"] = tally.failure[1]
    elif tally.passed < total:  # the sandbox ended before its tests did
        ended = {"wall_clock": "timeout", "output_limit": "output_limit"}
        reason = ended.get(run.ended, "runtime_error:crash")
        detail["ended"] = run.ended
    value = score(tally.mode, [i in tally.ok for i in range(total)], tally.cases.subtasks)
    return Explained(value, reason, detail)
