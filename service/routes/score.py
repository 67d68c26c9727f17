"""POST /score: several rewards over one batch."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from rewardkit.engine import BatchResult, FuncSpec, score_batch
from service.deps import Authorized, MetricsDep, SettingsDep
from service.models import ErrorResponse, ScoreRequest, ScoreResponse

router = APIRouter(tags=["score"], dependencies=Authorized)


def check_batch(size: int, limit: int) -> None:
    if size > limit:
        raise HTTPException(
            status_code=413,
            detail=f"{size} completions in one request; the limit is {limit} (REWARDKIT_MAX_BATCH)",
        )


@router.post(
    "/score",
    summary="Score a batch with one or more rewards",
    response_model=ScoreResponse,
    responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)
async def score(body: ScoreRequest, settings: SettingsDep, metrics: MetricsDep) -> JSONResponse:
    check_batch(len(body.completions), settings.max_batch)
    funcs = [f if isinstance(f, str) else FuncSpec(f.name, f.params, f.weight) for f in body.funcs]
    # Scoring is CPU work (and math waits on worker processes): off the event loop.
    result = await run_in_threadpool(score_batch, funcs, body.completions, body.columns)
    metrics.observe_batch(result)
    # The engine's result already has the response's shape: sent as it is. (FastAPI re-validating it, or
    # dataclasses.asdict deep-copying every value, cost more than scoring a 1,152-completion batch.)
    return JSONResponse(batch_body(result))


def batch_body(result: BatchResult) -> dict[str, Any]:
    return {
        "rewards": result.rewards,
        "scores": result.scores,
        "errors": result.errors,
        "timing_ms": result.timing_ms,
    }
