"""Escape attempts from inside a submitted program (issue 22): every one fails, and scoring goes on.

Each attack is a real program scored by the ``code`` reward against a stdin/stdout test expecting
``BLOCKED``: it prints ``BLOCKED`` when every attempt of it failed and ``ESCAPED ...`` otherwise, so an
attack that works scores 0 and fails its test. The read attacks also run unsandboxed on the host (the
control), where they must print ``ESCAPED``: that shows each test can fail. Resource attacks (fork bomb,
memory, disk, output, sleep) must end with the right reason within their limits, leave no process behind
and leave an honest program of the same batch its full reward.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit.rewards.code  # noqa: F401 - registers "code"
from rewardkit import get
from rewardkit.core import Scored
from tests.security.memory_attacks import ATTACKS, CAP_MB
from tests.security.sandbox_unprivileged import FORGE, OUTSIDE_MEMORY, PROCESSES
from tests.security.test_sandbox_memory import shmem_mb
from tests.support.fake_judge import FakeJudge
from tests.support.processes import DAEMON_MARKER, sandbox_rss_mb, settled

ROOT = Path(__file__).resolve().parents[2]
SECRET = "rk-secret-" + "5f0c2e9a"  # the service's token, as the server process holds it
HONEST = "a, b = map(int, input().split())\nprint(a + b)"
HONEST_TEST = {"inputs": ["2 3"], "outputs": ["5"]}
ANYTHING = {"inputs": [""], "outputs": ["x"]}


def fenced(program: str) -> str:
    return f"Here is my solution.\n```python\n{textwrap.dedent(program).strip()}\n```"


def score(programs: list[str], tests: list[Any], **params: Any) -> Scored:
    reward = get("code", timeout_s=params.pop("timeout_s", 2.0), max_concurrency=4, **params)
    return reward.score_detailed([fenced(p) for p in programs], tests=tests)


def blocked(programs: dict[str, str]) -> dict[str, tuple[float | None, str | None, Any]]:
    """Score each attack (it must print BLOCKED) with an honest program in the batch; return the misses."""
    names = list(programs)
    tests: list[Any] = [{"inputs": [""], "outputs": ["BLOCKED"]}] * len(names)
    scored = score([programs[n] for n in names] + [HONEST], [*tests, HONEST_TEST])
    assert scored.values[-1] == 1.0, ("the honest program lost its reward", scored.details[-1])
    return {
        name: (value, reason, detail)
        for name, value, reason, detail in zip(
            names, scored.values, scored.reasons, scored.details, strict=False
        )
        if value != 1.0
    }


def on_host(program: str, cwd: Path) -> str:
    """The control: the same program run with no sandbox, in this process's environment, in ``cwd`` (a
    temporary directory: what it writes there must not land in the checkout)."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)], capture_output=True, text=True, timeout=30, cwd=cwd
    )
    return run.stdout


@pytest.fixture
def secrets_on_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The service's secrets: a token in its environment, a key file in its temporary directory."""
    monkeypatch.setenv("REWARDKIT_API_TOKEN", SECRET)
    key = tmp_path / "judge.key"
    key.write_text(SECRET)
    yield key


def interpreter_dirs() -> list[str]:
    """The names on the way to the sandbox's interpreter (bound there, read-only): ``/root/.pyenv/...``
    shows ``.pyenv`` in ``/root``, as it must to reach the interpreter."""
    return list(Path(os.path.realpath(sys.executable)).parts[1:])


