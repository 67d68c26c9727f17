"""Escape attempts from compiled programs (issue 38): the escape suite again, written in C, where a program
makes system calls itself (``syscall()``, inline assembly) instead of going through Python.

Each attack is a real C program scored by the ``code`` reward against a test expecting ``BLOCKED``: it
prints ``BLOCKED`` when every attempt failed and ``ESCAPED ...`` otherwise, so an attack that works scores 0.
The host-reading attack also runs unsandboxed (compiled by the host's gcc), where it must print ``ESCAPED``:
the control that shows the test can fail. Resource attacks must end with their reason, leave no process
behind, keep the sandbox's memory within its bound and leave an honest program of the batch its reward.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rewardkit import get
from rewardkit.core import Scored
from rewardkit.sandbox.languages import CPP
from rewardkit.sandbox.pch import include_dir
from tests.support.processes import DAEMON_MARKER, sandbox_rss_mb, settled

ROOT = Path(__file__).resolve().parents[2]
SECRET = "rk-secret-" + "c0ffee42"
HONEST = '#include <stdio.h>\nint main(void){ long a, b; scanf("%ld %ld", &a, &b); printf("%ld\\n", a + b); }'
HONEST_TEST = {"inputs": ["2 3"], "outputs": ["5"]}
BLOCKED_TEST = {"inputs": [""], "outputs": ["BLOCKED"]}
HEAD = """
    #define _GNU_SOURCE
    #include <errno.h>
    #include <fcntl.h>
    #include <sched.h>
    #include <signal.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <unistd.h>
    #include <sys/mman.h>
    #include <sys/ptrace.h>
    #include <sys/socket.h>
    #include <sys/syscall.h>
    #include <sys/wait.h>
    #include <netinet/in.h>
    #include <arpa/inet.h>
    """


def c_program(body: str) -> str:
    return textwrap.dedent(HEAD) + textwrap.dedent(body)


def score(programs: list[str], tests: list[Any], **params: Any) -> Scored:
    reward = get("code", timeout_s=params.pop("timeout_s", 3.0), max_concurrency=2, **params)
    completions = [f"```c\n{program}\n```" for program in programs]
    return reward.score_detailed(completions, tests=tests)


def blocked(attacks: dict[str, str], **params: Any) -> dict[str, Any]:
    """Score each attack (it must print BLOCKED) with an honest program in the batch; return the misses."""
    names = list(attacks)
    programs = [c_program(attacks[name]) for name in names] + [HONEST]
    scored = score(programs, [BLOCKED_TEST] * len(names) + [HONEST_TEST], **params)
    assert scored.values[-1] == 1.0, ("the honest program lost its reward", scored.details[-1])
    return {
        name: (value, reason, detail)
        for name, value, reason, detail in zip(
            names, scored.values, scored.reasons, scored.details, strict=False
        )
        if value != 1.0
    }


PROCESSES = """
    int main(void) {
        int escaped = 0;
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        if (pid > 0) escaped |= 1;
        pid = vfork();
        if (pid == 0) _exit(0);
        if (pid > 0) escaped |= 2;
        long raw = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);   /* a raw clone of a process */
        if (raw == 0) _exit(0);
        if (raw > 0) escaped |= 4;
        if (unshare(CLONE_NEWUSER) == 0 || syscall(SYS_unshare, CLONE_NEWNS) == 0) escaped |= 8;
        if (syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0) >= 0) escaped |= 16;
        if (syscall(SYS_setns, 0, 0) == 0) escaped |= 32;
        if (syscall(SYS_memfd_create, "x", 0) >= 0) escaped |= 64;
        if (syscall(SYS_shmget, IPC_PRIVATE_KEY, 1 << 20, 01000 | 0600) >= 0) escaped |= 128;
        if (syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, "") == 0) escaped |= 256;
        if (escaped) printf("ESCAPED %d\\n", escaped); else puts("BLOCKED");
        return 0;
    }
    """.replace("IPC_PRIVATE_KEY", "0")
INLINE_ASM = """
    int main(void) {
        long ret;
        /* fork (57) and unshare (272) made directly, without the C library */
        __asm__ volatile ("syscall" : "=a"(ret) : "a"(57) : "rcx", "r11", "memory");
        if (ret == 0) _exit(0);
        long fork_ret = ret;
        __asm__ volatile ("syscall" : "=a"(ret) : "a"(272), "D"(0x10000000L) : "rcx", "r11", "memory");
        if (fork_ret >= 0 || ret == 0) printf("ESCAPED %ld %ld\\n", fork_ret, ret); else puts("BLOCKED");
        return 0;
    }
    """
PTRACE_PID1 = """
    int main(void) {
        int escaped = ptrace(PTRACE_ATTACH, 1, 0, 0) == 0;
        int fd = open("/proc/1/mem", O_RDONLY);
        escaped |= (fd >= 0) << 1;
        int out = open("/proc/1/fd/1", O_WRONLY);
        escaped |= (out >= 0) << 2;
        kill(1, SIGKILL);  /* ignored by a PID namespace's init: its result line below still arrives */
        kill(-1, SIGKILL);
        if (escaped) printf("ESCAPED %d\\n", escaped); else puts("BLOCKED");
        return 0;
    }
    """


def test_process_creation_namespaces_and_mounts_are_refused_however_asked() -> None:
    attacks = {
        "fork, vfork, raw clone, unshare, setns, memfd, shm, mount": PROCESSES,
        "ptrace pid 1": PTRACE_PID1,
    }
    if platform.machine() in ("x86_64", "amd64"):
        attacks["inline syscall instructions"] = INLINE_ASM
    assert blocked(attacks) == {}
    assert settled() == [], "a process of a run survived it"


# the precompiled header: a compile sandbox sees it read-only, a test sandbox not at all
PCH = f"{include_dir(CPP, shutil.which('g++') or 'g++', 'auto')}/bits/stdc++.h.gch"


def read_host(key_file: Path) -> str:
    return f"""
        int main(void) {{
            const char *paths[] = {{"{ROOT / "pyproject.toml"}", "{key_file}", "/etc/passwd", "/etc/shadow",
                                   "/proc/1/environ", "/root/.bash_history", "{PCH}"}};
            char buffer[256];
            int found = 0;
            for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {{
                int fd = open(paths[i], O_RDONLY);
                if (fd < 0) continue;
                ssize_t got = read(fd, buffer, sizeof buffer - 1);
                if (got > 0) {{ buffer[got] = 0; if (i != 4 || strstr(buffer, "{SECRET[:6]}")) found++; }}
                close(fd);
            }}
            if (getenv("REWARDKIT_API_TOKEN")) found++;
            if (found) printf("ESCAPED %d\\n", found); else puts("BLOCKED");
            return 0;
        }}
        """


def test_host_files_and_the_environment_are_out_of_reach_and_would_be_in_reach_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDKIT_API_TOKEN", SECRET)
    key = tmp_path / "judge.key"
    key.write_text(SECRET)
    write = f"""
        int main(void) {{
            const char *targets[] = {{"{ROOT / "escape-marker"}", "{tmp_path / "escape-marker"}",
                                     "/usr/escape-marker", "/etc/escape-marker", "/escape-marker"}};
            int made = 0;
            for (unsigned i = 0; i < sizeof targets / sizeof *targets; i++) {{
                int fd = open(targets[i], O_WRONLY | O_CREAT, 0644);
                if (fd >= 0) {{ made++; close(fd); }}
            }}
            if (made) printf("ESCAPED %d\\n", made); else puts("BLOCKED");
            return 0;
        }}
        """
    attacks = {"reading host files and the environment": read_host(key), "writing the host": write}
    assert blocked(attacks) == {}
    assert not (ROOT / "escape-marker").exists() and not (tmp_path / "escape-marker").exists()
    # The control: the read attack compiled and run on the host finds what the sandbox hides.
    source = tmp_path / "attack.c"
    source.write_text(c_program(read_host(key)))
    subprocess.run(["gcc", "-O2", str(source), "-o", str(tmp_path / "attack")], check=True, timeout=120)
    said = subprocess.run([str(tmp_path / "attack")], capture_output=True, text=True, timeout=30).stdout
    assert said.startswith("ESCAPED"), said


def test_no_network_reaches_a_listener_on_the_host() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except OSError:
                continue

    watcher = threading.Thread(target=accept)
    watcher.start()
    connect = f"""
        int main(void) {{
            int reached = 0;
            const char *hosts[] = {{"127.0.0.1", "1.1.1.1", "8.8.8.8"}};
            int ports[] = {{{port}, 443, 53}};
            for (int i = 0; i < 3; i++) {{
                int s = socket(AF_INET, SOCK_STREAM, 0);
                if (s < 0) continue;
                struct sockaddr_in to = {{0}};
                to.sin_family = AF_INET;
                to.sin_port = htons(ports[i]);
                inet_pton(AF_INET, hosts[i], &to.sin_addr);
                if (connect(s, (struct sockaddr *)&to, sizeof to) == 0) reached++;
                close(s);
            }}
            if (reached) printf("ESCAPED %d\\n", reached); else puts("BLOCKED");
            return 0;
        }}
        """
    try:
        assert blocked({"TCP to the host's loopback and the internet": connect}) == {}
    finally:
        stop.set()
        watcher.join()
        listener.close()
    assert accepted == [], "a sandboxed program reached a listener on the host"


def test_memory_attacks_end_as_memory_within_the_bound() -> None:
    """A huge mmap touched page by page, and an mmap of the whole address space left untouched (free),
    with the sandbox processes' resident memory sampled on the host the whole time."""
    touch = """
        int main(void) {
            size_t n = 8UL << 30;
            char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED) { puts("BLOCKED"); return 0; }
            for (size_t i = 0; i < n; i += 4096) p[i] = 1;
            puts("ESCAPED");
            return 0;
        }
        """
    untouched = """
        int main(void) {
            int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
            char *p = mmap(0, 64UL << 30, PROT_READ | PROT_WRITE, flags, -1, 0);
            if (p != MAP_FAILED) p[0] = 1;  /* reserving is harmless: only what is touched counts */
            puts("BLOCKED");
            return 0;
        }
        """
    result: list[Scored] = []
    worker = threading.Thread(
        target=lambda: result.append(
            score(
                [c_program(touch), c_program(untouched), HONEST],
                [BLOCKED_TEST, BLOCKED_TEST, HONEST_TEST],
                memory_mb=256,
                timeout_s=10.0,
            )
        )
    )
    worker.start()
    peak = 0.0
    while worker.is_alive():
        peak = max(peak, sandbox_rss_mb())
        time.sleep(0.02)
    worker.join()
    (scored,) = result
    assert (scored.values, scored.reasons[0]) == ([0.0, 1.0, 1.0], "memory"), scored.details
    assert peak < 256 + 200, f"the sandboxes held {peak:.0f} MB"
    assert settled() == []


