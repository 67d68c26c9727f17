"""Contract tests over every registered reward (TRL's test_rewards habit)."""

from __future__ import annotations

import asyncio
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import rewardkit
from rewardkit import ColumnError
from tests.conftest import CONTRACT_SAMPLES

NAMES = [info.name for info in rewardkit.list_rewards()]


def _batch(name: str, n: int) -> tuple[list[Any], dict[str, list[Any]]]:
    sample = CONTRACT_SAMPLES[name]
    return [sample["completion"]] * n, {k: [v] * n for k, v in sample["columns"].items()}


def reward_for(name: str) -> rewardkit.Reward:
    """The reward as the contract tests build it: with the settings its sample names, if any."""
    return rewardkit.get(name, **CONTRACT_SAMPLES[name].get("params", {}))


def test_every_reward_has_contract_samples() -> None:
    assert sorted(NAMES) == sorted(CONTRACT_SAMPLES), "add a sample for each new reward to conftest.py"


@pytest.mark.parametrize("name", NAMES)
def test_sample_scores_as_expected(name: str) -> None:
    completions, columns = _batch(name, 2)
    assert reward_for(name)(completions, **columns) == [CONTRACT_SAMPLES[name]["expected"]] * 2


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [0, 1, 7, 64])
def test_batch_length_is_kept(name: str, n: int) -> None:
    completions, columns = _batch(name, n)
    values = reward_for(name)(completions, **columns)
    assert isinstance(values, list) and len(values) == n
    assert all(v is None or isinstance(v, float) for v in values)


@pytest.mark.parametrize("name", NAMES)
def test_extra_kwargs_are_ignored(name: str) -> None:
    completions, columns = _batch(name, 3)
    reward = reward_for(name)
    plain = reward(completions, **columns)
    noisy = reward(
        completions, **columns, trainer_state=object(), prompts=["p"] * 3, messages=None, request_id=[1, 2, 3]
    )
    assert noisy == plain


@pytest.mark.parametrize("name", NAMES)
def test_stable_name_and_picklable(name: str) -> None:
    reward = reward_for(name)
    assert reward.__name__ == name
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.__name__ == name
    completions, columns = _batch(name, 3)
    assert clone(completions, **columns) == reward(completions, **columns)


@pytest.mark.parametrize("name", NAMES)
def test_works_from_worker_thread_and_event_loop(name: str) -> None:
    completions, columns = _batch(name, 5)
    reward = reward_for(name)
    expected = reward(completions, **columns)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: reward(completions, **columns), range(8)))
    assert results == [expected] * 8

    async def in_loop() -> list[float | None]:
        return reward(completions, **columns)

    assert asyncio.run(in_loop()) == expected


@pytest.mark.parametrize("name", NAMES)
def test_chat_completions_score_like_strings(name: str) -> None:
    completions, columns = _batch(name, 2)
    chats = [[{"role": "user", "content": "q"}, {"role": "assistant", "content": c}] for c in completions]
    reward = reward_for(name)
    assert reward(chats, **columns) == reward(completions, **columns)


@pytest.mark.parametrize("name", NAMES)
def test_misaligned_column_raises_column_error(name: str) -> None:
    reward = reward_for(name)
    completions, columns = _batch(name, 4)
    for column in reward.required_columns:
        short = dict(columns, **{column: columns[column][:3]})
        with pytest.raises(ColumnError) as info:
            reward(completions, **short)
        message = str(info.value)
        assert name in message and column in message and "3" in message and "4" in message


@pytest.mark.parametrize("name", NAMES)
def test_missing_column_raises_column_error(name: str) -> None:
    reward = reward_for(name)
    completions, columns = _batch(name, 2)
    for column in reward.required_columns:
        partial = {k: v for k, v in columns.items() if k != column}
        with pytest.raises(ColumnError, match=f"{name}.*{column}"):
            reward(completions, **partial)


@pytest.mark.parametrize("name", NAMES)
def test_none_column_values_and_bad_items_do_not_fail_the_batch(name: str) -> None:
    reward = reward_for(name)
    sample, sample_columns = _batch(name, 4)
    completions = [sample[0], None, 12345, [{"role": "user", "content": "no assistant"}]]
    columns: dict[str, Any] = {k: [v[0], None, None, None] for k, v in sample_columns.items()}
    scored = reward.score_detailed(completions, **columns)
    assert scored.values[0] == CONTRACT_SAMPLES[name]["expected"]
    for value, reason in zip(scored.values[1:], scored.reasons[1:], strict=True):
        assert value in (0.0, None) and reason is not None


@pytest.mark.parametrize("name", NAMES)
def test_columns_as_scalars_are_rejected(name: str) -> None:
    reward = reward_for(name)
    completions, columns = _batch(name, 1)
    for column in reward.required_columns:
        with pytest.raises(ColumnError, match="one value per completion"):
            reward(completions, **dict(columns, **{column: "not a list"}))


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="no parameter"):
        rewardkit.get(name, definitely_not_a_parameter=1)


def test_every_public_reward_function_is_named_after_its_registry_key() -> None:
    """Trainers log a reward under its __name__: rewardkit.format_tags and get("format") log alike."""
    keys = {info.name for info in rewardkit.list_rewards()}
    functions = [rewardkit.countdown, rewardkit.format_tags, rewardkit.math_equivalence]
    functions += [rewardkit.r1v_accuracy, rewardkit.llm_judge]
    assert {f.__name__ for f in functions} <= keys
    for func in functions:
        assert rewardkit.get(func.__name__).__name__ == func.__name__
