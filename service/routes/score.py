"""POST /score: several rewards over one batch."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import ScorerDep
from ..models import SafeJSONResponse, ScoreRequest, ScoreResponse
from ..scoring import batch_body, spec_from_request

router = APIRouter(tags=["score"])


@router.post(
    "/score",
    summary="Score a batch with one or more rewards",
    response_model=ScoreResponse,
)
async def score(body: ScoreRequest, scorer: ScorerDep) -> SafeJSONResponse:
    scorer.check_batch(len(body.completions))
    funcs = [spec_from_request(f) for f in body.funcs]
    result = await scorer.score(funcs, body.completions, body.columns)
    return SafeJSONResponse(batch_body(result))
