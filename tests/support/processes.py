"""The host's processes that belong to code sandboxes: none may outlive the run that started them."""

from __future__ import annotations

import time
from pathlib import Path

#: a root service's sandboxes run as random user ids from here up (rewardkit.sandbox.bwrap)
SANDBOX_UIDS = 1 << 20
#: the command-line argument of the daemon the escape suite leaves behind (a sleep that long)
DAEMON_MARKER = b"987.654321"


def sandbox_processes() -> list[str]:
    """Processes running as a root service's sandbox users, or the escape suite's daemon."""
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
        if uid >= SANDBOX_UIDS or DAEMON_MARKER in cmdline:
            found.append(f"{entry.name}: uid {uid} {cmdline[:80]!r}")
    return found


def settled(within_s: float = 3.0) -> list[str]:
    """The sandbox processes still there after up to ``within_s`` (a killed namespace takes a moment)."""
    end = time.monotonic() + within_s
    while (left := sandbox_processes()) and time.monotonic() < end:
        time.sleep(0.1)
    return left
