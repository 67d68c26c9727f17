"""The math verifier: judges (gold, prediction) pairs with Math-Verify in killable worker processes.

A reward's rows are read first (:meth:`MathVerifier.read_many`, :mod:`rewardkit.verify.rows`: the gold,
the answer, what is decided without SymPy): in the worker host's workers, a chunk of rows a task, for a
batch of ``READ_REMOTE_ROWS`` rows or more once the host is up, so that this process's share of a batch
runs in parallel too; here for a smaller batch, a long row, or a chunk no worker read (never waiting for a
host or its pools to start). Then the order of work for its pairs:

1. dedup: identical pairs are judged once; an LRU keeps verdicts across batches, keyed by the pairs'
   digests (16 bytes, however long the gold) and bounded in bytes as well as in count. A pair is judged
   under its options (:class:`~rewardkit.verify.options.Options`: Math-Verify's ``verify`` options as the
   math reward names them), which are part of its digest and of every dedup: two rewards with other
   options share the verifier, never a verdict. What is kept regardless of options holds no verdict:
   canonical forms, the workers' parsed golds, the lessons' forms (parsing does not depend on them);
2. fast exact paths (:mod:`rewardkit.verify.fastpath`), only where sound;
3. guards (:mod:`rewardkit.verify.guards`): answers that could not be computed get 0.0 with a reason; a
   gold that is no text (lone surrogates, NUL bytes, nothing but spacing) is ``(None, "invalid_gold")``;
4. the rest goes to a pebble process pool, several pairs sharing a gold a task where it can
   (:mod:`rewardkit.verify.plan`): each pair has a hard wall-clock limit of its own (the worker is killed
   and replaced when it overruns) and a memory cap. While main workers are stuck on slow pairs, a spill pool
   takes their share of the batch, so a few slow pairs cannot hold up the rest. A pair whose worker dies
   runs once more, then is ``(None, "worker_crashed")``: no verdict, not a wrong answer.

The request's deadline (:func:`rewardkit.core.deadline`) is checked per pair in this process and kept by
the worker host, across a restart of the host too.

One verifier per pool shape (workers, memory cap) per process: :func:`get_verifier`.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import pickle
import threading
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from rewardkit.core import DeadlineExceeded, Explained, Verdict, check_deadline, deadline
from rewardkit.lru import LRUCache
from rewardkit.verify.host import HostGone, WorkerHost
from rewardkit.verify.options import DEFAULT_OPTIONS, Options, Pair
from rewardkit.verify.rows import MAX_GOLD_CHARS, Check, Pending, decide, digest, read_rows
from rewardkit.verify.tasks import Result

__all__ = [
    "MAX_GOLD_CHARS",
    "Check",
    "MathVerifier",
    "Options",
    "Pending",
    "Result",
    "close_verifier",
    "default_workers",
    "get_verifier",
    "require_math",
    "shutdown",
]


def require_math() -> None:
    """Raise an ImportError that names the extra when Math-Verify or pebble is missing."""
    missing = [m for m in ("math_verify", "pebble") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"the math reward needs {' and '.join(missing)}: pip install '/path/to/rewardkit[math]'"
        )


def default_workers() -> int:
    """``REWARDKIT_MATH_WORKERS`` if set, else the CPUs this process may use."""
    configured = os.environ.get("REWARDKIT_MATH_WORKERS", "").strip()
    if configured:
        workers = int(configured)
        if workers < 1:
            raise ValueError(f"REWARDKIT_MATH_WORKERS must be at least 1, got {configured!r}")
        return workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Not verdicts on the pair: they depend on the worker, on this call's length limit or on the host's health.
_TRANSIENT = {"timeout", "worker_crashed", "memory_limit", "answer_too_long", "gold_too_long"}
CACHE_BYTES = 32 << 20  # the verdicts held, together (100,000 take about 30 MB)
_ENTRY_BYTES = 300  # what a verdict costs: its digest, the tuples, the LRU's links


READ_REMOTE_ROWS = 64  # a batch of fewer rows is read in the calling process (a round trip costs more)
READ_REMOTE_CHARS = 65_536  # a longer row (completion and solution) is read here, not copied twice over
READ_CHUNKS_A_WORKER = 4  # chunks of rows a worker, so that an uneven chunk does not leave the others idle
READ_CHUNK_MIN = 16


def _result_bytes(result: Result) -> int:
    return _ENTRY_BYTES + len(result[1] or "")


class MathVerifier:
    """Judges (gold, prediction) pairs: normalises, decides what it soundly can here, keeps an LRU of
    verdicts, and sends the rest to its worker host (:mod:`rewardkit.verify.host`). Thread-safe."""

    def __init__(
        self,
        workers: int,
        memory_mb: int = 2048,
        cache_size: int = 100_000,
        overdue_slots: int | None = None,
        soft_timeouts: bool = True,
    ) -> None:
        """Args:
        workers: processes that verify concurrently.
        memory_mb: address-space cap per worker (0: none).
        cache_size: verdicts kept across batches (LRU; at most ``CACHE_BYTES`` together).
        overdue_slots: processes of the spill pool, which takes over from main workers stuck on a slow
            pair (default: 4 x ``workers``; started with the host, as the main pool is).
        soft_timeouts: interrupt Python-level work in the worker just before the hard limit, so the
            worker survives; without them every overrun is a kill and a replacement.
        """
        require_math()
        self.soft_timeouts = soft_timeouts
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.memory_mb = memory_mb
        self.overdue_slots = 4 * workers if overdue_slots is None else overdue_slots
        self.cache_size = cache_size
        self._cache: LRUCache[bytes, Result] = LRUCache(
            cache_size, max_total=CACHE_BYTES, sizeof=_result_bytes
        )
        self._lock = threading.Lock()
        self._host = WorkerHost(workers, memory_mb, self.overdue_slots)
        self.stats = {
            "pairs": 0,
            "cache_hits": 0,
            "fast_path": 0,
            "guarded": 0,
            "verified": 0,
            "timeouts": 0,
            "spilled": 0,
            "retried": 0,
            "read_failed": 0,  # chunks of rows sent to the workers that came back unread (read here)
        }

    # -- the worker host (a helper process that owns the pools; see rewardkit.verify.host)
    def ready(self, timeout_s: float = 30.0) -> bool:
        """True when, within ``timeout_s``, the worker host is up (started if needed), both its pools are
        up and a worker has judged a real pair: the first batch after it waits for no process."""
        try:
            with deadline(timeout_s):
                return bool(self._host.call("ping", timeout_s))
        except (HostGone, DeadlineExceeded):
            return False

    def close(self) -> None:
        """Stop the host and its pools (a later batch starts them again)."""
        self._host.close()

    def _count(self, stat: str, n: int = 1) -> None:
        with self._lock:
            self.stats[stat] += n

    # -- cache
    def _remember(self, key: bytes, result: Result) -> None:
        reason = result[1]
        if reason in _TRANSIENT or (reason or "").startswith("verify_error"):
            return
        self._cache.put(key, result)

    # -- reading rows (rewardkit.verify.rows): in the workers for a large batch, here for a small one
    def read_many(
        self,
        rows: Sequence[tuple[Any, str | None, Any]],
        *,
        mode: str,
        rel_tol: float,
        max_chars: int,
        options: Options = DEFAULT_OPTIONS,
    ) -> list[Verdict | Explained | Pending]:
        """:func:`~rewardkit.verify.rows.read_rows` of ``(solution, text, choices)`` rows, their pairs to be
        compared under ``options``: in chunks on the
        host's workers when the batch is large, the pool has several and the host is up, here otherwise,
        and here too for rows a worker did not read (a chunk that failed or did not pickle, pools still
        starting or busy, a host that is gone): never waits for a host. Raises
        :class:`~rewardkit.core.DeadlineExceeded` when the request's deadline passes."""
        out: list[Verdict | Explained | Pending | None] = [None] * len(rows)
        sent = [i for i, row in enumerate(rows) if _sendable(row)] if self._reads_remotely(len(rows)) else []
        if sent:
            size = max(READ_CHUNK_MIN, -(-len(sent) // (READ_CHUNKS_A_WORKER * self.workers)))
            chunks = [sent[at : at + size] for at in range(0, len(sent), size)]
            for chunk, read in zip(
                chunks, self._read_remotely(rows, chunks, (mode, rel_tol, max_chars, options)), strict=True
            ):
                if read is not None and len(read) == len(chunk):
                    for i, one in zip(chunk, read, strict=True):
                        out[i] = one
        left = [i for i, one in enumerate(out) if one is None]
        here = read_rows(
            [rows[i] for i in left], mode, rel_tol, max_chars, options, lambda: check_deadline("math")
        )
        for i, one in zip(left, here, strict=True):
            out[i] = one
        return [one for one in out if one is not None]

    def _reads_remotely(self, rows: int) -> bool:
        return self.workers > 1 and rows >= READ_REMOTE_ROWS and self._host.running()

    def _read_remotely(
        self,
        rows: Sequence[tuple[Any, str | None, Any]],
        chunks: list[list[int]],
        how: tuple[str, float, int, Options],
    ) -> list[list[Verdict | Explained | Pending] | None]:
        """Each chunk's rows read by a worker, or ``None`` for a chunk no worker read. A chunk travels
        pickled once, here, and its rows read come back pickled once, in the worker: the host passes the
        bytes on without reading them. A chunk that does not pickle stays here; so does every chunk when
        the host is not running, its pools are starting or the request's deadline passed (reading here
        then raises :class:`~rewardkit.core.DeadlineExceeded`)."""
        blobs = [_pickled([rows[i] for i in chunk]) for chunk in chunks]
        sent = [k for k, blob in enumerate(blobs) if blob is not None]
        out: list[list[Verdict | Explained | Pending] | None] = [None] * len(chunks)
        if not sent:
            return out
        try:
            status, read, counters = self._host.call("read", [blobs[k] for k in sent], how, start=False)
        except HostGone:
            return out
        if status == "ok" and len(read) == len(sent):
            self._count("read_failed", counters.get("read_failed", 0))
            for k, blob in zip(sent, read, strict=True):
                out[k] = None if blob is None else pickle.loads(blob)
        return out

    # -- judging
    def verify_many(
        self, checks: Sequence[Check], *, timeout_s: float, max_chars: int = 1000, guards: bool = True
    ) -> list[Result]:
        """Judge every check; each distinct one once. Never raises for a single bad pair; raises
        :class:`~rewardkit.core.DeadlineExceeded` when the request's deadline passes (checked per pair)."""
        return self._judge(checks, {}, timeout_s, max_chars, guards)

    def judge(self, pending: Sequence[Pending], *, timeout_s: float, max_chars: int = 1000) -> list[Result]:
        """:meth:`verify_many` of rows already read (:meth:`read_many`): their digests and what was decided
        about them without SymPy are taken as read (with the guards on, as they were read)."""
        return self._judge(
            [p.check for p in pending], {p.check: p for p in pending}, timeout_s, max_chars, True
        )

    def _judge(
        self,
        checks: Sequence[Check],
        read: dict[Check, Pending],
        timeout_s: float,
        max_chars: int,
        guards: bool,
    ) -> list[Result]:
        unique = list(dict.fromkeys(checks))
        keys: dict[Check, bytes] = {}
        results: dict[Check, Result] = {}
        todo: dict[Check, list[Check]] = {}  # canonical pair -> the pairs as written that it stands for
        for check in unique:
            check_deadline("math")
            known = read.get(check)
            keys[check] = known.key if known is not None else digest(check)
            hit = self._cache.get(keys[check])
            if hit is not None:
                results[check] = hit
                self._count("cache_hits")
                continue
            if known is not None:
                decided, canonical_check, stat = known.decided, known.canonical, known.stat
            else:
                decided, canonical_check, stat = decide(check, max_chars, guards)
            if stat is not None:
                self._count(stat)
            if decided is not None:
                results[check] = decided
            else:
                todo.setdefault(canonical_check, []).append(check)
        if todo:
            judged = self._run(list(todo), timeout_s)
            for canonical_check, written in todo.items():
                for check in written:
                    results[check] = judged[canonical_check]
        for check in unique:
            self._remember(keys[check], results[check])
        self._count("pairs", len(checks))
        return [results[check] for check in checks]

    def _run(self, todo: list[Check], timeout_s: float) -> dict[Check, Result]:
        """Judge pairs in the worker host; the request's deadline goes along and is kept there. Pairs the
        host could not judge (it is gone, or failed the batch) are no verdict (``None``), not wrong."""
        # both encodable: decide() refused others; a pair's options go with it where they are not the defaults
        pairs: list[Pair] = [
            (c.gold, c.prediction) if c.options == DEFAULT_OPTIONS else (c.gold, c.prediction, c.options)
            for c in todo
        ]
        try:
            status, results, counters = self._host.call("run", pairs, timeout_s, self.soft_timeouts)
        except HostGone as exc:
            return {check: (None, f"verify_error:{type(exc).__name__}") for check in todo}
        if status == "error":  # the host could not run this batch (it logged nothing of the texts)
            return {check: (None, f"verify_error:{next(iter(counters), 'host')}") for check in todo}
        for name, count in counters.items():
            self._count(name, count)
        if status == "deadline":
            raise DeadlineExceeded(f"math: {len(todo)} pairs unfinished")
        self._count("verified", len(todo))
        return dict(zip(todo, results, strict=True))


def _sendable(row: tuple[Any, str | None, Any]) -> bool:
    """A row worth sending to a worker: plain values of the built-in types (what pickles as it is, and
    cheaply), ``READ_REMOTE_CHARS`` at most together, the options' texts counted too."""
    solution, text, options = row
    parts: Iterable[Any] = [options]
    if type(options) is dict:
        parts = chain(options.keys(), options.values())
    elif type(options) is list:
        parts = options
    size = len(text or "")
    for part in chain([solution], parts):
        kind = type(part)
        if kind is str:
            size += len(part)
        elif kind is int:
            size += part.bit_length() // 8
        elif kind not in (float, bool, type(None)):
            return False
        size += 1  # an empty text or a number costs something too
        if size > READ_REMOTE_CHARS:
            return False
    return True


def _pickled(rows: list[tuple[Any, str | None, Any]]) -> bytes | None:
    """A chunk of rows pickled, or ``None`` for one that does not pickle (it is read here)."""
    try:
        return pickle.dumps(rows, pickle.HIGHEST_PROTOCOL)
    except Exception:  # a value pickle refuses (a lock, a local class) or nests too deep
        return None


_verifiers: dict[tuple[int, int], MathVerifier] = {}
_verifiers_lock = threading.Lock()


def get_verifier(workers: int | None = None, memory_mb: int = 2048) -> MathVerifier:
    """The process-wide verifier for this pool shape (pools are shared, not one per reward object)."""
    key = (workers or default_workers(), memory_mb)
    with _verifiers_lock:
        verifier = _verifiers.get(key)
        if verifier is None:
            verifier = _verifiers[key] = MathVerifier(*key)
        return verifier


def close_verifier(workers: int | None = None, memory_mb: int = 2048) -> None:
    """Stop the pools of one pool shape (a later :func:`get_verifier` starts them again)."""
    with _verifiers_lock:
        verifier = _verifiers.pop((workers or default_workers(), memory_mb), None)
    if verifier is not None:
        verifier.close()


@atexit.register
def shutdown() -> None:
    """Stop every worker pool (also run at interpreter exit)."""
    with _verifiers_lock:
        verifiers = list(_verifiers.values())
        _verifiers.clear()
    for verifier in verifiers:
        verifier.close()
