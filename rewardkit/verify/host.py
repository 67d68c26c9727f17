"""The worker host: a helper process that owns the math workers, and the parent's handle on it.

Why a process of its own: multiprocessing starts workers with their parent's ``__main__`` (for a trainer:
torch, transformers, the whole CLI; a script without a main guard would even run again in every worker). The
host is started as ``python -m rewardkit.verify``, so the only ``__main__`` its workers know is that package's
module. It uses public APIs only: ``subprocess`` to start it, ``multiprocessing.connection`` (a Unix socket in
a private folder, with an authentication key passed on stdin) to talk to it, and a ``forkserver`` context
that preloads and warms Math-Verify, so a killed worker is replaced in milliseconds and starts warm. The host
exits when its parent does (its stdin closes).

A batch is streamed: the parent sends its pairs in parts as it reads them (:class:`Stream`), the host's
workers (:mod:`rewardkit.verify.crew`) start on the first part while the parent reads the next, and the
answer comes back once the last part is judged. A batch whose host died is sent once more, whole, to a new
host with what is left of the request's deadline, never a fresh one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from rewardkit.core import DeadlineExceeded, remaining_s

__all__ = ["HostGone", "Stream", "WorkerHost"]

#: (equal, reason) for one pair: a verdict (``None``: no verdict) and why.
Result = tuple[bool | None, str | None]
Pair = tuple[str, str]  # (gold, prediction), both canonical


STUCK_AFTER_S = 5.0  # a host that has not answered this long after the deadline is taken for stuck


class HostGone(RuntimeError):
    """The host process could not be started or reached."""


# --------------------------------------------------------------------------- the parent's side


class WorkerHost:
    """Starts the host on first use and sends it batches. Thread-safe: one connection per call."""

    def __init__(self, workers: int, memory_mb: int, overdue_slots: int) -> None:
        self.config = {"workers": workers, "memory_mb": memory_mb, "overdue_slots": overdue_slots}
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._address: str | None = None
        self._key = b""

    def _start(self) -> tuple[subprocess.Popen[bytes], str, bytes]:
        """The running host (starting one if needed), waiting for it no longer than the request's deadline
        allows (a host still starting then is kept: the next call waits on it)."""
        left = remaining_s()
        if not self._lock.acquire(timeout=-1 if left is None else left):
            raise DeadlineExceeded("math: the request deadline passed while the worker host started")
        try:
            proc = self._proc
            if proc is not None and proc.poll() is None and self._address is not None:
                return proc, self._address, self._key
            if proc is None or proc.poll() is not None:
                if proc is not None:
                    _close_pipes(proc)
                proc = self._spawn()
            self._address = self._address_of(proc)
            return proc, self._address, self._key
        finally:
            self._lock.release()

    def _spawn(self) -> subprocess.Popen[bytes]:
        key = secrets.token_bytes(32)
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        # -P: the host imports this rewardkit (first on its path), never one in the caller's working folder
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "rewardkit.verify", json.dumps(self.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        assert proc.stdin is not None
        proc.stdin.write(key.hex().encode() + b"\n")
        proc.stdin.flush()  # stdin stays open: the host's lifeline
        self._proc, self._address, self._key = proc, None, key
        return proc

    def _address_of(self, proc: subprocess.Popen[bytes]) -> str:
        """The address the starting host prints, read within the request's deadline."""
        assert proc.stdout is not None
        left = remaining_s()
        if left is not None and not select.select([proc.stdout], [], [], left)[0]:
            raise DeadlineExceeded("math: the request deadline passed while the worker host started")
        line = proc.stdout.readline().decode().strip()
        if not line:
            self._proc = None
            proc.kill()
            code = proc.wait()
            _close_pipes(proc)
            raise HostGone(f"the math worker host did not start (exit code {code})")
        return line

    def call(self, kind: str, *args: Any) -> Any:
        """Send one request, ``(kind, *args, seconds left before the request's deadline)``, and wait for
        its answer. A host that died is started again once, and the second attempt gets what is left of
        the deadline then, not the whole of it again."""
        for attempt in (1, 2):
            proc, address, key = self._start()
            left = remaining_s()
            if left is not None and left <= 0.0:
                raise DeadlineExceeded("math: the request deadline passed before the worker host answered")
            try:
                with Client(address, authkey=key) as connection:
                    connection.send((kind, *args, left))
                    # the host answers by the deadline; one that has not a while after it is stuck
                    if left is not None and not connection.poll(left + STUCK_AFTER_S):
                        self._forget(proc)
                        raise DeadlineExceeded("math: the worker host did not answer by the deadline")
                    return connection.recv()
            except (OSError, EOFError) as exc:
                self._forget(proc)
                if attempt == 2:
                    raise HostGone(f"the math worker host is gone: {exc}") from None
        raise AssertionError("unreachable")

    def stream(self, timeout_s: float, soft_timeouts: bool) -> Stream:
        """A batch to send in parts (:class:`Stream`)."""
        return Stream(self, "stream", timeout_s, soft_timeouts)

    def _forget(self, failed: subprocess.Popen[bytes]) -> None:
        """Drop the host that failed (not one another thread has started since), and end it."""
        with self._lock:
            if self._proc is failed:
                self._proc, self._address = None, None
        if failed.poll() is None:
            failed.kill()
            failed.wait(5)
        _close_pipes(failed)

    def close(self) -> None:
        """Stop the host and its pools (a later call starts them again)."""
        with self._lock:
            proc, self._proc, self._address = self._proc, None, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the host stops its pools and exits when its stdin closes
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        proc.stdout.close()


