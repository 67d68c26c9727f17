"""Prometheus metrics of one app (a registry per app, so several apps can live in one process).

Everything is counted as it happens (counters and histograms), so that with ``rewardkit serve --workers N``
(prometheus_client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR``, set by the CLI) a scrape of any worker
reports the totals over all of them. Figures a reward keeps about its shared resources (math cache hits,
timeouts, ...) are cumulative per process: after each batch the growth since the last batch is added to
``rewardkit_reward_stat_total``, so they add up across processes too.

A judge's calibration is watched through two series per judge reward (:data:`JUDGE_REWARDS`), labelled by
its registry name (``func``) and the key the request gave it (``reward``: its alias, or its name):
``rewardkit_judge_score`` (a histogram of the scores the items got) and ``rewardkit_judge_replies_total``
(replies by ``outcome``: ``scored``, or the reason a reply carried no score). The share of replies without
a score is ``sum(rate(rewardkit_judge_replies_total{outcome!="scored"}[5m])) /
sum(rate(rewardkit_judge_replies_total[5m]))``. Aliases are the callers' to choose: past
:data:`MAX_REWARD_LABELS` distinct ones in a process, the rest are counted under ``reward="other"``.
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
#: Registry names of the rewards whose values are a judge's verdicts.
JUDGE_REWARDS = frozenset({"llm_judge"})
#: The judge's reasons for an item whose call was answered, but not with a score that counts (no score in
#: the reply, a score only inside the quoted response, several different scores, a reply over the size limit).
NO_SCORE_REASONS = frozenset(
    {"unparseable_judgement", "judge_quoted_response", "judge_several_scores", "judge_reply_too_large"}
)
#: Distinct ``reward`` label values a process keeps (aliases are caller-chosen); later ones read "other".
MAX_REWARD_LABELS = 64
OTHER = "other"
SCORE_BUCKETS = tuple(i / 10 for i in range(11))  # a judge's N/10: one bucket a score


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
        self.judge_scores = Histogram(
            "rewardkit_judge_score",
            "Scores judge rewards gave, per func (registry name) and reward (alias or name; 'other' past "
            f"{MAX_REWARD_LABELS}).",
            ["func", "reward"],
            buckets=SCORE_BUCKETS,
            registry=self.registry,
        )
        self.judge_replies = Counter(
            "rewardkit_judge_replies",
            "Judge replies per func, reward and outcome: 'scored', or the reason a reply had no score.",
            ["func", "reward", "outcome"],
            registry=self.registry,
        )
        self._seen: dict[tuple[str, str], float] = {}  # this process's last reading of each reward figure
        self._reward_labels: set[str] = set()

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
            if func in JUDGE_REWARDS:
                self._observe_judge(func, self._reward_label(key), values, result.errors.get(key))

    def _observe_judge(
        self, func: str, reward: str, values: list[float | None], reasons: list[str | None] | None
    ) -> None:
        """The scores into the histogram; each item the judge answered counted as a reply, by outcome."""
        histogram = self.judge_scores.labels(func, reward)
        outcomes: collections.Counter[str] = collections.Counter()
        for i, value in enumerate(values):
            if value is not None:
                histogram.observe(value)
                outcomes["scored"] += 1
            elif reasons is not None and reasons[i] in NO_SCORE_REASONS:
                outcomes[str(reasons[i])] += 1
        for outcome, count in outcomes.items():
            self.judge_replies.labels(func, reward, outcome).inc(count)

    def _reward_label(self, key: str) -> str:
        """``key`` as a label value, while this process has seen fewer than MAX_REWARD_LABELS of them."""
        if key in self._reward_labels:
            return key
        if len(self._reward_labels) >= MAX_REWARD_LABELS:
            return OTHER
        self._reward_labels.add(key)
        return key

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
