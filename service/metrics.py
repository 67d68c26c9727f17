"""Prometheus metrics of one app (a registry per app, so several apps can live in one process)."""

from __future__ import annotations

import collections
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from rewardkit.core import Reward
from rewardkit.engine import BatchResult


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "rewardkit_requests", "HTTP requests.", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "rewardkit_request_seconds",
            "Request latency.",
            ["route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.items = Counter(
            "rewardkit_items_scored", "Items scored per func.", ["func"], registry=self.registry
        )
        self.reasons = Counter(
            "rewardkit_item_reasons",
            "Items with a reason, per func and reason.",
            ["func", "reason"],
            registry=self.registry,
        )
        self.timeouts = Counter(
            "rewardkit_timeouts", "Items that timed out, per func.", ["func"], registry=self.registry
        )
        self.reward_stats = Gauge(
            "rewardkit_reward_stat",
            "Figures each reward reports about its shared resources (math: cache_hits, timeouts, ...).",
            ["func", "stat"],
            registry=self.registry,
        )

    def observe_batch(self, result: BatchResult) -> None:
        for key, values in result.scores.items():
            func = result.names.get(key) or key.split("#", 1)[0]  # the registry key: no series per alias
            self.items.labels(func).inc(len(values))
            counts = collections.Counter(
                r.split(":", 1)[0] for r in result.errors.get(key, ()) if r is not None
            )
            for reason, count in counts.items():  # one update per (func, reason), not per item
                self.reasons.labels(func, reason).inc(count)
                if reason == "timeout":
                    self.timeouts.labels(func).inc(count)

    def refresh(self, rewards: Mapping[str, Reward | str]) -> None:
        """Copy the figures each reward reports (through the reward contract) into gauges, at scrape time."""
        for name, reward in rewards.items():
            if isinstance(reward, Reward):
                for stat, value in reward.stats().items():
                    self.reward_stats.labels(name, stat).set(value)
