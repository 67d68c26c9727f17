"""The registry, as the service sees it: names, columns, and what a caller may set."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from rewardkit import __version__, registry

from ..deps import PolicyDep, SettingsDep
from ..models import (
    ColumnsResponse,
    FuncRequest,
    ParamPolicy,
    RewardDescription,
    RewardsResponse,
)

router = APIRouter(tags=["rewards"])


@router.get(
    "/rewards",
    summary="Registered rewards: columns, descriptions, and per parameter whether a caller may set it and "
    "its cap; plus the server's batch, body and time limits",
)
async def list_rewards(policy: PolicyDep, settings: SettingsDep) -> RewardsResponse:
    return RewardsResponse(
        rewards=[
            RewardDescription(
                name=info.name,
                columns=list(info.columns),
                optional_columns=list(info.optional_columns),
                params={k: ParamPolicy(**v) for k, v in policy.describe(info.name).items()},
                description=info.description,
            )
            for info in registry.list_rewards()
        ],
        max_batch=settings.max_batch,
        max_body_mb=settings.max_body_mb,
        max_request_chars=settings.max_request_chars,
        request_timeout_s=settings.request_timeout_s,
        version=__version__,
    )


@router.post(
    "/rewards/columns",
    summary="The columns one configured reward reads (a custom judge template's placeholders included), "
    "under the request's names when it maps them",
)
async def reward_columns(func: FuncRequest, policy: PolicyDep) -> ColumnsResponse:
    # Built as a scoring request would be (the caller policy), so the answer is about what /score will do.
    reward = await run_in_threadpool(policy.build, func.name, func.params)
    reward.configure(alias=func.alias, columns=func.columns)
    required, optional = reward.caller_columns()
    return ColumnsResponse(columns=list(required), optional_columns=list(optional))
