"""Math answer equivalence: cheap sound checks in the parent, Math-Verify in killable worker processes.

The order of work for a batch of (gold, prediction) pairs:

1. dedup: identical pairs are judged once; a bounded LRU keeps verdicts across batches;
2. fast exact paths, only where sound: identical normalised strings are equal; two plain numbers
   (integers, decimals, simple fractions) compare as exact rationals;
3. guards: answers that are too long, nested too deeply, or hold numeric power towers or factorials too
   large to compute get 0.0 with a reason, without touching SymPy;
4. the rest goes to a pebble process pool: each pair has a hard wall-clock limit (the worker is killed and
   replaced when it overruns) and a memory cap. While main workers are stuck on slow pairs, a spill pool
   takes their share of the batch, so a few slow pairs cannot hold up the rest.

>>> from rewardkit.equivalence import fast_verdict, guard
>>> fast_verdict("\\\\dfrac{1}{2}", "\\\\frac{1}{2}"), fast_verdict("0.5", "1/2"), fast_verdict("x+1", "1+x")
(True, True, None)
>>> guard("9^{9^{9^{9}}}", max_chars=1000), guard("(10^{7})!", max_chars=1000), guard("x^2", max_chars=1000)
('huge_power', 'huge_factorial', None)
"""

from __future__ import annotations

import atexit
import importlib.util
import math
import multiprocessing
import multiprocessing.context
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from fractions import Fraction
from multiprocessing import popen_forkserver, spawn
from typing import Any

from rewardkit.core import DeadlineExceeded, remaining_s

__all__ = [
    "Check",
    "MathVerifier",
    "close_verifier",
    "default_workers",
    "fast_verdict",
    "get_verifier",
    "guard",
    "normalise",
    "require_math",
    "shutdown",
]

#: (equal, reason): ``equal`` is None when the pair cannot be judged (the gold is unreadable).
Result = tuple[bool | None, str | None]

MAX_POWER_DIGITS = 100_000  # a power with more digits than this is refused, not computed
MAX_FACTORIAL = 1_000
MAX_DEPTH = 40  # brace nesting


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


# --------------------------------------------------------------------------- fast exact paths

_SPACING = re.compile(r"\\[!,;: ]|\\left\b|\\right\b|\\displaystyle\b|\\\$|\$|\s+")
_PLAIN_NUMBER = re.compile(r"([+-]?)(?:(\d+(?:\.\d+)?)|(\d+)/(\d+)|\\frac\{(\d+)\}\{(\d+)\})")


def normalise(answer: str) -> str:
    """Drop what never changes a value: spacing commands, ``\\left``/``\\right``, dollar signs, white space,
    ``\\dfrac``/``\\tfrac`` spellings and a trailing full stop.

    >>> normalise("\\\\$32 , \\\\!348.")
    '32,348'
    """
    text = _SPACING.sub("", answer).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return text[:-1] if text.endswith(".") else text


def plain_number(answer: str) -> Fraction | None:
    """An integer, decimal or simple fraction (``3``, ``-0.25``, ``7/2``, ``\\frac{7}{2}``) as a Fraction."""
    match = _PLAIN_NUMBER.fullmatch(answer)
    if match is None or len(answer) > 200:
        return None
    sign, decimal, num, den, fnum, fden = match.groups()
    if decimal is not None:
        value = Fraction(decimal)
    else:
        denominator = int(den or fden)
        if denominator == 0:
            return None
        value = Fraction(int(num or fnum), denominator)
    return -value if sign == "-" else value


def fast_verdict(prediction: str, gold: str) -> bool | None:
    """``True``/``False`` when a sound exact check decides the pair, else ``None`` (ask SymPy)."""
    p, g = normalise(prediction), normalise(gold)
    if p == g:
        return True
    pn, gn = plain_number(p), plain_number(g)
    if pn is not None and gn is not None:
        return pn == gn
    return None


# --------------------------------------------------------------------------- guards

# A numeric power not itself raised further (the top of a chain a^b^c, or the innermost of a^{b^{c}}).
# Every pattern that starts with a digit run starts only where the run starts ((?<!\d)) and cannot
# backtrack into it ((?>...)): each is linear in the text, not quadratic in a run of digits.
_SMALL_POWER = re.compile(r"(?<!\d)((?>\d+))\s*\^\s*(?:\{\s*((?>\d+))\s*\}|(\d))(?!\s*\^)")
_BIG = "\u2603"  # stands for an already-large power, so a tower built on it is refused
_BIG_EXPONENT = re.compile(r"\^\s*\{?\s*" + _BIG)
_FACTORIAL = re.compile(r"(?<!\d)((?>\d+)|" + _BIG + r")\s*\)?\s*\}?\s*!")


def _max_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "{(":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "})":
            depth -= 1
    return deepest


def _exceeds(digits: str, limit: int) -> bool:
    """``int(digits) > limit`` without converting a long run of digits (which Python refuses)."""
    digits = digits.lstrip("0") or "0"
    return len(digits) > len(str(limit)) or int(digits) > limit


def _power_digits(base: str, exponent: str) -> float:
    """About how many digits ``base ** exponent`` has (both runs of decimal digits, of any length)."""
    base = base.lstrip("0") or "0"
    if base in ("0", "1"):
        return 1.0
    exponent = exponent.lstrip("0") or "0"
    if len(exponent) > 12:
        return math.inf
    log10_base = math.log10(int(base[:15])) + max(0, len(base) - 15)
    return int(exponent) * log10_base