def test_a_process_left_behind_is_ended_with_the_sandbox() -> None:
    """The program becomes a long sleep (no process can be started, so the daemon is itself): the test
    times out and the sleep goes with the sandbox; a fork bomb is refused and scoring goes on."""
    daemon = f"""
        int main(void) {{
            setsid();
            signal(SIGHUP, SIG_IGN);
            char *argv[] = {{"sleep", "{DAEMON_MARKER.decode()}", 0}};
            execv("/usr/bin/sleep", argv);
            puts("exec failed");
            return 0;
        }}
        """
    bomb = """
        int main(void) {
            int refused = 0;
            for (int i = 0; i < 1000; i++) if (fork() < 0) refused++;
            printf("%d\\n", refused);
            return 0;
        }
        """
    start = time.monotonic()
    scored = score(
        [c_program(daemon), c_program(bomb), HONEST],
        [{"inputs": [""], "outputs": ["x"]}, {"inputs": [""], "outputs": ["1000"]}, HONEST_TEST],
        timeout_s=2.0,
    )
    assert scored.values == [0.0, 1.0, 1.0] and scored.reasons[0] == "timeout", scored.details
    assert time.monotonic() - start < 60
    assert settled() == [], "a process of a run survived it"
    assert not any(DAEMON_MARKER in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _pids())


