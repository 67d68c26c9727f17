"""Running untrusted programs: bubblewrap sandboxes, one a completion, many at once.

What a sandbox guarantees (each checked by ``tests/security/test_sandbox_escape.py`` and
``test_sandbox_memory.py``): no network (its own
network namespace: loopback down, no route out, no DNS); a filesystem of ``/usr``, the interpreter and a
fresh size-capped ``/tmp``, read-only but for ``/tmp`` (the checkout, ``$HOME``, ``/etc``, ``/run`` and
``/var`` are absent); its own PID namespace (no other process is visible or signalled, and no process of a
run is left when the run returns: the service kills the sandbox's PID 1 and waits for bwrap to reap it);
an empty environment (``/proc/1/environ`` included); rlimits on CPU seconds, address space, threads, file
size and open files; output cut at a byte cap; a wall-clock limit.

How its memory is bounded, in two layers, each holding on its own:

- **a memory cgroup per sandbox**, where the host lets the service make one
  (:mod:`rewardkit.sandbox.cgroup`: cgroup v2 with ``memory`` delegated, or v1's memory hierarchy; the
  code reward's ``cgroup`` setting):
  every process, tmpfs page (``/tmp``), pipe buffer and kernel object of the sandbox counts against
  ``memory_mb`` + ``disk_mb`` + 64 MB, and a test process killed for it ends as ``memory``;
- **rlimits and a seccomp filter**, always: a test process's address space is ``memory_mb``, and it may
  start threads but no process, nor make memory that no address space counts: System V shared memory and
  message queues, memfd files, and a user or mount namespace of its own (where a program would mount a
  tmpfs of any size; ``unshare``, ``setns``, namespace flags on ``clone``, ``mount`` and the new mount API
  are refused: :mod:`rewardkit.sandbox.seccomp`; a normal user's service also gets bwrap's
  ``--disable-userns``); ``/dev/shm`` is read-only; ``/tmp`` holds ``disk_mb`` (64 MB) in memory; the
  harness about 10 MB and what it holds of a test's output.

Compiled programs (C++, C: :mod:`rewardkit.sandbox.languages`, the table a language is added to) get the
same guarantees twice: the compiler runs in a sandbox of its own (:mod:`rewardkit.sandbox.compile`: its
own wall clock, per-process address space, processes, output and binary size; a filter that lets it start
``cc1plus``, ``as`` and ``ld`` but no namespace, mount or uncounted memory), seeing a precompiled
``bits/stdc++.h`` read-only (:mod:`rewardkit.sandbox.pch`); its binary, and nothing else of it, goes to
the test sandbox, where the harness runs it per test under the test process's rlimits and seccomp
filter (no process at all, raw ``syscall()`` and inline system calls included). Its memory is the
cgroup's, without an address-space limit (what it reserves and never touches is free, as on a judge), and
a peak resident size over ``memory_mb`` is ``memory``; without a cgroup it is the address space's, and an
allocation refused there ends as the program handles it (C++'s ``std::bad_alloc`` aborts:
``runtime_error:SIGABRT``).

Which is in force shows in ``/readyz`` (``memory_bound`` under ``code``) and
:func:`rewardkit.sandbox.cgroup.memory_bound`. A service running as root runs its programs as a random
unprivileged user.

What it does not protect against: kernel vulnerabilities (its seccomp filter refuses only the calls above:
the kernel's system-call surface is otherwise exposed, as in any bubblewrap sandbox); without a cgroup,
kernel memory a program has the kernel keep within its other limits (many empty files in ``/tmp``, pipe
buffers: bounded by time and descriptors, not by ``memory_mb``); reading what ``/usr``, ``/proc`` and
``/sys`` show any user of the host (kernel version, CPU, mounts); using CPU and memory up to its limits (size
the host for ``max_concurrency`` x (``memory_mb`` + 64 + 10) MB); an assert-style test's verdict, which
runs in the program's own process (HumanEval's and MBPP's harnesses do the same), so a program written to
fool its tests (an ``__eq__`` that is always true, writing its own report and exiting) can pass them. For
compiled programs also: the compiler itself (a crafted source meeting a bug of ``g++``, ``as`` or ``ld``
runs inside the compile sandbox, but with a few processes and up to its memory limit each; a template or
``#include`` bomb is stopped by the compiler's limits, at a cost of up to its wall clock); what the
distribution's headers and libraries under ``/usr`` show (a program may ``#include`` any of them, and
``#include "/usr/..."`` reads any world-readable file there, as a program can at run time); the timing of a
test, which is wall-clock and CPU time on a shared host (``time_factor`` scales rows' limits, not the
noise); and files a program leaves in its sandbox's ``/tmp`` for its own later tests.
Stdin/stdout and call-based tests are compared outside the sandbox, which never sees their expected outputs.

- ``sandbox/bwrap.py``: the bubblewrap command line (mounts, namespaces, who runs it)
- ``sandbox/harness.py``: what runs inside: a program against its tests in forked processes, results out
- ``sandbox/seccomp.py``: a test process's seccomp filter: threads but no process, no memory uncounted
- ``sandbox/cgroup.py``: a memory cgroup per sandbox, where the host delegates one
- ``sandbox/run.py``: one sandbox awaited on the event loop: spawn, stream results, kill
- ``sandbox/pool.py``: many sandboxes at once, deduplicated, within the deadline; readiness
- ``sandbox/languages.py``: the language table (fence tags, compile and run commands): add a language here
- ``sandbox/compile.py``: compiling once per distinct program, in a sandbox of its own (``build.py`` inside)
- ``sandbox/pch.py``: the precompiled ``bits/stdc++.h`` per host and flag set, outside every sandbox
- ``sandbox/timelimit.py``: a row's time limit, in seconds or ms, times the server's factor
- ``sandbox/cases.py``: the test formats of code datasets, read into one form
- ``sandbox/compare.py``: outputs compared as the datasets' judges do
- ``sandbox/checker.py``: special judges (a row's Python or testlib-style C++ checker), run sandboxed
- ``sandbox/scoring.py``: the scoring modes: all, fraction, open-r1's weighted_sum, IOI subtasks
- ``sandbox/tally.py``: one program's test results as they end, and its verdict (reason, score, details)
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