def read_attacks(judge: FakeJudge, key_file: Path) -> dict[str, str]:
    port = judge.url.split(":")[2].split("/")[0]
    return {
        "loopback service with the token": f"""
            import socket
            try:
                s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\n"
                          b"Authorization: Bearer {SECRET}\\r\\nContent-Length: 2\\r\\n\\r\\n{{}}")
                print("ESCAPED", s.recv(30))
            except OSError:
                print("BLOCKED")
            """,
        "server environment and /proc/*/environ": f"""
            import glob, os
            secret = "{SECRET[::-1]}"[::-1]
            found = [k for k, v in os.environ.items() if secret in v]
            for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline") + ["/proc/1/environ"]:
                try:
                    if secret.encode() in open(path, "rb").read():
                        found.append(path)
                except OSError:
                    pass
            print("ESCAPED", found) if found else print("BLOCKED")
            """,
        "the checkout, $HOME and the service's files": f"""
            import os
            found = []
            for path in ({str(ROOT / "pyproject.toml")!r}, {str(key_file)!r}, "/etc/passwd"):
                try:
                    found.append(open(path).read(20))
                except OSError:
                    pass
            for folder in ({str(ROOT)!r}, {str(Path.home())!r}, "/var", "/run"):
                try:  # the interpreter's own directories may be there (pyenv's ~/.pyenv), nothing else
                    found += [name for name in os.listdir(folder) if name not in {interpreter_dirs()!r}]
                except OSError:
                    pass
            print("ESCAPED", found) if found else print("BLOCKED")
            """,
        "writing outside the work directory": write_attack([key_file.parent / "escape-marker"]),
    }


def write_attack(targets: list[Path | str]) -> str:
    return f"""
        made = []
        open("inside-the-work-dir", "w").write("fine")  # /tmp of the sandbox is writable
        for path in {[str(t) for t in targets]!r}:
            try:
                open(path, "w").write("x")
                made.append(path)
            except OSError:
                pass
        print("ESCAPED", made) if made else print("BLOCKED")
        """


def test_reading_and_writing_the_host_fail_and_would_work_unsandboxed(
    judge: FakeJudge, secrets_on_host: Path
) -> None:
    attacks = read_attacks(judge, secrets_on_host)
    system = ["/usr/escape-marker", "/escape-marker", "/etc/escape-marker", "/proc/escape-marker"]
    marker = secrets_on_host.parent / "escape-marker"
    judge.reset()
    everywhere = write_attack([ROOT / "escape-marker", *system])
    sandboxed = {**attacks, "writing the checkout and the system": everywhere}
    assert blocked(sandboxed) == {}
    assert judge.requests == 0, "a sandboxed program reached the loopback service"
    assert not marker.exists() and not (ROOT / "escape-marker").exists()
    # The control: unsandboxed, each attack works (so each assertion above can fail). Only the service's
    # temporary directory is written to on the host.
    for name, program in attacks.items():
        assert on_host(program, secrets_on_host.parent).startswith("ESCAPED"), name
    assert judge.requests == 1
    assert (secrets_on_host.parent / "inside-the-work-dir").exists()
    assert not (ROOT / "inside-the-work-dir").exists(), "a control run wrote into the checkout"
    marker.unlink()


def test_no_network_no_dns() -> None:
    attacks = {
        "external address": """
            import socket
            try:
                socket.create_connection(("1.1.1.1", 443), timeout=2)
                print("ESCAPED")
            except OSError:
                print("BLOCKED")
            """,
        "DNS": """
            import socket
            try:
                print("ESCAPED", socket.getaddrinfo("example.com", 443))
            except OSError:
                print("BLOCKED")
            """,
        "interfaces": """
            import socket
            names = [name for _, name in socket.if_nameindex() if name != "lo"]
            print("ESCAPED", names) if names else print("BLOCKED")
            """,
    }
    assert blocked(attacks) == {}


