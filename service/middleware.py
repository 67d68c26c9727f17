"""What stands between the socket and the routes: the access log's redaction of secrets in query strings,
and the pure ASGI guard that limits request bodies (413), times each response and counts it."""

from __future__ import annotations

import json
import logging
import os
import socket
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardkit.redact import redact_secrets

from .metrics import Metrics
from .settings import Settings

ROUTES = {"/score", "/get_reward", "/rewards", "/rewards/columns", "/healthz", "/readyz", "/metrics"}


class _BodyTooLarge(Exception):
    pass


class RedactQuerySecrets(logging.Filter):
    """Uvicorn's access log prints each path with its query string: a ``token=...`` there (OpenRLHF sends
    the token in the URL) is replaced by ``***`` before the line is written anywhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_secrets(arg) if isinstance(arg, str) else arg for arg in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact_secrets(record.msg)
        return True


def redact_access_log() -> None:
    """Install :class:`RedactQuerySecrets` on uvicorn's access logger (once)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQuerySecrets) for f in access.filters):
        access.addFilter(RedactQuerySecrets())


class LimitsAndMetrics:
    """Pure ASGI middleware: 413 for bodies over the limit (declared or streamed), and request metrics."""

    def __init__(self, app: ASGIApp, settings: Settings, metrics: Metrics) -> None:
        self.app, self.limit, self.metrics = app, settings.max_body_bytes, metrics
        self.replica = f"{socket.gethostname()}:{os.getpid()}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in ROUTES else "other"
        start = time.perf_counter()
        status = {"code": 500}
        received = 0
        exceeded = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def recording_send(message: Message) -> None:
            if exceeded:  # the app answered the aborted read (FastAPI says 400): 413 goes out instead
                return
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                took = (time.perf_counter() - start) * 1000  # request in to response out, for clients to see
                headers = [
                    *message.get("headers", []),
                    (b"server-timing", f"app;dur={took:.1f}".encode()),
                    (b"x-rewardkit-replica", self.replica),  # which process answered (workers, Ray)
                ]
                message = {**message, "headers": headers}
            await send(message)

        try:
            declared = dict(scope.get("headers", [])).get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.limit:
                exceeded = True
            else:
                await self.app(scope, limited_receive, recording_send)
        except _BodyTooLarge:
            pass
        finally:
            if exceeded:
                status["code"] = 413
                await self._too_large(send)
            self.metrics.requests.labels(route, str(status["code"])).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)

    async def _too_large(self, send: Send) -> None:
        mb = self.limit / (1024 * 1024)
        body = json.dumps({"detail": f"request body over {mb:g} MiB (REWARDKIT_MAX_BODY_MB)"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"x-rewardkit-replica", self.replica),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
