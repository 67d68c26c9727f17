"""The test formats of code datasets, read into one form (:class:`Cases`).

- stdin/stdout, ``{"inputs": [...], "outputs": [...]}`` (APPS, TACO, CodeContests; veRL's ``prime_code``
  ground truth): each input is the program's stdin, each output what it must print (a list of lines is
  joined with newlines);
- open-r1's ``verification_info``, ``{"language": "python", "test_cases": [{"input", "output", "type":
  "stdin_stdout"}]}``, and LiveCodeBench's list of ``{"input", "output", "testtype": "stdin"}``;
- call-based, ``{"fn_name": name, "inputs": [[arg, ...], ...], "outputs": [...]}`` (APPS, TACO, veRL):
  the program's function ``name`` (or method of class ``Solution``) is called with each argument list;
- IOI's subtasks (for the ``subtasks`` scoring modes: :mod:`rewardkit.sandbox.scoring`): each test's
  ``"subtask"`` (a name or number, or a list of them) in a list of test cases, or ``"subtasks"`` (one a
  test) beside ``"inputs"``/``"outputs"``; the points of each subtask in ``"subtask_points"`` beside them
  or in the row's ``subtask_points`` column (one point each when neither is given);
- assert-style, ``{"test": code, "entry_point": name}`` (HumanEval: the test code, then
  ``check(<entry_point>)``, is one test) or a list of assert statements (MBPP's ``test_list``: each is one
  test), run after the program in its namespace.

A JSON text of any of these is read first, within bounds (:func:`rewardkit.jsontext.read_json`: at most
``max_chars`` characters and :data:`~rewardkit.jsontext.MAX_DEPTH` levels of nesting); tests already parsed
(nested lists in a request's body, or objects from Python) are measured the same way, without recursion.
What cannot be read raises :class:`TestFormatError`.

>>> read_cases('{"inputs": ["1 2\\\\n"], "outputs": ["3\\\\n"]}')
Cases(kind='stdio', inputs=('1 2\\n',), expected=('3\\n',), fn_name=None, subtasks=None, language=None)
>>> read_cases({"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]}).kind
'call'
>>> read_cases({"test": "def check(f):\\n    assert f(1) == 2", "entry_point": "inc"}).inputs[0][-11:]
'check(inc)\\n'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.jsontext import MAX_CHARS, JSONTextError, check_depth, read_json
from rewardkit.sandbox.languages import LANGUAGES, by_tag
from rewardkit.sandbox.scoring import SubtaskError, Subtasks, read_subtasks

__all__ = ["Cases", "TestFormatError", "UnsupportedLanguage", "read_cases"]


class TestFormatError(ValueError):
    """A row's tests are in no format this module reads, or are too large."""

    __test__ = False  # not a pytest class


class UnsupportedLanguage(TestFormatError):
    """The tests are for a language the sandbox does not run (open-r1's ``language``)."""


@dataclass(frozen=True)
class Cases:
    """A row's tests: ``inputs[i]`` is stdin text (``stdio``), an argument list (``call``) or test code
    (``assert``); ``expected[i]`` the output or return value (``None`` for ``assert``)."""

    __test__ = False

    kind: str
    inputs: tuple[Any, ...]
    expected: tuple[Any, ...]
    fn_name: str | None = None
    subtasks: Subtasks | None = None
    language: str | None = None  # the language the tests are for, where they say (open-r1's ``language``)

    def size(self) -> int:
        """Characters of the tests, roughly as they travel (JSON)."""
        return len(json.dumps([self.inputs, self.expected], default=str))


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise TestFormatError(f"a stdin/stdout test's {what} must be text, got {type(value).__name__}")


