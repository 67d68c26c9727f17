"""Scoring several rewards over one batch (shared by the CLI and the service)."""

from __future__ import annotations

from typing import Any

import pytest

import rewardkit
from rewardkit import ColumnError, FuncSpec, RewardError, UnknownRewardError, score_batch

COMPLETIONS = [
    "<think>4 times 6</think><answer>4 * 6</answer>",
    "<answer>4 + 6</answer>",
    "no answer at all",
]
COLUMNS = {"target": [24, 24, "x"], "nums": [[4, 6]] * 3, "unused": [1, 2, 3]}


def test_weighted_sum_scores_errors_and_timing() -> None:
    result = score_batch(
        ["countdown", FuncSpec("format", weight=0.5)],
        COMPLETIONS,
        COLUMNS,
    )
    assert result.scores == {"countdown": [1.0, 0.0, None], "format": [1.0, 0.0, 0.0]}
    assert result.rewards == [1.5, 0.0, 0.0]
    assert result.errors == {
        "countdown": [None, None, "invalid_target"],
        "format": [None, "missing:think", "missing:think"],
    }
    assert set(result.timing_ms) == {"countdown", "format"} and all(t >= 0 for t in result.timing_ms.values())


def test_reward_is_none_only_when_every_func_is_none() -> None:
    result = score_batch(["countdown"], COMPLETIONS, COLUMNS)
    assert result.rewards == [1.0, 0.0, None]


def test_repeated_name_gets_a_numbered_key() -> None:
    result = score_batch(
        ["countdown", FuncSpec("countdown", {"format_score": 0.1}, weight=2.0)],
        COMPLETIONS[:2],
        {"target": [24, 24], "nums": [[4, 6]] * 2},
    )
    assert result.scores == {"countdown": [1.0, 0.0], "countdown#2": [1.0, 0.1]}
    assert result.rewards == [3.0, pytest.approx(0.2)]
    assert result.errors == {}


def test_funcs_without_reasons_are_left_out_of_errors() -> None:
    result = score_batch(["format"], COMPLETIONS[:1], {})
    assert result.errors == {}


def test_bad_requests_fail_before_scoring() -> None:
    with pytest.raises(UnknownRewardError, match="registered rewards"):
        score_batch(["format", "nope"], COMPLETIONS, COLUMNS)
    with pytest.raises(RewardError, match="no parameter"):
        score_batch([FuncSpec("format", {"bogus": 1})], COMPLETIONS, COLUMNS)
    with pytest.raises(RewardError, match="weight"):
        score_batch([FuncSpec("format", weight=float("nan"))], COMPLETIONS, COLUMNS)
    with pytest.raises(RewardError, match="no reward requested"):
        score_batch([], COMPLETIONS, COLUMNS)
    with pytest.raises(ColumnError, match="'countdown'.*'target' has 2 values but there are 3"):
        score_batch(["countdown"], COMPLETIONS, dict(COLUMNS, target=[24, 24]))


def test_the_async_engine_gives_what_the_sync_one_does_in_the_requests_order() -> None:
    import asyncio

    from rewardkit.engine import ascore_batch

    funcs: list[Any] = ["format", FuncSpec("llm_judge", weight=2.0), "countdown", "format"]
    completions = ["<think>a</think><answer>4 * 6</answer>", "<answer>4 + 6</answer>"]
    columns = {"target": [24, 24], "nums": [[4, 6]] * 2, "question": ["q SCORE:5", "q SCORE:10"]}
    sync = score_batch(funcs, completions, columns)
    threads: list[str] = []

    async def offload(func: Any, *args: Any) -> Any:  # counts the hops to the thread pool
        threads.append(func.__name__)
        return await asyncio.to_thread(func, *args)

    result = asyncio.run(ascore_batch(funcs, completions, columns, offload=offload))
    assert list(result.scores) == ["format", "llm_judge", "countdown", "format#2"] == list(sync.scores)
    assert result.scores == sync.scores and result.rewards == sync.rewards == [4.0, 2.0]
    assert len(threads) == 2  # format; then countdown and format#2 together, after the judge


def test_a_deadline_stops_the_batch_after_the_reward_that_overran(scratch_registry: None) -> None:
    import time

    from rewardkit.core import DeadlineExceeded

    calls: list[str] = []

    @rewardkit.register("slow_test", columns=[])
    def slow(completions: list[Any], **kwargs: Any) -> list[float]:
        calls.append("slow")
        time.sleep(0.3)
        return [1.0] * len(completions)

    start = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="slow_test"):
        score_batch(["slow_test", "slow_test"], ["x"], {}, deadline_s=0.1)
    assert calls == ["slow"] and time.monotonic() - start < 0.6  # the second never started


def test_a_weighted_sum_that_overflows_is_an_error_not_a_silent_none() -> None:
    """A custom reward's huge value times a weight used to come back as ``None`` with no reason (issue 21)."""
    from rewardkit.core import Reward, RewardError, Verdict

    class Huge(Reward):
        name = "huge"

        def _score(self, completions: Any, columns: Any, raise_on_error: bool) -> list[Verdict]:
            return [Verdict(1e308) for _ in completions]

    with pytest.raises(RewardError, match="item 0: the weighted sum of huge, huge#2 is not a finite number"):
        score_batch([Huge(), Huge()], ["a"], {})


def test_the_character_budget_counts_every_reward_over_the_text() -> None:
    from rewardkit.engine import BudgetExceeded

    completions = ["<answer>1</answer>" + "x" * 982] * 10  # 10,000 characters
    columns = {"solution": ["1"] * 10}
    result = score_batch(["format"], completions, columns, max_chars=10_010)
    assert len(result.rewards) == 10
    with pytest.raises(BudgetExceeded, match="REWARDKIT_MAX_REQUEST_CHARS"):
        score_batch(["format", "math"], completions, columns, max_chars=10_010)
    chat = [[{"role": "assistant", "content": "y" * 6_000}]] * 2  # chat contents count too
    with pytest.raises(BudgetExceeded):
        score_batch(["format"], chat, {}, max_chars=11_000)
