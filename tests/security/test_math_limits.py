"""The math verifier under a hostile or unlucky batch (issue 21): deadlines that hold inside the reward and
across a restart of the worker host, no item lost to a crashed worker, caches bounded in bytes, a reason for
every odd gold, and pools up before ``ready()`` says so. Real processes, real kills."""

from __future__ import annotations

import gc
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import rewardkit
from rewardkit.core import DeadlineExceeded, deadline
from rewardkit.verify import normalise
from rewardkit.verify.pool import Check, MathVerifier

MB = 1024 * 1024
SLOW_TRUE = "7^{4000000}"  # about 2 s of big-integer work in a worker, then equal (guards off)


def hosts() -> set[psutil.Process]:
    """This process's math worker hosts."""
    return {p for p in psutil.Process().children() if "rewardkit.verify" in p.cmdline()}


def workers_of(host: psutil.Process) -> list[psutil.Process]:
    """The pool workers of a host: its forkserver's children (its other child is a resource tracker)."""
    try:
        return [p for p in host.children(recursive=True) if p.ppid() != host.pid]
    except psutil.NoSuchProcess:
        return []


def cpu_s(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)


def kill_busy_worker(host: psutil.Process, spare: set[int], timeout_s: float = 60.0) -> int:
    """SIGKILL the first worker of ``host`` (not in ``spare``) seen computing (0.3 s of CPU), as an OOM
    killer would; return its pid."""
    start: dict[int, float] = {}
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for worker in workers_of(host):
            if worker.pid in spare:
                continue
            used = cpu_s(worker)
            if used - start.setdefault(worker.pid, used) > 0.3:
                worker.kill()
                return int(worker.pid)
        time.sleep(0.02)
    raise AssertionError("no worker started on the pair")


@pytest.fixture
def single() -> Iterator[tuple[MathVerifier, psutil.Process]]:
    """A verifier of one worker and no spill pool, so that the busy worker is the pair's; and its host."""
    others = hosts()
    verifier = MathVerifier(workers=1, memory_mb=0, overdue_slots=0)
    assert verifier.ready()
    (host,) = hosts() - others
    yield verifier, host
    verifier.close()


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = target()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


# ---------------------------------------------------------------- deadlines


@pytest.mark.timeout(120)
def test_long_golds_meet_the_deadline_in_the_calling_process() -> None:
    """Before: 30 distinct 99,000-character golds (roots to rewrite: ~0.3 s each) were all normalised
    before the deadline was looked at (504 after ~10 s); now each item checks it."""
    reward = rewardkit.get("math")
    assert reward.ready(60)
    golds = [f"{i}" + "√" * 98_990 for i in range(30)]
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(2.0):
        reward.score_detailed(["\\boxed{5}"] * len(golds), solution=golds)
    elapsed = time.monotonic() - start
    assert elapsed < 2.0 + 1.0, f"504 after {elapsed:.1f} s for a 2 s deadline"


@pytest.mark.timeout(120)
def test_a_killed_host_is_retried_within_what_is_left_of_the_deadline(
    single: tuple[MathVerifier, psutil.Process],
) -> None:
    """Before: the host killed 1 s into a 3 s batch was started again with a fresh 3 s (504 at ~5 s)."""
    verifier, host = single
    orphans = workers_of(host)
    checks = [Check(f"{SLOW_TRUE}+{i}", f"{i}+{SLOW_TRUE}") for i in range(4)]  # ~8 s on one worker
    start = time.monotonic()

    def batch() -> Any:
        with deadline(3.0):
            return verifier.verify_many(checks, timeout_s=20.0, guards=False)

    thread, box = in_thread(batch)
    time.sleep(1.0)
    host.kill()
    thread.join(30)
    elapsed = time.monotonic() - start
    for worker in orphans:  # the killed host's worker ends with its pair; do not leave it to chance
        if worker.is_running():
            worker.kill()
    assert isinstance(box.get("error"), DeadlineExceeded), box
    assert elapsed < 3.0 + 1.0, f"504 after {elapsed:.1f} s for a 3 s deadline"


# ---------------------------------------------------------------- no silent loss


@pytest.mark.timeout(120)
def test_a_pair_whose_worker_crashes_once_is_retried_and_scores_its_verdict(
    single: tuple[MathVerifier, psutil.Process],
) -> None:
    """Before: (False, "worker_crashed"), a 0.0 like a wrong answer; now the pair runs again on a fresh
    worker and gets its real verdict."""
    verifier, host = single
    check = Check(SLOW_TRUE, f"{SLOW_TRUE}+1-1")
    thread, box = in_thread(lambda: verifier.verify_many([check], timeout_s=30.0, guards=False))
    kill_busy_worker(host, spare=set())
    thread.join(60)
    assert box.get("value") == [(True, None)], box
    assert verifier.stats["retried"] == 1


