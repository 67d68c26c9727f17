"""Shared fixtures: sample columns for every built-in reward, and a clean registry for registration tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rewardkit import registry

# One valid sample per registered reward, for the contract tests. A new reward without an entry here
# fails test_every_reward_has_contract_samples: contract tests must cover every registered reward.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "countdown": {
        "completion": "<think>6 times 4</think><answer>6 * 4</answer>",
        "columns": {"target": 24, "nums": [4, 6]},
        "expected": 1.0,
    },
    "format": {
        "completion": "<think>6 times 4</think><answer>6 * 4</answer>",
        "columns": {},
        "expected": 1.0,
    },
    "math": {
        "completion": "<think>half of it</think><answer>\\boxed{\\dfrac{1}{2}}</answer>",
        "columns": {"solution": "The answer is $\\boxed{0.5}$."},
        "expected": 1.0,
    },
    "r1v_acc": {
        "completion": "<think>I count them</think><answer>3</answer>",
        "columns": {"solution": "<answer> 3 </answer>"},
        "expected": 1.0,
    },
}


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    """Let a test register rewards; everything it registered is removed afterwards."""
    before = {i.name for i in registry.list_rewards()}
    yield
    for info in registry.list_rewards():
        if info.name not in before:
            registry.unregister(info.name)
