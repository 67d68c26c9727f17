"""What runs inside the sandbox: one program against its tests, in forked processes.

This file is not imported inside the sandbox: its text, followed by :mod:`rewardkit.sandbox.pyrun`'s (a
Python program's test) and :mod:`rewardkit.sandbox.build`'s (a compile job's handler, and the entry
point), goes to the interpreter with ``-c`` (standard library only, not even ``typing``, ``json`` or
``signal``, which would double its start-up time). It reads one job, in ``marshal``'s format, on stdin::

    {"kind": "stdio" | "call" | "assert", "program": str, "fn_name": str | None, "inputs": [...],
     "timeout_s": float, "memory_bytes": int, "output_bytes": int, "processes": int, "open_files": int,
     "file_bytes": int, "seccomp": bytes | None}

(a compiled program's: also ``binary``, ``binary_path``, ``run``, ``address_bytes``; see
:mod:`rewardkit.sandbox.build`) and writes JSON lines on stdout: ``{"ready": true}`` first (before it
touches the program), then
``{"compile_error": "SyntaxError: ..."}`` and nothing more, or one ``{"test": i, "status": ...}`` a test
and ``{"done": true}``. A test's ``status`` is ``ok``, ``error`` (with ``error``: ``"Type: message"``),
``timeout``, ``memory`` or ``output_limit`` (``bad_test`` when a test's own code does not compile);
``stdout`` is what the program printed (cut at ``output_bytes``), ``value`` the JSON of a call's return
value.

Only this parent process writes to stdout. The tests run in a child forked from it, in a process group of its
own, one after the other (as the datasets' own judges run them, so a test costs no fork): each with a fresh
namespace, its non-daemon threads joined at its end (as the interpreter joins them at exit), stdin an unnamed
file in ``/tmp`` holding its input; stdout and a report pipe read by the parent, stderr ``/dev/null``, every
other descriptor closed, the rlimits set (CPU seconds, address space, threads, file size, open files, no core)
and the job's seccomp filter installed: the child may start threads but no process
(:mod:`rewardkit.sandbox.seccomp`; without a filter, not even a thread), so its address space bounds the
sandbox's memory. After each test the child waits for the parent's go, so no output runs into the next test's.
The parent kills the group at a test's wall-clock limit, when its output passes the cap or when the child
dies, and forks a new child for the tests after it. It is the sandbox's PID 1 (``bwrap --as-pid-1``: no
process of bwrap's runs inside, holding the result pipe): orphans come to it, no signal from inside reaches
it, and the service ends a run by killing it; it ends by itself when nobody reads its results (the service
died). The parent is not dumpable (the interpreter it runs from is execute-only:
:mod:`rewardkit.sandbox.bwrap`), so a child (the same user) can neither open ``/proc/<parent>/fd/1``, read the
parent's memory nor ptrace it: a program cannot write the parent's result lines. It never sees the expected
outputs of stdin/stdout and call tests either: the service compares. When the service runs as root, the parent
first drops to the user id given in ``argv`` (``RLIMIT_NPROC`` does not bind root; the drop clears the
parent-death signal bwrap set, so bwrap's death does not end it).
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import sys
import time

TYPE_CHECKING = False  # typing, json and signal are not imported: they would double the start-up time
if TYPE_CHECKING:  # inside the sandbox, defined above this text
    from typing import Any, NoReturn

    from rewardkit.sandbox.pyrun import _describe, _execute, _site

_REPORT_SLACK = 4096  # a report's bytes beyond the value's own cap
_READ = 65536
_REPORTED = (b"ok", b"error", b"memory", b"output_limit")
_RUN_ONE = 1  # a compiled program's child runs one test (it becomes the program)
_SIGKILL, _SIGXCPU = 9, 24  # Linux's numbers (x86, arm, riscv, ppc, s390)
_NAMES = """HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM STKFLT CHLD CONT STOP TSTP
TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS"""
_SIGNALS = dict(enumerate(_NAMES.split(), start=1))
_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {10: "\\n", 9: "\\t", 34: '\\"', 92: "\\\\"}


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


def _drop_privileges(uid: str, gid: str) -> None:
    if uid == "-" or os.getuid() != 0:
        return
    os.setgroups([])
    os.setresgid(int(gid), int(gid), int(gid))
    os.setresuid(int(uid), int(uid), int(uid))


def _set_limits(job: dict[str, Any], tests: int) -> None:
    """The child's rlimits; its CPU seconds cover its ``tests`` (each test's wall clock is the parent's)."""
    cpu = tests * (int(job["timeout_s"]) + 1)
    space = job.get("address_bytes", job["memory_bytes"])
    space = resource.RLIM_INFINITY if space < 0 else space
    if "run" in job:  # a judge's stack: as deep as the memory limit
        resource.setrlimit(resource.RLIMIT_STACK, (job["memory_bytes"], job["memory_bytes"]))
    for which, soft, hard in (
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, space, space),
        (resource.RLIMIT_NPROC, job["processes"], job["processes"]),
        (resource.RLIMIT_NOFILE, job["open_files"], job["open_files"]),
        (resource.RLIMIT_FSIZE, job["file_bytes"], job["file_bytes"]),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(which, (soft, hard))