def _pairs(inputs: Any, outputs: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise TestFormatError('"inputs" and "outputs" must be lists')
    if len(inputs) != len(outputs):
        raise TestFormatError(f"{len(inputs)} inputs but {len(outputs)} outputs")
    if not inputs:
        raise TestFormatError("no tests")
    return inputs, outputs


def _stdio(inputs: Sequence[Any], outputs: Sequence[Any]) -> Cases:
    return Cases(
        "stdio",
        tuple(_text(i, "input") for i in inputs),
        tuple(_text(o, "output") for o in outputs),
    )


def _from_mapping(value: Mapping[str, Any], entry_point: str | None) -> Cases:
    if "test_cases" in value:  # open-r1's verification_info
        said = str(value.get("language") or "python").lower()
        language = by_tag(said)
        if language is None:
            known = ", ".join(LANGUAGES)
            raise UnsupportedLanguage(f"the tests are for {said[:40]!r}; the sandbox runs {known}")
        return dataclasses.replace(_from_list(value["test_cases"]), language=language.name)
    if "inputs" in value or "outputs" in value:
        inputs, outputs = _pairs(value.get("inputs"), value.get("outputs"))
        fn_name = value.get("fn_name")
        if not fn_name:
            return _stdio(inputs, outputs)
        if not isinstance(fn_name, str) or not fn_name.isidentifier():
            raise TestFormatError(f"fn_name must be a Python name, got {fn_name!r}")
        args = tuple(i if isinstance(i, list) else [i] for i in inputs)
        return Cases("call", args, tuple(outputs), fn_name)
    if "test" in value:
        return _asserts(value["test"], value.get("entry_point") or entry_point)
    raise TestFormatError(
        'no tests: expected "inputs"/"outputs" (with "fn_name" for call-based), "test_cases" (open-r1) '
        'or "test" (HumanEval)'
    )


def _from_list(value: Sequence[Any]) -> Cases:
    if all(isinstance(item, str) for item in value):  # MBPP's test_list
        if not value:
            raise TestFormatError("no tests")
        return Cases("assert", tuple(value), (None,) * len(value))
    inputs, outputs = [], []
    for case in value:
        if not isinstance(case, Mapping) or "input" not in case or "output" not in case:
            raise TestFormatError('each test case must be an object with "input" and "output"')
        kind = case.get("type") or case.get("testtype") or "stdin_stdout"
        if kind not in ("stdin_stdout", "stdin"):
            raise TestFormatError(f"test cases of type {str(kind)[:40]!r} are not supported (stdin only)")
        inputs.append(case["input"])
        outputs.append(case["output"])
    return _stdio(*_pairs(inputs, outputs))


def _asserts(test: Any, entry_point: Any) -> Cases:
    if isinstance(test, list):
        return _from_list(test)
    if not isinstance(test, str) or not test.strip():
        raise TestFormatError('"test" must be the test code')
    if entry_point is not None:
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise TestFormatError(f"entry_point must be a Python name, got {entry_point!r}")
        test = f"{test}\ncheck({entry_point})\n"
    return Cases("assert", (test,), (None,))


def _subtasks(value: Any, cases: Cases, points: Any) -> Cases:
    """``cases`` with the subtasks ``value`` gives its tests (none given: ``cases`` as it is)."""
    per_test: Any = None
    if isinstance(value, Mapping):
        points = value.get("subtask_points") if points is None else points
        per_test = value.get("subtasks")
        value = value.get("test_cases")
    if isinstance(value, list) and any(isinstance(case, Mapping) and "subtask" in case for case in value):
        per_test = [case.get("subtask") if isinstance(case, Mapping) else None for case in value]
    if per_test is None:
        return cases
    if not isinstance(per_test, list) or len(per_test) != len(cases.inputs) or None in per_test:
        raise TestFormatError("every test needs a subtask (one for each test), or none does")
    try:
        return dataclasses.replace(cases, subtasks=read_subtasks(per_test, points))
    except SubtaskError as exc:
        raise TestFormatError(str(exc)) from None


def read_cases(
    value: Any, *, entry_point: str | None = None, max_chars: int | None = None, subtask_points: Any = None
) -> Cases:
    """A row's tests in any format of the module's docstring (a dict, a list or their JSON text).

    ``entry_point`` is HumanEval's, when it comes as a column of its own, ``subtask_points`` the row's
    column of that name (the points of its subtasks). ``max_chars`` bounds the tests'
    size (``None``: :data:`~rewardkit.jsontext.MAX_CHARS`). Raises :class:`TestFormatError` (a
    ``ValueError``) naming what is wrong.

    >>> read_cases("[" * 200_000 + "]" * 200_000)
    Traceback (most recent call last):
    ...
    rewardkit.sandbox.cases.TestFormatError: the tests: JSON text nested more than 100 levels deep (the limit)
    """
    try:
        if isinstance(value, str):
            value = read_json(value, max_chars=MAX_CHARS if max_chars is None else max_chars)
        else:
            check_depth(value, what="the tests")  # before anything recurses into it (sizing, encoding)
    except JSONTextError as exc:
        raise TestFormatError(f"the tests: {exc}" if isinstance(value, str) else str(exc)) from None
    if isinstance(value, Mapping):
        cases = _from_mapping(value, entry_point)
    elif isinstance(value, list):
        cases = _from_list(value)
    else:
        raise TestFormatError(f"tests must be an object, a list or JSON text, got {type(value).__name__}")
    if max_chars is not None and cases.size() > max_chars:
        raise TestFormatError(f"the tests are over {max_chars} characters (the limit)")
    return _subtasks(value, cases, subtask_points)