class Stream:
    """One batch sent to the host in parts (:meth:`send`) and answered at :meth:`finish`. A host that dies
    meanwhile is started again once, and gets every part again with what is left of the deadline."""

    def __init__(self, host: WorkerHost, kind: str, *args: Any) -> None:
        self._host, self._head = host, (kind, *args)
        self._parts: list[list[Pair]] = []
        self._connection: Connection | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._failures = 0

    def send(self, pairs: list[Pair]) -> None:
        """Send more pairs; the host's workers start on them at once."""
        self._parts.append(pairs)
        if self._connection is None:
            self._open()
            return
        try:
            self._connection.send(pairs)
        except OSError as exc:
            self._failed(exc)
            self._open()

    def finish(self) -> Any:
        """No more pairs: the host's answer, by the request's deadline (``DeadlineExceeded`` a while after
        it, if the host is stuck)."""
        while True:
            if self._connection is None:
                self._open()
            assert self._connection is not None and self._proc is not None
            try:
                self._connection.send(None)
                left = remaining_s()
                if left is not None and not self._connection.poll(left + STUCK_AFTER_S):
                    self._host._forget(self._proc)
                    raise DeadlineExceeded("math: the worker host did not answer by the deadline")
                answer = self._connection.recv()
            except (OSError, EOFError) as exc:
                self._failed(exc)
                continue
            self.close()
            return answer

    def close(self) -> None:
        """Hang up (the host stops this batch's work if it is not finished)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _open(self) -> None:
        while self._connection is None:
            self._proc, address, key = self._host._start()
            left = remaining_s()
            if left is not None and left <= 0.0:
                raise DeadlineExceeded("math: the request deadline passed before the worker host answered")
            try:
                self._connection = Client(address, authkey=key)
                self._connection.send((*self._head, left))
                for part in self._parts:
                    self._connection.send(part)
            except (OSError, EOFError) as exc:
                self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        self.close()
        if self._proc is not None:
            self._host._forget(self._proc)
        self._failures += 1
        if self._failures == 2:
            raise HostGone(f"the math worker host is gone: {exc}") from None


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


# --------------------------------------------------------------------------- the host's side


class Scheduler:
    """Runs batches on this (host) process's workers (:class:`~rewardkit.verify.crew.Crew`: main and spill
    workers, started as it is made, in the background): no batch pays for their start, and :meth:`ping`
    (the parent's ``ready()``) is true only once they are all up and warm."""

    def __init__(self, workers: int, memory_mb: int, overdue_slots: int) -> None:
        from rewardkit.verify.crew import Crew

        self.workers, self.memory_mb, self.overdue_slots = workers, memory_mb, overdue_slots
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["rewardkit.verify.worker", "rewardkit.verify.crew"])
        self.crew = Crew(context, workers, overdue_slots, memory_mb)

    def ping(self, timeout_s: float, deadline_s: float | None) -> bool:
        """Every worker up and warm, and a main worker judging a real pair right, within ``timeout_s``
        (and the request's ``deadline_s``)."""
        wait_s = timeout_s if deadline_s is None else min(timeout_s, deadline_s)
        end = time.monotonic() + wait_s
        if not self.crew.up.wait(wait_s) or not self.crew.healthy:
            return False
        job = self.crew.job(wait_s, wait_s)
        self.crew.add(job, [("x^2+1", "1+x^2")])
        self.crew.close_job(job)
        if not job.done.wait(max(0.0, end - time.monotonic())):
            self.crew.cancel(job)
            return False
        return job.results.get(0) == (True, None)

    def close(self) -> None:
        self.crew.close()

    def stream(
        self, connection: Connection, timeout_s: float, soft_timeouts: bool, deadline_s: float | None
    ) -> tuple[str, list[Result], dict[str, int]]:
        """Judge the pairs that arrive on ``connection`` (lists of pairs, then ``None``) as they arrive:
        ``("ok", results, counters)``, or ``("deadline", [], counters)`` when ``deadline_s`` passed (the
        batch's work is cancelled: its busy workers are killed and replaced)."""
        end = None if deadline_s is None else time.monotonic() + deadline_s
        # The soft alarm fires a little before the hard kill; "never" is a day, far past any hard limit.
        soft = max(timeout_s - 0.2, timeout_s * 0.8) if soft_timeouts else 86_400.0
        job = self.crew.job(timeout_s, soft)
        try:
            while (pairs := connection.recv()) is not None:
                self.crew.add(job, pairs)
        except (EOFError, OSError):  # the caller went away (its own deadline, say): stop its work
            self.crew.cancel(job)
            raise
        self.crew.close_job(job)
        # a host just started: its workers come up within the deadline
        left = None if end is None else max(0.0, end - time.monotonic())
        if not job.done.wait(left) or job.cancelled:
            self.crew.cancel(job)
            return "deadline", [], job.counters
        return "ok", job.ordered(), job.counters


