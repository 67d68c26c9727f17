"""What the routes depend on, as typed ``Annotated[..., Depends()]`` aliases: the app's state and the
token check.

The app's state is one :class:`ServiceState` that :func:`service.app.create_app` stores; :func:`state_of` is
the only reader of ``app.state``, and routes take ``SettingsDep``, ``PolicyDep``, ``RewardsDep``,
``MetricsDep`` or ``ScorerDep`` instead of reaching into the request.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Query, Request
from starlette.applications import Starlette

from rewardkit.policy import RemotePolicy

from .metrics import Metrics
from .scoring import Scorer, ServerRewards
from .settings import Settings


@dataclass
class ServiceState:
    """Everything one app holds: its settings, its callers' policy, its metrics, and the rewards it built at
    start-up (empty until then)."""

    settings: Settings
    policy: RemotePolicy
    metrics: Metrics
    rewards: ServerRewards = field(default_factory=dict)


def state_of(app: Starlette) -> ServiceState:
    """The state :func:`service.app.create_app` stored on ``app``."""
    state: ServiceState = app.state.rewardkit
    return state


def get_state(request: Request) -> ServiceState:
    return state_of(request.app)


StateDep = Annotated[ServiceState, Depends(get_state)]


def get_settings(state: StateDep) -> Settings:
    return state.settings


def get_policy(state: StateDep) -> RemotePolicy:
    return state.policy


def get_rewards(state: StateDep) -> ServerRewards:
    return state.rewards


def get_metrics(state: StateDep) -> Metrics:
    return state.metrics


def get_scorer(state: StateDep) -> Scorer:
    return Scorer(state.policy, state.settings, state.metrics, state.rewards)


SettingsDep = Annotated[Settings, Depends(get_settings)]
PolicyDep = Annotated[RemotePolicy, Depends(get_policy)]
RewardsDep = Annotated[ServerRewards, Depends(get_rewards)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ScorerDep = Annotated[Scorer, Depends(get_scorer)]


def require_token(
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(description="Bearer <REWARDKIT_API_TOKEN>")] = None,
) -> None:
    """401 unless the request carries the configured token (constant-time compare; nothing is logged)."""
    if settings.api_token is None:
        return
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token_matches(settings, token.strip()):
        raise HTTPException(
            status_code=401,
            detail="missing or invalid bearer token (send 'Authorization: Bearer <REWARDKIT_API_TOKEN>')",
            headers={"WWW-Authenticate": "Bearer"},
        )


def token_in_header_or_query(
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(description="Bearer <REWARDKIT_API_TOKEN>")] = None,
    token: Annotated[
        str | None, Query(max_length=4096, description="The token, for callers that send no headers")
    ] = None,
) -> None:
    """:func:`require_token`, or the token as a ``token`` query parameter (OpenRLHF sends no headers; the
    access log redacts it)."""
    if token is not None and token_matches(settings, token):
        return
    require_token(settings, authorization)


def token_matches(settings: Settings, token: str) -> bool:
    """Whether ``token`` is the configured one (constant-time; a server without a token has none to match)."""
    if settings.api_token is None:
        return False
    return hmac.compare_digest(token.encode(), settings.api_token.get_secret_value().encode())


Authorized = [Depends(require_token)]
