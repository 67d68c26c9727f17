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
- a namespace of its own: ``unshare``, ``setns``, and a thread's ``clone`` with any ``CLONE_NEW*`` flag
  (a new user namespace gives a program the capabilities to mount a tmpfs of any size: memory that no
  rlimit counts), and every way to mount (``mount``, ``umount2``, ``pivot_root``, the new mount API's
  ``open_tree`` ... ``mount_setattr``): ``EPERM``;
- every system call of another ABI (32-bit calls on x86-64, which a program could make): ``ENOSYS``.

Only x86-64 and arm64 have one; elsewhere :func:`no_process_filter` is ``None`` and the harness forbids
threads too (``RLIMIT_NPROC`` then leaves no room for a new task).

A compiler needs processes (``g++`` starts ``cc1plus``, ``as`` and ``ld``): :func:`compiler_filter` is the
same filter with ``fork``, ``vfork`` and ``clone`` allowed (still without namespace flags); the compiler's
processes are bounded by ``RLIMIT_NPROC`` and the sandbox's memory cgroup instead.

>>> program = no_process_filter("x86_64")
>>> len(program) % 8, len(program) // 8 < 48, no_process_filter("s390x")
(0, True, None)
>>> len(compiler_filter("x86_64")) < len(program)
True
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["compiler_filter", "no_process_filter"]

_CLONE_THREAD = 0x00010000
# every CLONE_NEW* flag: NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NAMESPACES = (
    0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)
_X32_BIT = 0x40000000  # x86-64's x32 ABI: its system calls' numbers have this bit
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# The new mount API (open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr): one number on
# every machine since Linux 5.2.
_MOUNT_API = (428, 429, 430, 431, 432, 433, 442)
# (audit architecture, clone, clone3, refused with EAGAIN, refused with EPERM) per machine
_TABLES = {
    # fork vfork; shmget msgget memfd_create, unshare setns mount umount2 pivot_root
    "x86_64": (0xC000003E, 56, 435, (57, 58), (29, 68, 319, 272, 308, 165, 166, 155, *_MOUNT_API)),
    "aarch64": (0xC00000B7, 220, 435, (), (194, 186, 279, 97, 268, 40, 39, 41, *_MOUNT_API)),
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


def compiler_filter(machine: str | None = None) -> bytes | None:
    """The compiler's filter for ``machine``: processes allowed, nothing else of :func:`no_process_filter`."""
    return _filter(machine, processes=True)


def no_process_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter`` entries, or ``None``."""
    return _filter(machine, processes=False)


def _filter(machine: str | None, processes: bool) -> bytes | None:
    name = (machine or platform.machine()).lower()
    table = _TABLES.get(_ALIASES.get(name, name))
    if table is None:
        return None
    arch, clone, clone3, again, denied = table
    if processes:
        again = ()
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
        (_JSET, "perm", "", _CLONE_NAMESPACES),
        (_JSET, "allow", "allow" if processes else "again", _CLONE_THREAD),
    ]
    steps += ["allow", (_RET, "", "", _ALLOW), "again", (_RET, "", "", _ERRNO | errno.EAGAIN)]
    steps += ["nosys", (_RET, "", "", _ERRNO | errno.ENOSYS), "perm", (_RET, "", "", _ERRNO | errno.EPERM)]
    return _assemble(steps)
