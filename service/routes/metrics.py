"""Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service.deps import Authorized, MetricsDep

router = APIRouter(tags=["metrics"], dependencies=Authorized)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(metrics: MetricsDep) -> Response:
    metrics.refresh()
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
