"""What stands between the socket and the routes: one pure ASGI guard, and the access log's redaction.

:class:`RequestGuard` runs before FastAPI sees a request, on its headers alone:

- **the token** (``Authorization: Bearer``, or ``?token=`` for ``/get_reward``, compared in constant time)
  is checked before the body is parsed: a caller without it gets 401 and the connection is closed, so an
  anonymous 60 MiB body costs the server neither the upload nor the parsing (a body declared at most
  :data:`ANONYMOUS_DRAIN` bytes is read and dropped first, for at most a second: a client still sending it
  would otherwise meet a reset connection instead of the 401);
- **the body limit**: a declared ``Content-Length`` over ``REWARDKIT_MAX_BODY_MB`` is refused from the
  headers, a streamed body as soon as it passes the limit (413, open routes included); for a caller with
  the token the rest of the body (up to four times the limit and 16 MiB, within the body timeout) is read
  and dropped first, so that a client still sending reads the 413 rather than a reset connection;
- **the body timeout**: a body not fully arrived ``REWARDKIT_BODY_TIMEOUT_S`` after the request started gets
  408 and the connection is closed. Uvicorn has no such bound: a client that trickles a byte every few
  seconds would hold its connection, a task and its buffer for as long as it likes. It is a bound on the
  whole body rather than on the gap between two reads, so no pace of trickling can stretch it;
- **timing and metrics**: each answer to a caller with the token carries ``Server-Timing`` and
  ``X-Rewardkit-Replica`` (which process answered); answers to callers without it carry neither.

What is open without the token: ``/healthz``; ``/metrics`` with ``REWARDKIT_METRICS_PUBLIC``; the API's
pages and schema (``/docs``, ``/redoc``, ``/openapi.json``, their files) with ``REWARDKIT_DOCS_PUBLIC``.
A slow request *head* never reaches an ASGI app: :mod:`service.protocol` bounds it (``rewardkit serve``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import socket
import time
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardkit.redact import redact_secrets

from .docs import DOCS_PATHS, STATIC_URL
from .metrics import Metrics
from .settings import Settings

ROUTES = {"/score", "/get_reward", "/rewards", "/rewards/columns", "/healthz", "/readyz", "/metrics"}
#: Routes that take the token as a ``token`` query parameter too (OpenRLHF sends no headers).
QUERY_TOKEN_ROUTES = frozenset({"/get_reward"})
UNAUTHORIZED = "missing or invalid bearer token (send 'Authorization: Bearer <REWARDKIT_API_TOKEN>')"
#: The most characters of one access-log field that are kept (and redacted): a path is not a payload.
LOG_FIELD_CHARS = 1_000


class _ReadCut(Exception):
    """The body read was stopped (over the limit, or too slow); the guard answers instead of the app."""


def _for_log(value: str) -> str:
    if len(value) > LOG_FIELD_CHARS:
        value = f"{value[:LOG_FIELD_CHARS]}... ({len(value)} characters)"
    return redact_secrets(value)


class RedactQuerySecrets(logging.Filter):
    """Uvicorn's access log prints each path with its query string: a ``token=...`` there (OpenRLHF sends
    the token in the URL) is replaced by ``***`` before the line is written anywhere, and a path is cut to
    :data:`LOG_FIELD_CHARS` characters."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_for_log(arg) if isinstance(arg, str) else arg for arg in record.args)
        elif isinstance(record.msg, str):
            record.msg = _for_log(record.msg)
        return True


def redact_access_log() -> None:
    """Install :class:`RedactQuerySecrets` on uvicorn's access logger (once)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQuerySecrets) for f in access.filters):
        access.addFilter(RedactQuerySecrets())


def route_path(scope: Scope) -> str:
    """The request's path under the app (without the ``root_path`` a proxy serves it under)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return (path[len(root) :] or "/") if root and path.startswith(root) else path


def is_open(path: str, settings: Settings) -> bool:
    """Whether ``path`` (under the app) is answered without the token."""
    if settings.api_token is None or path == "/healthz":
        return True
    if path == "/metrics":
        return settings.metrics_public
    if path in DOCS_PATHS or path.startswith(STATIC_URL + "/"):
        return settings.docs_public
    return False


#: the most of an anonymous request's body read (and dropped) before its 401, so that a client still sending
#: a small body reads the 401 rather than a reset connection; a larger one is never read
ANONYMOUS_DRAIN = 64 << 10


