r"""What runs inside a compile sandbox: the compiler on one source, the binary or the diagnostics out.

Like :mod:`rewardkit.sandbox.harness`, never imported inside the sandbox: its text follows the harness's
(whose helpers it uses) in the interpreter's ``-c`` argument, and its last line is the entry point of
both. A compile job (``marshal``'s format on stdin, as every job)::

    {"kind": "compile", "program": str, "source_path": str, "binary_path": str, "argv": [str, ...],
     "timeout_s": float, "memory_bytes": int, "output_bytes": int, "processes": int, "open_files": int,
     "file_bytes": int, "seccomp": bytes | None}

The source is written to ``source_path``; the compiler (``argv``) runs in a child of its own process
group with an environment of ``PATH`` and ``TMPDIR`` only, stdin ``/dev/null``, stdout and stderr one
pipe (kept up to 64 KiB), the rlimits (CPU seconds, each process's address space ``memory_bytes``,
``processes`` at once, file size ``file_bytes``: the binary's cap, open files, no core) and the compiler's
seccomp filter (processes allowed, no namespace, mount or uncounted memory:
:func:`rewardkit.sandbox.seccomp.compiler_filter`). At ``timeout_s`` of wall clock the group is killed.
The result is one line: ``{"binary": <base64>}``, or ``{"compile_error": <the compiler's words>}``.

Running a compiled program is the harness's (``kind`` ``stdio``, with ``binary``: its bytes, ``binary_path``:
where the harness writes them, executable, ``run``: its argv, and ``address_bytes``: its ``RLIMIT_AS``,
``-1`` for none where a memory cgroup bounds the sandbox): each test's child sets its rlimits (a stack as
large as ``memory_bytes``) and the seccomp filter (no process), then ``execve``: the binary, with an
empty environment; its exit status is the test's report (exit 0 ``ok``, else ``Exit: <code>`` or
``Signal: SIG...``; ``SIGXCPU`` or ``SIGKILL`` at the CPU limit ``timeout``) and a peak resident size
(``ru_maxrss``) over ``memory_bytes`` is ``memory``, as judges measure it.
"""

from __future__ import annotations

import os
import resource
import select
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # inside the sandbox these are the harness's own, defined above this text
    from typing import Any

    from rewardkit.sandbox.harness import _emit, _kill, _reap, _write, main

_KEPT = 1 << 16  # bytes of the compiler's output kept
_ENV = {"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp", "LANG": "C"}


def _compiler(job: dict[str, Any], out_w: int) -> None:
    """The child: limits, filter, then the compiler (never returns)."""
    try:
        os.setpgid(0, 0)
        null = os.open("/dev/null", os.O_RDONLY)
        for fd, target in ((null, 0), (out_w, 1), (out_w, 2)):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        cpu = int(job["timeout_s"]) + 1
        for which, limit in (
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_AS, job["memory_bytes"]),
            (resource.RLIMIT_NPROC, job["processes"]),
            (resource.RLIMIT_NOFILE, job["open_files"]),
            (resource.RLIMIT_FSIZE, job["file_bytes"]),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(which, (limit, limit))
        program = job.get("seccomp")
        if program:
            import ctypes

            class Program(ctypes.Structure):  # struct sock_fprog
                _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

            prctl = ctypes.CDLL(None).prctl
            prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: it may raise its own oom_score_adj
            with open("/proc/self/oom_score_adj", "w") as adj:
                adj.write("1000")  # the compiler, not the harness, goes first when memory runs out
            if prctl(38, 1, 0, 0, 0) or prctl(22, 2, ctypes.byref(Program(len(program) // 8, program))):
                raise OSError("the compiler's seccomp filter could not be installed")
        os.execve(job["argv"][0], job["argv"], _ENV)
    except BaseException as exc:  # noqa: B036 - reported as the compiler's output, then out
        _write(2, f"the compiler could not start: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(127)


def _collect(pid: int, out_r: int, timeout_s: float) -> tuple[bytes, int | None]:
    """The compiler's output and wait status (``None``: killed at its wall clock)."""
    kept = bytearray()
    end = time.monotonic() + timeout_s
    poller = select.poll()
    poller.register(out_r, select.POLLIN)
    open_ = True
    while open_:
        left = end - time.monotonic()
        if left <= 0:
            _kill(pid)
            _reap(pid)
            return bytes(kept), None
        for _fd, _ in poller.poll(left * 1000):
            chunk = os.read(out_r, 1 << 16)
            if not chunk:
                open_ = False
            elif len(kept) < _KEPT:
                kept += chunk[: _KEPT - len(kept)]
    left = max(end - time.monotonic(), 0.0)
    while True:  # its output closed: it ends now (or a process of it holds nothing more of interest)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _kill(pid)  # what is left of its group
            _reap(pid)
            return bytes(kept), status
        if left <= 0:
            _kill(pid)
            _reap(pid)
            return bytes(kept), None
        time.sleep(0.005)
        left -= 0.005


def build(job: dict[str, Any]) -> int:
    """Compile the job's program; emit the binary or the compiler's words (see the module's docstring)."""
    import binascii

    resource.setrlimit(resource.RLIMIT_NPROC, (job["processes"] + 1, job["processes"] + 1))
    fd = os.open(job["source_path"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    _write(fd, job["program"].encode("utf-8", "surrogateescape"))
    os.close(fd)
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        _compiler(job, out_w)
    os.close(out_w)
    said, status = _collect(pid, out_r, job["timeout_s"])
    os.close(out_r)
    text = said.decode("utf-8", "replace")
    if status is None:
        _emit({"compile_error": f"the compiler ran past its {job['timeout_s']:g} s limit\n{text}"})
        return 0
    if os.WIFSIGNALED(status):
        signal = os.WTERMSIG(status)
        _emit({"compile_error": f"the compiler was killed by signal {signal} (its limits)\n{text}"})
        return 0
    if os.WEXITSTATUS(status) != 0:
        _emit({"compile_error": text or f"the compiler exited with {os.WEXITSTATUS(status)}"})
        return 0
    try:
        with open(job["binary_path"], "rb") as made:
            binary = made.read(job["output_bytes"] + 1)
    except OSError as exc:
        _emit({"compile_error": f"the compiler made no binary: {exc}"})
        return 0
    if len(binary) > job["output_bytes"]:
        _emit({"compile_error": f"the binary is over {job['output_bytes']} bytes (the limit)"})
        return 0
    _emit({"binary": binascii.b2a_base64(binary, newline=False).decode("ascii")})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, {"compile": build}))
