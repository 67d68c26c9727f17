"""The math workers of the worker host: processes fed by one dispatcher thread, a gold's pairs on one worker.

Every (gold, prediction) pair goes to the worker that its gold hashes to (jump consistent hashing of the
gold's digest over the main workers), so a worker parses each gold once and keeps it parsed across batches,
instead of every worker parsing every gold. A worker that runs out of work steals from the back of the
longest queue (a whole gold's pairs; half of them when that gold is all that waits there and it has many),
so an unlucky hash or a slow pair does not leave the others idle at the end of a batch. A worker is sent a
few pairs ahead of its answers, so it never waits for the dispatcher between pairs, and answers each pair as
soon as it is judged.

Time limits, per pair: the worker's own alarm (a soft limit just before the hard one) and the dispatcher's
kill at ``timeout_s`` (the pair is ``timeout``; the worker is replaced, its other pairs run elsewhere). A pair
whose worker died under it runs once more, then is ``worker_crashed``. While any main worker is stuck on a
pair past ``slow_after``, the spill workers take the rest of the batch a pair at a time (so a batch of
several pathological answers waits about one hard limit, not one per main worker); a worker gets work only
once it has warmed up (a real pair judged), so a fresh pool does not spill.

Batches arrive as jobs that grow while the caller still extracts answers (:meth:`Crew.add`), so the
workers start on the first pairs while the rest of the batch is being read; several jobs share the workers.
"""

from __future__ import annotations

import os
import queue
import selectors
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from rewardkit.lru import text_digest
from rewardkit.verify.guards import risk

__all__ = ["Crew", "Job", "jump_hash"]

Result = tuple[bool | None, str | None]
Pair = tuple[str, str]  # (gold, prediction), both canonical
Task = tuple["Job", int]  # a job and the index of one of its pairs

PREFETCH = 4  # pairs sent to a worker ahead of its answers (stealing takes only what is not sent)
RISKY = 10.0  # guards.risk() from here on (powers of powers, factorials, deep nesting): sent alone
SEND_AHEAD_CHARS = 16_000  # at most this much text is sent to a busy worker (a pipe holds 64 KiB)
POOL_START_S = 120.0  # the longest the first workers' start is waited for
RESTART_DELAY_S = 1.0  # a worker that died before it was warm is started again after this