class RequestGuard:
    """Pure ASGI middleware: the token, the body's size and time limits, timing headers and metrics."""

    def __init__(self, app: ASGIApp, settings: Settings, metrics: Metrics) -> None:
        self.app, self.settings, self.metrics = app, settings, metrics
        self.limit = settings.max_body_bytes
        self.drain_cap = 4 * self.limit + (16 << 20)  # what of a refused body a caller's 413 waits to read
        token = settings.api_token
        self.token = None if token is None else token.get_secret_value().encode()
        self.replica = f"{socket.gethostname()}:{os.getpid()}".encode()

    # -- who may pass
    def authorized(self, scope: Scope, path: str) -> bool:
        """Whether the request carries the token (every header and, where allowed, query value is tried)."""
        if self.token is None:
            return True
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = value.partition(b" ")
                if scheme.lower() == b"bearer" and self._matches(token.strip()):
                    return True
        if path in QUERY_TOKEN_ROUTES and b"token" in scope["query_string"]:
            query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            return any(self._matches(value.encode()) for name, value in query if name == "token")
        return False

    def _matches(self, token: bytes) -> bool:
        return self.token is not None and hmac.compare_digest(token, self.token)

    # -- the request
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        start = time.perf_counter()
        status = 500
        caller = self.authorized(scope, path)
        try:
            declared = dict(scope["headers"]).get(b"content-length", b"")
            if not caller and not is_open(path, self.settings):
                status = 401
                if declared.isdigit() and int(declared) <= ANONYMOUS_DRAIN:  # a small body, already sent
                    loop = asyncio.get_running_loop()
                    await self._drain(receive, loop.time() + min(1.0, self.settings.body_timeout_s), 0)
                await answer(send, 401, UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
                return
            if declared.isdigit() and int(declared) > self.limit:
                status = 413
                if caller and int(declared) <= self.drain_cap:
                    await self._drain(receive, self._body_deadline(), 0)
                await answer(send, 413, self._too_large(), self._stamp(caller, start))
                return
            status = await self._forward(scope, receive, send, caller, start)
        finally:
            route = path if path in ROUTES else "other"
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)

    async def _forward(self, scope: Scope, receive: Receive, send: Send, caller: bool, start: float) -> int:
        """Run the app with the body read under the limits; the status sent (the guard's 408 or 413 when it
        stopped the read: whatever the app made of the aborted read is dropped)."""
        deadline = self._body_deadline()
        received, body_done = 0, False
        cut: tuple[int, str] | None = None
        sent = {"status": 500, "started": False}

        async def guarded_receive() -> Message:
            nonlocal received, body_done, cut
            if body_done:  # after the body: the app waits for a disconnect, untimed
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                cut = (408, self._too_slow())
                raise _ReadCut from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    cut = (413, self._too_large())
                    raise _ReadCut
                body_done = not message.get("more_body", False)
            return message

        async def stamped_send(message: Message) -> None:
            if cut is not None:
                return
            if message["type"] == "http.response.start":
                sent.update(status=message["status"], started=True)
                message = {**message, "headers": [*message.get("headers", []), *self._stamp(caller, start)]}
            await send(message)

        try:
            await self.app(scope, guarded_receive, stamped_send)
        except _ReadCut:
            pass
        if cut is None:
            return int(sent["status"])
        if sent["started"]:  # a route that answered before reading its body: the connection just ends
            return int(sent["status"])
        if cut[0] == 413 and caller:
            await self._drain(receive, deadline, received)
        await answer(send, cut[0], cut[1], self._stamp(caller, start))
        return cut[0]

    def _body_deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.settings.body_timeout_s

    async def _drain(self, receive: Receive, deadline: float, taken: int) -> None:
        """Read and drop the rest of a caller's refused body (up to ``drain_cap`` bytes in all, within the
        body's deadline) before the 413: a client still sending would otherwise meet a reset connection
        instead of the answer (the server closing with unread bytes resets it). Callers without the token
        get no such courtesy: their bodies are never read."""
        try:
            async with asyncio.timeout_at(deadline):
                while taken <= self.drain_cap:
                    message = await receive()
                    if message["type"] != "http.request":
                        return
                    taken += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        return
        except TimeoutError:
            return

    def _stamp(self, caller: bool, start: float) -> list[tuple[bytes, bytes]]:
        """The headers that say which process answered, and how long it took: for callers with the token."""
        if not caller:
            return []
        took = (time.perf_counter() - start) * 1000
        return [(b"server-timing", f"app;dur={took:.1f}".encode()), (b"x-rewardkit-replica", self.replica)]

    def _too_large(self) -> str:
        return f"request body over {self.settings.max_body_mb:g} MiB (REWARDKIT_MAX_BODY_MB)"

    def _too_slow(self) -> str:
        limit = self.settings.body_timeout_s
        return f"the request body did not arrive within {limit:g} s (REWARDKIT_BODY_TIMEOUT_S)"


async def answer(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]]) -> None:
    """A JSON ``{"detail": ...}`` answer that closes the connection: what is left of the request's body is
    never read."""
    body = json.dumps({"detail": detail}).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *headers,
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})
