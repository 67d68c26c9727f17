"""The app factory: ``uvicorn service.app:create_app --factory`` (what ``rewardkit serve`` runs).

:func:`create_app` puts the pieces together: the state the routes depend on (:mod:`service.deps`), the
guards and the log redaction (:mod:`service.middleware`), the error answers and their schema
(:mod:`service.errors`), the routers, and the lifecycle of the rewards: built, reported and started at
start-up (the math worker host is up before the first request: start-up waits up to
:data:`STARTUP_WAIT_S` for it, the rest start in the background and ``/readyz`` says when), closed at
shutdown.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from rewardkit import __version__

from .deps import ServiceState, state_of
from .docs import add_docs
from .errors import add_error_handlers, document_errors
from .metrics import Metrics
from .middleware import QUERY_TOKEN_ROUTES, RequestGuard, is_open, redact_access_log
from .models import SafeJSONResponse
from .routes import health, metrics, openrlhf, rewards, score
from .routes.health import reward_status
from .scoring import server_rewards
from .settings import Settings

# Under uvicorn's logging configuration, so the start-up report shows wherever uvicorn's own lines do.
logger = logging.getLogger("uvicorn.error").getChild("rewardkit")
#: The longest start-up waits for the rewards' resources (the math worker host starts in about a second; a
#: judge endpoint that does not answer must not hold the service back longer than this).
STARTUP_WAIT_S = 10.0


async def start_rewards(state: ServiceState) -> None:
    """Start every reward's resources (``Reward.ready``: the math worker host and its pool, a judge's
    verdict-mode probe), all at once in the thread pool; a failure is left for ``/readyz`` to report."""
    timeout = state.settings.ready_timeout_s
    built = [r for r in state.rewards.values() if not isinstance(r, str)]
    await asyncio.gather(*(run_in_threadpool(r.ready, timeout) for r in built), return_exceptions=True)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Build every reward, report what callers may set and start their resources; close them (worker
    pools) at shutdown."""
    state = state_of(app)
    state.rewards = server_rewards(state.policy)
    logger.info("rewardkit %s settings: %s", __version__, json.dumps(state.settings.redacted()))
    for name, reward in state.rewards.items():
        table = state.policy.describe(name)
        callers = {p: e.get("cap") for p, e in table.items() if e["settable"]}
        server_only = sorted(p for p, e in table.items() if not e["settable"])
        status = reward_status(name, reward, state.policy)
        logger.info(
            "reward %s (%s): callers may set %s; server settings %s", name, status, callers, server_only
        )
    starting = asyncio.ensure_future(start_rewards(state))
    wait_s = min(state.settings.ready_timeout_s, STARTUP_WAIT_S)
    try:
        await asyncio.wait_for(asyncio.shield(starting), wait_s)
    except TimeoutError:
        logger.warning("rewards still starting after %g s; /readyz says when they are ready", wait_s)
    yield
    for reward in state.rewards.values():  # worker pools go down with the app
        if not isinstance(reward, str):
            await run_in_threadpool(reward.close)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Tests pass ``Settings(...)``; ``uvicorn --factory`` reads ``REWARDKIT_*``.

    Raises ``ValueError`` for a bad configuration (an unknown reward or parameter in REWARDKIT_PARAMS, a
    cap on a parameter callers cannot set): the service does not start half-configured.
    """
    settings = settings or Settings()
    state = ServiceState(settings=settings, policy=settings.policy(), metrics=Metrics())
    app = FastAPI(
        title="rewardkit",
        version=__version__,
        summary="Batch reward scoring for RL fine-tuning (GRPO and friends).",
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
        docs_url=None,  # /docs and /redoc from local files, not a CDN (service/docs.py)
        redoc_url=None,
    )
    redact_access_log()
    app.state.rewardkit = state
    app.add_middleware(RequestGuard, settings=settings, metrics=state.metrics)
    add_error_handlers(app, settings)
    add_docs(app)
    document_errors(app, lambda path: not is_open(path, settings), QUERY_TOKEN_ROUTES)
    for router in (health.router, rewards.router, score.router, openrlhf.router, metrics.router):
        app.include_router(router)
    return app


def __getattr__(name: str) -> Any:  # `uvicorn service.app:app` works too, built from the environment
    if name == "app":
        return create_app()
    raise AttributeError(name)