def test_a_program_cannot_forge_the_harness_results_nor_read_the_expected_output() -> None:
    peek = """
        import gc, re
        pattern = re.compile(r"EXPECTED-[0-9a-f]{4}")
        found = set()
        for obj in gc.get_objects():
            items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list | tuple) else ()
            for item in items:
                if isinstance(item, str | bytes):
                    found.update(pattern.findall(item if isinstance(item, str) else item.decode("latin-1")))
        try:  # its own memory, where /proc lets it (a root service's sandbox user may not read it)
            with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
                for line in maps:
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    if "r" not in line.split()[1] or end - start > 1 << 26:
                        continue
                    try:
                        mem.seek(start)
                        seen = re.findall(rb"EXPECTED-[0-9a-f]{4}", mem.read(end - start))
                        found.update(m.decode() for m in seen)
                    except (OSError, ValueError, OverflowError):
                        pass
        except OSError:
            pass
        print(" ".join(sorted(found)) or "nothing")
        """
    expected = {"inputs": [""], "outputs": ["EXPECTED-7f3a"]}
    scored = score([FORGE, peek], [expected, expected])
    assert scored.values == [0.0, 0.0], scored.details
    assert scored.reasons == ["wrong_answer:0", "wrong_answer:0"]
    assert scored.details[1]["first_failure"]["got"].strip() == "nothing"


def test_resource_bombs_end_with_their_reason_within_their_limits() -> None:
    programs = {
        "memory bomb": "blocks = []\nwhile True:\n    blocks.append(bytearray(50 << 20))",
        "huge allocation": "x = bytearray(64 << 30)",
        "1 GB of output": "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))",
        "sleep forever": "import time\ntime.sleep(10 ** 6)",
        "busy loop ignoring signals": "import signal\n"
        "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU):\n"
        "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass",
    }
    expected = {
        "memory bomb": "memory",
        "huge allocation": "memory",
        "1 GB of output": "output_limit",
        "sleep forever": "timeout",
        "busy loop ignoring signals": "timeout",
    }
    tests = [ANYTHING] * len(programs) + [HONEST_TEST]
    start = time.monotonic()
    scored = score([*programs.values(), HONEST], tests, timeout_s=1.5)
    elapsed = time.monotonic() - start
    assert dict(zip(programs, scored.reasons, strict=False)) == expected, scored.details
    assert scored.values == [0.0] * len(programs) + [1.0]
    # 6 sandboxes, 4 at a time, each bounded by 1.5 s a test: far less than any "hang"
    assert elapsed < 20, elapsed
    got = scored.details[2]["first_failure"]["got"]
    assert len(got) < 400, "a failing test's output is cut in the details"
    assert settled() == []


def test_fork_bomb_disk_fill_and_daemon_are_bounded_and_leave_nothing_behind() -> None:
    attacks = {
        "process limit": PROCESSES,
        "disk fill": """
            import os
            written = 0
            try:
                for i in range(10000):
                    with open(f"fill-{i}", "wb") as f:
                        for _ in range(8):
                            f.write(b"x" * (1 << 20))
                            written += 1
            except OSError:
                print("BLOCKED" if written <= 128 else f"ESCAPED {written} MB")
            """,
    }
    # No process can be started, so the daemon is the test process itself, become a sleep (a session of
    # its own is refused: it leads its process group); the sandbox's end must take it down all the same.
    daemon = f"""
        import os
        try:
            os.setsid()
        except OSError:
            pass
        os.execv("/usr/bin/sleep", ["sleep", "{DAEMON_MARKER.decode()}"])
        """
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    start = time.monotonic()
    assert blocked({**attacks}) == {}
    scored = score([bomb, daemon, HONEST], [ANYTHING, ANYTHING, HONEST_TEST], timeout_s=3.0)
    assert scored.values == [0.0, 0.0, 1.0], scored.details
    assert scored.reasons[:2] == ["timeout", "timeout"], scored.details
    assert time.monotonic() - start < 30
    assert settled() == [], "a process of a run survived it"


SIX_CHILDREN = """
    import os, time
    for _ in range(6):
        if os.fork() == 0:
            block = b"x" * (300 << 20)
            time.sleep(2)
            os._exit(0)
    time.sleep(2.5)
    print("x")
    """