def _no_processes(program: bytes | None) -> None:
    """Install the seccomp filter ``program``; without one, or where it cannot be installed, leave no room
    for a new task at all (this process and the harness are two already). First ask the kernel to kill
    this process, not the harness, when the sandbox's memory cgroup is full: any process may raise its own
    ``oom_score_adj``, once dumpable again (a fork of the harness is not; nothing else runs as its user)."""
    try:
        import ctypes

        class Program(ctypes.Structure):  # struct sock_fprog
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

        prctl = ctypes.CDLL(None).prctl  # PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
        prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")
        if (
            program
            and not prctl(38, 1, 0, 0, 0)
            and not prctl(22, 2, ctypes.byref(Program(len(program) // 8, program)))
        ):
            return
    except (ImportError, OSError, AttributeError):
        pass
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))


def _frame(report: dict[str, Any]) -> bytes:
    """A report as the child sends it: its length, a newline, ``status NUL error NUL value``."""
    error = str(report.get("error", "")).replace("\0", " ")
    body = "\0".join((report["status"], error, str(report.get("value", "")))).encode("utf-8", "replace")
    return str(len(body)).encode() + b"\n" + body


def _stdin(text: str) -> None:
    """Make ``text`` the program's stdin (fd 0 and ``sys.stdin``): a file in ``/tmp`` of no name (a memfd
    would be memory outside the sandbox's bounds: the seccomp filter refuses them)."""
    fd = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    _write(fd, text.encode("utf-8", "replace"))
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115


def _child(
    job: dict[str, Any], code: Any, items: list[Any], start: int, fds: tuple[int, int, int]
) -> NoReturn:
    """Run the tests from ``start`` on, one after the other, each reported on fd 3; after each, wait on fd 4
    for the parent's go (it has read the test's output by then: no output runs into the next test's)."""
    try:
        os.setpgid(0, 0)
        null = os.open("/dev/null", os.O_WRONLY)
        for fd, target in ((fds[0], 1), (null, 2), (fds[1], 3), (fds[2], 4)):
            os.dup2(fd, target)
        os.closerange(5, 1 << 16)
        _set_limits(job, _RUN_ONE if "run" in job else len(items) - start)
        _no_processes(job.get("seccomp"))
        if "run" in job:  # it becomes the program: its exit status is the report
            _stdin(items[start])
            for fd in (3, 4):
                os.set_inheritable(fd, False)
            os.execve(job["run"][0], job["run"], {})
        stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["program"]
        for index in range(start, len(items)):
            _stdin(items[index] if job["kind"] == "stdio" else "")
            sys.stdout, sys.stderr = stdout, stderr
            _write(3, _frame(_execute(job, code, items[index])))
            if index + 1 == len(items) or os.read(4, 1) != b"g":
                break
    except BaseException as exc:  # noqa: B036 - a harness failure in the child: reported, then out
        try:
            _write(3, _frame({"status": "error", "error": "HarnessError: " + _describe(exc)}))
        except BaseException:  # noqa: B036, S110 - the program closed fd 3: the parent sees no report
            pass
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
    for target, flags in ((-pgid, 0), (-1, os.WNOHANG)):  # the group was sent SIGKILL: no long wait
        try:
            while os.waitpid(target, flags)[0]:
                pass
        except ChildProcessError:
            pass


def _fork() -> int:
    """``os.fork``, retried for up to a second while the processes of a killed child are still dying."""
    for _ in range(100):
        try:
            return os.fork()
        except BlockingIOError:  # EAGAIN: RLIMIT_NPROC
            _reap(0)
            time.sleep(0.01)
    return os.fork()


class _Child:
    """The parent's side of one child: its pipes, its end, and reading one test's output and report."""

    def __init__(self, job: dict[str, Any], pid: int, out_r: int, report_r: int, tests: int) -> None:
        self.job, self.pid, self.out_r, self.report_r = job, pid, out_r, report_r
        self.cpu_limit = (_RUN_ONE if "run" in job else tests) * (int(job["timeout_s"]) + 1)
        self.caps = {out_r: job["output_bytes"], report_r: job["output_bytes"] + _REPORT_SLACK}
        self.data = {out_r: bytearray(), report_r: bytearray()}
        self.poller = select.poll()
        for fd in self.data:
            self.poller.register(fd, select.POLLIN)
        self.poller.register(1, 0)  # POLLERR: the service closed its end (it ended the run, or it died)
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
            self.poller.register(self.pidfd, select.POLLIN)
        except (AttributeError, OSError):
            pass  # an old kernel: look at the child every few milliseconds
        self.ended: tuple[int, int, Any] | None = None

    def _report(self) -> bytes | None:
        """The next complete report, or ``None``; ``ValueError`` for a malformed one (the program's)."""
        buffer = self.data[self.report_r]
        cut = buffer.find(b"\n")
        if cut < 0:
            if len(buffer) > 20:
                raise ValueError("no length")
            return None
        size = int(buffer[:cut]) if buffer[:cut].isdigit() else -1
        if not 0 <= size <= self.caps[self.report_r]:
            raise ValueError("bad length")
        if len(buffer) < cut + 1 + size:
            return None
        body = bytes(buffer[cut + 1 : cut + 1 + size])
        del buffer[: cut + 1 + size]
        return body

    def _drain(self, fd: int) -> None:
        os.set_blocking(fd, False)
        try:
            while len(self.data[fd]) <= self.caps[fd]:
                chunk = os.read(fd, _READ)
                if not chunk:
                    break
                self.data[fd] += chunk
        except BlockingIOError:  # nothing more now (a process of the program may still hold the pipe)
            pass
        finally:
            os.set_blocking(fd, True)

    def test(self) -> tuple[dict[str, Any], bool]:
        """Wait for the current test's end: (its result, whether the child goes on to the next test)."""
        end = time.monotonic() + self.job["timeout_s"]
        out = self.data[self.out_r]
        while True:
            try:
                report = self._report()
            except ValueError:
                return {"status": "error", "error": "NoReport: the test process wrote a broken report"}, False
            if report is not None:
                self._drain(self.out_r)
                if len(out) > self.caps[self.out_r]:
                    return {"status": "output_limit"}, False
                return _verdict(self.job, report, 0, 0.0, 1), self.ended is None
            if len(out) > self.caps[self.out_r] or len(self.data[self.report_r]) > self.caps[self.report_r]:
                return {"status": "output_limit"}, False
            if self.ended is not None:  # it ended within this test, without a report
                status, use = self.ended[1], self.ended[2]
                if "run" in self.job and use.ru_maxrss > self.job["memory_bytes"] >> 10:
                    return {"status": "memory"}, False  # its peak resident size (KiB), as judges measure
                cpu_s = use.ru_utime + use.ru_stime
                return _verdict(self.job, b"", status, cpu_s, self.cpu_limit), False
            left = end - time.monotonic()
            if left <= 0:
                return {"status": "timeout"}, False
            self._wait(left)

    def _wait(self, left: float) -> None:
        for fd, _ in self.poller.poll(left * 1000 if self.pidfd is not None else min(left * 1000, 5)):
            if fd == self.pidfd:
                self.ended = os.wait4(self.pid, 0)
                self.poller.unregister(fd)
                for pipe in (self.out_r, self.report_r):
                    self._drain(pipe)  # what it wrote before it ended
            elif fd == 1:  # nobody reads the results: end the sandbox (the namespace goes with PID 1)
                _kill(self.pid)
                _reap(self.pid)
                os._exit(1)
            else:
                chunk = os.read(fd, _READ)
                if not chunk:
                    self.poller.unregister(fd)
                self.data[fd] += chunk
        if self.pidfd is None and self.ended is None:
            ended = os.wait4(self.pid, os.WNOHANG)
            self.ended = ended if ended[0] else None

    def take_output(self) -> bytes:
        out = self.data[self.out_r]
        taken = bytes(out[: self.caps[self.out_r]])
        out.clear()
        return taken

    def close(self) -> None:
        _kill(self.pid)  # the rest of its group (the child itself, when it is still running)
        if self.ended is None:
            self.ended = os.wait4(self.pid, 0)
        _reap(self.pid)
        for fd in (self.out_r, self.report_r) + ((self.pidfd,) if self.pidfd is not None else ()):
            os.close(fd)


def _verdict(job: dict[str, Any], report: bytes, status: int, cpu_s: float, cpu_limit: int) -> dict[str, Any]:
    """What a test came to, from its report (``status NUL error NUL value``) or how its process ended."""
    kind = job["kind"]
    if not report:
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum == _SIGXCPU or (signum == _SIGKILL and cpu_s >= cpu_limit - 0.05):
                return {"status": "timeout"}  # past its CPU seconds (the soft limit, then the hard one)
            return {"status": "error", "error": "Signal: SIG" + _SIGNALS.get(signum, str(signum))}
        if kind == "stdio" and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return {"status": "ok"}  # os._exit(0) after printing: its output is what counts
        if "run" in job and os.WIFEXITED(status):
            return {"status": "error", "error": f"Exit: {os.WEXITSTATUS(status)}"}
        return {"status": "error", "error": "NoReport: the test process ended without a report"}
    parts = report.split(b"\0", 2)
    if len(parts) != 3 or parts[0] not in _REPORTED:  # the child is the program's process
        return {"status": "error", "error": "NoReport: the test process wrote a broken report"}
    kept = {"status": parts[0].decode()}
    for key, part in (("error", parts[1]), ("value", parts[2])):
        if part:
            kept[key] = part.decode("utf-8", "replace")
    return kept


def _run_from(job: dict[str, Any], code: Any, items: list[Any], start: int) -> int:
    """Fork a child that runs the tests from ``start`` on; emit each test's result as it ends. Returns
    where the next child starts: after the test that ended this one (a timeout, a crash, too much
    output), or ``len(items)``."""
    out_r, out_w = os.pipe()
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    try:
        pid = _fork()
    except OSError as exc:  # the program's own processes (escaped from an earlier test) use up the limit
        for fd in (out_r, out_w, report_r, report_w, go_r, go_w):
            os.close(fd)
        _emit({"test": start, "status": "error", "error": "ForkFailed: " + _describe(exc), "stdout": ""})
        return start + 1
    if pid == 0:
        for fd in (out_r, report_r, go_w):
            os.close(fd)
        _child(job, code, items, start, (out_w, report_w, go_r))
    try:
        os.setpgid(pid, pid)  # the child does it too: whoever is first, the group exists before a kill
    except OSError:
        pass
    for fd in (out_w, report_w, go_r):
        os.close(fd)
    child = _Child(job, pid, out_r, report_r, len(items) - start)
    index = start
    try:
        while index < len(items):
            began = time.monotonic()
            result, going = child.test()
            line = {"test": index, "seconds": round(time.monotonic() - began, 4), **result}
            _emit({**line, "stdout": child.take_output().decode("utf-8", "replace")})
            index += 1
            if not going:
                break
            if index < len(items):
                try:
                    os.write(go_w, b"g")
                except OSError:  # the child is gone: the next test sees it
                    pass
        return index
    finally:
        os.close(go_w)
        child.close()


def main(argv: list[str], handlers: dict[str, Any] | None = None) -> int:
    """Run the job on stdin; see the module's docstring for the protocol. ``handlers``: a job kind's own
    handler (``compile``), called with the job after the ready line."""
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
    if handlers and job["kind"] in handlers:
        return int(handlers[job["kind"]](job))
    resource.setrlimit(resource.RLIMIT_NPROC, (job["processes"], job["processes"]))
    code: Any = None
    if "run" in job:  # a compiled program: its binary, executable, in the work directory
        import ctypes  # noqa: F401 - each test's child installs its filter with it: imported once, here

        fd = os.open(job["binary_path"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        _write(fd, job["binary"])
        os.close(fd)
    else:
        try:
            code = compile(job["program"], "<program>", "exec", dont_inherit=True)
        except BaseException as exc:  # noqa: B036 - SyntaxError, ValueError (NUL), RecursionError, MemoryError
            _emit({"compile_error": _describe(exc)})
            return 0
    items = list(job["inputs"])
    if job["kind"] == "assert":
        for index, item in enumerate(items):
            try:
                items[index] = compile(item, "<test>", "exec", dont_inherit=True)
            except BaseException as exc:  # noqa: B036 - the test itself is broken
                _emit({"test": index, "status": "bad_test", "error": _describe(exc)})
                _emit({"done": True})
                return 0
    index = 0
    while index < len(items):
        index = _run_from(job, code, items, index)
    _emit({"done": True})
    return 0
