"""The host's processes that belong to code sandboxes: none may outlive the run that started them."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: a root service's sandboxes run as random user ids from here up (rewardkit.sandbox.bwrap)
SANDBOX_UIDS = 1 << 20
#: the command-line argument of the daemon the escape suite leaves behind (a sleep that long)
DAEMON_MARKER = b"987.654321"
#: the start of the harness's text, which is its command line (``python -I -S -c <text>``): a sandbox's
#: processes of a service running as a normal user, whose user id is the service's own
HARNESS_MARKER = b'"""What runs inside the sandbox'


def _sandbox_pids() -> list[tuple[str, int, bytes]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        uid = int(status.split("\nUid:")[1].split()[0])
        if uid >= SANDBOX_UIDS or DAEMON_MARKER in cmdline or HARNESS_MARKER in cmdline[:1000]:
            found.append((entry.name, uid, cmdline))
    return found


def sandbox_processes() -> list[str]:
    """Processes running as a root service's sandbox users, a harness, or the escape suite's daemon
    (zombies included: a process not yet reaped is still there)."""
    return [f"{pid}: uid {uid} {cmdline[:80]!r}" for pid, uid, cmdline in _sandbox_pids()]


def sandbox_rss_mb() -> float:
    """The resident memory of every sandbox process together, in MB."""
    total = 0
    for pid, _, _ in _sandbox_pids():
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def settled(within_s: float = 10.0) -> list[str]:
    """The sandbox processes still there after up to ``within_s``. A run waits for its sandbox's end, so
    none should be left when it returns; the wait only keeps a loaded machine from failing a test whose
    point is something else (a leak stays a leak after 10 s)."""
    end = time.monotonic() + within_s
    while (left := sandbox_processes()) and time.monotonic() < end:
        time.sleep(0.1)
    return left