@pytest.mark.timeout(120)
def test_a_pair_whose_worker_crashes_twice_is_no_verdict(single: tuple[MathVerifier, psutil.Process]) -> None:
    """Before: (False, "worker_crashed"): 0.0, learnt from as a wrong answer. Now None: trainers skip it."""
    verifier, host = single
    check = Check(SLOW_TRUE, f"{SLOW_TRUE}+2-2")
    thread, box = in_thread(lambda: verifier.verify_many([check], timeout_s=30.0, guards=False))
    first = kill_busy_worker(host, spare=set())
    kill_busy_worker(host, spare={first})
    thread.join(60)
    assert box.get("value") == [(None, "worker_crashed")], box
    assert verifier.stats["retried"] == 1
    assert verifier.verify_many([Check("x^2", "x*x")], timeout_s=10.0) == [(True, None)]  # the pool recovered


# ---------------------------------------------------------------- caches bounded in bytes


def retained_mb(work: Callable[[], None]) -> float:
    """MB still allocated (tracemalloc) after ``work`` and a collection."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / MB
    finally:
        tracemalloc.stop()


def test_the_verdict_cache_holds_digests_not_99k_golds() -> None:
    """Before: 1,000 pairs of 99,000-character golds kept ~190 MB (the pairs themselves were the keys);
    now keys are 16-byte digests and the cache is bounded in bytes."""
    verifier = MathVerifier(workers=1)  # identical pairs: decided here, no worker host is started
    pad = " " * 49_500

    def work() -> None:
        for batch in range(20):
            checks = [Check(f"{pad}{n}{pad}", f"{n}{pad}") for n in range(batch * 50, batch * 50 + 50)]
            assert verifier.verify_many(checks, timeout_s=5.0, max_chars=100_000) == [(True, None)] * 50

    try:
        kept = retained_mb(work)
        assert len(verifier._cache) == 1000  # every verdict is still there
        assert kept < 8, f"{kept:.0f} MB kept for 1,000 verdicts"
    finally:
        verifier.close()


def test_the_canonical_form_cache_is_bounded_in_bytes() -> None:
    """Before: 65,536 answers of up to 512 characters and their forms, whatever their size (16,000 of 500
    characters kept 19 MB; ~270 MB at its ceiling); now digests as keys and ``CACHE_BYTES`` in all."""
    normalise.clear_cache()

    def work() -> None:
        for n in range(16_000):
            normalise.canonical(f"{n:05d}" + "1" * 495)

    kept = retained_mb(work)
    assert normalise.canonical("2π").text == "2\\pi"  # still cached, and right
    assert kept < normalise.CACHE_BYTES / MB + 2, f"{kept:.0f} MB kept by the canonical-form cache"


# ---------------------------------------------------------------- a reason for every odd gold


def test_odd_golds_are_no_verdict_with_a_reason() -> None:
    """Before: a lone surrogate, a NUL byte, a dict or bytes as the gold, or a gold that is only spacing,
    scored 0.0 with no reason, like a wrong answer."""
    golds: list[Any] = ["\ud800", "5\x00", {"a": 1}, b"5", ["5"], "\\,", "$ $"]
    scored = rewardkit.get("math").score_detailed(["\\boxed{5}"] * len(golds), solution=golds)
    assert scored.values == [None] * len(golds)
    assert scored.reasons == ["invalid_gold"] * len(golds)


def test_every_zero_or_none_without_a_verdict_has_a_reason() -> None:
    """The reasons of the math reward for broken items: none is a silent 0.0 or None."""
    completions: list[Any] = ["\\boxed{5}", "\\boxed{\ud800}", "\\boxed{5}", None, "\\boxed{5}"]
    scored = rewardkit.get("math").score_detailed(completions, solution=["5\ud800", "5", "}{", "5", None])
    assert scored.values == [None, 0.0, None, 0.0, None]
    assert all(reason for reason in scored.reasons), scored.reasons


# ---------------------------------------------------------------- readiness


@pytest.mark.timeout(120)
def test_ready_means_both_pools_are_up_and_a_worker_judged_a_pair() -> None:
    """Before: ready() pinged one main worker; the spill pool's processes were started by the first batch
    that spilled, inside its deadline. Now every worker of both pools is up when ready() is True."""
    others = hosts()
    verifier = MathVerifier(workers=2, overdue_slots=3)
    try:
        assert verifier.ready()
        (host,) = hosts() - others
        assert len(workers_of(host)) == 2 + 3
        with deadline(2.0):
            assert verifier.verify_many([Check("x^2+1", "1+x^2")], timeout_s=1.0) == [(True, None)]
    finally:
        verifier.close()


# ---------------------------------------------------------------- the worker host's own code


@pytest.mark.timeout(120)
def test_the_host_runs_this_rewardkit_not_one_in_the_callers_working_folder(tmp_path: Path) -> None:
    """Before: ``python -m rewardkit.verify`` put the caller's working folder first on the host's path, so a
    ``rewardkit`` folder there (a checkout, a file a trainer wrote) was the package the host ran."""
    import subprocess
    import sys

    folder = tmp_path / "work"
    (folder / "rewardkit" / "verify").mkdir(parents=True)
    (folder / "rewardkit" / "__init__.py").write_text("")
    (folder / "rewardkit" / "verify" / "__main__.py").write_text("print('/tmp/not-a-socket', flush=True)\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import rewardkit\n"
        "print(rewardkit.math_equivalence(['\\\\boxed{x^2+2x+1}'], solution=['(x+1)^2'], workers=1))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[1.0]"
