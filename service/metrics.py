"""Prometheus metrics of one app (a registry per app, so several apps can live in one process)."""

from __future__ import annotations

import collections

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
        self.cache_hits = Gauge(
            "rewardkit_math_cache_hits",
            "Math verdicts served from the LRU (process total).",
            registry=self.registry,
        )

    def observe_batch(self, result: BatchResult) -> None:
        for key, values in result.scores.items():
            func = key.split("#", 1)[0]
            self.items.labels(func).inc(len(values))
            counts = collections.Counter(
                r.split(":", 1)[0] for r in result.errors.get(key, ()) if r is not None
            )
            for reason, count in counts.items():  # one update per (func, reason), not per item
                self.reasons.labels(func, reason).inc(count)
                if reason == "timeout":
                    self.timeouts.labels(func).inc(count)

    def refresh(self) -> None:
        """Copy figures kept elsewhere (the math verifiers) into gauges, at scrape time."""
        from rewardkit import equivalence

        self.cache_hits.set(sum(v.stats["cache_hits"] for v in list(equivalence._verifiers.values())))
