"""What runs inside the sandbox: one program against its tests, one forked process a test.

This file is not imported inside the sandbox: its text goes to the interpreter with ``-c`` (standard
library only, so it needs nothing from the service's environment; and not even ``typing``, ``json`` or
``signal``, which would double its start-up time). It reads one job, in ``marshal``'s format, on stdin::

    {"kind": "stdio" | "call" | "assert", "program": str, "fn_name": str | None, "inputs": [...],
     "timeout_s": float, "memory_bytes": int, "output_bytes": int, "processes": int, "open_files": int,
     "file_bytes": int}

and writes JSON lines on stdout: ``{"ready": true}`` first (before it touches the program), then
``{"compile_error": "SyntaxError: ..."}`` and nothing more, or one ``{"test": i, "status": ...}`` a test
and ``{"done": true}``. A test's ``status`` is ``ok``, ``error`` (with ``error``: ``"Type: message"``),
``timeout``, ``memory`` or ``output_limit``; ``stdout`` is what the program printed (cut at
``output_bytes``), ``value`` the JSON of a call's return value.

Only this parent process writes to stdout. Each test runs in a child forked from it, in a process group of
its own, with stdin an in-memory file holding the test's input, stdout and a report pipe read by the
parent, stderr ``/dev/null``, every other descriptor closed and the rlimits set (CPU seconds, address
space, processes, file size, open files, no core). The parent kills the group at the test's wall-clock
limit or when the output passes its cap (or at once when the service stops reading its results: it ended
the run, or died), and collects its processes: the parent is the sandbox's PID 1
(``bwrap --as-pid-1``: no process of bwrap's runs inside, holding the result pipe), so orphans come to it
and no signal from inside reaches it. The parent is not dumpable (the interpreter it runs from is
execute-only: :mod:`rewardkit.sandbox.bwrap`), so a child (the same user) can neither open
``/proc/<parent>/fd/1``, read the parent's memory nor ptrace it: a program cannot write the parent's result
lines. It never sees the expected outputs of stdin/stdout and call tests either: the service compares.
When the service runs as root, the parent first drops to the user id given in ``argv`` (the sandbox's
processes then count against ``RLIMIT_NPROC``, which does not bind root).
"""

from __future__ import annotations

import builtins
import marshal
import os
import resource
import select
import sys
import time

TYPE_CHECKING = False  # typing, json and signal are not imported: they would double the start-up time
if TYPE_CHECKING:
    from typing import Any, NoReturn

_REPORT_SLACK = 4096  # a report's bytes beyond the value's own cap
_READ = 65536
_REPORTED = (b"ok", b"error", b"memory", b"output_limit")
_SIGKILL, _SIGXCPU = 9, 24  # Linux's numbers (x86, arm, riscv, ppc, s390)
_SIGNALS = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV", 13: "SIGPIPE", 31: "SIGSYS"}
_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


