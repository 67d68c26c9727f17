"""A service running as a normal user scores the attacks; ``test_sandbox_escape`` runs this file as user
65534 (its argv: the directories to import rewardkit and its dependencies from) and reads the last line.

Printed: ``[values, reasons, details]`` as JSON for the attacks (forge the harness's results, find the
service's secret from ``REWARDKIT_API_TOKEN`` in any ``/proc/*/environ``, start a process, hold memory
outside the address space, then each of ``memory_attacks.ATTACKS``). The escape suite runs ``FORGE``,
``PROCESSES``, ``OUTSIDE_MEMORY`` and the memory attacks under a root service too.
"""

from __future__ import annotations

import json
import os
import sys

FORGE = """
import os
fake = '{"test":0,"status":"ok","stdout":"EXPECTED-7f3a","seconds":0}\\n{"done":true}\\n'
for target in ("/proc/1/fd/1", f"/proc/{os.getppid()}/fd/1", "/proc/1/mem", f"/proc/{os.getppid()}/mem"):
    try:
        with open(target, "w") as f:
            f.write(fake)
    except OSError:
        pass
print(fake)  # its own output: a program printing result lines forges nothing
"""

ENVIRON = """
import glob
found = []
for path in glob.glob("/proc/*/environ") + ["/proc/1/environ"]:
    try:
        if SECRET.encode() in open(path, "rb").read():
            found.append(path)
    except OSError:
        pass
print("ESCAPED", found) if found else print("BLOCKED")
"""

PROCESSES = """
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError:
    print("BLOCKED" if n == 0 else n)  # a test process may start no process (memory_mb bounds one)
"""

# Memory that RLIMIT_AS does not count, 320 MB of it each way: System V shared memory (a segment outlives
# its mapping) and message queues, memfd files and /dev/shm (a tmpfs of no size the sandbox's user owns
# when the service is not root). Each way must hold less than 256 MB.
OUTSIDE_MEMORY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
held = {"shm": 0, "queues": 0, "memfd": 0, "/dev/shm": 0}
for _ in range(5):
    segment = libc.shmget(0, 64 << 20, 0o600)
    address = libc.shmat(segment, None, 0) if segment >= 0 else None
    if address in (None, 2 ** 64 - 1):
        break
    ctypes.memset(address, 1, 64 << 20)
    libc.shmdt(ctypes.c_void_p(address))
    held["shm"] += 64
class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("text", ctypes.c_char * 8192)]
message = Message(1, b"x" * 8192)
for _ in range(20480):
    queue = libc.msgget(0, 0o600)
    if queue < 0 or libc.msgsnd(queue, ctypes.byref(message), 8192, 0o4000) != 0:
        break
    held["queues"] += 8 / 1024
def shm_file(i):
    return os.open(f"/dev/shm/f{i}", os.O_CREAT | os.O_WRONLY)
for way, make in (("memfd", lambda i: os.memfd_create("m")), ("/dev/shm", shm_file)):
    try:
        for i in range(20):
            fd = make(i)
            for _ in range(16):
                os.write(fd, b"x" * (1 << 20))
                held[way] += 1
            if way == "/dev/shm":
                os.close(fd)
    except OSError:
        pass
print("BLOCKED" if max(held.values()) < 256 else f"ESCAPED {held}")
"""


def main() -> None:
    sys.path[:0] = sys.argv[1:]
    import rewardkit.rewards.code  # noqa: F401 - registers "code"
    from rewardkit import get

    secret = os.environ["REWARDKIT_API_TOKEN"]
    from tests.security.memory_attacks import ATTACKS

    programs = [FORGE, ENVIRON.replace("SECRET", repr(secret[::-1]) + "[::-1]"), PROCESSES, OUTSIDE_MEMORY]
    programs += ATTACKS.values()  # memory no address space counts (issue 33)
    outputs = ("EXPECTED-7f3a", "BLOCKED", "BLOCKED", "BLOCKED", *["BLOCKED"] * len(ATTACKS))
    tests = [{"inputs": [""], "outputs": [out]} for out in outputs]
    reward = get("code", python="/usr/bin/python3", timeout_s=3)
    scored = reward.score_detailed([f"```python\n{p}\n```" for p in programs], tests=tests)
    print(json.dumps([scored.values, scored.reasons, scored.details]))


if __name__ == "__main__":
    main()
