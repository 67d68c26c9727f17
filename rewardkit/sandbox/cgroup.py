"""A sandbox's whole memory bounded by a cgroup: every process, tmpfs page, pipe and kernel object in one sum.

``RLIMIT_AS`` bounds one process's address space; what a program makes the kernel hold for it elsewhere
(its ``/tmp`` files, pipe buffers, kernel objects) no rlimit counts. A memory cgroup counts all of it, and
the kernel holds it to the limit (reclaiming, then killing within the group, the test process first: it
asks for that with ``oom_score_adj``). Where the host lets the service make cgroups, each sandbox gets one
of its own, under a parent this module finds:

- ``"auto"`` (the default): the service's own memory cgroup when it may make children there — cgroup v1's
  ``memory`` hierarchy, or a cgroup v2 directory whose ``cgroup.subtree_control`` has (or takes)
  ``memory``; otherwise none;
- a path: a delegated cgroup (v1 or v2) the operator made for sandboxes (``REWARDKIT_PARAMS``'s
  ``{"code": {"cgroup": "/sys/fs/cgroup/rewardkit"}}``); it must work, or the sandbox refuses to start;
- ``"off"``: none.

Without one, the bound is the rlimits' and the seccomp filter's (:mod:`rewardkit.sandbox.seccomp`): no
process, no memory outside the address space, ``/tmp`` capped. :func:`memory_bound` says which is in force
(``/readyz`` shows it).

The limit is ``memory_mb`` + ``disk_mb`` + :data:`HARNESS_MB` (the harness and interpreter, the test's pipes);
swap is refused where the host has it. bwrap enters the cgroup before it starts (a shell writes ``0`` to
``cgroup.procs`` and becomes bwrap), so nothing of the sandbox runs outside it. An out-of-memory kill shows
in the cgroup's counters: :meth:`Group.oom_killed`. A cgroup whose sandbox has ended, empty, is kept for
the next sandbox (:meth:`Parent.acquire`): making one costs a start-up more than the sandbox's own work.

>>> find_parent("off") is None
True
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
from dataclasses import dataclass

__all__ = ["HARNESS_MB", "Group", "Parent", "find_parent", "memory_bound"]

HARNESS_MB = 64
_PREFIX = "rk-sandbox-"


@dataclass(frozen=True)
class Parent:
    """Where sandboxes' cgroups are made: a directory of cgroup ``version`` 1 or 2."""

    path: str
    version: int

    def make(self, limit_bytes: int) -> Group:
        """A new cgroup for one sandbox, limited to ``limit_bytes``; ``OSError`` when the host refuses."""
        path = os.path.join(self.path, f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}")  # its owner's pid
        os.mkdir(path)
        group = Group(path, self.version)
        try:
            group.limit(limit_bytes)
        except OSError:
            group.remove()
            raise
        return group

    def acquire(self, limit_bytes: int) -> Group:
        """A cgroup for one sandbox: an empty one a finished sandbox gave back (making a memory cgroup costs
        a sandbox's start-up more than reusing one), else a new one."""
        while True:
            with _lock:
                free = _free.get(self.path)
                group = free.pop() if free else None
            if group is None:
                group = self.make(limit_bytes)
                break
            try:
                group.limit(limit_bytes)
                break
            except OSError:  # what its last sandbox left charged is over the new limit
                group.remove()
        group.oom_base = group.oom_kills()
        return group

    def release(self, group: Group) -> None:
        """Give back a sandbox's cgroup once the sandbox has ended: kept for the next one when nothing runs
        in it any more, else removed (now or at a later call)."""
        try:
            with open(group.procs) as file:
                empty = not file.read().strip()
        except OSError:
            empty = False
        with _lock:
            free = _free.setdefault(self.path, [])
            if empty and len(free) < _KEEP:
                free.append(group)
                return
        group.remove()


