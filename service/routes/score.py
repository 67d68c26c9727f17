"""POST /score: several rewards over one batch."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, HTTPException
from starlette.concurrency import run_in_threadpool

from rewardkit.engine import FuncSpec, score_batch
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
    responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)
async def score(body: ScoreRequest, settings: SettingsDep, metrics: MetricsDep) -> ScoreResponse:
    check_batch(len(body.completions), settings.max_batch)
    funcs = [f if isinstance(f, str) else FuncSpec(f.name, f.params, f.weight) for f in body.funcs]
    # Scoring is CPU work (and math waits on worker processes): off the event loop.
    result = await run_in_threadpool(score_batch, funcs, body.completions, body.columns)
    metrics.observe_batch(result)
    return ScoreResponse(**asdict(result))
