"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from rewardkit import registry
from rewardkit.core import BackendUnavailable, Reward, RewardError, Unreachable
from rewardkit.policy import RemotePolicy
from rewardkit.redact import clip

from ..deps import PolicyDep, RewardsDep, SettingsDep
from ..models import ReadyResponse, SafeJSONResponse

router = APIRouter(tags=["health"])


def reward_status(name: str, reward: Reward | str, policy: RemotePolicy) -> str:
    """How a reward stands on this server: ``"ok"`` when built; ``"needs parameters: max_len (each request
    gives them)"`` for one that is built per request from a caller's parameters (``cosine``, ``route``,
    ``soft_overlong``); otherwise why it is unavailable (a judge without a URL)."""
    if not isinstance(reward, str):
        return "ok"
    try:
        required = registry.info(name).required_params
    except RewardError:  # unregistered since the service started
        return reward
    missing = [p for p in required if p not in policy.server_params.get(name, {})]
    return f"needs parameters: {', '.join(missing)} (each request gives them)" if missing else reward


@router.get("/healthz", summary="Liveness: the process answers (no auth)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: every reward's resources (the math worker pool) answer",
    response_model=ReadyResponse,
    responses={
        503: {"model": ReadyResponse, "description": "Starting: a reward's resources do not answer yet."}
    },
)
async def readyz(rewards: RewardsDep, settings: SettingsDep, policy: PolicyDep) -> SafeJSONResponse:
    states: dict[str, str] = {}
    notes: dict[str, dict[str, str]] = {}
    ready = True
    for name, reward in rewards.items():
        if isinstance(reward, str):  # built per request, or not configured here (no judge URL): not a failure
            states[name] = reward_status(name, reward, policy)
            continue
        if said := reward.notes():
            notes[name] = said
        try:
            answer = await run_in_threadpool(reward.ready, settings.ready_timeout_s)
        except Unreachable as exc:  # nothing answers at an endpoint it calls (a judge's URL): its requests
            states[name] = f"unreachable: {clip(str(exc))}"  # are 503s; the other rewards are served
            continue
        except BackendUnavailable as exc:  # can never start on this host (no sandbox): not a failure
            states[name] = f"unavailable: {clip(str(exc))}"
            continue
        states[name] = "ready" if answer is not False else "starting"
        ready = ready and answer is not False
    body = {"status": "ready" if ready else "starting", "rewards": states, "notes": notes}
    return SafeJSONResponse(body, status_code=200 if ready else 503)
