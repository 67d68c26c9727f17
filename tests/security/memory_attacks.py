"""Programs that try to hold memory no address-space limit counts (issue 33); each prints ``BLOCKED`` when
it held less than ``CAP_MB`` and ``ESCAPED <what>`` otherwise. Shared by the root service's suite
(``test_sandbox_memory.py``) and the normal user's (``sandbox_unprivileged.py``), so plain text only."""

from __future__ import annotations

CAP_MB = 80  # what one way may hold: the sandbox's /tmp (64 MB) and its pipes fit, a tmpfs of its own not

_PRELUDE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.syscall.restype = ctypes.c_long
CAP_MB = {cap_mb}
def fill(folder, size_mb, total_mb):
    held = 0
    try:
        for i in range(total_mb // size_mb):
            with open(f"{folder}/f{i}", "wb") as f:
                for _ in range(size_mb):
                    f.write(b"x" * (1 << 20))
                    held += 1
    except OSError:
        pass
    return held
""".replace("{cap_mb}", str(CAP_MB))

# The reported attack: a user namespace of its own (dumpable first, so that it may write its maps), a new
# mount namespace, a tmpfs of any size, files of 15 MB (under the per-file limit) in it.
NAMESPACE_TMPFS = (
    _PRELUDE
    + """
uid, gid = os.getuid(), os.getgid()
libc.prctl(4, 1, 0, 0, 0)
if libc.unshare(0x10000000 | 0x00020000) != 0:
    print("BLOCKED")
else:
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError:
            pass
    os.makedirs("/tmp/m", exist_ok=True)
    if libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, b"size=8g") != 0:
        print("BLOCKED")
    else:
        held = fill("/tmp/m", 15, 600)
        print("BLOCKED" if held < CAP_MB else f"ESCAPED tmpfs {held} MB")
"""
)

# The other ways in: each namespace call on its own (a user namespace alone, a mount namespace, setns, the
# new mount API, clone3, a thread's clone with CLONE_NEWUSER), memfd + ftruncate, /dev/shm.
NAMESPACE_CALLS = (
    _PRELUDE
    + """
made = []
for flags in (0x10000000, 0x00020000, 0x10000000 | 0x00020000, 0x40000000, 0x08000000):
    if libc.unshare(flags) == 0:
        made.append(f"unshare {flags:#x}")
fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
if libc.setns(fd, 0) == 0:
    made.append("setns")
os.close(fd)
if libc.syscall(430, b"tmpfs", 0) >= 0:  # fsopen
    made.append("fsopen")
if libc.syscall(435, None, 0) >= 0 or ctypes.get_errno() != errno.ENOSYS:  # clone3: refused, whatever it asks
    made.append(f"clone3 errno {ctypes.get_errno()}")
print("BLOCKED" if not made else f"ESCAPED {made}")
"""
)

MEMFD_AND_DEV_SHM = (
    _PRELUDE
    + """
held = {"memfd": 0}
try:
    for _ in range(20):  # each file within the per-file limit
        fd = os.memfd_create("m")
        os.ftruncate(fd, 15 << 20)
        for _ in range(15):
            os.write(fd, b"x" * (1 << 20))
            held["memfd"] += 1
except OSError:
    pass
held["/dev/shm"] = fill("/dev/shm", 15, 300)
print("BLOCKED" if max(held.values()) < CAP_MB else f"ESCAPED {held}")
"""
)

# Many small files in the sandbox's /tmp: its size cap counts their pages (64 MB), whatever their count.
SMALL_FILES = (
    _PRELUDE
    + """
held = 0
try:
    for i in range(200000):
        with open(f"/tmp/s{i}", "wb") as f:
            f.write(b"x" * 4096)
        held += 4096
except OSError:
    pass
print("BLOCKED" if held < CAP_MB << 20 else f"ESCAPED {held >> 20} MB in small files")
"""
)

# Pipe buffers: as many pipes as descriptors allow, each grown to the most an unprivileged user may
# (F_SETPIPE_SZ) and filled.
PIPES = (
    _PRELUDE
    + """
import fcntl
held, pipes = 0, []
try:
    while True:
        r, w = os.pipe()
        pipes.append((r, w))
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                held += os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass
except OSError:
    pass
print("BLOCKED" if held < CAP_MB << 20 else f"ESCAPED {held >> 20} MB in pipes")
"""
)

ATTACKS = {
    "a tmpfs in a user and mount namespace of its own": NAMESPACE_TMPFS,
    "namespace and mount calls, clone3": NAMESPACE_CALLS,
    "memfd with ftruncate, /dev/shm": MEMFD_AND_DEV_SHM,
    "many small files in /tmp": SMALL_FILES,
    "pipe buffers": PIPES,
}
