"""One sandbox run, awaited on the event loop without holding a thread: spawn, stream results, kill.

The job goes in through an in-memory file (no pipe to keep fed; ``marshal``'s format, which the harness
reads without importing anything); the harness's result lines are read as
they arrive (each passed to ``on_result``, which may stop the run: ``mode="all"`` stops at the first
failing test), within a byte cap; the run ends at ``{"done": true}``, at the exit of bwrap, when stopped,
or at its wall-clock limit. Then the sandbox's PID 1, the harness, is killed (``SIGKILL``; bwrap gave its
pid): the kernel kills every other process of its PID namespace with it, and bwrap, its parent, reaps it
and exits. The run returns only once bwrap has exited, so nothing of it is left, not even a process
waiting to be reaped. (Killing bwrap instead would orphan the harness: a root service's harness has
dropped to its user id, which clears the parent-death signal bwrap gave it.)
"""

from __future__ import annotations

import asyncio
import base64
import json
import marshal
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rewardkit.sandbox.bwrap import SandboxConfig, command
from rewardkit.sandbox.cgroup import HARNESS_MB, Group, find_parent
from rewardkit.sandbox.seccomp import compiler_filter, no_process_filter

__all__ = ["Limits", "RunResult", "SandboxError", "TestResult", "run_sandbox"]

KEPT_STDOUT = 4000  # characters of a test's output kept once ``on_result`` has seen it
_STDERR_KEPT = 4000
_TEST_SLACK_S = 0.5  # a test's fork, report and result line, on a loaded machine
_FILTER = no_process_filter()  # a test process's seccomp filter: threads, no process
_COMPILER_FILTER = compiler_filter()  # a compiler's: processes too
_END_S = 10.0  # how long a killed sandbox may take to go (a PID namespace's end waits for RCU) before bwrap


