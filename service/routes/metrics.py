"""Prometheus metrics (without the token when REWARDKIT_METRICS_PUBLIC is true, for annotation scrapes)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import MetricsDep, RewardsDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(metrics: MetricsDep, rewards: RewardsDep) -> Response:
    metrics.record_stats(rewards)
    return Response(generate_latest(metrics.exposition_registry()), media_type=CONTENT_TYPE_LATEST)