def _json(value: object) -> str:
    """JSON for the flat values of a result line (text, numbers, booleans, ``None``)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    return '"' + str(value).translate(_ESCAPES) + '"'


def _write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _emit(line: dict[str, Any]) -> None:
    text = "{" + ",".join(f"{_json(key)}:{_json(value)}" for key, value in line.items()) + "}\n"
    _write(1, text.encode("utf-8", "replace"))


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # a program's exception whose __str__ fails
        text = ""
    return f"{type(exc).__name__}: {text[:300]}"


def _drop_privileges(uid: str, gid: str) -> None:
    if uid == "-" or os.getuid() != 0:
        return
    os.setgroups([])
    os.setresgid(int(gid), int(gid), int(gid))
    os.setresuid(int(uid), int(uid), int(uid))


def _site() -> None:
    """What ``site`` gives a program, without running the ``.pth`` files of the interpreter's packages
    (the interpreter runs with ``-S``: they are code, and slow): ``exit``/``quit`` and site-packages."""
    import site

    site.setquit()
    sys.path.extend(path for path in site.getsitepackages() if os.path.isdir(path))


def _cpu_limit(job: dict[str, Any]) -> int:
    return int(job["timeout_s"]) + 1


def _set_limits(job: dict[str, Any]) -> None:
    cpu = _cpu_limit(job)
    for which, soft, hard in (
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, job["memory_bytes"], job["memory_bytes"]),
        (resource.RLIMIT_NPROC, job["processes"], job["processes"]),
        (resource.RLIMIT_NOFILE, job["open_files"], job["open_files"]),
        (resource.RLIMIT_FSIZE, job["file_bytes"], job["file_bytes"]),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(which, (soft, hard))


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
    if len(text) > cap:
        return {"status": "output_limit"}
    return {"status": "ok", "value": text}


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
        sys.stdout.flush()
    except MemoryError:
        return {"status": "memory"}
    except BaseException as exc:
        return {"status": "error", "error": _describe(exc)}
    if kind == "call":
        return _encode(value, job["output_bytes"])
    return {"status": "ok"}


def _child(job: dict[str, Any], code: Any, item: Any, out_w: int, report_w: int) -> NoReturn:
    report: dict[str, Any] = {"status": "error", "error": "HarnessError: the test did not start"}
    try:
        os.setpgid(0, 0)
        data = item.encode("utf-8") if job["kind"] == "stdio" else b""
        stdin = os.memfd_create("stdin", 0)
        while data:
            data = data[os.write(stdin, data) :]
        os.lseek(stdin, 0, os.SEEK_SET)
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(stdin, 0)
        os.dup2(out_w, 1)
        os.dup2(null, 2)
        os.dup2(report_w, 3)
        os.closerange(4, 1 << 16)
        _set_limits(job)
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["program"]
        report = _execute(job, code, item)
    except BaseException as exc:  # noqa: B036 - whatever happens, the child reports and exits here
        report = {"status": "error", "error": _describe(exc)}
    try:  # status NUL error NUL value: a format the parent reads without a parser
        error, value = str(report.get("error", "")).replace("\0", " "), str(report.get("value", ""))
        _write(3, "\0".join((report["status"], error, value)).encode("utf-8", "replace"))
    finally:
        os._exit(0)


def _kill(pid: int) -> None:
    for target in (-pid, pid):
        try:
            os.kill(target, _SIGKILL)
        except OSError:
            pass


def _reap(pgid: int) -> None:
    """Collect the killed group's processes: the harness is the sandbox's PID 1, so orphans become its
    children, and a zombie still counts against ``RLIMIT_NPROC``."""
    try:
        while True:
            os.waitpid(-pgid, 0)  # every process of the group was sent SIGKILL: no long wait
    except ChildProcessError:
        pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _collect(
    job: dict[str, Any], pid: int, out_r: int, report_r: int
) -> tuple[str | None, bytes, bytes, int, float]:
    """Read the child's output and report until it exits, its time is up or its output passes the cap;
    then kill what is left of its process group. Returns (verdict or None, stdout, report, wait status,
    the child's CPU seconds)."""
    caps = {out_r: job["output_bytes"], report_r: job["output_bytes"] + _REPORT_SLACK}
    data = {out_r: bytearray(), report_r: bytearray()}
    poller = select.poll()
    for fd in data:
        poller.register(fd, select.POLLIN)
    poller.register(1, 0)  # POLLERR: the service closed its end (it ended the run, or it died)
    pidfd: int | None = None
    try:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pass  # an old kernel: look at the child every few milliseconds
    end = time.monotonic() + job["timeout_s"]
    verdict: str | None = None
    ended: tuple[int, int, Any] | None = None
    while verdict is None and ended is None:
        left = end - time.monotonic()
        if left <= 0:
            verdict = "timeout"
            break
        for fd, _ in poller.poll(left * 1000 if pidfd is not None else min(left * 1000, 5)):
            if fd == pidfd:
                ended = os.wait4(pid, 0)
                continue
            if fd == 1:  # nobody reads the results: end the sandbox (the namespace goes with PID 1)
                _kill(pid)
                _reap(pid)
                os._exit(1)
            chunk = os.read(fd, _READ)
            if not chunk:
                poller.unregister(fd)
            data[fd] += chunk
            if len(data[fd]) > caps[fd]:
                verdict = "output_limit"
        if pidfd is None and ended is None:
            ended = os.wait4(pid, os.WNOHANG)
            ended = ended if ended[0] else None
    _kill(pid)  # the rest of its group (the child itself, when it is still running)
    if ended is None:
        ended = os.wait4(pid, 0)
    _reap(pid)
    if pidfd is not None:
        os.close(pidfd)
    if verdict is None:
        for fd in (out_r, report_r):  # what the pipes still hold
            os.set_blocking(fd, False)
            try:
                while len(data[fd]) <= caps[fd]:
                    chunk = os.read(fd, _READ)
                    if not chunk:
                        break
                    data[fd] += chunk
            except BlockingIOError:  # a process that escaped the group still holds the pipe
                pass
            if len(data[fd]) > caps[fd]:
                verdict = "output_limit"
    cpu_s = ended[2].ru_utime + ended[2].ru_stime
    return verdict, bytes(data[out_r][: caps[out_r]]), bytes(data[report_r]), ended[1], cpu_s


def _verdict(kind: str, report: bytes, status: int, cpu_s: float, cpu_limit: int) -> dict[str, Any]:
    """What a test came to, from the child's report (``status NUL error NUL value``) and how it ended."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum == _SIGXCPU or (signum == _SIGKILL and cpu_s >= cpu_limit - 0.05):
            return {"status": "timeout"}  # past its CPU seconds (the soft limit, then the hard one)
        if not report:
            return {"status": "error", "error": "Signal: " + _SIGNALS.get(signum, f"signal{signum}")}
    if not report:
        if kind == "stdio" and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return {"status": "ok"}  # os._exit(0) after printing: its output is what counts
        return {"status": "error", "error": "NoReport: the test process ended without a report"}
    parts = report.split(b"\0", 2)
    if len(parts) != 3 or parts[0] not in _REPORTED:  # the child is the program's process
        return {"status": "error", "error": "NoReport: the test process wrote a broken report"}
    kept = {"status": parts[0].decode()}
    for key, part in (("error", parts[1]), ("value", parts[2])):
        if part:
            kept[key] = part.decode("utf-8", "replace")
    return kept


def _fork() -> int:
    """``os.fork``, retried for up to a second while the processes of the last test are still dying."""
    for _ in range(100):
        try:
            return os.fork()
        except BlockingIOError:  # EAGAIN: RLIMIT_NPROC
            _reap(0)
            time.sleep(0.01)
    return os.fork()


def _run_test(job: dict[str, Any], code: Any, index: int, item: Any) -> dict[str, Any]:
    start = time.monotonic()
    out_r, out_w = os.pipe()
    report_r, report_w = os.pipe()
    try:
        pid = _fork()
    except OSError as exc:  # the program's own processes (escaped from an earlier test) use up the limit
        for fd in (out_r, out_w, report_r, report_w):
            os.close(fd)
        return {"test": index, "status": "error", "error": "ForkFailed: " + _describe(exc)}
    if pid == 0:
        os.close(out_r)
        os.close(report_r)
        _child(job, code, item, out_w, report_w)
    try:
        os.setpgid(pid, pid)  # the child does it too: whoever is first, the group exists before a kill
    except OSError:
        pass
    os.close(out_w)
    os.close(report_w)
    try:
        verdict, out, report, status, cpu_s = _collect(job, pid, out_r, report_r)
    finally:
        os.close(out_r)
        os.close(report_r)
    result: dict[str, Any] = {"test": index, "seconds": round(time.monotonic() - start, 4)}
    result.update(
        {"status": verdict}
        if verdict is not None
        else _verdict(job["kind"], report, status, cpu_s, _cpu_limit(job))
    )
    result["stdout"] = out.decode("utf-8", "replace")
    return result


def main(argv: list[str]) -> int:
    """Run the job on stdin; see the module's docstring for the protocol."""
    _drop_privileges(argv[1] if len(argv) > 1 else "-", argv[2] if len(argv) > 2 else "-")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.environ.clear()  # bwrap sets PWD, Python LC_CTYPE: the programs get nothing
    _site()
    job = marshal.loads(sys.stdin.buffer.read())
    if job["kind"] == "call":
        import json  # noqa: F401 - the children encode return values with it: imported once, here
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)  # fd 0 stays taken: a pipe made later never lands on it
    os.close(null)
    _emit({"ready": True})
    resource.setrlimit(resource.RLIMIT_NPROC, (job["processes"], job["processes"]))
    try:
        code = compile(job["program"], "<program>", "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: B036 - SyntaxError, ValueError (NUL), RecursionError, MemoryError
        _emit({"compile_error": _describe(exc)})
        return 0
    for index, item in enumerate(job["inputs"]):
        if job["kind"] == "assert":
            try:
                item = compile(item, "<test>", "exec", dont_inherit=True)
            except BaseException as exc:  # noqa: B036 - the test itself is broken
                _emit({"test": index, "status": "bad_test", "error": _describe(exc)})
                continue
        _emit(_run_test(job, code, index, item))
    _emit({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
