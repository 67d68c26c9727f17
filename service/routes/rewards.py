"""The registry, as the service sees it."""

from __future__ import annotations

from fastapi import APIRouter

from rewardkit import registry
from service.deps import Authorized, SettingsDep
from service.models import RewardDescription, RewardsResponse

router = APIRouter(tags=["rewards"], dependencies=Authorized)


@router.get("/rewards", summary="Registered rewards: names, columns, parameters, descriptions")
async def list_rewards(settings: SettingsDep) -> RewardsResponse:
    return RewardsResponse(
        rewards=[RewardDescription(**info.as_dict()) for info in registry.list_rewards()],
        max_batch=settings.max_batch,
    )
