"""The worker host: a helper process that owns the math worker pools, and the parent's handle on it.

Why a process of its own: multiprocessing starts workers with their parent's ``__main__`` (for a trainer:
torch, transformers, the whole CLI; a script without a main guard would even run again in every worker). The
host is started as ``python -m rewardkit.verify``, so the only ``__main__`` its workers know is that package's
module. It uses public APIs only: ``subprocess`` to start it, ``multiprocessing.connection`` (a Unix socket in
a private folder, with an authentication key passed on stdin) to talk to it, a ``forkserver`` context that
preloads Math-Verify so a killed worker is replaced in milliseconds, and pebble pools for hard time limits.
The host exits when its parent does (its stdin closes).

In the host, each batch runs on the main pool, one task a worker in flight, so nothing ever waits behind a
stuck worker (and nothing has to be cancelled: pebble cancels by killing). A task is one risky pair, or
several pairs sharing a gold within one soft limit (:mod:`rewardkit.verify.plan`). While main workers are
stuck on pairs past ``slow_after`` (for a task of several, longer in proportion), the spill pool runs the rest
of the batch, so a few slow pairs delay it by about their own hard limit, while normal work keeps its warm
caches on the main pool. Both pools start with the host, so no batch waits for them (nor for the lessons
of :mod:`rewardkit.verify.lessons`, given while it idles). A pair whose worker died under it runs once more
before it is ``worker_crashed`` (no verdict); a batch whose host died goes once more to a new host with what
is left of the request's deadline.
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
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from rewardkit.core import DeadlineExceeded, remaining_s
from rewardkit.verify import tasks
from rewardkit.verify.lessons import Teacher, gives_way, teaches
from rewardkit.verify.options import Options, Pair
from rewardkit.verify.plan import Plan
from rewardkit.verify.tasks import Result

__all__ = ["HostGone", "WorkerHost"]


STUCK_AFTER_S = 5.0  # a host that has not answered this long after the deadline is taken for stuck
POOL_START_S = 120.0  # the longest a pool's start is waited for
READ_TIMEOUT_S = 30.0  # a chunk of rows not read in this long is read by the caller (reading is linear)
READ_TAKEN_S = 0.5  # a read no worker has taken up by then (the pool is busy) is left to the caller


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
        proc = subprocess.Popen(  # -P: this rewardkit (first on its path), never one in the working folder
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

    def running(self) -> bool:
        """A host is up and reachable now (nothing is started or waited for)."""
        proc = self._proc
        return proc is not None and proc.poll() is None and self._address is not None

    def _running(self) -> tuple[subprocess.Popen[bytes], str, bytes]:
        """The running host, or :class:`HostGone` at once when there is none (or one is starting)."""
        if not self._lock.acquire(blocking=False):
            raise HostGone("the math worker host is starting")
        try:
            proc, address = self._proc, self._address
            if proc is None or proc.poll() is not None or address is None:
                raise HostGone("no math worker host is running")
            return proc, address, self._key
        finally:
            self._lock.release()

    def call(self, kind: str, *args: Any, start: bool = True) -> Any:
        """Send one request, ``(kind, *args, seconds left before the request's deadline)``, and wait for
        its answer. A host that died is started again once, and the second attempt gets what is left of
        the deadline then, not the whole of it again. With ``start=False`` no host is started or waited
        for: :class:`HostGone` when none is running, or when it fails."""
        for attempt in (1, 2):
            proc, address, key = self._start() if start else self._running()
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
                if attempt == 2 or not start:
                    raise HostGone(f"the math worker host is gone: {exc}") from None
        raise AssertionError("unreachable")

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


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


# --------------------------------------------------------------------------- the host's side


class Scheduler:
    """Runs pairs on the pebble pools of this (host) process. Both pools start as it is made, in the
    background (pebble starts a pool's workers on its first task): no batch pays for their start, and
    :meth:`ping` (the parent's ``ready()``) is true only once they are up."""

    def __init__(self, workers: int, memory_mb: int, overdue_slots: int) -> None:
        self.workers, self.memory_mb, self.overdue_slots = workers, memory_mb, overdue_slots
        self._pools: dict[str, Any] = {}
        self._lock = threading.Lock()
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["rewardkit.verify.worker", "rewardkit.verify.rows"])
        self._context = context
        self._up = threading.Event()
        self.teacher = Teacher(workers, context)
        threading.Thread(target=self._start_pools, daemon=True).start()

    def _start_pools(self) -> None:
        try:
            self.pool("main").schedule(tasks.ping).result(timeout=POOL_START_S)
            if self.overdue_slots:
                self.pool("spill").schedule(tasks.ping).result(timeout=POOL_START_S)
        except Exception:  # a pool that did not start is started again by the next batch that needs it
            pass
        finally:
            self._up.set()

    # -- pools: "main" does the work; "spill" stands in for main workers stuck on overdue pairs
    def pool(self, kind: str = "main") -> Any:
        with self._lock:
            pool = self._pools.get(kind)
            if pool is None or not pool.active:
                import pebble

                pool = self._pools[kind] = pebble.ProcessPool(
                    max_workers=self.workers if kind == "main" else max(self.overdue_slots, 1),
                    initializer=tasks.init,
                    initargs=(self.memory_mb, self.teacher.busy),
                    context=self._context,
                )
            return pool

    @gives_way
    def ping(self, timeout_s: float, deadline_s: float | None) -> bool:
        """Both pools up and a main worker judging a real pair right, within ``timeout_s`` (and the
        request's ``deadline_s``)."""
        wait_s = timeout_s if deadline_s is None else min(timeout_s, deadline_s)
        end = time.monotonic() + wait_s
        if not self._up.wait(wait_s):
            return False
        try:
            ready = self.pool().schedule(tasks.ready).result(timeout=max(0.0, end - time.monotonic()))
            return bool(ready)
        except Exception:
            return False

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            self.teacher.busy.value = 1
        for pool in pools:
            pool.stop()
            pool.join(timeout=10)

    @teaches
    def run(
        self, pairs: Sequence[Pair], timeout_s: float, soft_timeouts: bool, deadline_s: float | None
    ) -> tuple[str, list[Result], dict[str, int]]:
        """``("ok", results, counters)``, or ``("deadline", [], counters)`` when ``deadline_s`` passed (the
        batch's work is cancelled: pebble kills the busy workers and starts new ones). A pair whose worker
        died (``ProcessExpired``: killed, out of memory in C code) runs once more, on the worker that
        replaces it or another; dying twice, it is ``(None, "worker_crashed")``."""
        end = None if deadline_s is None else time.monotonic() + deadline_s
        counters = {"timeouts": 0, "spilled": 0, "retried": 0}
        if not self._up.wait(deadline_s):  # a host just started: its pools come up within the deadline
            return "deadline", [], counters
        main = self.pool("main")
        # The soft alarm fires a little before the hard kill; "never" is a day, far past any hard limit.
        soft = max(timeout_s - 0.2, timeout_s * 0.8) if soft_timeouts else 86_400.0
        slow_after = min(0.5, timeout_s / 4)
        plan = Plan(pairs, self.workers, grouped=soft_timeouts)  # see rewardkit.verify.plan
        on_main: dict[Future[Any], list[int]] = {}
        on_spill: dict[Future[Any], list[int]] = {}
        started: dict[Future[Any], float] = {}
        results: dict[int, Result] = {}
        retried: set[int] = set()

        def submit(pool: Any, task: list[int]) -> Future[Any]:
            if len(task) == 1:
                gold, prediction, *options = pairs[task[0]]  # a pair's options, where it has any
                return pool.schedule(  # type: ignore[no-any-return]
                    tasks.check, args=(gold, prediction, soft, *options), timeout=timeout_s
                )
            return pool.schedule(  # type: ignore[no-any-return]
                tasks.check_many, args=([pairs[i] for i in task], soft), timeout=timeout_s
            )

        while plan or on_main or on_spill:
            while plan and len(on_main) < self.workers:
                task = plan.next()
                on_main[submit(main, task)] = task
            now = time.monotonic()
            for future in on_main:
                started.setdefault(future, now)
            # overdue: past slow_after alone; in a task of several, a quarter of it a pair
            if plan and any(now - started[f] > slow_after * max(1.0, len(on_main[f]) / 4) for f in on_main):
                while plan and len(on_spill) < self.overdue_slots:
                    task = plan.next()
                    on_spill[submit(self.pool("spill"), task)] = task
                    counters["spilled"] += len(task)
            if end is not None and now >= end:  # the request's deadline: stop its work, free the workers
                for future in [*on_main, *on_spill]:
                    future.cancel()
                return "deadline", [], counters
            done, _ = wait([*on_main, *on_spill], timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                task = on_main.pop(future) if future in on_main else on_spill.pop(future)
                started.pop(future, None)
                if len(task) > 1:
                    self._several_done(future, task, plan, results, retried, counters)
                    continue
                i = task[0]
                if i not in retried and _crashed(future):
                    retried.add(i)
                    counters["retried"] += 1
                    plan.again([i])
                    continue
                results[i] = _outcome(future, counters)
        return "ok", [results[i] for i in range(len(pairs))], counters

    @staticmethod
    def _several_done(
        future: Future[Any],
        task: list[int],
        plan: Plan,
        results: dict[int, Result],
        retried: set[int],
        counters: dict[str, int],
    ) -> None:
        """A task of several pairs ended: the results of the pairs it checked; the rest go again, each
        alone. When its worker was killed at the hard limit, died (the pairs count as run once more, as a
        pair alone whose worker died: a second death is ``worker_crashed``) or ran out of memory, all of
        them go again alone; any other failure (the pool itself broke) is every pair's outcome."""
        error = future.exception()
        if error is None:
            checked = future.result()[: len(task)]
            results.update(zip(task, checked, strict=False))
            plan.again(task[len(checked) :])
        elif _crashed(future):
            retried.update(task)
            counters["retried"] += len(task)
            plan.again(task)
        elif isinstance(error, TimeoutError | MemoryError):
            plan.again(task)
        else:
            outcome = _outcome(future, counters)
            results.update((i, outcome) for i in task)

    @gives_way
    def read(
        self, chunks: Sequence[bytes], how: tuple[str, float, int, Options], deadline_s: float | None
    ) -> tuple[str, list[bytes | None], dict[str, int]]:
        """Rows read (:func:`rewardkit.verify.rows.read_rows`), a pickled chunk a task on the main pool:
        ``("ok", [each chunk's rows read, pickled, or None], counters)``, ``("cold", [], counters)`` at
        once while the pools are starting, or ``("deadline", [], counters)`` when ``deadline_s`` passed
        (its tasks are cancelled). The caller reads what comes back unread itself (``read_failed``
        counts those chunks): one that failed, overran ``READ_TIMEOUT_S`` or what was left of the
        deadline, or that no worker took up within ``READ_TAKEN_S`` (every one busy)."""
        counters = {"read_failed": 0}
        if not self._up.is_set():  # the caller reads faster than the pools start
            return "cold", [], counters
        now = time.monotonic()
        end = None if deadline_s is None else now + deadline_s  # the one end of the whole request
        limit = READ_TIMEOUT_S if deadline_s is None else max(0.001, min(READ_TIMEOUT_S, deadline_s))
        main = self.pool("main")
        futures = [main.schedule(tasks.read, args=(chunk, *how), timeout=limit) for chunk in chunks]
        taken_by = now + READ_TAKEN_S
        waiting: set[Future[bytes]] = set(futures)
        while waiting:
            now = time.monotonic()
            if end is not None and now >= end:  # the request's deadline: stop its work, free the workers
                for future in futures:
                    future.cancel()
                return "deadline", [], counters
            if now >= taken_by and not any(f.running() or f.done() for f in futures):
                for future in waiting:  # every worker busy with other work: the caller reads these
                    if not future.running():  # (cancelling a running one would kill its worker)
                        future.cancel()
                waiting = {f for f in waiting if not f.cancelled()}  # wait() counts them done later
            stops = [t for t in (end, taken_by) if t is not None and t > now]
            waiting = wait(waiting, timeout=min(stops) - now if stops else None)[1]
        read: list[bytes | None] = []
        for future in futures:
            try:
                read.append(None if future.cancelled() else future.result())
            except Exception:  # failed or overran its limit
                read.append(None)
            counters["read_failed"] += read[-1] is None
        return "ok", read, counters


def _crashed(future: Future[Result]) -> bool:
    """The pair's worker process died under it (pebble's ``ProcessExpired``)."""
    return type(future.exception()).__name__ == "ProcessExpired"


def _outcome(future: Future[Result], counters: dict[str, int]) -> Result:
    """A pair's result: a pair too costly to check is wrong (``timeout``, ``memory_limit``: 0.0, as peers
    score it); one whose workers died is no verdict (``None``: trainers skip it rather than learn from it)."""
    try:
        return future.result()
    except TimeoutError:
        counters["timeouts"] += 1
        return False, "timeout"
    except MemoryError:
        return False, "memory_limit"
    except Exception as exc:
        name = type(exc).__name__
        return (None, "worker_crashed") if name == "ProcessExpired" else (False, f"verify_error:{name}")


def _serve_one(connection: Connection, scheduler: Scheduler) -> None:
    with connection:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        kind = request[0]
        try:
            if kind == "run":
                answer: Any = scheduler.run(*request[1:])
            elif kind == "read":
                answer = scheduler.read(*request[1:])
            elif kind == "ping":
                answer = scheduler.ping(*request[1:])
            else:
                answer = ("error", [], {"unknown_request": 1})
        except Exception as exc:  # a failure of this batch, not of the host: say so, keep serving
            answer = ("error", [], {type(exc).__name__: 1})
        connection.send(answer)


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
