"""Parity rewards give their peers' values on the same inputs and settings: ms-swift 4.6's own classes
(cosine, repetition, soft_overlong), TRL's functions (think_format, soft overlong punishment), and the rules
written in open-r1's source for the rest (tag_count, reasoning_steps, length)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

import rewardkit

WORDS = "the a cat dog sat ran on under mat rug and then again it was".split()


def texts(rng: random.Random, n: int) -> list[str]:
    out = ["", "one", "one two", "Repeat repeat REPEAT repeat"]
    while len(out) < n:
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60))))
    return out


@pytest.fixture(scope="module")
def swift_orm() -> Any:
    from swift.rewards import orm

    return orm


@pytest.mark.parametrize("ngram_size, max_penalty", [(3, -1.0), (1, -0.5), (2, -2.0), (5, 0.0)])
def test_repetition_equals_ms_swift(swift_orm: Any, ngram_size: int, max_penalty: float) -> None:
    batch = texts(random.Random(ngram_size), 200)
    args = SimpleNamespace(repetition_n_grams=ngram_size, repetition_max_penalty=max_penalty)
    theirs = swift_orm.RepetitionPenalty(args)(batch)
    ours = rewardkit.get("repetition", ngram_size=ngram_size, max_penalty=max_penalty)(batch)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_repetition_counts_cjk_characters_as_words() -> None:
    reward = rewardkit.get("repetition", ngram_size=2)
    assert reward(["好好好好好", "我爱北京天安门"]) == [-0.75, 0.0]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {
            "min_len_value_wrong": -1.0,
            "max_len_value_wrong": -0.5,
            "min_len_value_correct": 0.5,
            "max_len_value_correct": 1.0,
        },
    ],
)
def test_cosine_equals_ms_swift(swift_orm: Any, settings: dict[str, Any]) -> None:
    rng = random.Random(7)
    n, max_len = 120, 512
    completions = [f"\\boxed{{{rng.choice([1, 2])}}}" for _ in range(n)]
    solution = ["1"] * n
    ids: list[Any] = [[0] * rng.randint(0, 700) for _ in range(n)]  # past max_len too, as ms-swift allows
    ids[0] = [[0] * 10, [0] * 5]  # multi-turn: the turns add up
    defaults = {"min_len_value_wrong": -0.5, "max_len_value_wrong": 0.0}
    defaults |= {"min_len_value_correct": 1.0, "max_len_value_correct": 0.5}
    values = defaults | settings
    args = SimpleNamespace(**{f"cosine_{k}": v for k, v in values.items()}, cosine_max_len=max_len)

    def accuracy(completions: list[str], solution: list[str], **kwargs: Any) -> list[float | None]:
        return rewardkit.math_equivalence(completions, solution=solution)

    theirs = swift_orm.CosineReward(args, accuracy_orm=accuracy)(
        completions, solution, response_token_ids=ids
    )
    ours = rewardkit.get("cosine", max_len=max_len, **settings)(
        completions, solution=solution, response_token_ids=ids
    )
    assert ours == pytest.approx(theirs, abs=1e-12)
    assert len(set(ours)) > 10  # both branches, many lengths


@pytest.mark.parametrize("max_length, cache_length", [(100, 20), (4096, 1024)])
def test_soft_overlong_equals_ms_swift_and_trl_when_clipped(
    swift_orm: Any, max_length: int, cache_length: int
) -> None:
    from trl.rewards.other_rewards import get_soft_overlong_punishment

    rng = random.Random(max_length)
    ids = [[1] * rng.randint(0, int(max_length * 1.3)) for _ in range(200)]
    completions = ["x"] * len(ids)
    args = SimpleNamespace(soft_max_length=max_length, soft_cache_length=cache_length)
    swift = swift_orm.SoftOverlong(args)(completions, response_token_ids=ids)
    ours = rewardkit.get("soft_overlong", max_length=max_length, cache_length=cache_length)
    assert ours(completions, response_token_ids=ids) == pytest.approx(swift, abs=1e-12)
    trl = get_soft_overlong_punishment(max_completion_len=max_length, soft_punish_cache=cache_length)(ids)
    clipped = rewardkit.get("soft_overlong", max_length=max_length, cache_length=cache_length, clip=True)
    assert clipped(completions, completion_ids=ids) == pytest.approx(trl, abs=1e-12)


def test_think_format_equals_trl() -> None:
    from trl.rewards.format_rewards import think_format_reward

    cases = [
        "<think>\nhm\n</think>\nIt is 4.",
        "<think>hm</think>",
        "It is 4.",
        " <think>hm</think>",
        "<think>a</think><think>b</think>",
        "<think>a\n\nb</think>\n\n<answer>4</answer>",
        "<think>unclosed",
        "",
    ]
    theirs = think_format_reward([[{"role": "assistant", "content": c}] for c in cases])
    assert rewardkit.get("think_format")(cases) == theirs
    assert theirs.count(1.0) == 3


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>\nhm\n</think>\n<answer>\n4\n</answer>", 1.0),
        ("<think>\nhm\n</think>\n<answer>4</answer>", 0.5),  # "\n<answer>\n" and "\n</answer>" missing
        ("<think>\n<think>\nhm\n</think>\n", 0.25),  # "<think>\n" twice counts nothing
        ("no tags", 0.0),
    ],
)
def test_tag_count_follows_open_r1(text: str, expected: float) -> None:
    assert rewardkit.get("tag_count")([text]) == [expected]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Step 1: a\nStep 2: b\nStep 3: c\nStep 4: d", 1.0),
        ("1. first\n2. second", 1 / 3),  # ^ without MULTILINE: only the first line start counts
        ("intro\n- a\n* b", 2 / 3),
        ("First, a. Second, b. Next, c. Finally, d.", 1.0),
        ("no markers", 0.0),
    ],
)
def test_reasoning_steps_follows_open_r1(text: str, expected: float) -> None:
    assert rewardkit.get("reasoning_steps")([text]) == [pytest.approx(expected)]


def test_length_follows_kimi_within_each_group_not_the_batch() -> None:
    right, wrong = "\\boxed{2}", "\\boxed{3}"
    completions = [right, right + " " * 10, wrong + " " * 20, right, wrong + " " * 4]
    prompts = ["p", "p", "p", "q", "q"]
    values = rewardkit.get("length")(completions, solution=["2"] * 5, prompt=prompts)
    # group p: lengths 9, 19, 29 -> lam 0.5, 0.0, -0.5; the wrong one keeps min(0, lam)
    # group q: lengths 9, 13 -> right 0.5; wrong min(0, -0.5)
    assert values == pytest.approx([0.5, 0.0, -0.5, 0.5, -0.5])
    alone = rewardkit.get("length")(completions[:3], solution=["2"] * 3, prompt=prompts[:3])
    assert alone == values[:3]  # the same group gives the same values in any batch
    with pytest.raises(rewardkit.ColumnError, match="'group' column"):
        rewardkit.get("length")(completions, solution=["2"] * 5)


def test_token_rewards_say_what_to_pass_without_token_ids() -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("cosine", {"max_len": 10}),
        ("soft_overlong", {"max_length": 10, "cache_length": 2}),
    ]
    for name, params in cases:
        with pytest.raises(rewardkit.ColumnError, match="completion_ids.*response_token_ids"):
            rewardkit.get(name, **params)(["\\boxed{1}"], solution=["1"])


def test_required_settings_fail_at_construction() -> None:
    with pytest.raises(rewardkit.RewardError, match="max_len .* is required"):
        rewardkit.get("cosine")
    with pytest.raises(rewardkit.RewardError, match="max_length is required"):
        rewardkit.get("soft_overlong")
    with pytest.raises(rewardkit.RewardError, match="smaller than max_length"):
        rewardkit.get("soft_overlong", max_length=10, cache_length=10)


def test_cosine_composes_with_any_binary_reward() -> None:
    reward = rewardkit.get("cosine", max_len=100, accuracy="r1v_acc")
    assert reward.required_columns == ("solution",)
    values = reward(
        ["<answer>3</answer>", "<answer>4</answer>"], solution=["3", "3"], completion_ids=[[1] * 100] * 2
    )
    assert values == [0.5, 0.0]  # right at max_len -> 0.5; wrong at max_len -> 0.0
    countdown = rewardkit.get(
        "cosine", max_len=100, accuracy={"name": "countdown", "params": {"format_score": 0.1}}
    )
    assert set(countdown.required_columns) == {"target", "nums"}
