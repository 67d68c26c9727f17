"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ..deps import Authorized, RewardsDep, SettingsDep
from ..models import SafeJSONResponse

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers (no auth)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: every reward's resources (the math worker pool) answer",
    dependencies=Authorized,
)
async def readyz(rewards: RewardsDep, settings: SettingsDep) -> SafeJSONResponse:
    states: dict[str, str] = {}
    ready = True
    for name, reward in rewards.items():
        if isinstance(reward, str):  # not configured on this server (e.g. no judge URL): not a failure
            states[name] = reward
            continue
        answer = await run_in_threadpool(reward.ready, settings.ready_timeout_s)
        states[name] = "ready" if answer is not False else "starting"
        ready = ready and answer is not False
    body = {"status": "ready" if ready else "starting", "rewards": states}
    return SafeJSONResponse(body, status_code=200 if ready else 503)
