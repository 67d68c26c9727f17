"""How the service's exceptions become answers: 422 for a caller's mistake (an unknown reward, a bad
parameter, an invalid body), 503 for a backend that is down (retried), 504 past the request deadline (not
retried). Every answer is a :class:`~service.models.SafeJSONResponse` with a ``detail``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError

from rewardkit import registry
from rewardkit.core import BackendUnavailable, DeadlineExceeded, RewardError
from rewardkit.registry import UnknownRewardError

from .models import SafeJSONResponse
from .settings import Settings


def add_error_handlers(app: FastAPI, settings: Settings) -> None:
    """Install the handlers on ``app`` (``settings`` names the request deadline in the 504's detail)."""

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
