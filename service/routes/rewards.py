"""The registry, as the service sees it: names, columns, and what a caller may set."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rewardkit import __version__, registry

from ..deps import Authorized, SettingsDep
from ..models import ParamPolicy, RewardDescription, RewardsResponse

router = APIRouter(tags=["rewards"], dependencies=Authorized)


@router.get(
    "/rewards",
    summary="Registered rewards: columns, descriptions, and per parameter whether a caller may set it and "
    "its cap; plus the server's batch, body and time limits",
)
async def list_rewards(request: Request, settings: SettingsDep) -> RewardsResponse:
    policy = request.app.state.policy
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
        request_timeout_s=settings.request_timeout_s,
        version=__version__,
    )
