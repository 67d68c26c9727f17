"""The HTTP protocol ``rewardkit serve`` runs: uvicorn's (httptools), with a deadline on each request's head.

Uvicorn bounds how long a connection may stay idle *after* a response (``timeout_keep_alive``), but not how
long a request's head may take to arrive: a connection that sends nothing, or a header line a byte every few
seconds, is held for good, and no ASGI middleware sees it (an app is called once the head is complete). Here
a connection must deliver each request's head within ``REWARDKIT_HEADER_TIMEOUT_S``, counted from the
connection's start for its first request and from the request's first byte for the next ones (between the
two, uvicorn's keep-alive timeout applies); past it the connection is closed without an answer, as a proxy
closes a client that never finished asking.

The hooks are httptools' parser callbacks (``on_message_begin``, ``on_headers_complete``) and asyncio's
protocol methods, which uvicorn's class implements; ``tests/security/test_asgi_guards.py`` fails if a
uvicorn release stops calling them.
"""

from __future__ import annotations

import asyncio
import functools

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .settings import Settings

__all__ = ["HeadTimeoutProtocol", "head_timeout_s"]


@functools.cache
def head_timeout_s() -> float:
    """``REWARDKIT_HEADER_TIMEOUT_S`` of this process (read once: uvicorn builds a protocol a connection)."""
    return Settings().header_timeout_s


class HeadTimeoutProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol, closing a connection whose request head is late."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_timer is None:  # a kept-alive connection's next request: its own deadline
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(head_timeout_s(), self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()
