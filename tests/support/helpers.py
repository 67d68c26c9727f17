"""What several test modules share: the service run for real (uvicorn in a subprocess on loopback)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-never-echoed"
JSON = {"content-type": "application/json"}


def send_json(handler: BaseHTTPRequestHandler, body: object, status: int = 200) -> None:
    """Answer an ``http.server`` request with ``body`` as JSON (the small loopback services of the tests)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def judge_env(judge_url: str, model: str, key: str, **extra: str) -> dict[str, str]:
    """A service's environment with the token, one math worker and an operator's judge at ``judge_url``."""
    return {
        "REWARDKIT_API_TOKEN": TOKEN,
        "REWARDKIT_JUDGE_BASE_URL": judge_url,
        "REWARDKIT_JUDGE_MODEL": model,
        "REWARDKIT_JUDGE_API_KEY": key,
        "REWARDKIT_MATH_WORKERS": "1",
        **extra,
    }


class Server:
    """``uvicorn service.app:create_app`` in a subprocess (run by ``python``, as ``user`` and its group when
    given). The listening socket is bound here and handed over (``--fd``), so no other process can take the
    port between choosing it and serving on it."""

    def __init__(
        self, env: dict[str, str], log: Path, python: str = sys.executable, user: int | None = None
    ) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [python, "-m", "uvicorn", "service.app:create_app", "--factory"]
        command += ["--fd", str(sock.fileno())]
        clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
        self.log_file = log.open("w")
        try:
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**clean, **env},
                stdout=self.log_file,
                stderr=subprocess.STDOUT,
                pass_fds=(sock.fileno(),),
                user=user,
                group=user,
                extra_groups=None if user is None else [],
            )
        finally:
            sock.close()  # the server holds its own copy
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the service did not start: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log_file.close()