def jump_hash(key: int, buckets: int) -> int:
    """Jump consistent hashing (Lamping and Veach): the bucket of a 64-bit ``key`` among ``buckets``; with
    one bucket more, only about one key in ``buckets + 1`` moves.

    >>> keys = range(0, 10_000 * 7919, 7919)
    >>> moved = sum(jump_hash(k, 16) != jump_hash(k, 17) for k in keys)
    >>> moved, {jump_hash(k, 16) for k in keys} == set(range(16))
    (611, True)
    """
    bucket, jump = -1, 0
    while jump < buckets:
        bucket = jump
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        jump = int((bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


class Job:
    """One batch of pairs: filled by :meth:`Crew.add`, closed by :meth:`Crew.close_job`, ``done`` once
    every pair has a result."""

    def __init__(self, timeout_s: float, soft_s: float) -> None:
        self.timeout_s, self.soft_s = timeout_s, soft_s
        self.slow_after = min(0.5, timeout_s / 4)  # a main worker this long on one pair is stuck
        self.pairs: list[Pair] = []
        self.results: dict[int, Result] = {}
        self.retried: set[int] = set()
        self.risky: set[int] = set()  # pairs that go to a worker alone, none sent behind them
        self.counters = {"timeouts": 0, "spilled": 0, "retried": 0}
        self.closed = self.cancelled = False
        self.done = threading.Event()

    def ordered(self) -> list[Result]:
        return [self.results[i] for i in range(len(self.pairs))]


class _Worker:
    """One worker process as the dispatcher sees it."""

    def __init__(self, kind: str, slot: int, process: Any, conn: Any) -> None:
        self.kind, self.slot, self.process, self.conn = kind, slot, process, conn
        self.sent: deque[Task] = deque()  # in the order the worker judges them
        self.since = 0.0  # when the first pair of ``sent`` started
        self.warm = False  # it has judged its warm-up pair and said hello


class Crew:
    """``workers`` main worker processes and ``spill`` spill workers, started in the background (``up``
    is set once all have warmed up). Thread-safe: every change goes through the dispatcher thread."""

    def __init__(self, context: Any, workers: int, spill: int, memory_mb: int) -> None:
        self._context, self.memory_mb = context, memory_mb
        self._slots: dict[str, list[_Worker | None]] = {"main": [None] * workers, "spill": [None] * spill}
        self._queues: list[deque[list[Task]]] = [deque() for _ in range(workers)]
        self._queued = [0] * workers
        self._restart: dict[tuple[str, int], float] = {}  # slots waiting to start a worker again
        self._starting: set[tuple[str, int]] = set()  # the first workers, until warm (or dead)
        self._commands: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.up = threading.Event()
        self.healthy = True  # every worker judged its warm-up pair right
        self._thread = threading.Thread(target=self._loop, name="rewardkit-dispatcher", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- the callers' side (any thread)
    def job(self, timeout_s: float, soft_s: float) -> Job:
        return Job(timeout_s, soft_s)

    def add(self, job: Job, pairs: Sequence[Pair]) -> None:
        """Queue more pairs of ``job`` (they are judged as soon as a worker is free)."""
        self._command("add", job, list(pairs))

    def close_job(self, job: Job) -> None:
        """No more pairs for ``job``: ``job.done`` is set once every pair has its result."""
        self._command("close", job)

    def cancel(self, job: Job) -> None:
        """Drop ``job``'s queued pairs; workers busy on its pairs are killed and replaced."""
        self._command("cancel", job)

    def close(self) -> None:
        """Stop every worker and the dispatcher."""
        self._command("stop")
        self._thread.join(15)

    def _command(self, *command: Any) -> None:
        self._commands.put(command)
        os.write(self._wake_w, b"x")

    # ---------------------------------------------------------------- the dispatcher thread
    def _loop(self) -> None:
        for kind, slots in self._slots.items():
            for slot in range(len(slots)):
                self._starting.add((kind, slot))
                self._start(kind, slot)
        started = time.monotonic()
        while True:
            busy = any(w is not None and w.sent for w in self._workers())
            events = self._selector.select(0.02 if busy or self._restart else 0.5)
            now = time.monotonic()
            for key, _ in events:
                if key.data is None:
                    os.read(self._wake_r, 65_536)
                else:
                    self._receive(key.data, now)
            while not self._commands.empty():
                command = self._commands.get()
                if command[0] == "stop":
                    self._stop()
                    return
                self._handle(command)
            if not self.up.is_set() and (not self._starting or now - started > POOL_START_S):
                self.up.set()
            self._check_limits(now)
            for kind, slot in [s for s, at in self._restart.items() if at <= now]:
                del self._restart[(kind, slot)]
                self._start(kind, slot)
            self._assign(now)

    def _workers(self) -> list[_Worker | None]:
        return [*self._slots["main"], *self._slots["spill"]]

    def _start(self, kind: str, slot: int) -> None:
        try:
            parent, child = self._context.Pipe(duplex=True)
            process = self._context.Process(
                target=_worker_main,
                args=(child, self.memory_mb),
                daemon=True,
                name=f"rewardkit-{kind}-{slot}",
            )
            process.start()
            child.close()
        except OSError:  # out of processes or memory for now: try again later
            self._restart[(kind, slot)] = time.monotonic() + RESTART_DELAY_S
            return
        worker = _Worker(kind, slot, process, parent)
        self._slots[kind][slot] = worker
        self._selector.register(parent, selectors.EVENT_READ, worker)

    def _handle(self, command: tuple[Any, ...]) -> None:
        kind, job = command[0], command[1]
        if kind == "add" and not job.cancelled:
            start = len(job.pairs)
            job.pairs.extend(command[2])
            self._enqueue(job, range(start, len(job.pairs)))
        elif kind == "close":
            job.closed = True
            self._settle(job)
        elif kind == "cancel":
            job.cancelled = True
            for q in range(len(self._queues)):
                groups = [[t for t in group if t[0] is not job] for group in self._queues[q]]
                self._queues[q] = deque(group for group in groups if group)
                self._queued[q] = sum(len(group) for group in self._queues[q])
            for worker in self._workers():
                if worker is not None and any(task[0] is job for task in worker.sent):
                    self._lost(worker, "cancel")
            job.done.set()

    def _enqueue(self, job: Job, indices: range) -> None:
        """Riskiest first (a slow pair started early overlaps the rest); each gold's pairs to its worker."""
        groups: dict[str, list[Task]] = {}
        risks = {i: risk(job.pairs[i][1]) for i in indices}
        job.risky.update(i for i, r in risks.items() if r >= RISKY)
        for i in sorted(indices, key=lambda i: -risks[i]):
            groups.setdefault(job.pairs[i][0], []).append((job, i))
        for gold, tasks in groups.items():
            self._put(self._home(gold), tasks)

    def _home(self, gold: str) -> int:
        return jump_hash(int.from_bytes(text_digest(gold)[:8], "little"), len(self._queues))

    def _put(self, slot: int, tasks: list[Task], front: bool = False) -> None:
        if front:
            self._queues[slot].appendleft(tasks)
        else:
            self._queues[slot].append(tasks)
        self._queued[slot] += len(tasks)

    def _receive(self, worker: _Worker, now: float) -> None:
        try:
            while True:
                message = worker.conn.recv()
                if not worker.warm:  # ("hello", judged its warm-up pair right)
                    worker.warm = True
                    self.healthy = self.healthy and bool(message[1])
                    self._starting.discard((worker.kind, worker.slot))
                else:
                    job, i = worker.sent.popleft()
                    worker.since = now
                    self._finish(job, i, message)
                if not worker.conn.poll():
                    return
        except (EOFError, OSError):
            self._lost(worker, "crash")

    def _finish(self, job: Job, i: int, result: Result) -> None:
        if not job.cancelled:
            job.results[i] = result
            self._settle(job)

    def _settle(self, job: Job) -> None:
        if job.closed and len(job.results) == len(job.pairs):
            job.done.set()

    def _check_limits(self, now: float) -> None:
        for worker in self._workers():
            if worker is not None and worker.sent and now - worker.since > worker.sent[0][0].timeout_s:
                self._lost(worker, "timeout")

    def _lost(self, worker: _Worker, why: str) -> None:
        """The worker died (``crash``), overran its pair's hard limit (``timeout``) or holds a cancelled
        job's pairs (``cancel``): end it, settle its pairs, start another in its slot."""
        self._selector.unregister(worker.conn)
        worker.conn.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(5)
        self._slots[worker.kind][worker.slot] = None
        if not worker.warm:
            self._starting.discard((worker.kind, worker.slot))
            self._restart[(worker.kind, worker.slot)] = time.monotonic() + RESTART_DELAY_S
        else:
            self._start(worker.kind, worker.slot)
        tasks = [task for task in worker.sent if not task[0].cancelled]
        if tasks and tasks[0] is worker.sent[0] and why != "cancel":
            (job, i), tasks = tasks[0], tasks[1:]
            if why == "timeout":
                job.counters["timeouts"] += 1
                self._finish(job, i, (False, "timeout"))
            elif i in job.retried:
                self._finish(job, i, (None, "worker_crashed"))
            else:
                job.retried.add(i)
                job.counters["retried"] += 1
                tasks.insert(0, (job, i))
        for task in reversed(tasks):  # to the front of their golds' queues, in their order
            self._put(self._home(task[0].pairs[task[1]][0]), [task], front=True)

    def _assign(self, now: float) -> None:
        stuck: list[int] = []
        for worker in self._slots["main"]:
            if worker is None or not worker.warm:
                continue
            if worker.sent and now - worker.since > worker.sent[0][0].slow_after:
                stuck.append(worker.slot)
            if len(worker.sent) <= 1 and not any(i in job.risky for job, i in worker.sent):
                self._send(worker, self._take(worker.slot, PREFETCH - len(worker.sent), worker), now)
        for worker in self._slots["spill"]:  # a pair at a time, while any main worker is stuck
            if not stuck or not any(self._queued):
                return
            if worker is not None and worker.warm and not worker.sent:
                tasks = self._stand_in(stuck)
                for job, _ in tasks:
                    job.counters["spilled"] += 1
                self._send(worker, tasks, now)

    def _stand_in(self, stuck: list[int]) -> list[Task]:
        """A spill worker's next pair: the next one of the stuck main worker with the most waiting (what it
        would have judged next), else the next one of the longest queue."""
        waiting = [slot for slot in stuck if self._queued[slot]] or range(len(self._queued))
        slot = max(waiting, key=self._queued.__getitem__)
        own = self._queues[slot]
        if not own:
            return []
        task = own[0].pop(0)
        self._queued[slot] -= 1
        if not own[0]:
            own.popleft()
        return [task]

    def _take(self, slot: int, n: int, worker: _Worker) -> list[Task]:
        """Up to ``n`` pairs for a worker: from its own queue, else stolen from the back of the longest: the
        last gold's pairs when more than one gold waits there, else half of them when they are many."""
        if not self._queued[slot]:
            victim = max(range(len(self._queued)), key=self._queued.__getitem__)
            groups = self._queues[victim]
            if not groups or len(groups) == 1 and len(groups[0]) < 2 * PREFETCH:
                return []  # what is left there is its worker's next pairs: stealing would parse a gold twice
            group = groups[-1]
            keep = len(group) // 2 if len(groups) == 1 else 0  # a whole gold, when more than one waits
            stolen = group[keep:]
            del group[keep:]
            if not group:
                groups.pop()
            self._queued[victim] -= len(stolen)
            self._put(slot, stolen)
        tasks: list[Task] = []
        own = self._queues[slot]
        chars = 0
        while own and len(tasks) < n:
            job, i = own[0][0]
            size = len(job.pairs[i][0]) + len(job.pairs[i][1])
            ahead = bool(worker.sent or tasks)
            if ahead and (chars + size > SEND_AHEAD_CHARS or i in job.risky):
                break  # a busy worker reads this only after its pair; a risky pair waits for a free one
            chars += size
            tasks.append(own[0].pop(0))
            self._queued[slot] -= 1
            if not own[0]:
                own.popleft()
            if i in job.risky:
                break  # nothing waits behind a pair that may take its whole time limit
        return tasks

    def _send(self, worker: _Worker, tasks: list[Task], now: float) -> None:
        if not tasks:
            return
        if not worker.sent:
            worker.since = now
        worker.sent.extend(tasks)
        try:
            worker.conn.send([(*job.pairs[i], job.soft_s) for job, i in tasks])
        except OSError:
            self._lost(worker, "crash")

    def _stop(self) -> None:
        workers = [w for w in self._workers() if w is not None]
        for worker in workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        end = time.monotonic() + 5
        for worker in workers:
            worker.process.join(max(0.0, end - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)
            worker.conn.close()
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def _worker_main(conn: Any, memory_mb: int) -> None:
    """A worker process's entry point (the forkserver has the worker module imported and warm)."""
    from rewardkit.verify.worker import serve

    serve(conn, memory_mb)
