"""The gated reward: instruction following paid only when the LLM judge (a real OpenAI-compatible server on a
loopback port, tests/support/fake_judge.py) says the answer addresses the prompt. The fake judge's grade of
a prompt is the ``SCORE:<x>`` its request carries, so each row's prompt scripts the judge's verdict."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rewardkit
from rewardkit.rewards.gated import ADDRESSES_TEMPLATE
from tests.support.fake_judge import FakeJudge

NO_COMMA = {"instruction_id_list": [["punctuation:no_comma"]]}
ON_TOPIC = "Describe autumn in one line without commas. SCORE:9"  # the judge: addresses it (9/10)
OFF_TOPIC = "Describe autumn in one line without commas. SCORE:0"  # the judge: does not (0/10)


def columns(n: int, prompts: list[str]) -> dict[str, Any]:
    return {"instruction_id_list": NO_COMMA["instruction_id_list"] * n, "prompt": prompts}


def test_constraints_pay_only_as_far_as_the_judge_says_the_prompt_is_addressed(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("gated", reward="ifeval")
    texts = ["Leaves fall and the air cools.", "Ok.", "Leaves fall, and the air cools.", ""]
    # prompts of this test alone: the judge's verdict cache holds no answer for them, so requests count calls
    on, off = ON_TOPIC + " (counted)", OFF_TOPIC + " (counted)"
    scored = reward.score_detailed(texts, **columns(4, [on, off, on, on]))
    assert scored.values == [pytest.approx(0.9), 0.0, 0.0, 0.0]
    assert scored.reasons == [None, "gated", "failed:punctuation:no_comma", "failed:punctuation:no_comma"]
    assert scored.details[0] == {"reward": 1.0, "reward_reason": None, "gate": 0.9, "gate_reason": None}
    # the judge was asked only about the two answers ifeval paid, with the "does it address it" question
    assert fake_judge.requests == 2
    assert all("address the request" in t for t in fake_judge.texts)
    assert ADDRESSES_TEMPLATE.splitlines()[0] in fake_judge.texts[0]
    assert all("Leaves fall, and" not in t for t in fake_judge.texts)


def test_a_threshold_makes_the_gate_all_or_nothing(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("gated", reward={"name": "ifeval", "params": {"mode": "fraction"}}, threshold=0.5)
    texts = ["<<Autumn>>\nLeaves fall and the air cools."] * 3
    prompts = ["Autumn. SCORE:6", "Autumn. SCORE:3", "Autumn. SCORE:6"]
    ids = [["punctuation:no_comma", "detectable_format:title"]] * 2 + [
        ["punctuation:no_comma", "startend:quotation"]
    ]
    assert reward(texts, instruction_id_list=ids, prompt=prompts) == [1.0, 0.0, 0.5]


def test_a_judge_that_cannot_judge_makes_the_item_not_applicable(fake_judge: FakeJudge) -> None:
    fake_judge.mode = "garbage"
    gate = {"name": "llm_judge", "params": {"max_retries": 0, "on_unavailable": "none"}}
    reward = rewardkit.get("gated", reward="ifeval", gate=gate)
    # a prompt and answer no earlier test sent: the judge's verdict cache cannot answer for the server
    scored = reward.score_detailed(["Frost came early this year."], **columns(1, ["Frost? garbage"]))
    assert scored.values == [None]
    assert scored.reasons[0] is not None and scored.reasons[0].startswith("gate_failed:judge_error")


def test_the_async_face_awaits_the_judge_and_agrees(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("gated", reward="ifeval")
    texts = ["Leaves fall and the air cools.", "Ok.", "Leaves, fall."]
    cols = columns(3, [ON_TOPIC, OFF_TOPIC, ON_TOPIC])
    sync = reward.score_detailed(texts, **cols)
    face = reward.ascore_detailed  # type: ignore[attr-defined]
    awaited = asyncio.run(face(texts, **cols))
    assert awaited.values == sync.values and awaited.reasons == sync.reasons


def test_any_reward_can_gate_and_the_template_can_be_replaced(fake_judge: FakeJudge) -> None:
    by_format = rewardkit.get("gated", reward="ifeval", gate="format")
    two = {"instruction_id_list": NO_COMMA["instruction_id_list"] * 2}
    assert by_format(["<think>x</think><answer>No commas here.</answer>", "No commas here."], **two) == [
        1.0,
        0.0,
    ]
    custom = rewardkit.get(
        "gated", reward="ifeval", template="Is this on topic? {question} {completion} [[N]]"
    )
    assert custom(["Leaves fall."], **columns(1, [ON_TOPIC])) == [pytest.approx(0.9)]
    assert "Is this on topic?" in fake_judge.texts[-1]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "reward is required"),
        ({"reward": "ifeval", "threshold": 0}, "threshold"),
        ({"reward": "ifeval", "threshold": 1.5}, "threshold"),
        ({"reward": "ifeval", "template": 3}, "template"),
    ],
)
def test_bad_parameters_are_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rewardkit.get("gated", **params)
