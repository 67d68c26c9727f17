"""The app factory: ``uvicorn service.app:create_app --factory`` (what ``rewardkit serve`` runs)."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote_plus

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardkit import __version__, registry
from rewardkit.core import BackendUnavailable, DeadlineExceeded, Reward, RewardError
from rewardkit.registry import UnknownRewardError

from .metrics import Metrics
from .models import SafeJSONResponse
from .routes import health, metrics, openrlhf, rewards, score
from .settings import Settings

# Under uvicorn's logging configuration, so the start-up report shows wherever uvicorn's own lines do.
logger = logging.getLogger("uvicorn.error").getChild("rewardkit")

ROUTES = {"/score", "/get_reward", "/rewards", "/rewards/columns", "/healthz", "/readyz", "/metrics"}


class _BodyTooLarge(Exception):
    pass


_QUERY_PARAM = re.compile(r"([?&])([^=&\s\"]*)=([^&\s\"]*)")
_SECRET_NAMES = {"token", "api_key", "access_token"}


def _redact(text: str) -> str:
    """Query parameters named like a secret (``token``, ``%74oken``, ``TOKEN``...) get the value ``***``."""

    def one(match: re.Match[str]) -> str:
        name = unquote_plus(match.group(2)).strip().lower()
        return f"{match.group(1)}{match.group(2)}=***" if name in _SECRET_NAMES else match.group(0)

    return _QUERY_PARAM.sub(one, text)


class RedactQuerySecrets(logging.Filter):
    """Uvicorn's access log prints each path with its query string: a ``token=...`` there (OpenRLHF sends
    the token in the URL) is replaced by ``***`` before the line is written anywhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        elif isinstance(record.msg, str):
            record.msg = _redact(record.msg)
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


def server_rewards(app: FastAPI) -> dict[str, Reward | str]:
    """Each registered reward as this server configures it, or why it is unavailable (e.g. a judge with no
    base URL configured). Readiness, statistics and shutdown go through these, never a reward's internals."""
    built: dict[str, Reward | str] = {}
    for info in registry.list_rewards():
        try:
            built[info.name] = app.state.policy.build(info.name)
        except (ValueError, ImportError) as exc:
            built[info.name] = f"unavailable: {exc}"
    return built


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Tests pass ``Settings(...)``; ``uvicorn --factory`` reads ``REWARDKIT_*``.

    Raises ``ValueError`` for a bad configuration (an unknown reward or parameter in REWARDKIT_PARAMS, a
    cap on a parameter callers cannot set): the service does not start half-configured.
    """
    settings = settings or Settings()
    policy = settings.policy()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.rewards = server_rewards(app)
        logger.info("rewardkit %s settings: %s", __version__, json.dumps(settings.redacted()))
        for name, reward in app.state.rewards.items():
            table = policy.describe(name)
            callers = {p: e.get("cap") for p, e in table.items() if e["settable"]}
            server_only = sorted(p for p, e in table.items() if not e["settable"])
            state = reward if isinstance(reward, str) else "ok"
            logger.info(
                "reward %s (%s): callers may set %s; server settings %s", name, state, callers, server_only
            )
        yield
        for reward in app.state.rewards.values():  # worker pools go down with the app
            if not isinstance(reward, str):
                await run_in_threadpool(reward.close)

    app = FastAPI(
        title="rewardkit",
        version=__version__,
        summary="Batch reward scoring for RL fine-tuning (GRPO and friends).",
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
    )
    redact_access_log()
    app.state.settings = settings
    app.state.policy = policy
    app.state.rewards = {}
    app.state.metrics = Metrics()
    app.add_middleware(LimitsAndMetrics, settings=settings, metrics=app.state.metrics)

    @app.exception_handler(UnknownRewardError)
    async def unknown_reward(request: Request, exc: UnknownRewardError) -> SafeJSONResponse:
        available = [info.name for info in registry.list_rewards()]
        return SafeJSONResponse({"detail": str(exc), "available": available}, status_code=422)

    @app.exception_handler(RewardError)
    async def bad_request(request: Request, exc: RewardError) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": jsonable_encoder(exc.errors())}, status_code=422)

    @app.exception_handler(BackendUnavailable)
    async def backend_down(request: Request, exc: BackendUnavailable) -> SafeJSONResponse:
        # 503: the client retries it with backoff, then fails the step loudly
        return SafeJSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(DeadlineExceeded)
    async def too_slow(request: Request, exc: DeadlineExceeded) -> SafeJSONResponse:
        limit = settings.request_timeout_s
        return SafeJSONResponse(
            {"detail": f"the request took longer than {limit:g} s (REWARDKIT_REQUEST_TIMEOUT_S); {exc}"},
            status_code=504,
            headers={"X-Rewardkit-Timeout": "request"},  # clients do not retry this: it would fail again
        )

    for router in (health.router, rewards.router, score.router, openrlhf.router, metrics.router):
        app.include_router(router)
    return app


def __getattr__(name: str) -> Any:  # `uvicorn service.app:app` works too, built from the environment
    if name == "app":
        return create_app()
    raise AttributeError(name)
