"""POST /get_reward: OpenRLHF's remote reward model protocol (``--remote_rm_url``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from ..deps import Authorized, MetricsDep, SettingsDep
from ..models import ErrorResponse, OpenRLHFRequest, OpenRLHFResponse, SafeJSONResponse
from .score import check_batch, run_batch

router = APIRouter(tags=["openrlhf"], dependencies=Authorized)


@router.post(
    "/get_reward",
    summary="OpenRLHF remote reward: query = prompt + response, labels = the solution column",
    response_model=OpenRLHFResponse,
    responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}, 504: {"model": ErrorResponse}},
)
async def get_reward(
    body: OpenRLHFRequest, request: Request, settings: SettingsDep, metrics: MetricsDep
) -> SafeJSONResponse:
    n = len(body.query)
    check_batch(n, settings.max_batch)
    prompts = body.prompts if body.prompts is not None else [""] * n
    for name, column in (("prompts", prompts), ("labels", body.labels)):
        if column is not None and len(column) != n:
            raise HTTPException(422, detail=f"'{name}' has {len(column)} items but 'query' has {n}")
    completions = [
        q[len(p) :] if p and q.startswith(p) else q for q, p in zip(body.query, prompts, strict=True)
    ]
    columns: dict[str, Any] = {"solution": body.labels} if body.labels is not None else {}
    result = await run_batch(request, settings, list(settings.openrlhf_funcs), completions, columns)
    metrics.observe_batch(result)
    # OpenRLHF turns these into tensors: "not applicable" (None) is sent as 0.0.
    rewards = [0.0 if r is None else r for r in result.rewards]
    logs = {key: [0.0 if v is None else v for v in values] for key, values in result.scores.items()}
    return SafeJSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": logs})