FORK_BOMB = """
    import os, time
    refused = 0
    for _ in range(5):
        try:
            os.fork()  # 32 processes, had every fork worked
        except OSError:
            refused += 1
    block = b"x" * (64 << 20)
    time.sleep(2)
    print("refused" if refused == 5 else "x")
    """


def peak_rss_mb(run: Callable[[], Scored]) -> tuple[Scored, float]:
    """``run()``'s result and the most resident memory its sandbox processes held together (sampled)."""
    result: list[Scored] = []
    worker = threading.Thread(target=lambda: result.append(run()))
    worker.start()
    peak = 0.0
    while worker.is_alive():
        peak = max(peak, sandbox_rss_mb())
        time.sleep(0.02)
    worker.join()
    return result[0], peak


def test_a_sandbox_stays_within_memory_mb_with_every_process_it_starts() -> None:
    """``memory_mb`` bounds a sandbox, not each of its processes: a test process may start no process, so
    six children of 300 MB (1.9 GB at memory_mb=512 when each process had its own limit) and a fork bomb
    are refused, and the sandbox's processes stay within memory_mb and the harness's few MB."""
    attacks = {
        "six children of 300 MB": (SIX_CHILDREN, "runtime_error:BlockingIOError"),  # fork: EAGAIN
        "fork bomb": (FORK_BOMB, "wrong_answer:0"),  # every fork refused; it prints so
    }
    for name, (program, reason) in attacks.items():
        scored, peak = peak_rss_mb(lambda: score([program], [ANYTHING], timeout_s=5.0, memory_mb=512))  # noqa: B023
        assert (scored.values, scored.reasons) == ([0.0], [reason]), (name, scored.details)
        assert peak < 512 + 100, (name, f"{peak:.0f} MB")
    assert blocked({"memory outside the address space": OUTSIDE_MEMORY}) == {}
    assert settled() == []


def test_signalling_other_processes_reaches_none_outside() -> None:
    me = os.getpid()
    attacks = {
        "kill the service": f"""
            import os, signal
            try:
                os.kill({me}, signal.SIGKILL)
                print("ESCAPED")
            except OSError:
                print("BLOCKED")
            """,
    }
    assert blocked(attacks) == {}
    kill_all = "import os, signal\nos.kill(-1, signal.SIGKILL)"  # everything this user may signal: its own
    scored = score([kill_all, HONEST], [ANYTHING, HONEST_TEST])
    assert scored.values == [0.0, 1.0], scored.details
    assert os.getpid() == me  # still here


@pytest.mark.skipif(os.geteuid() != 0, reason="the suite runs unprivileged already: every test covers it")
@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs a system Python for user 65534")
def test_an_unprivileged_service_gets_the_same_guarantees() -> None:
    """Run as root, the tests above cover a root service (no user namespace; the harness drops to a random
    user). A service running as a normal user sandboxes through a user namespace, where the harness and the
    program share a user: the program still cannot write the result pipe (the harness is PID 1 and runs
    from an execute-only interpreter, so it is not dumpable), read a secret nor fork without bound."""
    paths = [str(ROOT), *(p for p in sys.path if "site-packages" in p)]
    base = peak = shmem_mb()
    sampling = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not sampling.is_set():
            peak = max(peak, shmem_mb())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    run = subprocess.run(
        ["/usr/bin/python3", str(Path(__file__).with_name("sandbox_unprivileged.py")), *paths],
        capture_output=True,
        text=True,
        timeout=120,
        user=65534,
        group=65534,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "REWARDKIT_API_TOKEN": SECRET},
        cwd="/",
    )
    sampling.set()
    sampler.join()
    assert run.returncode == 0, run.stderr[-3000:]
    values, reasons, details = json.loads(run.stdout.splitlines()[-1])
    assert values == [0.0, 1.0, 1.0, 1.0] + [1.0] * len(ATTACKS), (reasons, details)
    assert peak - base < CAP_MB, f"the host's shared memory rose {peak - base:.0f} MB"
    assert reasons[0] == "wrong_answer:0"
