"""Math equivalence: extraction, fast paths, guards, and the worker pool (real processes, real kills)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.extract import gold_answer, last_boxed, math_answer
from rewardkit.verify.fastpath import fast_verdict, plain_number
from rewardkit.verify.guards import guard
from rewardkit.verify.normalise import normalise
from rewardkit.verify.pool import Check, MathVerifier
from tests.support import timing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{1}", "1"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed {3}", "3"),
        ("\\fbox{4}", "4"),
        ("\\boxed{1} \\boxed{2}", "2"),
        ("\\boxed{1} \\boxed{2", "1"),
        ("\\boxed{{}", None),
        ("\\boxed 5", None),
        ("", None),
    ],
)
def test_last_boxed(text: str, expected: str | None) -> None:
    assert last_boxed(text) == expected


@pytest.mark.timeout(10)
def test_extraction_is_linear_on_hostile_text() -> None:
    assert last_boxed("\\boxed{" * 200_000) is None
    assert last_boxed("\\boxed{1}" + "\\boxed{{" * 100_000) == "1"
    assert math_answer("<answer>" * 100_000 + "\\boxed{" * 100_000).answer is None


def test_answer_and_gold_extraction() -> None:
    assert math_answer("<answer>x \\boxed{2} y</answer>").answer == "2"
    assert math_answer("<answer> 1/2 </answer>").answer == "1/2"
    assert math_answer("\\boxed{3} <answer>4</answer>").answer == "4"
    assert math_answer("nothing") == (None, "no_answer")
    assert gold_answer("so $\\boxed{12}$.") == "12"
    assert gold_answer("<answer>3</answer> \\boxed{4}") == "3"
    assert gold_answer(" 7 ") == "7"


def test_normalise_and_fast_paths() -> None:
    assert normalise("\\left( 1, \\dfrac{1}{2} \\right).") == "(1,\\frac{1}{2})"
    assert plain_number("-\\frac{3}{4}") == Fraction(-3, 4)
    assert plain_number("7/0") is None
    assert plain_number("x") is None
    assert fast_verdict("0.50", "\\tfrac{1}{2}") is True
    assert fast_verdict("253", "255") is False
    assert fast_verdict("x^2", "x*x") is None  # not decided here: SymPy's job


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("9^{9^{9^{9}}}", "huge_power"),
        ("2^{2^{2^{2^{2^{2}}}}}", "huge_power"),
        ("10^{200000}", "huge_power"),
        ("9^9^9", "huge_power"),
        ("(10^{7})!", "huge_factorial"),
        ("100000!", "huge_factorial"),
        ("1+" * 600 + "1", "answer_too_long"),
        ("\\frac{1}{" * 50 + "2" + "}" * 50, "too_deep"),
        ("\ud800 12", "invalid_unicode"),
        ("2^{10}", None),
        ("10^{100}", None),
        ("e^{x^2}", None),
        ("10!", None),
        ("\\frac{1}{2}", None),
    ],
)
def test_guards(answer: str, reason: str | None) -> None:
    assert guard(answer, max_chars=1000) == reason


def test_reasons_reach_the_caller() -> None:
    completions: list[Any] = ["\\boxed{5}", "no answer here", "\\boxed{}", "\\boxed{9^{9^{9^{9}}}}"]
    completions += ["\\boxed{5}", 17]
    scored = rewardkit.get("math", timeout_s=2.0).score_detailed(
        completions,
        solution=["5", "5", "5", "5", None, "5"],
    )
    assert scored.values == [1.0, 0.0, 0.0, 0.0, None, 0.0]
    assert scored.reasons == [
        None,
        "no_answer",
        "empty_answer",
        "huge_power",
        "missing_solution",
        "invalid_completion",
    ]


def test_bad_parameters() -> None:
    for params in (
        {"timeout_s": 0},
        {"timeout_s": "5"},
        {"workers": 0},
        {"memory_mb": 100},
        {"max_answer_chars": 0},
    ):
        with pytest.raises(ValueError, match="math: "):
            rewardkit.get("math", **params)
    assert rewardkit.get("math", timeout_s=0.5).params()["timeout_s"] == 0.5


@pytest.fixture
def verifier() -> Iterator[MathVerifier]:
    v = MathVerifier(workers=1, memory_mb=1024, cache_size=100)
    yield v
    v.close()


@pytest.mark.timeout(120)
def test_a_hang_is_interrupted_in_the_worker(verifier: MathVerifier) -> None:
    """Guards off, so SymPy really starts on the tower; the worker's own alarm stops it in time."""
    assert verifier.ready()
    start = time.monotonic()
    results = verifier.verify_many(
        [Check("3", "9^{9^{9^{9}}}"), Check("x^2+2x+1", "(x+1)^2")], timeout_s=2.0, guards=False
    )
    assert results == [(False, "timeout"), (True, None)]
    assert time.monotonic() - start < 2.0 + 5.0 * timing.busy()  # minutes without the alarm
    assert verifier.stats["timeouts"] == 0  # no kill was needed


@pytest.mark.timeout(120)
def test_a_hang_is_killed_at_the_hard_limit_and_the_pool_recovers() -> None:
    """Without the soft alarm only the parent's kill can stop the tower: the worker is killed, replaced."""
    verifier = MathVerifier(workers=1, soft_timeouts=False)
    try:
        assert verifier.ready()
        start = time.monotonic()
        results = verifier.verify_many(
            [Check("3", "9^{9^{9^{9}}}"), Check("x^2+2x+1", "(x+1)^2")], timeout_s=2.0, guards=False
        )
        elapsed = time.monotonic() - start
        assert results == [(False, "timeout"), (True, None)]
        slow = timing.busy()  # the slack stretched by how busy the machine is; minutes without the kill
        assert elapsed < 2.0 + 5.0 * slow, f"took {elapsed:.1f}s for a 2 s limit ({slow:.1f}x)"
        assert verifier.stats["timeouts"] == 1
        assert verifier.verify_many([Check("\\sqrt{8}", "2\\sqrt{2}")], timeout_s=5.0) == [(True, None)]
    finally:
        verifier.close()


@pytest.mark.timeout(120)
def test_fractional_timeouts_work(verifier: MathVerifier) -> None:
    assert verifier.ready()
    start = time.monotonic()
    (result,) = verifier.verify_many([Check("3", "2^{2^{2^{2^{2^{2}}}}}")], timeout_s=0.5, guards=False)
    assert result == (False, "timeout") or result[1] == "memory_limit"
    assert time.monotonic() - start < 0.5 + 5.0 * timing.busy()


def test_dedup_and_cache(verifier: MathVerifier) -> None:
    pairs = [Check("(x+1)^2", "x^2+2x+1")] * 5 + [Check("(x+1)^2", "x^2+1")] * 3
    assert verifier.verify_many(pairs, timeout_s=5.0) == [(True, None)] * 5 + [(False, None)] * 3
    assert verifier.stats["verified"] == 2  # 8 pairs, 2 distinct
    verifier.verify_many(pairs, timeout_s=5.0)
    assert verifier.stats["verified"] == 2 and verifier.stats["cache_hits"] == 2


def test_cache_is_bounded() -> None:
    v = MathVerifier(workers=1, cache_size=3)
    try:
        v.verify_many([Check(str(i), str(i)) for i in range(10)], timeout_s=1.0)  # fast path, no workers
        assert len(v._cache) == 3
    finally:
        v.close()


def test_gold_unparseable_is_not_applicable(verifier: MathVerifier) -> None:
    assert verifier.verify_many([Check("}{", "3")], timeout_s=5.0) == [(None, "gold_unparseable")]


@pytest.mark.timeout(120)
def test_workers_do_not_rerun_the_callers_script(tmp_path: Path) -> None:
    """A trainer's entry script (no main guard here, heavy imports in real life) runs once, not per worker."""
    script = tmp_path / "train.py"
    script.write_text(
        "import rewardkit\n"
        "print('SCRIPT BODY RAN', flush=True)\n"
        "print(rewardkit.math_equivalence(['\\\\boxed{x^2+2x+1}'], solution=['(x+1)^2'], workers=2))\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("SCRIPT BODY RAN") == 1
    assert "[1.0]" in proc.stdout


def test_workers_live_in_a_host_process_and_the_standard_library_is_untouched() -> None:
    """Public APIs only: a helper started with `python -m` owns the pools; multiprocessing is not patched."""
    import multiprocessing.spawn

    import psutil

    def hosts() -> set[psutil.Process]:
        return {p for p in psutil.Process().children() if "rewardkit.verify" in p.cmdline()}

    before = multiprocessing.spawn.get_preparation_data
    others = hosts()  # other verifiers of this test session may have theirs
    verifier = MathVerifier(workers=1)
    try:
        assert verifier.ready()
        mine = hosts() - others
        assert len(mine) == 1 and next(iter(mine)).children(recursive=True)  # the forkserver, the workers
        assert multiprocessing.spawn.get_preparation_data is before
    finally:
        verifier.close()
    host = next(iter(mine))
    assert not host.is_running() or host.status() == psutil.STATUS_ZOMBIE


def test_a_length_refusal_is_not_cached_for_calls_with_a_larger_limit(verifier: MathVerifier) -> None:
    check = Check("5", "5" + " " * 20)
    assert verifier.verify_many([check], timeout_s=5.0, max_chars=10) == [(False, "answer_too_long")]
    assert verifier.verify_many([check], timeout_s=5.0, max_chars=1000) == [(True, None)]


@pytest.mark.timeout(120)
def test_the_host_exits_with_its_parent_even_when_a_forked_child_holds_its_stdin() -> None:
    import psutil

    script = (
        "import os, time, psutil\n"
        "from rewardkit.verify.pool import MathVerifier\n"
        "v = MathVerifier(workers=1)\n"
        "assert v.ready()\n"
        "host = [p for p in psutil.Process().children() if 'rewardkit.verify' in p.cmdline()][0]\n"
        "print(host.pid, time.monotonic(), flush=True)\n"  # the system's monotonic clock, as here
        "if os.fork() == 0:\n"
        "    os.close(1); os.close(2)\n"  # (so that this test does not wait for it)
        "    time.sleep(30)\n"  # a forked child (a DataLoader worker, say) keeps the host's stdin open
        "    os._exit(0)\n"
        "os._exit(0)\n"  # the parent dies without closing anything
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=100)
    pid, forked = int(proc.stdout.split()[0]), float(proc.stdout.split()[1])
    # timed from the fork, not from the start (an interpreter and a worker host: 20 s on a busy machine)
    assert time.monotonic() - forked < 20, "the forked child (30 s) held the test up"

    def alive() -> bool:
        try:
            return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return False

    while time.monotonic() < forked + 25 and alive():
        time.sleep(0.2)
    assert not alive()  # gone before the forked child ends and closes the host's stdin (30 s)


# ---------------------------------------------------------------- rows read in the workers (issue 25)

ROW_KINDS: list[tuple[Any, Any, Any]] = [  # (completion, solution, choices): one of each way a row ends
    ("\\boxed{5}", "5", None),  # fast path
    ("no answer here", "5", None),  # no_answer
    ("\\boxed{x^2+1}", "1+x^2", None),  # Math-Verify, in a worker
    ("\\boxed{9^{9^{9^{9}}}}", "5", None),  # huge_power
    ("The answer is (B).", "B", '["1", "2", "3"]'),  # a choice
    (17, "5", None),  # invalid_completion
    ("\\boxed{5}", None, None),  # missing_solution
    ("\\boxed{5}", {"gold": 5}, None),  # invalid_gold: a container, never sent
    ("<think>no end", "5", None),  # unclosed_think
    ("\\boxed{12 cm}", "12 m", None),  # units differ
]


def _score(reward: Any, rows: list[tuple[Any, Any, Any]]) -> Any:
    completions, solutions, choices = (list(column) for column in zip(*rows, strict=True))
    return reward.score_detailed(completions, solution=solutions, choices=choices)


@pytest.mark.timeout(120)
def test_a_large_batch_is_read_in_the_workers_as_it_is_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardkit.verify import pool
    from rewardkit.verify.rows import read_rows

    rows = [ROW_KINDS[i % len(ROW_KINDS)] for i in range(200)]
    reward = rewardkit.get("math", workers=2, timeout_s=5.0)
    assert reward.ready(60)  # rows are sent to a host that is up, never to one starting
    read_here: list[int] = []

    def counted(chunk: Any, *args: Any) -> Any:
        read_here.append(len(chunk))
        return read_rows(chunk, *args)

    monkeypatch.setattr(pool, "read_rows", counted)
    remote = _score(reward, rows)
    assert read_here == [0]  # every row went to a worker
    monkeypatch.setattr(pool, "READ_REMOTE_ROWS", 10**9)
    pool.get_verifier(2)._cache.clear()
    here = _score(reward, rows)
    assert read_here[1] == 180  # all but the 20 containers, read in this process
    assert (remote.values, remote.reasons, remote.details) == (here.values, here.reasons, here.details)
    reasons = {"no_answer", "huge_power", "invalid_completion", "missing_solution", "invalid_gold"}
    assert reasons | {None, "unclosed_think"} <= set(remote.reasons)
    assert remote.values[:5] == [1.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.timeout(120)
def test_rows_no_worker_read_are_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardkit.verify.rows import read_rows

    rows = [
        (s, c if isinstance(c, str) else None, o) for c, s, o in ROW_KINDS if not isinstance(s, dict)
    ] * 30
    verifier = MathVerifier(workers=2, memory_mb=1024, overdue_slots=0)
    try:
        assert verifier.ready(60)
        real = MathVerifier._read_remotely
        halves: list[int] = []

        def every_other_chunk_lost(self: MathVerifier, *args: Any) -> list[Any]:
            read = real(self, *args)
            halves.append(len(read))
            return [None if k % 2 else chunk for k, chunk in enumerate(read)]

        monkeypatch.setattr(MathVerifier, "_read_remotely", every_other_chunk_lost)
        mixed = verifier.read_many(rows, mode="standard", rel_tol=0.0, max_chars=1000)
        assert halves and halves[0] >= 2
        assert mixed == read_rows(rows, "standard", 0.0, 1000)
    finally:
        verifier.close()


@pytest.mark.timeout(120)
def test_the_deadline_holds_while_the_workers_read() -> None:
    from rewardkit.core import DeadlineExceeded, deadline

    reward = rewardkit.get("math", workers=2)
    assert reward.ready(60)
    golds = [f"{i}" + "√" * 59_990 for i in range(100)]  # ~0.2 s each to rewrite the roots: ~10 s of reading
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(2.0):
        reward.score_detailed(["\\boxed{5}"] * len(golds), solution=golds)
    elapsed, slow = time.monotonic() - start, timing.busy()  # unchecked: ~10 s of reading, longer when busy
    assert elapsed < 2.0 + 1.0 * slow, f"504 after {elapsed:.1f} s for a 2 s deadline ({slow:.1f}x)"


# Rows that never need SymPy: one of each way, as (solution, text, options) rows for read_many.
PLAIN_ROWS: list[tuple[Any, Any, Any]] = [
    ("5", "\\boxed{5}", None),
    ("5", "no answer here", None),
    ("B", "The answer is (B).", ["1", "2", "3"]),
    ("12 m", "\\boxed{12 cm}", None),
    (None, "\\boxed{5}", None),
]
HOW = ("standard", 0.0, 1000)


@pytest.mark.timeout(30)
def test_a_large_batch_never_waits_for_a_cold_host() -> None:
    from rewardkit.core import deadline
    from rewardkit.verify.rows import read_rows

    rows = PLAIN_ROWS * 20
    verifier = MathVerifier(workers=2, overdue_slots=0)
    try:
        limit = 1.0 * timing.busy()  # 100 plain rows take milliseconds; the host alone takes seconds to start
        start = time.monotonic()
        with deadline(limit):  # was DeadlineExceeded ("100 rows unread"): it waited for the host to start
            read = verifier.read_many(rows, mode="standard", rel_tol=0.0, max_chars=1000)
        assert time.monotonic() - start < limit
        assert read == read_rows(rows, *HOW)
        assert not verifier._host.running()  # no host was started to read rows
    finally:
        verifier.close()


class _ReadingHost:
    """A running host whose workers read every other chunk sent; the others come back unread (as a chunk
    that overran its limit does), counted as the host counts them."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def running(self) -> bool:
        return True

    def call(self, kind: str, chunks: list[bytes], how: Any, *, start: bool = True) -> Any:
        import pickle

        from rewardkit.verify.rows import read_rows

        assert kind == "read" and not start  # a read never starts a host
        self.sent += [row for chunk in chunks for row in pickle.loads(chunk)]
        read = [
            None if k % 2 else pickle.dumps(read_rows(pickle.loads(c), *how)) for k, c in enumerate(chunks)
        ]
        return "ok", read, {"read_failed": sum(blob is None for blob in read)}


@pytest.mark.timeout(30)
def test_rows_that_do_not_pickle_or_are_large_are_read_here_and_unread_chunks_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from rewardkit.verify import pool
    from rewardkit.verify.rows import read_rows

    locked = ("B", "(B)", ["1", threading.Lock()])  # a plugin's choices: was TypeError: cannot pickle
    wide = ("B", "(B)", ["x" * 40_000, "y" * 40_000])  # 80,000 characters of options: was sent
    rows = PLAIN_ROWS * 20 + [locked, wide]
    verifier = MathVerifier(workers=2, overdue_slots=0)
    host = _ReadingHost()
    monkeypatch.setattr(verifier, "_host", host)
    assert verifier.read_many(rows, mode="standard", rel_tol=0.0, max_chars=1000) == read_rows(rows, *HOW)
    assert len(host.sent) == 100 and locked not in host.sent and wide not in host.sent
    assert verifier.stats["read_failed"] >= 1  # the chunks that came back unread, read here
    # a value that slips past the check and does not pickle: its chunk is read here, the others are sent
    monkeypatch.setattr(pool, "_sendable", lambda row: True)
    host.sent.clear()
    assert verifier.read_many(rows, mode="standard", rel_tol=0.0, max_chars=1000) == read_rows(rows, *HOW)
    assert 0 < len(host.sent) < len(rows) and locked not in host.sent


class _Pool:
    """The host's main pool, stood in for: each task is queued (no worker free), running (never ends),
    overran (its limit) or read, in turn; the limits it was given are kept."""

    def __init__(self, *states: str) -> None:
        self.states = states
        self.limits: list[float | None] = []
        self.futures: list[Any] = []

    def schedule(self, function: Any, args: Any = (), timeout: float | None = None) -> Any:
        from pebble import ProcessFuture

        future: Any = ProcessFuture()
        state = self.states[len(self.futures) % len(self.states)]
        if state != "queued":
            future.set_running_or_notify_cancel()
        if state == "overran":
            future.set_exception(TimeoutError())
        elif state == "read":
            future.set_result(b"rows")
        self.limits.append(timeout)
        self.futures.append(future)
        return future


def _scheduler(main: _Pool, monkeypatch: pytest.MonkeyPatch) -> Any:
    from rewardkit.verify.host import Scheduler

    monkeypatch.setattr(Scheduler, "_start_pools", lambda self: None)  # the test says when they are up
    monkeypatch.setattr(Scheduler, "pool", lambda self, kind="main": main)
    return Scheduler(2, 0, 0)


@pytest.mark.timeout(30)
def test_a_read_request_has_one_end(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    main = _Pool("running")
    scheduler = _scheduler(main, monkeypatch)
    threading.Timer(1.0, scheduler._up.set).start()
    start = time.monotonic()  # pools still starting: the caller reads (was: 1 s for them + 0.5 s more)
    assert scheduler.read([b"chunk"] * 2, HOW, 0.5)[0] == "cold"
    assert time.monotonic() - start < min(0.2 * timing.busy(), 0.9)  # a wait for the timer: 1 s however busy
    assert scheduler._up.wait(5)
    start = time.monotonic()
    assert scheduler.read([b"chunk"] * 2, HOW, 0.5)[0] == "deadline"
    assert 0.5 <= time.monotonic() - start < 0.5 + 0.3 * timing.busy()
    assert all(future.cancelled() for future in main.futures)
    assert main.limits and all(limit is not None and limit <= 0.5 for limit in main.limits)


@pytest.mark.timeout(30)
def test_chunks_no_worker_takes_up_or_that_overran_go_back_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardkit.verify import host

    monkeypatch.setattr(host, "READ_TAKEN_S", 0.1)
    busy = _scheduler(_Pool("queued"), monkeypatch)
    busy._up.set()
    start = time.monotonic()  # every worker busy with other requests: the caller reads (was: waits 2 s)
    assert busy.read([b"chunk"] * 3, HOW, 2.0) == ("ok", [None] * 3, {"read_failed": 3})
    assert time.monotonic() - start < min(1.0 * timing.busy(), 1.9)  # the wait is 2 s however busy
    mixed = _scheduler(_Pool("read", "overran"), monkeypatch)
    mixed._up.set()
    assert mixed.read([b"chunk"] * 2, HOW, 2.0) == ("ok", [b"rows", None], {"read_failed": 1})
