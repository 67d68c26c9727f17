"""Dependencies shared by the routes: settings, metrics, and the bearer-token check."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request

from .metrics import Metrics
from .settings import Settings


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]


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


def token_matches(settings: Settings, token: str) -> bool:
    """Whether ``token`` is the configured one (constant-time; a server without a token has none to match)."""
    if settings.api_token is None:
        return False
    return hmac.compare_digest(token.encode(), settings.api_token.get_secret_value().encode())


Authorized = [Depends(require_token)]