@dataclass
class Group:
    """One sandbox's cgroup."""

    path: str
    version: int

    oom_base: int = 0  # the kernel's count of kills in it when its sandbox began

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` to, to enter the group."""
        return os.path.join(self.path, "cgroup.procs")

    def limit(self, limit_bytes: int) -> None:
        """Hold the group's memory (and memory and swap together, where the host has swap) to
        ``limit_bytes``."""
        if self.version == 2:
            _write(self.path, "memory.max", str(limit_bytes))
            _write(self.path, "memory.swap.max", "0", optional=True)
            _write(self.path, "memory.oom.group", "0", optional=True)
        else:  # v1 keeps the memory limit at or under the memory-and-swap one: lowered first, raised last
            try:
                _write(self.path, "memory.limit_in_bytes", str(limit_bytes))
            except OSError:  # over the memory-and-swap limit: a reused group's limit raised
                _write(self.path, "memory.memsw.limit_in_bytes", str(limit_bytes), optional=True)
                _write(self.path, "memory.limit_in_bytes", str(limit_bytes))
            else:
                _write(self.path, "memory.memsw.limit_in_bytes", str(limit_bytes), optional=True)

    def oom_kills(self) -> int:
        """How many processes of the group the kernel has killed for its memory, ever."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            with open(os.path.join(self.path, name)) as file:
                fields = dict(line.split() for line in file if len(line.split()) == 2)
            return int(fields.get("oom_kill", "0"))
        except (OSError, ValueError):
            return 0

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group for its memory since its sandbox began."""
        return self.oom_kills() > self.oom_base

    def remove(self) -> None:
        """Remove the group; one its processes still hold for a moment (the kernel frees them just after the
        sandbox ends) is removed at a later call, never waited for."""
        with _lock:
            _left.add(self.path)
            for path in list(_left):
                try:
                    os.rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                _left.discard(path)


_left: set[str] = set()  # groups not removed yet
_free: dict[str, list[Group]] = {}  # per parent: empty groups kept for the next sandboxes
_lock = threading.Lock()
_KEEP = 256


def _write(folder: str, name: str, value: str, optional: bool = False) -> None:
    try:
        with open(os.path.join(folder, name), "w") as file:
            file.write(value)
    except FileNotFoundError:
        if not optional:
            raise
    except OSError:
        if not optional or name == "memory.max":
            raise


def _mounts() -> dict[str, str]:
    """Mount points of cgroup file systems: ``{"2": path}`` for v2, ``{"memory": path}`` for v1's."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo") as file:
            lines = file.read().splitlines()
    except OSError:
        return found
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        if tail[0] == "cgroup2":
            found.setdefault("2", point)
        elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
            found.setdefault("memory", point)
    return found


def _own() -> dict[str, str]:
    """This process's cgroups: ``{"2": path}`` and ``{"memory": path}`` from ``/proc/self/cgroup``."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as file:
            lines = file.read().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            found["2"] = parts[2]
        elif "memory" in parts[1].split(","):
            found["memory"] = parts[2]
    return found


def _usable(parent: Parent) -> bool:
    """Whether a sandbox's cgroup can be made, limited and entered under ``parent`` (tried once)."""
    try:
        group = parent.make(256 << 20)
    except OSError:
        return False
    try:
        return os.access(group.procs, os.W_OK)
    finally:
        group.remove()


def _v2_parent(path: str) -> Parent | None:
    """A cgroup v2 directory whose children may have a memory limit (``+memory`` given where it may be)."""
    try:
        with open(os.path.join(path, "cgroup.subtree_control")) as file:
            enabled = file.read().split()
        if "memory" not in enabled:
            with open(os.path.join(path, "cgroup.subtree_control"), "w") as file:
                file.write("+memory")  # refused (EBUSY) where the service itself lives in this cgroup
    except OSError:
        return None
    return Parent(path, 2)


@functools.cache
def find_parent(setting: str = "auto") -> Parent | None:
    """Where this process makes its sandboxes' cgroups (see the module's docstring), or ``None``.

    Raises:
        ValueError: ``setting`` names a path that is no usable cgroup.
    """
    if setting == "off":
        return None
    mounts = _mounts()
    if setting != "auto":
        path = os.path.realpath(setting)
        version = 2 if os.path.exists(os.path.join(path, "cgroup.controllers")) else 1
        parent = _v2_parent(path) if version == 2 else Parent(path, 1)
        if parent is None or not _usable(parent):
            raise ValueError(
                f"code: cgroup {setting!r} is not a cgroup this service may make memory-limited children "
                "in (cgroup v2: a delegated directory with 'memory' in cgroup.subtree_control and no "
                "process of its own; cgroup v1: a writable directory of the memory hierarchy)"
            )
        return parent
    own = _own()
    candidates: list[Parent | None] = []
    if "2" in mounts and "2" in own:
        candidates.append(_v2_parent(os.path.join(mounts["2"], own["2"].lstrip("/"))))
    if "memory" in mounts and "memory" in own:
        candidates.append(Parent(os.path.join(mounts["memory"], own["memory"].lstrip("/")), 1))
    for parent in candidates:
        if parent is not None and _usable(parent):
            sweep(parent)
            return parent
    return None


def _owner_alive(name: str) -> bool:
    """Whether the process that made the group ``name`` (``rk-sandbox-<pid>-<hex>``) still runs: its empty
    groups are its own to reuse (another service process in the same cgroup sweeps at its start)."""
    pid = name[len(_PREFIX) :].partition("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, as another user
        return True
    return True


def sweep(parent: Parent) -> None:
    """Remove sandbox cgroups a run could not remove (empty ones of processes that are gone; busy ones and
    a live process's are left)."""
    try:
        names = [n for n in os.listdir(parent.path) if n.startswith(_PREFIX) and not _owner_alive(n)]
    except OSError:
        return
    for name in names:
        try:
            os.rmdir(os.path.join(parent.path, name))
        except OSError:
            pass


def memory_bound(setting: str = "auto") -> str:
    """Which bound holds a sandbox's memory here, in words (``/readyz`` shows it)."""
    try:
        parent = find_parent(setting)
    except ValueError as exc:
        return f"none: {exc}"
    if parent is None:
        return "rlimits and seccomp (no cgroup this service may make children in)"
    return f"cgroup v{parent.version} ({parent.path})"
