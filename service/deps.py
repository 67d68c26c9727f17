"""What the routes depend on, as typed ``Annotated[..., Depends()]`` aliases: the app's state. (The token
is checked before a route runs, on the headers: :class:`service.middleware.RequestGuard`.)

The app's state is one :class:`ServiceState` that :func:`service.app.create_app` stores; :func:`state_of` is
the only reader of ``app.state``, and routes take ``SettingsDep``, ``PolicyDep``, ``RewardsDep``,
``MetricsDep`` or ``ScorerDep`` instead of reaching into the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
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
