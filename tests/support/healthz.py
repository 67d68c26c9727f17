"""``/healthz`` polled from a process of its own while a test runs, so that what the test process does
meanwhile (a loopback judge writing large replies, a client uploading a body) does not delay the polls.

>>> callable(polled_healthz)
True
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: polls the URL every 50 ms until its stdin closes, then prints the latencies, one a line
POLLER = """
import sys, threading, time, httpx
url, stop, latencies = sys.argv[1], threading.Event(), []
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
with httpx.Client(timeout=30) as client:
    client.get(url)
    print("ready", flush=True)
    while not stop.is_set():
        start = time.monotonic()
        client.get(url)
        latencies.append(time.monotonic() - start)
        stop.wait(0.05)
print("\\n".join(map(str, latencies)))
"""


@contextmanager
def polled_healthz(base_url: str) -> Iterator[list[float]]:
    """Poll ``base_url``'s ``/healthz`` while the block runs; the list holds every latency (in seconds)
    once the block has ended."""
    latencies: list[float] = []
    poller = subprocess.Popen(
        [sys.executable, "-c", POLLER, base_url + "/healthz"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert poller.stdout is not None and poller.stdout.readline().strip() == "ready"
    try:
        yield latencies
    finally:
        output, _ = poller.communicate(timeout=60)  # closing its stdin stops it
        latencies.extend(float(line) for line in output.split())
