"""POST /score: several rewards over one batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from rewardkit.core import Completion
from rewardkit.engine import BatchResult, FuncSpec, ascore_batch

from ..deps import Authorized, MetricsDep, SettingsDep
from ..models import ErrorResponse, SafeJSONResponse, ScoreRequest, ScoreResponse
from ..settings import Settings

router = APIRouter(tags=["score"], dependencies=Authorized)


def check_batch(size: int, limit: int) -> None:
    if size > limit:
        raise HTTPException(
            status_code=413,
            detail=f"{size} completions in one request; the limit is {limit} (REWARDKIT_MAX_BATCH)",
        )


async def run_batch(
    request: Request,
    settings: Settings,
    funcs: Sequence[str | FuncSpec],
    completions: Sequence[Completion],
    columns: dict[str, Any],
) -> BatchResult:
    """Score for a remote caller: rewards built by the server's policy, under the request deadline.
    CPU work runs in the thread pool; the judge's calls wait on the event loop and hold no thread."""
    try:
        return await ascore_batch(
            funcs,
            completions,
            columns,
            build=request.app.state.policy.build,
            deadline_s=settings.request_timeout_s,
            offload=run_in_threadpool,
        )
    finally:  # the rewards' own figures (cache hits, timeouts) counted as they grow, timed-out batches too
        request.app.state.metrics.record_stats(request.app.state.rewards)


@router.post(
    "/score",
    summary="Score a batch with one or more rewards",
    response_model=ScoreResponse,
    responses={
        413: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        504: {"model": ErrorResponse, "description": "over REWARDKIT_REQUEST_TIMEOUT_S"},
    },
)
async def score(
    body: ScoreRequest, request: Request, settings: SettingsDep, metrics: MetricsDep
) -> SafeJSONResponse:
    check_batch(len(body.completions), settings.max_batch)
    funcs = [
        f if isinstance(f, str) else FuncSpec(f.name, f.params, f.weight, f.alias, f.columns)
        for f in body.funcs
    ]
    result = await run_batch(request, settings, funcs, body.completions, body.columns)
    metrics.observe_batch(result)
    # The engine's result already has the response's shape: sent as it is. (FastAPI re-validating it, or
    # dataclasses.asdict deep-copying every value, cost more than scoring a 1,152-completion batch.)
    return SafeJSONResponse(batch_body(result))


def batch_body(result: BatchResult) -> dict[str, Any]:
    return {
        "rewards": result.rewards,
        "scores": result.scores,
        "errors": result.errors,
        "timing_ms": result.timing_ms,
    }
