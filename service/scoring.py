"""Scoring for a remote caller, as ``POST /score`` and ``POST /get_reward`` share it: the batch-size limit,
a request's reward spec, rewards built by the server's policy under the request deadline, and the metrics.

The routes read their own request shapes and write their own responses; everything between is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from rewardkit import registry
from rewardkit.core import Completion, Reward
from rewardkit.engine import BatchResult, GoldCheck, RewardSpec, ascore_batch
from rewardkit.policy import RemotePolicy

from .metrics import Metrics
from .models import FuncRequest
from .settings import Settings

ServerRewards = dict[str, Reward | str]
"""Each registered reward as this server configures it, or why it is unavailable (a judge with no URL)."""


def server_rewards(policy: RemotePolicy) -> ServerRewards:
    """Each registered reward as ``policy`` builds it, or why it cannot (e.g. a judge with no base URL
    configured). Readiness, statistics and shutdown go through these, never a reward's internals."""
    built: ServerRewards = {}
    for info in registry.list_rewards():
        try:
            built[info.name] = policy.build(info.name)
        except (ValueError, ImportError) as exc:
            built[info.name] = f"unavailable: {exc}"
    return built


def spec_from_request(func: str | FuncRequest) -> str | RewardSpec:
    """A request's reward as the engine takes it: a name as it is, an object as its spec."""
    return func if isinstance(func, str) else func.to_spec()


def batch_body(result: BatchResult) -> dict[str, Any]:
    """``/score``'s response: the engine's result already has its shape, so it is sent as it is (FastAPI
    re-validating it, or dataclasses.asdict deep-copying every value, cost more than scoring a
    1,152-completion batch)."""
    return {
        "rewards": result.rewards,
        "scores": result.scores,
        "errors": result.errors,
        "timing_ms": result.timing_ms,
    }


@dataclass(frozen=True)
class Scorer:
    """One request's view of the app: what it scores with (``policy``), its limits (``settings``), where
    the figures go (``metrics``, ``rewards``)."""

    policy: RemotePolicy
    settings: Settings
    metrics: Metrics
    rewards: Mapping[str, Reward | str]

    def check_batch(self, size: int) -> None:
        """413 for more completions than ``REWARDKIT_MAX_BATCH`` (before the body is read further)."""
        limit = self.settings.max_batch
        if size > limit:
            raise HTTPException(
                status_code=413,
                detail=f"{size} completions in one request; the limit is {limit} (REWARDKIT_MAX_BATCH)",
            )

    async def score(
        self,
        funcs: Sequence[str | RewardSpec],
        completions: Sequence[Completion],
        columns: Mapping[str, Any],
        golds: GoldCheck | None = None,
    ) -> BatchResult:
        """Rewards built by the server's policy, under the request deadline. CPU work runs in the thread
        pool; the judge's calls wait on the event loop and hold no thread. A batch in which no item has its
        gold is a :class:`~rewardkit.golds.MissingGoldError` (a 422), checked by ``golds`` (by default this
        batch on its own)."""
        try:
            result = await ascore_batch(
                funcs,
                completions,
                columns,
                build=self.policy.build,
                deadline_s=self.settings.request_timeout_s,
                max_chars=self.settings.max_request_chars,
                offload=run_in_threadpool,
                golds=golds,
            )
        finally:  # the rewards' own figures (cache hits, timeouts) counted as they grow, timed out or not
            self.metrics.record_stats(self.rewards)
        self.metrics.observe_batch(result)
        return result
