"""The app factory: ``uvicorn service.app:create_app --factory`` (what ``rewardkit serve`` runs)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardkit import __version__, registry
from rewardkit.core import RewardError
from rewardkit.registry import UnknownRewardError
from service.metrics import Metrics
from service.routes import health, metrics, openrlhf, rewards, score
from service.settings import Settings

ROUTES = {"/score", "/get_reward", "/rewards", "/healthz", "/readyz", "/metrics"}


class _BodyTooLarge(Exception):
    pass


class LimitsAndMetrics:
    """Pure ASGI middleware: 413 for bodies over the limit (declared or streamed), and request metrics."""

    def __init__(self, app: ASGIApp, settings: Settings, metrics: Metrics) -> None:
        self.app, self.limit, self.metrics = app, settings.max_body_bytes, metrics

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
                headers = [*message.get("headers", []), (b"server-timing", f"app;dur={took:.1f}".encode())]
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
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Tests pass ``Settings(...)``; ``uvicorn --factory`` reads ``REWARDKIT_*``."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        from rewardkit import equivalence  # the math worker pools go down with the app

        equivalence.shutdown()

    app = FastAPI(
        title="rewardkit",
        version=__version__,
        summary="Batch reward scoring for RL fine-tuning (GRPO and friends).",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.add_middleware(LimitsAndMetrics, settings=settings, metrics=app.state.metrics)

    @app.exception_handler(UnknownRewardError)
    async def unknown_reward(request: Request, exc: UnknownRewardError) -> JSONResponse:
        available = [info.name for info in registry.list_rewards()]
        return JSONResponse({"detail": str(exc), "available": available}, status_code=422)

    @app.exception_handler(RewardError)
    async def bad_request(request: Request, exc: RewardError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    for router in (health.router, rewards.router, score.router, openrlhf.router, metrics.router):
        app.include_router(router)
    return app


def __getattr__(name: str) -> Any:  # `uvicorn service.app:app` works too, built from the environment
    if name == "app":
        return create_app()
    raise AttributeError(name)
