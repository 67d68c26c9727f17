"""math_or_judge: the rule verifier first, the judge only where it cannot decide, against the real openai
SDK and a real OpenAI-compatible loopback server (the fake judge answers ``[[x]]`` for ``SCORE:x`` in the
prompt; the question comes first in the verification template, so the question scripts the verdict)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.core import Verdict
from rewardkit.engine import ascore_batch
from rewardkit.judging.cache import verdicts
from rewardkit.rewards.fallback import VERIFY_TEMPLATE, MathOrJudge
from rewardkit.rewards.judge import JudgeUnavailableError, LLMJudge
from tests.support.fake_judge import FakeJudge

YES, NO = "SCORE:10", "SCORE:0"


@pytest.fixture(autouse=True)
def no_cached_verdicts() -> None:
    """Each test counts the judge's requests: none answered from another test's cached verdicts."""
    verdicts.clear()


def test_decided_items_never_reach_the_judge(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge")
    completions = [
        "so \\boxed{4}",  # right
        "so \\boxed{5}",  # wrong, on its merits
        "<think>it is \\boxed{4} maybe",  # unclosed_think: truncation is never paid
        "\\boxed{}",  # empty_answer
        "",  # no text: nothing to judge
    ]
    scored = reward.score_detailed(completions, solution=["4"] * 5, question=[YES] * 5)
    assert scored.values == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert scored.reasons == [None, None, "unclosed_think", "empty_answer", "no_answer"]
    assert fake_judge.requests == 0


def test_undecided_items_go_to_the_judge_and_say_so(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge")
    completions = [
        "so \\boxed{4}",  # decided
        "It is as many as the legs of a dog.",  # no_answer: the judge says yes
        "It is as many as the fingers on a hand.",  # no_answer: the judge says no
        "So the answer is: it decreases.",  # a gold in words the rule found unequal: text_gold
        "so \\boxed{4}",  # a gold the rule cannot read
        "It is as many as the legs of a dog.",  # the judge's reply has no score: the rule's value stands
    ]
    scored = reward.score_detailed(
        completions,
        solution=["4", "4", "4", "\\text{decrease}", "}{", "4"],
        question=[
            YES,
            YES,
            NO,
            YES,
            NO,
            "NOSCORE",
        ],
    )
    assert fake_judge.requests == 5
    assert scored.values == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    assert scored.reasons == [
        None,
        "judged:no_answer",
        "judged:no_answer",
        "judged:text_gold",
        "judged:gold_unparseable",
        "judge_failed:no_answer",
    ]
    assert scored.details[5]["judge_reason"] == "unparseable_judgement"
    assert scored.details[1]["rule"] == {"answer": None, "gold": "4"}
    assert [scored.details[i]["rule_value"] for i in (1, 3, 4)] == [0.0, 0.0, None]
    assert all("same final answer as the reference answer" in text for text in fake_judge.texts)


def test_numbers_in_words_are_the_rules_and_other_word_answers_the_judges(fake_judge: FakeJudge) -> None:
    """Issue 34.3: a whole number in words is read by the rule (decided, never judged); an answer in words
    the rule cannot read as one (a decimal in words) goes to the judge as ``text_answer``."""
    reward = rewardkit.get("math_or_judge")
    completions = [
        "The answer is twelve.",  # the rule reads 12: right, whatever the judge would say
        "The answer is thirteen.",  # the rule reads 13: wrong, whatever the judge would say
        "So the answer is three point five.",  # words the rule cannot read: the judge says yes
        "The result is twelve",  # unfinished, as "The result is 12" is: no_answer, judged
    ]
    scored = reward.score_detailed(
        completions, solution=["12", "12", "3.5", "12"], question=[NO, YES, YES, YES]
    )
    assert scored.values == [1.0, 0.0, 1.0, 1.0]
    assert scored.reasons == [None, None, "judged:text_answer", "judged:no_answer"]
    assert fake_judge.requests == 2
    narrow = rewardkit.get("math_or_judge", undecided=["no_answer"])
    assert narrow.score_detailed(completions[2:3], solution=["3.5"], question=[YES]).reasons == [None]


def test_the_judge_reads_the_tail_and_the_gold_answer(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge", max_judge_chars=200)
    long = "x" * 5000 + " after all that, it is four"
    scored = reward.score_detailed([long], solution=["The area is $\\boxed{4}$."], question=[YES])
    assert scored.reasons == ["judged:no_answer"]
    [text] = fake_judge.texts
    assert "x" * 200 not in text and "it is four" in text
    assert "The area is" not in text and "boxed" not in text  # the gold answer, not the whole solution


def test_without_a_question_the_prompt_says_so(fake_judge: FakeJudge) -> None:
    assert rewardkit.get("math_or_judge")(["It is as many as the legs of a dog."], solution=["4"]) == [
        1.0
    ]  # [[7]]: right
    assert "(not given)" in fake_judge.texts[0]


def test_the_judge_gets_the_verification_template_whatever_its_spec(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge", judge={"name": "llm_judge", "params": {"max_retries": 1}})
    assert isinstance(reward, MathOrJudge)
    judge = reward.judge_reward
    assert isinstance(judge, LLMJudge) and judge.template == VERIFY_TEMPLATE and judge.max_retries == 1
    own = "Same final answer as {solution}? {completion} Say [[10]] or [[0]]."
    assert rewardkit.get("math_or_judge", template=own).judge_reward.template == own  # type: ignore[attr-defined]


def test_no_judge_configured_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REWARDKIT_JUDGE_BASE_URL")
    with pytest.raises(ValueError, match="no base_url.*REWARDKIT_JUDGE_BASE_URL"):
        rewardkit.get("math_or_judge")


def test_an_unreachable_judge_fails_the_batch(fake_judge: FakeJudge) -> None:
    gone = FakeJudge()
    url = gone.url
    gone.close()
    judge = {"name": "llm_judge", "params": {"base_url": url, "max_retries": 0}}
    reward = rewardkit.get("math_or_judge", judge=judge)
    assert reward(["so \\boxed{4}"], solution=["4"]) == [1.0]  # decided: no call, no error
    with pytest.raises(JudgeUnavailableError):
        reward(["It is as many as the legs of a dog."], solution=["4"])


def test_dapo_values_and_the_threshold(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge", correct=1.0, wrong=-1.0, threshold=0.8)
    values = reward(
        [
            "so \\boxed{4}",
            "so \\boxed{5}",
            "It is as many as the legs of a dog.",
            "It is as many as the legs of a dog, maybe.",
        ],
        solution=["4"] * 4,
        question=[YES, YES, "SCORE:9", "SCORE:7"],
    )
    assert values == [1.0, -1.0, 1.0, -1.0]


def test_the_async_face_awaits_the_judge_only_for_undecided_items(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge")
    assert isinstance(reward, MathOrJudge)

    async def main() -> Any:
        decided = await reward.ascore_detailed(["so \\boxed{4}"], solution=["4"], question=[YES])
        assert fake_judge.requests == 0
        undecided = await reward.ascore_detailed(
            ["so \\boxed{4}", "It is as many as the legs of a dog."],
            solution=["4", "4"],
            question=[YES, YES],
        )
        engine = await ascore_batch(
            [reward], ["It is as many as the fingers on a hand."], {"solution": ["4"], "question": [NO]}
        )
        return decided, undecided, engine

    decided, undecided, engine = asyncio.run(main())
    assert decided.values == [1.0] and decided.reasons == [None]
    assert undecided.values == [1.0, 1.0] and undecided.reasons == [None, "judged:no_answer"]
    assert engine.scores["math_or_judge"] == [0.0]
    assert engine.errors["math_or_judge"] == ["judged:no_answer"]
    assert fake_judge.requests == 2


def test_stats_count_the_paths(fake_judge: FakeJudge) -> None:
    reward = rewardkit.get("math_or_judge")
    before = reward.stats()
    reward(
        ["so \\boxed{4}", "It is as many as the legs of a dog.", "It is as many as the legs of a dog?"],
        solution=["4"] * 3,
        question=[YES, YES, "NOSCORE"],
    )
    grown = {k: reward.stats()[k] - before[k] for k in before if k.startswith("fallback_")}
    assert grown == {
        "fallback_items": 3,
        "fallback_undecided": 2,
        "fallback_judged": 1,
        "fallback_judge_failed": 1,
    }
    assert "pairs" in before  # the rule verifier's own figures come along


class ScriptedRule(rewardkit.Reward):
    """A rule verifier that gives each item the reason its ``why`` column names (value 0.0)."""

    def _score(
        self, completions: Sequence[Any], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict]:
        return [Verdict(0.0, why or None) for why in columns["why"]]


@pytest.mark.usefixtures("scratch_registry")
def test_which_rule_reasons_are_undecided(fake_judge: FakeJudge) -> None:
    rewardkit.register("scripted_rule", columns=["why"], optional_columns=["solution"])(ScriptedRule)
    reasons = ["timeout", "worker_crashed", "memory_limit", "verify_error:KeyError", "gold_too_long"]
    kept = ["answer_too_long", "huge_power", "several_choices", "not_a_choice", "invalid_unicode", ""]
    why = reasons + kept
    reward = rewardkit.get("math_or_judge", rule="scripted_rule")
    n = len(why)
    scored = reward.score_detailed(
        [f"text {i}" for i in range(n)],
        why=why,
        solution=["4"] * n,
        question=[YES] * n,
    )
    assert scored.reasons == [f"judged:{r}" for r in reasons] + [r or None for r in kept]
    assert scored.values == [1.0] * len(reasons) + [0.0] * len(kept)
    assert fake_judge.requests == len(reasons)
    narrow = rewardkit.get("math_or_judge", rule="scripted_rule", undecided=["timeout"])
    assert narrow.score_detailed(["a", "b"], why=["timeout", "no_answer"], solution=["4", "4"]).reasons == [
        "judged:timeout",
        "no_answer",
    ]
    with pytest.raises(ValueError, match="undecided"):
        rewardkit.get("math_or_judge", undecided="timeout")


def test_through_the_service_within_the_policy(fake_judge: FakeJudge, tmp_path: Path) -> None:
    from tests.support.helpers import Server

    env = {  # the operator configures the judge; callers never name its URL, model or key
        "REWARDKIT_JUDGE_BASE_URL": fake_judge.url,
        "REWARDKIT_JUDGE_MODEL": "test-judge",
        "REWARDKIT_JUDGE_API_KEY": "sk-test-secret-key",
    }
    server = Server(env, tmp_path / "server.log")
    columns = {
        "solution": ["4", "4", "4"],
        "question": [
            YES,
            YES,
            NO,
        ],
    }
    completions = [
        "so \\boxed{4}",
        "It is as many as the legs of a dog.",
        "It is as many as the fingers on a hand.",
    ]

    def score(func: Any) -> httpx.Response:
        body = {"funcs": [func], "completions": completions, "columns": columns}
        return httpx.post(server.url + "/score", json=body, timeout=60)

    try:
        response = score("math_or_judge")
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["scores"]["math_or_judge"] == [1.0, 1.0, 0.0]
        assert data["errors"]["math_or_judge"] == [None, "judged:no_answer", "judged:no_answer"]
        assert fake_judge.requests == 2  # the decided item never reached the judge
        assert all("same final answer as the reference answer" in text for text in fake_judge.texts)

        nested = {
            "rule": {"name": "math", "params": {"timeout_s": 2}},
            "judge": {"name": "llm_judge", "params": {"timeout_s": 30, "max_retries": 1}},
        }
        allowed = score({"name": "math_or_judge", "params": nested})
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["scores"] == data["scores"]
        sent = fake_judge.requests

        refused = [
            (
                {"judge": {"name": "llm_judge", "params": {"base_url": "http://attacker.example/v1"}}},
                "base_url",
            ),
            ({"judge": {"name": "llm_judge", "params": {"api_key_env": "HOME"}}}, "api_key_env"),
            ({"judge": {"name": "llm_judge", "params": {"timeout_s": 3600}}}, "timeout_s"),
            ({"rule": {"name": "math", "params": {"workers": 64}}}, "workers"),
            ({"template": "/etc/passwd"}, "template"),
            ({"max_judge_chars": 10**9}, "max_judge_chars"),
        ]
        for params, named in refused:
            answer = score({"name": "math_or_judge", "params": params})
            assert answer.status_code == 422, (params, answer.text)
            assert named in answer.json()["detail"]
        assert fake_judge.requests == sent  # refused requests called no judge
    finally:
        server.stop()
    assert "sk-test-secret-key" not in (tmp_path / "server.log").read_text()
