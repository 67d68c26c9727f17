"""The math verifier: judges (gold, prediction) pairs with Math-Verify in killable worker processes.

The order of work for a batch of pairs:

1. dedup: identical pairs are judged once; a bounded LRU keeps verdicts across batches;
2. fast exact paths (:mod:`rewardkit.verify.fastpath`), only where sound;
3. guards (:mod:`rewardkit.verify.guards`): answers that could not be computed get 0.0 with a reason;
4. the rest goes to a pebble process pool: each pair has a hard wall-clock limit (the worker is killed and
   replaced when it overruns) and a memory cap. While main workers are stuck on slow pairs, a spill pool
   takes their share of the batch, so a few slow pairs cannot hold up the rest.

One verifier per pool shape (workers, memory cap) per process: :func:`get_verifier`.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any

from rewardkit.core import DeadlineExceeded, remaining_s
from rewardkit.verify.fastpath import fast_verdict, plain_number
from rewardkit.verify.guards import encodable, guard, risk
from rewardkit.verify.launch import bare_forkserver_context
from rewardkit.verify.normalise import canonical, has_unparsed, normalise, units_agree

__all__ = [
    "Check",
    "MathVerifier",
    "Result",
    "close_verifier",
    "default_workers",
    "get_verifier",
    "require_math",
    "shutdown",
]

#: (equal, reason): ``equal`` is None when the pair cannot be judged (the gold is unreadable).
Result = tuple[bool | None, str | None]


def require_math() -> None:
    """Raise an ImportError that names the extra when Math-Verify or pebble is missing."""
    missing = [m for m in ("math_verify", "pebble") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"the math reward needs {' and '.join(missing)}: pip install 'rewardkit[math]'")


def default_workers() -> int:
    """``REWARDKIT_MATH_WORKERS`` if set, else the CPUs this process may use."""
    configured = os.environ.get("REWARDKIT_MATH_WORKERS", "").strip()
    if configured:
        workers = int(configured)
        if workers < 1:
            raise ValueError(f"REWARDKIT_MATH_WORKERS must be at least 1, got {configured!r}")
        return workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Check:
    """One pair to judge: a gold answer and a prediction, as extracted (normalisation happens here)."""

    gold: str
    prediction: str


def _clean(text: str) -> str:
    """Strings that cannot be encoded (lone surrogates) are repaired before they reach a worker."""
    return text if encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


_TRANSIENT = {"timeout", "worker_crashed", "memory_limit"}


class MathVerifier:
    """Judges (gold, prediction) pairs; owns a pebble process pool and an LRU of verdicts. Thread-safe."""

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
        cache_size: verdicts kept across batches (LRU).
        overdue_slots: processes of the spill pool, which takes over from main workers stuck on a slow
            pair (default: 4 x ``workers``; started in the background with the main pool).
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
        self._cache: OrderedDict[Check, Result] = OrderedDict()
        self._lock = threading.Lock()
        self._pools: dict[str, Any] = {}
        self._pool_lock = threading.Lock()  # pools start slowly: the cache lock must not wait for them
        self.stats = {
            "pairs": 0,
            "cache_hits": 0,
            "fast_path": 0,
            "guarded": 0,
            "verified": 0,
            "timeouts": 0,
            "spilled": 0,
        }

    # -- pools: "main" does the work; "spill" stands in for main workers stuck on overdue pairs
    def _get_pool(self, kind: str = "main") -> Any:
        with self._pool_lock:
            pool = self._pools.get(kind)
            if pool is None or not pool.active:
                import pebble

                pool = self._pools[kind] = pebble.ProcessPool(
                    max_workers=self.workers if kind == "main" else max(self.overdue_slots, 1),
                    initializer=_worker_init,
                    initargs=(self.memory_mb,),
                    context=bare_forkserver_context(),
                )
                if kind == "main" and self.overdue_slots:  # warm the spill pool before it is needed
                    threading.Thread(target=self._get_pool, args=("spill",), daemon=True).start()
            return pool

    def ready(self, timeout_s: float = 30.0) -> bool:
        """True when a worker answers within ``timeout_s`` (starting the pool if needed)."""
        try:
            return bool(self._get_pool().schedule(_worker_ping).result(timeout=timeout_s))
        except Exception:
            return False

    def close(self) -> None:
        with self._pool_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.stop()
            pool.join(timeout=10)

    # -- cache
    def _cached(self, key: Check) -> Result | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def _remember(self, key: Check, result: Result) -> None:
        if result[1] in _TRANSIENT or self.cache_size <= 0:
            return
        with self._lock:
            self._cache[key] = result
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    # -- judging
    def verify_many(
        self, checks: Sequence[Check], *, timeout_s: float, max_chars: int = 1000, guards: bool = True
    ) -> list[Result]:
        """Judge every check; each distinct one once. Never raises for a single bad pair."""
        unique = list(dict.fromkeys(checks))
        results: dict[Check, Result] = {}
        todo: dict[Check, list[Check]] = {}  # canonical pair -> the pairs as written that it stands for
        for check in unique:
            hit = self._cached(check)
            if hit is not None:
                results[check] = hit
                self.stats["cache_hits"] += 1
                continue
            decided, canonical_check = self._decide(check, max_chars, guards)
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
            self._remember(check, results[check])
        self.stats["pairs"] += len(checks)
        return [results[check] for check in checks]

    def _decide(self, check: Check, max_chars: int, guards: bool) -> tuple[Result | None, Check]:
        """A verdict reached in this process (``(result, check)``), or ``(None, canonical pair)`` for the
        workers. Both sides are normalised (:mod:`rewardkit.verify.normalise`) first; units must agree."""
        if guards and len(check.prediction) > max_chars:  # before any other work on a long text
            self.stats["guarded"] += 1
            return (False, "answer_too_long"), check
        if not encodable(check.prediction):  # lone surrogates: a model emitted broken text, not an answer
            self.stats["guarded"] += 1
            return (False, "invalid_unicode"), check
        prediction, gold = canonical(check.prediction), canonical(check.gold)
        if not units_agree(prediction, gold):  # 12 cm is not 12 m; units are never converted
            self.stats["fast_path"] += 1
            return (False, None), check
        decided = fast_verdict(prediction.text, gold.text)
        if decided is None and _unparsed_against_number(prediction.text, gold.text):
            decided = False
        if decided is not None:
            self.stats["fast_path"] += 1
            return (decided, None), check
        refused = guard(prediction.text, max_chars=max_chars) if guards else None
        if refused is not None:
            self.stats["guarded"] += 1
            return (False, refused), check
        return None, Check(gold.text, prediction.text)

    def _run(self, todo: list[Check], timeout_s: float) -> dict[Check, Result]:
        """Run pairs on the main pool, one per worker, so nothing ever waits behind a stuck worker (and
        nothing has to be cancelled: pebble cancels by killing). While main workers are stuck on pairs
        past ``slow_after``, the spill pool runs the rest of the batch, so a few slow pairs delay it by
        about their own hard limit, while normal work keeps its warm caches on the main pool.
        """
        main = self._get_pool("main")
        # The soft alarm fires a little before the hard kill; "never" is a day, far past any hard limit.
        soft = max(timeout_s - 0.2, timeout_s * 0.8) if self.soft_timeouts else 86_400.0
        slow_after = min(0.5, timeout_s / 4)
        # Riskiest first: a slow pair started early overlaps the rest of the batch instead of adding its
        # whole time limit at the end. (queue.pop() takes from the end.)
        queue = sorted(todo, key=lambda check: risk(check.prediction))
        on_main: dict[Future[Result], Check] = {}
        on_spill: dict[Future[Result], Check] = {}
        started: dict[Future[Result], float] = {}
        results: dict[Check, Result] = {}

        def submit(pool: Any, check: Check) -> Future[Result]:
            args = (_clean(check.gold), _clean(check.prediction), soft)
            return pool.schedule(_worker_check, args=args, timeout=timeout_s)  # type: ignore[no-any-return]

        while queue or on_main or on_spill:
            while queue and len(on_main) < self.workers:
                check = queue.pop()
                on_main[submit(main, check)] = check
            now = time.monotonic()
            for future in on_main:
                started.setdefault(future, now)
            if queue and any(now - started[f] > slow_after for f in on_main):
                while queue and len(on_spill) < self.overdue_slots:
                    check = queue.pop()
                    on_spill[submit(self._get_pool("spill"), check)] = check
                    self.stats["spilled"] += 1
            left = remaining_s()
            if left is not None and left <= 0.0:  # the request's deadline: stop its work, free the workers
                for future in [*on_main, *on_spill]:
                    future.cancel()  # pebble kills a running worker and starts a new one
                raise DeadlineExceeded(f"math: {len(queue) + len(on_main) + len(on_spill)} pairs unfinished")
            done, _ = wait([*on_main, *on_spill], timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                check = on_main.pop(future) if future in on_main else on_spill.pop(future)
                results[check] = self._outcome(future)
                started.pop(future, None)
        self.stats["verified"] += len(todo)
        return results

    def _outcome(self, future: Future[Result]) -> Result:
        try:
            return future.result()
        except TimeoutError:
            self.stats["timeouts"] += 1
            return False, "timeout"
        except MemoryError:
            return False, "memory_limit"
        except Exception as exc:
            name = type(exc).__name__
            return False, "worker_crashed" if name == "ProcessExpired" else f"verify_error:{name}"


def _worker_init(memory_mb: int) -> None:
    from rewardkit.verify.worker import init_worker

    init_worker(memory_mb)


def _worker_check(gold: str, prediction: str, soft_timeout_s: float) -> Result:
    from rewardkit.verify.worker import check

    return check(gold, prediction, soft_timeout_s)


def _unparsed_against_number(prediction: str, gold: str) -> bool:
    """One side still holds symbols no normalisation read, the other is a plain number: not equal (a parser
    that drops the unknown symbol would otherwise compare what is left)."""
    for one, other in ((prediction, gold), (gold, prediction)):
        if has_unparsed(one) and plain_number(normalise(other)) is not None:
            return True
    return False


def _worker_ping() -> bool:
    return True


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
