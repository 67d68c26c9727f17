"""The service the service examples talk to: the one at a URL you give, or ``rewardkit serve`` started here.

Starting one needs the ``service`` extra (and ``math`` for the math reward) in this venv; talking to one needs
the ``client`` extra alone.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: uvicorn's start-up line; with ``--port 0`` it names the free port the system gave it
STARTED = re.compile(r"Uvicorn running on (http://\S+)")


@contextmanager
def running_service(url: str | None, start_timeout_s: float = 120.0) -> Iterator[str]:
    """Yield ``url`` when one is given. Otherwise start ``rewardkit serve`` on a free loopback port (it reads
    its ``REWARDKIT_*`` settings from this environment), yield its URL once it answers, and stop it at the
    end of the block. A service that exits or stays silent for ``start_timeout_s`` raises ``RuntimeError``
    with the end of its log."""
    if url:
        yield url.rstrip("/")
        return
    with tempfile.TemporaryDirectory(prefix="rewardkit-example-") as tmp:
        log = Path(tmp) / "serve.log"
        with log.open("wb") as out:  # the service writes to its own copy of the file
            command = [sys.executable, "-m", "rewardkit", "serve", "--host", "127.0.0.1", "--port", "0"]
            server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield _started(server, log, start_timeout_s)
        finally:
            server.terminate()  # SIGTERM: uvicorn's graceful shutdown
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _started(server: subprocess.Popen[bytes], log: Path, timeout_s: float) -> str:
    deadline, text = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if found := STARTED.search(text):
            print(f"started `rewardkit serve` at {found[1]}")
            return found[1]
        if server.poll() is not None:
            raise RuntimeError(f"`rewardkit serve` exited with {server.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"`rewardkit serve` did not start in {timeout_s:.0f} s:\n{text[-3000:]}")
