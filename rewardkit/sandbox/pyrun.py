"""A Python program's test, run inside the sandbox: the first part of the harness's text.

Never imported inside the sandbox: :func:`rewardkit.sandbox.bwrap.harness_source` gives the interpreter
this text after :mod:`rewardkit.sandbox.harness`'s and before :mod:`rewardkit.sandbox.build`'s, with ``-c``
(standard library only). Here: a program's namespace, its function call or assert-style test, its threads
joined at the end, and what it came to as a report (see the harness for the protocol).
"""

from __future__ import annotations

import builtins
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # a program's exception whose __str__ fails
        text = ""
    return f"{type(exc).__name__}: {text[:300]}"


def _site() -> None:
    """What ``site`` gives a program, without running the ``.pth`` files of the interpreter's packages
    (the interpreter runs with ``-S``: they are code, and slow): ``exit``/``quit`` and site-packages."""
    import site

    site.setquit()
    sys.path.extend(path for path in site.getsitepackages() if os.path.isdir(path))


def _function(namespace: dict[str, Any], name: str) -> Any:
    if callable(namespace.get(name)):
        return namespace[name]
    solution = namespace.get("Solution")  # LeetCode style: a method of class Solution (APPS, TACO)
    if isinstance(solution, type) and hasattr(solution, name):
        return getattr(solution(), name)
    raise NameError(f"the program defines no function {name!r}")


def _encode(value: Any, cap: int) -> dict[str, Any]:
    import json  # imported by the parent before it forks, for call-based jobs only

    def fallback(obj: Any) -> Any:
        if isinstance(obj, set | frozenset):
            try:
                return sorted(obj)
            except TypeError:
                return list(obj)
        if isinstance(obj, bytes):
            return obj.decode("utf-8", "replace")
        return {"__repr__": repr(obj)[:200]}

    try:
        text = json.dumps(value, default=fallback)
    except (ValueError, TypeError, RecursionError) as exc:
        return {"status": "error", "error": "UnencodableValue: " + _describe(exc)}
    return {"status": "output_limit"} if len(text) > cap else {"status": "ok", "value": text}


def _join_threads() -> None:
    """Join the program's non-daemon threads, as the interpreter does at exit (the test's clock bounds it)."""
    threading = sys.modules.get("threading")  # absent: the program started no thread
    me = threading.current_thread() if threading else None
    while threading and (left := [t for t in threading.enumerate() if not (t.daemon or t is me)]):
        left[0].join()  # one at a time, then look again: a thread may have started another


def _execute(job: dict[str, Any], code: Any, item: Any) -> dict[str, Any]:
    """Run the program (and the test) in this child; what it did, as a report."""
    kind = job["kind"]
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    value: Any = None
    try:
        try:
            exec(code, namespace)
            if kind == "call":
                value = _function(namespace, job["fn_name"])(*item)
            elif kind == "assert":
                exec(item, namespace)
        except SystemExit as exc:  # a normal end for a script; a test or a call that never ran otherwise
            if kind != "stdio" or exc.code not in (None, 0):
                return {"status": "error", "error": f"SystemExit: {str(exc.code)[:100]}"}
        _join_threads()
        sys.stdout.flush()
    except MemoryError:
        return {"status": "memory"}
    except BaseException as exc:
        return {"status": "error", "error": _describe(exc)}
    if kind == "call":
        return _encode(value, job["output_bytes"])
    return {"status": "ok"}
