"""POST /get_reward: OpenRLHF's remote reward protocol (``--reward.remote_url``, older ``--remote_rm_url``).

The request is read by :mod:`rewardkit.adapters.openrlhf` (the same reading as its file form). OpenRLHF sends
no headers, so this route also takes the token as a ``token`` query parameter (redacted from the access log),
and the rewards as ``funcs=countdown,format`` (their parameters are the server's; the default list is
``REWARDKIT_OPENRLHF_FUNCS``). ``scores`` (what OpenRLHF's dynamic filtering reads, in a 0-1 range) are the
values of one reward: ``score_func=NAME``, by default the first named; ``rewards`` their weighted sum.
Requests without labels fail with a 422 naming ``--data.label_key`` once a few have come without any
(:func:`rewardkit.adapters.openrlhf.gold_check`). An empty batch (``{"query": []}``) is answered with empty
lists, as ``/score`` answers one: a remote reward model is asked for one value per sample, and OpenRLHF turns
the lists into tensors whatever their length.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from rewardkit.adapters.openrlhf import funcs_from, gold_check, read_request, response_body, score_key
from rewardkit.engine import BatchResult, resolve, result_keys

from ..deps import ScorerDep, SettingsDep
from ..models import OpenRLHFRequest, OpenRLHFResponse, SafeJSONResponse

router = APIRouter(tags=["openrlhf"])


@router.post(
    "/get_reward",
    summary="OpenRLHF remote reward: query = prompt + response; labels = the solution, or JSON objects of "
    "columns; ?funcs=a,b picks the rewards, ?score_func=a the one whose values are the scores",
    response_model=OpenRLHFResponse,
)
async def get_reward(
    body: OpenRLHFRequest,
    settings: SettingsDep,
    scorer: ScorerDep,
    funcs: Annotated[
        str | None,
        Query(max_length=2048, description="Rewards by name, comma-separated (default: the setting)"),
    ] = None,
    score_func: Annotated[
        str | None,
        Query(
            max_length=128,
            description="The reward whose values are `scores`, OpenRLHF's 0-1 accuracy for dynamic "
            "filtering (default: the first of funcs)",
        ),
    ] = None,
) -> SafeJSONResponse:
    scorer.check_batch(len(body.query))
    try:
        names = funcs_from(funcs) if funcs is not None else list(settings.openrlhf_funcs)
        score = score_key(names, score_func)
        # off the event loop: labels may hold JSON to parse
        completions, columns = await run_in_threadpool(read_request, body.query, body.prompts, body.labels)
    except ValueError as exc:
        raise HTTPException(422, detail=str(exc)) from None
    if not completions:  # nothing to score, and no labels to need: the rewards are still checked
        await run_in_threadpool(resolve, names, scorer.policy.build)
        empty = BatchResult(
            rewards=[], scores={key: [] for key in result_keys(names)}, errors={}, timing_ms={}
        )
        return SafeJSONResponse(response_body(empty, score))
    result = await scorer.score(names, completions, columns, golds=gold_check())
    return SafeJSONResponse(response_body(result, score))
