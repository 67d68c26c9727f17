"""The seccomp filter of a test process: it may start threads, never a process, nor hold memory outside
its address space.

``memory_mb`` is a test process's address space (``RLIMIT_AS``); it bounds the sandbox only if the process
can neither make more processes, each with an address space of its own, nor keep memory that no address
space counts. The filter refuses (a classic BPF program, built here, installed by the harness in each
test process before the program runs):

- ``fork``, ``vfork`` and a ``clone`` without ``CLONE_THREAD``: ``EAGAIN``, as at a process limit
  (``os.fork``, ``subprocess`` and ``multiprocessing`` raise ``BlockingIOError``); a thread shares its
  process's address space, and ``threading`` works (competitive programs use it for a deeper stack);
- ``clone3``, whose flags are out of a filter's reach: ``ENOSYS``, on which the C library falls back to
  ``clone``;
- ``shmget`` and ``msgget`` (System V shared memory, which outlives its mapping, and message queues) and
  ``memfd_create`` (files in memory, ``RLIMIT_FSIZE`` each): ``EPERM``;
- every system call of another ABI (32-bit calls on x86-64, which a program could make): ``ENOSYS``.

Only x86-64 and arm64 have one; elsewhere :func:`no_process_filter` is ``None`` and the harness forbids
threads too (``RLIMIT_NPROC`` then leaves no room for a new task).

>>> program = no_process_filter("x86_64")
>>> len(program) % 8, len(program) // 8 < 32, no_process_filter("s390x")
(0, True, None)
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["no_process_filter"]

_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000  # x86-64's x32 ABI: its system calls' numbers have this bit
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# (audit architecture, clone, clone3, refused with EAGAIN, refused with EPERM) per machine
_TABLES = {
    "x86_64": (0xC000003E, 56, 435, (57, 58), (29, 68, 319)),  # fork vfork; shmget msgget memfd_create
    "aarch64": (0xC00000B7, 220, 435, (), (194, 186, 279)),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# classic BPF opcodes: load a word of seccomp_data, jumps if equal / greater or equal / any bit set, return
_LOAD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in seccomp_data (the low word of args[0], little-endian)
_Step = tuple[int, str, str, int] | str  # an instruction (jumps to labels; "" goes on) or a label


def _assemble(steps: list[_Step]) -> bytes:
    """``struct sock_filter`` entries, each jump a label's distance (BPF jumps forward only)."""
    at: dict[str, int] = {}
    count = 0
    for step in steps:
        if isinstance(step, str):
            at[step] = count
        else:
            count += 1
    out: list[bytes] = []
    for step in steps:
        if isinstance(step, str):
            continue
        here = len(out)
        code, true, false, k = step
        jumps = [at[label] - here - 1 if label else 0 for label in (true, false)]
        out.append(struct.pack("HBBI", code, *jumps, k))
    return b"".join(out)


def no_process_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter`` entries, or ``None``."""
    name = (machine or platform.machine()).lower()
    table = _TABLES.get(_ALIASES.get(name, name))
    if table is None:
        return None
    arch, clone, clone3, again, denied = table
    steps: list[_Step] = [(_LOAD, "", "", _ARCH), (_JEQ, "", "nosys", arch), (_LOAD, "", "", _NR)]
    if name in ("x86_64", "amd64"):
        steps.append((_JGE, "nosys", "", _X32_BIT))
    steps.append((_JEQ, "clone", "", clone))
    steps.append((_JEQ, "nosys", "", clone3))
    steps += [(_JEQ, "again", "", number) for number in again]
    steps += [(_JEQ, "perm", "", number) for number in denied]
    steps += [
        (_RET, "", "", _ALLOW),
        "clone",
        (_LOAD, "", "", _ARG0),
        (_JSET, "allow", "again", _CLONE_THREAD),
    ]
    steps += ["allow", (_RET, "", "", _ALLOW), "again", (_RET, "", "", _ERRNO | errno.EAGAIN)]
    steps += ["nosys", (_RET, "", "", _ERRNO | errno.ENOSYS), "perm", (_RET, "", "", _ERRNO | errno.EPERM)]
    return _assemble(steps)
