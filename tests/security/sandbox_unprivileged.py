"""A service running as a normal user scores three attacks; ``test_sandbox_escape`` runs this file as user
65534 (its argv: the directories to import rewardkit and its dependencies from) and reads the last line.

Printed: ``[values, reasons, details]`` as JSON for the attacks (forge the harness's results, find the
service's secret from ``REWARDKIT_API_TOKEN`` in any ``/proc/*/environ``, fork without bound). The
escape suite runs ``FORGE`` and ``PROCESSES`` under a root service too.
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
    print("BLOCKED" if n < 64 else n)
"""


def main() -> None:
    sys.path[:0] = sys.argv[1:]
    import rewardkit.rewards.code  # noqa: F401 - registers "code"
    from rewardkit import get

    secret = os.environ["REWARDKIT_API_TOKEN"]
    programs = [FORGE, ENVIRON.replace("SECRET", repr(secret[::-1]) + "[::-1]"), PROCESSES]
    tests = [{"inputs": [""], "outputs": [out]} for out in ("EXPECTED-7f3a", "BLOCKED", "BLOCKED")]
    reward = get("code", python="/usr/bin/python3", timeout_s=2)
    scored = reward.score_detailed([f"```python\n{p}\n```" for p in programs], tests=tests)
    print(json.dumps([scored.values, scored.reasons, scored.details]))


if __name__ == "__main__":
    main()