class SandboxError(RuntimeError):
    """A sandbox could not be started (bwrap refused, the harness failed before its first line)."""


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use. Every limit is the operator's setting, capped for callers by the reward.

    ``timeout_s`` is a test's wall-clock limit (its CPU limit is the next whole second); ``memory_mb`` a
    test process's address space (it may start no process: the sandbox's memory); ``output_bytes`` what
    one test may print (or its return value's JSON); ``processes`` the sandbox's tasks at once (a test
    process's threads, the harness and the test process); ``open_files`` and ``file_mb`` a test process's
    descriptors and largest file; ``disk_mb`` the work directory's size; ``startup_s`` the allowance for
    starting the sandbox in its wall-clock limit.
    """

    timeout_s: float = 5.0
    memory_mb: int = 512
    output_bytes: int = 1 << 20
    processes: int = 32
    open_files: int = 64
    file_mb: int = 16
    disk_mb: int = 64
    startup_s: float = 10.0

    def wall_s(self, tests: int) -> float:
        """The wall-clock limit of a sandbox running ``tests`` tests."""
        return self.startup_s + tests * (self.timeout_s + _TEST_SLACK_S)

    def harness_fields(self) -> dict[str, Any]:
        """The limits as the harness reads them from its job."""
        return {
            "timeout_s": self.timeout_s,
            "memory_bytes": self.memory_mb << 20,
            "output_bytes": self.output_bytes,
            "processes": self.processes,
            "open_files": self.open_files,
            "file_bytes": self.file_mb << 20,
        }


@dataclass
class TestResult:
    """One test as the harness reported it (see :mod:`rewardkit.sandbox.harness`)."""

    __test__ = False  # not a pytest class

    index: int
    status: str
    error: str | None = None
    stdout: str = ""
    value: str | None = None  # the JSON of a call's return value
    seconds: float = 0.0


@dataclass
class RunResult:
    """A sandbox's run: its tests' results in order, and how it ended.

    ``ended`` is ``"done"`` (every test ran), ``"compile_error"``, ``"stopped"`` (``on_result`` said so),
    ``"wall_clock"`` (its limit passed), ``"output_limit"`` (the harness's lines passed their cap) or
    ``"crashed"`` (the harness ended before it was done: ``detail`` holds what it wrote on stderr).
    """

    tests: list[TestResult] = field(default_factory=list)
    ended: str = "crashed"
    compile_error: str | None = None
    detail: str | None = None
    startup_s: float | None = None  # spawn to the harness's first line: what bwrap and Python cost
    seconds: float = 0.0
    oom_killed: bool = False  # the sandbox's memory cgroup reached its limit and the kernel killed in it
    binary: bytes | None = None  # a compile job's result (``ended`` is ``"done"``)


def _test(line: Mapping[str, Any]) -> TestResult:
    def text(key: str) -> str | None:
        value = line.get(key)
        return value if isinstance(value, str) else None

    seconds = line.get("seconds")
    return TestResult(
        index=int(line["test"]),
        status=str(line.get("status", "error")),
        error=text("error"),
        stdout=text("stdout") or "",
        value=text("value"),
        seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
    )


def _job_file(payload: bytes) -> int:
    fd = os.memfd_create("job", os.MFD_CLOEXEC)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class _Run:
    """The reading side of one sandbox: result lines, stderr, the end."""

    def __init__(
        self, on_result: Callable[[TestResult], bool] | None, line_cap: int, group: Group | None = None
    ) -> None:
        self.result = RunResult()
        self.group = group
        self.on_result = on_result
        self.line_cap = line_cap
        self.buffer = bytearray()
        self.stderr = bytearray()
        self.started = time.monotonic()
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def end(self, how: str) -> None:
        if not self.finished.done():
            self.result.ended = how
            self.finished.set_result(None)

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while not self.finished.done():
            cut = self.buffer.find(b"\n")
            if cut < 0:
                if len(self.buffer) > self.line_cap:
                    self.end("output_limit")
                return
            line, self.buffer = bytes(self.buffer[:cut]), self.buffer[cut + 1 :]
            try:
                parsed = json.loads(line)
            except ValueError:  # the harness broke (it alone writes here)
                self.end("crashed")
                return
            self.line(parsed)

    def line(self, line: Mapping[str, Any]) -> None:
        if "ready" in line:
            self.result.startup_s = time.monotonic() - self.started
        elif "compile_error" in line:
            self.result.compile_error = str(line["compile_error"])
            self.end("compile_error")
        elif "binary" in line:
            self.result.binary = base64.b64decode(str(line["binary"]))
            self.end("done")
        elif "done" in line:
            self.end("done")
        else:
            test = _test(line)
            if test.status == "error" and test.error == "Signal: SIGKILL" and self._oom_killed():
                test.status, test.error = "memory", None  # the kernel's kill for the cgroup's memory
            keep_going = self.on_result is None or self.on_result(test)
            if self.on_result is not None:
                test.stdout = test.stdout[:KEPT_STDOUT]
            self.result.tests.append(test)
            if not keep_going:
                self.end("stopped")

    def _oom_killed(self) -> bool:
        if self.group is not None and self.group.oom_killed():
            self.result.oom_killed = True
        return self.result.oom_killed


def _reader(fd: int, take: Callable[[bytes], None], closed: Callable[[], None]) -> Callable[[], None]:
    def ready() -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            take(chunk)
        else:
            closed()

    return ready


async def run_sandbox(
    job: Mapping[str, Any],
    limits: Limits,
    config: SandboxConfig,
    *,
    on_result: Callable[[TestResult], bool] | None = None,
    wall_s: float | None = None,
) -> RunResult:
    """Run ``job`` (``kind``, ``program``, ``fn_name``, ``inputs``: the harness's job without its limits) in
    a fresh sandbox. ``on_result`` sees each test as it ends and returns whether to go on. ``wall_s``
    (default ``limits.wall_s(len(inputs))``) bounds the whole run. A compiled program's job (``binary``,
    ``binary_path``, ``run``) gets no address-space limit where a memory cgroup holds the sandbox (its
    memory is the cgroup's, and its peak resident size: :mod:`rewardkit.sandbox.harness`); a ``compile``
    job (:mod:`rewardkit.sandbox.build`) gets the compiler's seccomp filter and ends with ``binary``.

    Raises:
        ValueError: the job holds something other than text, numbers, lists and dicts.
        SandboxError: bwrap or the harness failed before the harness's first line (a host problem, not
            the program's: its text says what bwrap said).
    """
    tests = len(job["inputs"])
    wall = limits.wall_s(tests) if wall_s is None else wall_s
    try:
        group = _group(config, limits)
    except OSError as exc:
        raise SandboxError(f"could not make the sandbox's memory cgroup: {exc}") from None
    fields = {**job, **limits.harness_fields(), "seccomp": _FILTER}
    if job["kind"] == "compile":
        fields["seccomp"] = _COMPILER_FILTER
    elif "run" in job:
        fields["address_bytes"] = -1 if group is not None else fields["memory_bytes"]
    try:
        payload = marshal.dumps(fields, 4)  # ValueError: not plain data
    except ValueError:
        if group is not None:
            _release(config, group)
        raise
    line_cap = 12 * limits.output_bytes + (1 << 16)  # JSON escapes a byte into six at worst, twice
    loop = asyncio.get_running_loop()
    stdin = _job_file(payload)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    info_r, info_w = os.pipe()
    argv = command(config, disk_bytes=limits.disk_mb << 20, info_fd=info_w)
    run = _Run(on_result, line_cap, group)
    if group is not None:  # the shell enters the cgroup, then becomes bwrap: nothing runs outside it
        argv = ["/bin/sh", "-c", 'echo 0 >"$0" && exec "$@"', group.procs, *argv]
    try:
        proc = subprocess.Popen(  # noqa: S603 - our own argv; bwrap gets an empty environment
            argv,
            stdin=stdin,
            stdout=out_w,
            stderr=err_w,
            env={},
            start_new_session=True,
            close_fds=True,
            pass_fds=(info_w,),
        )
    except OSError as exc:
        for fd in (out_r, err_r, info_r):
            os.close(fd)
        if group is not None:
            _release(config, group)
        raise SandboxError(f"could not start bwrap ({argv[0]}): {exc}") from None
    finally:
        for fd in (stdin, out_w, err_w, info_w):
            os.close(fd)
    exited: asyncio.Future[None] = loop.create_future()
    pidfd = _watch_exit(loop, proc, exited)
    pid1 = _Pid1(loop, info_r, proc.pid)
    for fd in (out_r, err_r):
        os.set_blocking(fd, False)
    loop.add_reader(out_r, _reader(out_r, run.feed, lambda: run.end("crashed")))
    loop.add_reader(err_r, _reader(err_r, lambda b: _keep(run.stderr, b), lambda: None))
    try:
        done, _ = await asyncio.wait(
            [run.finished, exited], timeout=wall, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            run.end("wall_clock")
        elif run.finished not in done:  # bwrap ended: what is left in the pipe is its last word
            _drain(out_r, run)
            run.end("crashed")
    finally:
        for fd in (out_r, err_r):
            loop.remove_reader(fd)
        try:
            await _end(proc, exited, pid1)
        finally:
            fds = (out_r, err_r) + ((pidfd,) if pidfd is not None else ())
            for fd in fds:
                loop.remove_reader(fd)  # before closing: the number is soon another sandbox's
                os.close(fd)
            if group is not None:
                run.result.oom_killed |= group.oom_killed()
                _release(config, group)
    result = run.result
    result.seconds = time.monotonic() - run.started
    if result.ended == "crashed":
        result.detail = run.stderr.decode("utf-8", "replace")
        if result.startup_s is None:
            raise SandboxError(f"the sandbox did not start: {result.detail.strip() or 'no message'}")
    return result


def _group(config: SandboxConfig, limits: Limits) -> Group | None:
    """The sandbox's memory cgroup, where the host lets the service make one (:mod:`.cgroup`)."""
    try:
        parent = find_parent(config.cgroup)
    except ValueError as exc:
        raise OSError(str(exc)) from None
    if parent is None:
        return None
    return parent.acquire((limits.memory_mb + limits.disk_mb + HARNESS_MB) << 20)


def _release(config: SandboxConfig, group: Group) -> None:
    parent = find_parent(config.cgroup)
    if parent is not None:
        parent.release(group)


def _keep(buffer: bytearray, chunk: bytes) -> None:
    if len(buffer) < _STDERR_KEPT:
        buffer += chunk[: _STDERR_KEPT - len(buffer)]


def _drain(fd: int, run: _Run) -> None:
    try:
        while not run.finished.done():
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            run.feed(chunk)
    except BlockingIOError:
        return


def _watch_exit(
    loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes], exited: asyncio.Future[None]
) -> int | None:
    """Complete ``exited`` when bwrap exits: a pidfd on the loop, or a poll on old kernels."""

    def done() -> None:
        if not exited.done():
            exited.set_result(None)

    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):

        async def poll() -> None:
            while proc.poll() is None:
                await asyncio.sleep(0.01)
            done()

        task = loop.create_task(poll())
        exited.add_done_callback(lambda _: task.cancel())
        return None

    def on_exit() -> None:
        loop.remove_reader(pidfd)
        done()

    loop.add_reader(pidfd, on_exit)  # the caller removes it before it closes the pidfd
    return pidfd


class _Pid1:
    """The sandbox's PID 1 (the harness) as the host sees it: bwrap writes its pid on the info pipe before
    it lets it run. Held as a pidfd from then on, so a kill never reaches a process that took its pid."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, bwrap: int) -> None:
        self.loop, self.fd, self.bwrap = loop, fd, bwrap
        self.info = bytearray()
        self.pid: int | None = None
        self.pidfd: int | None = None
        self.known: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        if chunk and len(self.info) < 4096:
            self.info += chunk
            return
        self.loop.remove_reader(self.fd)  # bwrap closed it (or wrote too much): it is all there is
        found = re.search(rb'"child-pid":\s*(\d+)', self.info)
        if found and _parent(int(found.group(1))) == self.bwrap:  # bwrap is not reaped yet: its pid holds
            self.pid = int(found.group(1))
            try:
                self.pidfd = os.pidfd_open(self.pid)
            except (AttributeError, OSError):  # an old kernel: the pid, checked again at the kill
                pass
        if not self.known.done():
            self.known.set_result(None)

    def kill(self) -> None:
        """``SIGKILL`` to the harness, the end of its PID namespace; nothing if it is gone already."""
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            elif self.pid is not None and _parent(self.pid) == self.bwrap:
                os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self.loop.remove_reader(self.fd)
        for fd in (self.fd, self.pidfd):
            if fd is not None:
                os.close(fd)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def _end(proc: subprocess.Popen[bytes], exited: asyncio.Future[None], pid1: _Pid1) -> None:
    """End the sandbox and wait until nothing of it is left: kill its PID 1 (when bwrap has not said it yet,
    wait for that first: it does before the harness runs), then wait for bwrap to reap it and exit. bwrap
    itself is killed only when it has not exited within ``_END_S``. A cancellation (the batch's deadline
    ended it) waits for this end too, then goes on."""
    cancelled = False
    if not exited.done():
        cancelled |= await _through_cancel([pid1.known, exited])
    pid1.kill()
    cancelled |= await _through_cancel([exited])
    if not exited.done():
        _kill_group(proc)
        exited.cancel()
    proc.wait()  # bwrap has exited, or was just killed: no real wait
    pid1.close()
    if cancelled:
        raise asyncio.CancelledError


async def _through_cancel(futures: list[asyncio.Future[None]]) -> bool:
    """Wait up to ``_END_S`` for one of ``futures``, through cancellations; whether there was one."""
    end = time.monotonic() + _END_S
    cancelled = False
    while not any(future.done() for future in futures) and (left := end - time.monotonic()) > 0:
        try:
            await asyncio.wait(futures, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled
