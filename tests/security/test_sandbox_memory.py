"""A sandbox's memory bound holds (issue 33): every way to hold memory no address space counts is refused or
bounded, each isolation layer holds on its own, and ``memory_mb`` is pinned on both sides.

Attacks (``memory_attacks.py``) print ``BLOCKED`` or ``ESCAPED``; the host's shared memory (``Shmem`` in
``/proc/meminfo``, where tmpfs pages show) is sampled while they run. A normal user's service runs the
same attacks in ``test_sandbox_escape.py::test_an_unprivileged_service_gets_the_same_guarantees``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

import rewardkit.rewards.code  # noqa: F401 - registers "code"
import rewardkit.sandbox.run as sandbox_run
from rewardkit import get
from rewardkit.core import Scored
from rewardkit.sandbox import SandboxUnavailable
from rewardkit.sandbox.cgroup import HARNESS_MB, find_parent, memory_bound
from tests.security.memory_attacks import ATTACKS, CAP_MB, NAMESPACE_TMPFS
from tests.support.helpers import ROOT, TOKEN, Server
from tests.support.processes import HARNESS_MARKER, settled

T = TypeVar("T")
SECRET = "rk-secret-" + "9d41b7e2"
BLOCKED = {"inputs": [""], "outputs": ["BLOCKED"]}


def shmem_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no Shmem in /proc/meminfo")


def peak_shmem_growth(run: Callable[[], T]) -> tuple[T, float]:
    """``run()``'s result and how far the host's shared memory rose above where it was while it ran."""
    result: list[T] = []
    worker = threading.Thread(target=lambda: result.append(run()))
    base = peak = shmem_mb()
    worker.start()
    while worker.is_alive():
        peak = max(peak, shmem_mb())
        time.sleep(0.01)
    worker.join()
    return result[0], peak - base


def attacks_blocked_through(url: str, log: Path | None = None) -> None:
    """The attacks in one ``code`` request to the service at ``url``: each blocked, the host's shared memory
    under ``CAP_MB`` above where it was."""
    body = {
        "funcs": ["code"],
        "completions": [f"```python\n{p}\n```" for p in ATTACKS.values()],
        "columns": {"tests": [BLOCKED] * len(ATTACKS)},
    }
    headers = {"authorization": f"Bearer {TOKEN}"}
    answer, growth = peak_shmem_growth(
        lambda: httpx.post(url + "/score", json=body, headers=headers, timeout=60)
    )
    said = log.read_text()[-2000:] if log is not None else ""
    assert answer.status_code == 200, (answer.text, said)
    assert answer.json()["rewards"] == [1.0] * len(ATTACKS), answer.text
    assert growth < CAP_MB, f"the host's shared memory rose {growth:.0f} MB"


def score(programs: list[str], tests: list[Any], **params: Any) -> Scored:
    reward = get("code", max_concurrency=2, **{"timeout_s": 5.0, **params})
    return reward.score_detailed([f"```python\n{p}\n```" for p in programs], tests=tests)


@pytest.mark.parametrize("cgroup", ["auto", "off"])
def test_memory_outside_the_address_space_is_refused_or_bounded(cgroup: str) -> None:
    """The reported attack (a tmpfs in a user namespace of its own: 1.6 GB of host memory through one
    request) and its variants, each under ``CAP_MB``, with and without a cgroup: the seccomp filter and
    the rlimits hold on their own."""
    names = list(ATTACKS)
    scored, growth = peak_shmem_growth(
        lambda: score([ATTACKS[n] for n in names], [BLOCKED] * len(names), cgroup=cgroup)
    )
    escaped = {
        name: (detail.get("first_failure") or detail)
        for name, value, detail in zip(names, scored.values, scored.details, strict=True)
        if value != 1.0
    }
    assert escaped == {}
    assert growth < CAP_MB, f"the host's shared memory rose {growth:.0f} MB"
    assert settled() == []


def test_the_cgroup_bounds_the_whole_sandbox_on_its_own() -> None:
    """With the seccomp filter off (its namespace refusals gone), the tmpfs attack still holds no more
    than the sandbox's cgroup (``memory_mb`` + ``disk_mb`` + the harness's), and its test ends as
    ``memory``, the kernel's kill of the test process, not of the harness."""
    if find_parent("auto") is None:  # a container without a writable cgroup file system
        pytest.skip(f"this host gives the service no memory cgroup: {memory_bound()}")
    memory_mb = 128
    limit = memory_mb + 64 + HARNESS_MB
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox_run, "_FILTER", None)  # the harness then forbids new tasks by RLIMIT_NPROC
        scored, growth = peak_shmem_growth(lambda: score([NAMESPACE_TMPFS], [BLOCKED], memory_mb=memory_mb))
    assert (scored.values, scored.reasons) == ([0.0], ["memory"]), scored.details
    assert growth < limit + 16, f"{growth:.0f} MB held by a sandbox whose cgroup allows {limit} MB"
    # the control: neither layer, and the attack holds its 600 MB (so each assertion above can fail)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox_run, "_FILTER", None)
        scored, growth = peak_shmem_growth(lambda: score([NAMESPACE_TMPFS], [BLOCKED], cgroup="off"))
    assert scored.details[0]["first_failure"]["got"].startswith("ESCAPED tmpfs"), scored.details
    assert growth > 300
    assert settled() == []