def _pids() -> list[str]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and os.path.exists(f"/proc/{name}/cmdline"):
            out.append(name)
    return out


UNPRIVILEGED = """
import json, sys
sys.path[:0] = sys.argv[1:]
from rewardkit import get
programs = [sys.stdin.readline().strip().encode().decode("unicode_escape") for _ in range(3)]
tests = [{"inputs": ["2 3"], "outputs": ["5"]}] + [{"inputs": [""], "outputs": ["BLOCKED"]}] * 2
completions = [f"```c\\n{p}\\n```" for p in programs]
scored = get("code", max_concurrency=2, timeout_s=3.0).score_detailed(completions, tests=tests)
print(json.dumps([scored.values, scored.reasons]))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the suite runs unprivileged already: every test covers it")
@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs a system Python for user 65534")
def test_an_unprivileged_service_compiles_and_blocks_the_same() -> None:
    """A service running as a normal user (65534, the system Python, no writable home: no precompiled
    header, compiles go on without it) compiles in a user namespace's sandbox and blocks the same calls."""
    import json
    import sys

    paths = [str(ROOT), *(p for p in sys.path if "site-packages" in p)]
    programs = [HONEST, c_program(PROCESSES), c_program(PTRACE_PID1)]
    run = subprocess.run(
        ["/usr/bin/python3", "-c", UNPRIVILEGED, *paths],
        input="".join(p.encode("unicode_escape").decode() + "\n" for p in programs),
        capture_output=True,
        text=True,
        timeout=300,
        user=65534,
        group=65534,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        cwd="/",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1]) == [[1.0, 1.0, 1.0], [None, None, None]], run.stdout
    assert settled() == []