def _serve_one(connection: Connection, scheduler: Scheduler) -> None:
    with connection:
        try:
            request = connection.recv()
            kind = request[0]
            if kind == "stream":
                answer: Any = scheduler.stream(connection, *request[1:])
            elif kind == "ping":
                answer = scheduler.ping(*request[1:])
            else:
                answer = ("error", [], {"unknown_request": 1})
        except (EOFError, OSError):
            return
        except Exception as exc:  # a failure of this batch, not of the host: say so, keep serving
            answer = ("error", [], {type(exc).__name__: 1})
        try:
            connection.send(answer)
        except OSError:
            pass


def main() -> None:
    """Host entry point: read the key from stdin, listen, print the address, serve until stdin closes."""
    config = json.loads(sys.argv[1])
    key = bytes.fromhex(sys.stdin.readline().strip())
    scheduler = Scheduler(config["workers"], config["memory_mb"], config["overdue_slots"])
    folder = tempfile.mkdtemp(prefix="rewardkit-host-")  # 0700: only this user can reach the socket
    listener = Listener(os.path.join(folder, "socket"), family="AF_UNIX", authkey=key)

    def lifeline() -> None:  # the parent closed our stdin, or died: stop everything
        sys.stdin.read()
        scheduler.close()
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)

    def orphaned() -> None:  # a forked child of the parent may hold our stdin open: watch the parent too
        parent = os.getppid()
        while os.getppid() == parent:
            time.sleep(1.0)
        scheduler.close()
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)

    threading.Thread(target=lifeline, daemon=True).start()
    threading.Thread(target=orphaned, daemon=True).start()
    sys.stdout.write(str(listener.address) + "\n")
    sys.stdout.flush()
    while True:
        try:
            connection = listener.accept()
        except (OSError, EOFError, multiprocessing.AuthenticationError):
            continue
        threading.Thread(target=_serve_one, args=(connection, scheduler), daemon=True).start()