def guard(prediction: str, *, max_chars: int) -> str | None:
    """A reason to refuse ``prediction`` without SymPy, or ``None``.

    Numeric powers are folded innermost first: ``b^{e}`` with at most 15 digits becomes its value, a
    larger one a marker; a power whose exponent is a marker, or with more than ``MAX_POWER_DIGITS``
    digits, is a ``huge_power``. Factorials of more than ``MAX_FACTORIAL`` are ``huge_factorial``.
    """
    if len(prediction) > max_chars:
        return "answer_too_long"
    if not _encodable(prediction):  # lone surrogates: a model emitted broken text, not an answer
        return "invalid_unicode"
    if _max_depth(prediction) > MAX_DEPTH:
        return "too_deep"
    text = prediction
    if "^" in text:
        text = text.replace("\\left", "").replace("\\right", "")
        for _ in range(64):
            if _BIG + "}" in text or _BIG_EXPONENT.search(text):
                return "huge_power"
            match = _SMALL_POWER.search(text)
            if match is None:
                break
            base, exponent = match.group(1), match.group(2) or match.group(3)
            digits = _power_digits(base, exponent)
            if digits > MAX_POWER_DIGITS:
                return "huge_power"
            value = str(int(base.lstrip("0") or "0") ** int(exponent[-12:])) if digits <= 15 else _BIG
            if text[: match.start()].rstrip().endswith("^"):  # an exponent itself: keep it one group
                value = "{" + value + "}"
            text = text[: match.start()] + value + text[match.end() :]
    if "!" in text:
        for match in _FACTORIAL.finditer(text):
            token = match.group(1)
            if token == _BIG or _exceeds(token, MAX_FACTORIAL):
                return "huge_factorial"
    return None


# --------------------------------------------------------------------------- the verifier


@dataclass(frozen=True)
class Check:
    """One pair to judge. ``anchored``: ``prediction`` is a completion's tail to search for an answer."""

    gold: str
    prediction: str
    anchored: bool = False


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean(text: str) -> str:
    """Strings that cannot be encoded (lone surrogates) are repaired before they reach a worker."""
    return text if _encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


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
                    context=_bare_forkserver_context(),
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
        todo: list[Check] = []
        for check in unique:
            hit = self._cached(check)
            if hit is not None:
                results[check] = hit
                self.stats["cache_hits"] += 1
                continue
            if not check.anchored:
                decided = fast_verdict(check.prediction, check.gold)
                if decided is not None:
                    results[check] = (decided, None)
                    self.stats["fast_path"] += 1
                    continue
                refused = guard(check.prediction, max_chars=max_chars) if guards else None
                if refused is not None:
                    results[check] = (False, refused)
                    self.stats["guarded"] += 1
                    continue
            todo.append(check)
        if todo:
            results.update(self._run(todo, timeout_s))
        for check in unique:
            self._remember(check, results[check])
        self.stats["pairs"] += len(checks)
        return [results[check] for check in checks]

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
        queue = sorted(todo, key=_risk)
        on_main: dict[Future[Result], Check] = {}
        on_spill: dict[Future[Result], Check] = {}
        started: dict[Future[Result], float] = {}
        results: dict[Check, Result] = {}

        def submit(pool: Any, check: Check) -> Future[Result]:
            args = (_clean(check.gold), _clean(check.prediction), check.anchored, soft)
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


# Workers fork from a forkserver that already imported SymPy and Math-Verify, so a killed worker is
# replaced in milliseconds. multiprocessing would also re-import the parent's __main__ script in every
# worker (for a trainer: torch, transformers, the whole CLI), or break on a script without a main guard;
# the workers need nothing from __main__, so their start data leaves it out.
_launching_bare = threading.local()


class _BarePopen(popen_forkserver.Popen):
    def _launch(self, process_obj: Any) -> None:
        _launching_bare.active = True
        try:
            super()._launch(process_obj)  # type: ignore[misc]
        finally:
            _launching_bare.active = False


class _BareProcess(multiprocessing.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _BarePopen(process_obj)


class _BareForkServerContext(multiprocessing.context.ForkServerContext):
    Process = _BareProcess


def _bare_forkserver_context() -> multiprocessing.context.ForkServerContext:
    original = spawn.get_preparation_data
    if not getattr(original, "_rewardkit_bare", False):

        def get_preparation_data(name: str) -> dict[str, Any]:
            data: dict[str, Any] = original(name)
            if getattr(_launching_bare, "active", False):
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        get_preparation_data._rewardkit_bare = True  # type: ignore[attr-defined]
        spawn.get_preparation_data = get_preparation_data
    context = _BareForkServerContext()
    context.set_forkserver_preload(["rewardkit._mathworker"])
    return context


def _risk(check: Check) -> float:
    """How likely a pair is to be slow in SymPy: powers of powers, factorials, nesting, length."""
    text = check.prediction
    towers = len(re.findall(r"\^\s*\{[^{}]*\^", text))  # an exponent that holds a power
    return 10 * towers + 10 * text.count("!") + _max_depth(text) + len(text) / 200


def _worker_init(memory_mb: int) -> None:
    from rewardkit._mathworker import init_worker

    init_worker(memory_mb)


def _worker_check(gold: str, prediction: str, anchored: bool, soft_timeout_s: float) -> Result:
    from rewardkit._mathworker import check

    return check(gold, prediction, anchored, soft_timeout_s)


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
