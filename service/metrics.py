"""Prometheus metrics of one app (a registry per app, so several apps can live in one process).

Everything is counted as it happens (counters and histograms), so that with ``rewardkit serve --workers N``
(prometheus_client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR``, set by the CLI) a scrape of any worker
reports the totals over all of them. Figures a reward keeps about its shared resources (math cache hits,
timeouts, ...) are cumulative per process: after each batch the growth since the last batch is added to
``rewardkit_reward_stat_total``, so they add up across processes too.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

from rewardkit.core import Reward
from rewardkit.engine import BatchResult

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


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
        self.reward_stats = Counter(
            "rewardkit_reward_stat",
            "What each reward counts about its shared resources (math: cache_hits, timeouts, ...), summed "
            "over the service's processes.",
            ["func", "stat"],
            registry=self.registry,
        )
        self._seen: dict[tuple[str, str], float] = {}  # this process's last reading of each reward figure

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

    def record_stats(self, rewards: Mapping[str, Reward | str]) -> None:
        """Add the growth of each reward's figures since the last call (through the reward contract)."""
        for name, reward in rewards.items():
            if not isinstance(reward, Reward):
                continue
            for stat, value in reward.stats().items():
                last = self._seen.get((name, stat), 0.0)
                grown = value if value < last else value - last  # smaller: the figures restarted from 0
                if grown > 0:
                    self.reward_stats.labels(name, stat).inc(grown)
                self._seen[(name, stat)] = value

    def exposition_registry(self) -> CollectorRegistry:
        """What a scrape reads: this app's registry, or the sum over every worker process in multiprocess
        mode."""
        directory = os.environ.get(MULTIPROC_ENV)
        if not directory:
            return self.registry
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=directory)  # type: ignore[no-untyped-call]
        return combined