def test_memory_mb_is_the_bound_a_test_process_gets() -> None:
    """``memory_mb`` pinned from both sides: 64 MB under it runs, 64 MB over it is ``memory`` at once
    (not a timeout, whatever the machine's speed)."""
    memory_mb = 320
    touch = "block[::4096] = b'x' * len(block[::4096])"  # resident, not only reserved
    under = f"block = bytearray({memory_mb - 64} << 20)\n{touch}\nprint('ok')"
    over = f"block = bytearray({memory_mb + 64} << 20)\nprint('ok')"
    ok = {"inputs": [""], "outputs": ["ok"]}
    start = time.monotonic()
    scored = score([under, over], [ok, ok], memory_mb=memory_mb)
    assert (scored.values, scored.reasons) == ([1.0, 0.0], [None, "memory"]), scored.details
    assert time.monotonic() - start < 15  # each ends in well under a second here; margin for a busy host


def test_bwrap_and_the_harness_get_an_empty_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment layer on its own, read from the host: no process of a running sandbox (bwrap, the
    harness, the program) was started with the service's environment, whatever else would hide it."""
    monkeypatch.setenv("REWARDKIT_API_TOKEN", SECRET)
    seen: list[tuple[str, bytes]] = []
    done = threading.Event()

    def look() -> None:
        while not done.is_set():
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                    if HARNESS_MARKER in cmdline[:2000]:  # bwrap's argv holds the harness's text too
                        seen.append((entry.name, (entry / "environ").read_bytes()))
                except OSError:
                    continue
            time.sleep(0.02)

    watcher = threading.Thread(target=look)
    watcher.start()
    try:
        scored = score(["import time\ntime.sleep(1.5)\nprint('x')"], [{"inputs": [""], "outputs": ["x"]}])
    finally:
        done.set()
        watcher.join()
    assert scored.values == [1.0], scored.details
    assert seen, "no sandbox process was seen running"
    assert all(SECRET.encode() not in environ for _, environ in seen)
    assert all(b"REWARDKIT_" not in environ and b"PATH=" not in environ for _, environ in seen), seen[:2]


def test_the_memory_bound_in_force_is_named() -> None:
    bound = memory_bound()
    parent = find_parent("auto")
    assert bound == (f"cgroup v{parent.version} ({parent.path})" if parent else bound)
    assert memory_bound("off").startswith("rlimits and seccomp")
    assert memory_bound("/nonexistent/cgroup").startswith("none: code: cgroup '/nonexistent/cgroup'")
    reward = get("code", cgroup="/nonexistent/cgroup")  # an operator's cgroup that does not work
    with pytest.raises(SandboxUnavailable, match="cgroup '/nonexistent/cgroup' is not a cgroup"):
        reward.score_detailed(["```python\nprint(1)\n```"], tests=[{"inputs": [""], "outputs": ["1"]}])


def test_through_the_service_the_attack_holds_nothing(tmp_path: Path) -> None:
    """The report's own setting: a real ``rewardkit`` service with a token and a 10 s deadline, one
    ``code`` request at the default ``memory_mb``; the host's shared memory stays put, the service answers
    at once and says which memory bound is in force."""
    env = {"REWARDKIT_API_TOKEN": TOKEN, "REWARDKIT_MATH_WORKERS": "1", "REWARDKIT_REQUEST_TIMEOUT_S": "10"}
    server = Server(env, tmp_path / "service.log")
    try:
        attacks_blocked_through(server.url)
        headers = {"authorization": f"Bearer {TOKEN}"}
        ready = httpx.get(server.url + "/readyz", headers=headers, timeout=60).json()
        assert ready["notes"]["code"]["memory_bound"] == memory_bound(), ready
    finally:
        server.stop()
    assert settled() == []


def test_through_a_normal_users_service_the_attack_holds_nothing(tmp_path: Path) -> None:
    """The same request to a service running as a normal user (user 65534, the system Python with this
    checkout and its packages on the path): its sandboxes are user namespaces of its own, where the
    program is refused a nested one (``--disable-userns`` and the filter)."""
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs root to run a service as user 65534, and /usr/bin/python3")
    paths = [str(ROOT), *(p for p in sys.path if "site-packages" in p)]
    env = {
        "HOME": "/nonexistent",
        "PYTHONPATH": os.pathsep.join(paths),
        "REWARDKIT_API_TOKEN": TOKEN,
        "REWARDKIT_MATH_WORKERS": "1",
        "REWARDKIT_REQUEST_TIMEOUT_S": "10",
    }
    server = Server(env, tmp_path / "service.log", python="/usr/bin/python3", user=65534)
    try:
        attacks_blocked_through(server.url, server.log)
    finally:
        server.stop()
