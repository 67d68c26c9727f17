"""Liveness and readiness."""

from __future__ import annotations

import importlib.util

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from rewardkit import registry
from service.deps import Authorized, SettingsDep

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers (no auth)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: the math worker pool answers", dependencies=Authorized)
async def readyz(settings: SettingsDep) -> JSONResponse:
    names = {info.name for info in registry.list_rewards()}
    if "math" not in names or importlib.util.find_spec("pebble") is None:
        return JSONResponse({"status": "ready", "math_workers": "not installed"})
    from rewardkit.equivalence import get_verifier

    verifier = get_verifier()
    if await run_in_threadpool(verifier.ready, settings.ready_timeout_s):
        return JSONResponse({"status": "ready", "math_workers": verifier.workers})
    return JSONResponse({"status": "starting", "math_workers": 0}, status_code=503)
