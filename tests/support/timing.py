"""How busy the machine is right now, for the tests that assert a protection by its timing (a deadline cuts
the work, the event loop stays free, a slow client is cut off) on a machine that other work shares.

A test keeps the property it checks - the protection's broken form takes many times longer than the bound -
and measures its margin against the machine it runs on: :func:`busy` is how many times longer than on an
idle core CPU work takes here now, and a bound written for an idle machine is multiplied by it (what a busy
machine slows, the broken form and the working one alike, it slows in the same proportion). Where the
broken form's time is a sleep or a timer (which no load lengthens), the test caps the bound below it.
The precise figures on an idle machine are the benchmarks' (``bench/``; the service's 504 lateness and
``/healthz`` latencies under hours of mixed traffic: ``bench/soak.py``).

>>> 1.0 <= busy() <= MAX_BUSY
True
"""

from __future__ import annotations

import os
import time

__all__ = ["MAX_BUSY", "busy"]

#: the most a bound is stretched: past it the machine is too busy for any timing to mean something
MAX_BUSY = 8.0
SAMPLE_S = 0.2  # how long the CPU share is sampled


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def busy(sample_s: float = SAMPLE_S) -> float:
    """How many times longer than on an idle core CPU work takes now, from 1 to :data:`MAX_BUSY`: the
    larger of the wall time of ``sample_s`` of busy work over the CPU time this thread got for it (the
    machine's other work and this process's other threads, now) and the 1-minute load average per core
    (what ran over the last minute, which the sample can miss between bursts)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall < sample_s:
        sum(range(1000))
    share = (time.perf_counter() - wall) / max(time.thread_time() - cpu, 1e-3)
    per_core = os.getloadavg()[0] / _cores() if hasattr(os, "getloadavg") else 1.0
    return min(max(1.0, share, per_core), MAX_BUSY)
