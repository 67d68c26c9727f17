"""Running untrusted programs: bubblewrap sandboxes, one a completion, many at once.

What a sandbox guarantees (each checked by ``tests/security/test_sandbox_escape.py``): no network (its own
network namespace: loopback down, no route out, no DNS); a filesystem of ``/usr``, the interpreter and a
fresh size-capped ``/tmp``, read-only but for ``/tmp`` (the checkout, ``$HOME``, ``/etc``, ``/run`` and
``/var`` are absent); its own PID namespace (no other process is visible or signalled, and every process of
a run dies with it); an empty environment (``/proc/1/environ`` included); rlimits on CPU seconds, address
space, processes, file size and open files; output cut at a byte cap; a wall-clock limit after which the
whole process group is killed. A service running as root runs its programs as a random unprivileged user.

What it does not protect against: kernel vulnerabilities (it has no seccomp filter: the kernel's whole
system-call surface is exposed, as in any bubblewrap sandbox without one); reading what ``/usr``, ``/proc``
and ``/sys`` show any user of the host (kernel version, CPU, mounts); using CPU and memory up to its limits
(size the pool and ``memory_mb`` for the host); and an assert-style test's verdict, which runs in the
program's own process (HumanEval's and MBPP's harnesses do the same), so a program written to fool its
tests (an ``__eq__`` that is always true, writing its own report and exiting) can pass them. Stdin/stdout
and call-based tests are compared outside the sandbox, which never sees their expected outputs.

- ``sandbox/bwrap.py``: the bubblewrap command line (mounts, namespaces, who runs it)
- ``sandbox/harness.py``: what runs inside: a program against its tests in forked processes, results out
- ``sandbox/run.py``: one sandbox awaited on the event loop: spawn, stream results, kill
- ``sandbox/pool.py``: many sandboxes at once, deduplicated, within the deadline; readiness
- ``sandbox/cases.py``: the test formats of code datasets, read into one form
- ``sandbox/compare.py``: outputs compared as the datasets' judges do
"""

from rewardkit.sandbox.bwrap import SandboxConfig
from rewardkit.sandbox.pool import Job, SandboxPool, SandboxUnavailable, problem, shared_pool
from rewardkit.sandbox.run import Limits, RunResult, SandboxError, TestResult, run_sandbox

__all__ = [
    "Job",
    "Limits",
    "RunResult",
    "SandboxConfig",
    "SandboxError",
    "SandboxPool",
    "SandboxUnavailable",
    "TestResult",
    "problem",
    "run_sandbox",
    "shared_pool",
]
