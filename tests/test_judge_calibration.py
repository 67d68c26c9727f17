"""A judge's calibration: the score histogram and the share of replies without a score on ``/metrics``
(a real uvicorn with a loopback judge), the bound on alias labels, and ``rewardkit agreement`` on the
judge."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from rewardkit.engine import BatchResult
from rewardkit.judging.calls import REPLY_TOO_LARGE
from rewardkit.judging.verdict import QUOTED_REASON, SEVERAL_REASON, UNPARSEABLE
from service.metrics import MAX_REWARD_LABELS, OTHER, Metrics
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import TOKEN, Server, judge_env
from tests.test_cli import SCRIPT

AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake_judge: FakeJudge) -> Iterator[Server]:
    """The service, its judge the loopback one every test shares (conftest's ``fake_judge``)."""
    env = judge_env(fake_judge.url, "calibration-judge", "sk-calibration")
    s = Server(env, tmp_path_factory.mktemp("calibration") / "server.log")
    yield s
    s.stop()


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample called ``name`` in a scrape, keyed by its sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_metrics_carry_the_judges_scores_and_its_replies_without_a_score(server: Server) -> None:
    questions = ["2+2? SCORE:8", "2+2? SCORE:8", "3+3? SCORE:3", "4+4? NOSCORE", "5+5? SCORE:10"]
    body: dict[str, Any] = {
        "funcs": ["llm_judge", {"name": "llm_judge", "alias": "strict_judge"}, "format"],
        "completions": ["four", "4", "six", "eight", "ten"],
        "columns": {"question": questions},
    }
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["llm_judge"] == [0.8, 0.8, 0.3, None, 1.0]
    text = httpx.get(server.url + "/metrics", headers=AUTH, timeout=30).text

    buckets = samples(text, "rewardkit_judge_score_bucket")
    for reward in ("llm_judge", "strict_judge"):
        labels = {"func": "llm_judge", "reward": reward}
        by_bound = {dict(k)["le"]: v for k, v in buckets.items() if dict(k).items() >= labels.items()}
        assert by_bound["0.2"] == 0 and by_bound["0.3"] == 1 and by_bound["0.8"] == 3
        assert by_bound["1.0"] == by_bound["+Inf"] == 4  # the item without a score is not a score
    counts = samples(text, "rewardkit_judge_score_count")
    assert counts[(("func", "llm_judge"), ("reward", "llm_judge"))] == 4
    assert samples(text, "rewardkit_judge_score_sum")[(("func", "llm_judge"), ("reward", "llm_judge"))] == (
        pytest.approx(2.9)
    )
    assert not any(dict(k)["func"] == "format" for k in counts)  # only judges have these series

    replies = samples(text, "rewardkit_judge_replies_total")
    strict = {dict(k)["outcome"]: v for k, v in replies.items() if dict(k)["reward"] == "strict_judge"}
    assert strict == {"scored": 4, "unparseable_judgement": 1}
    unscored = sum(v for k, v in replies.items() if dict(k)["outcome"] != "scored")
    assert unscored / sum(replies.values()) == pytest.approx(0.2)  # the share the module docstring computes


def test_failed_calls_are_not_replies(server: Server, fake_judge: FakeJudge) -> None:
    before = samples(
        httpx.get(server.url + "/metrics", headers=AUTH, timeout=30).text, "rewardkit_judge_replies_total"
    )
    fake_judge.script = [(500, {})] * 8  # every attempt of the one call fails: no reply, an error reason
    body = {
        "funcs": [
            {"name": "llm_judge", "alias": "flaky", "params": {"max_retries": 0, "on_unavailable": "none"}}
        ],
        "completions": ["4"],
        "columns": {"question": ["9+9? SCORE:8 (not in the verdict cache)"]},
    }
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=60)
    assert fake_judge.requests >= 1
    assert response.status_code == 200, response.text  # on_unavailable="none": the item gets None
    assert response.json()["errors"]["flaky"] == ["judge_error:500"]
    after = samples(
        httpx.get(server.url + "/metrics", headers=AUTH, timeout=30).text, "rewardkit_judge_replies_total"
    )
    assert {k: v for k, v in after.items() if dict(k)["reward"] == "flaky"} == {}
    assert after == before


def judge_batch(
    scores: dict[str, list[float | None]], errors: dict[str, list[str | None]] | None = None
) -> BatchResult:
    """The engine's result of a batch scored by judges only, under the keys of ``scores``."""
    rewards = next(iter(scores.values()))
    return BatchResult(rewards, scores, errors or {}, {}, dict.fromkeys(scores, "llm_judge"))


def by_label(metrics: Metrics, name: str, label: str) -> dict[str, float]:
    """The samples called ``name`` in ``metrics``, by the value of one of their labels."""
    return {
        sample.labels[label]: sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def test_every_reason_for_a_reply_without_a_score_is_counted() -> None:
    metrics = Metrics()
    answered = [UNPARSEABLE, QUOTED_REASON, SEVERAL_REASON, REPLY_TOO_LARGE]  # the verdict's own names
    reasons = [None, *answered, "timeout"]
    values: list[float | None] = [0.9] + [None] * (len(reasons) - 1)
    metrics.observe_batch(judge_batch({"llm_judge": values}, {"llm_judge": reasons}))
    assert by_label(metrics, "rewardkit_judge_replies_total", "outcome") == {  # a timeout is no reply
        "scored": 1,
        **dict.fromkeys(answered, 1),
    }


def test_alias_labels_are_bounded() -> None:
    metrics = Metrics()
    result = judge_batch({f"judge_{i}": [1.0] for i in range(MAX_REWARD_LABELS + 10)})
    metrics.observe_batch(result)
    metrics.observe_batch(result)
    labels = by_label(metrics, "rewardkit_judge_score_count", "reward")
    assert len(labels) == MAX_REWARD_LABELS + 1
    assert labels["judge_0"] == 2 and labels[OTHER] == 20  # the ten past the bound, twice
    assert f"judge_{MAX_REWARD_LABELS}" not in labels


# -- rewardkit agreement on the judge: the loopback judge scores what each question scripts (SCORE:N)
LABELLED = [
    {"completion": "4", "question": "2+2? SCORE:9", "solution": "4", "label": 1},
    {"completion": "5", "question": "2+2? SCORE:1", "solution": "4", "label": 0},
    {"completion": "6", "question": "3+3? SCORE:8", "solution": "6", "label": 1},
    {"completion": "6", "question": "3+3? NOSCORE", "solution": "6", "label": 1},  # a reply with no score
    {"completion": "9", "question": "4+4? SCORE:7", "solution": "8", "label": 0},  # 7/10 for a wrong one
]


def agreement(
    path: Path, judge_url: str, *args: str, func: str = "llm_judge"
) -> subprocess.CompletedProcess[str]:
    """``rewardkit agreement`` as a user runs it, the judge's endpoint in the environment."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "COLUMNS": "200",
        "REWARDKIT_JUDGE_BASE_URL": judge_url,
        "REWARDKIT_JUDGE_MODEL": "calibration-judge",
        "REWARDKIT_JUDGE_API_KEY": "sk-calibration",
    }
    command = [SCRIPT, "agreement", str(path), "--func", func, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_agreement_measures_the_judge_at_a_threshold(tmp_path: Path, fake_judge: FakeJudge) -> None:
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in LABELLED))
    out = agreement(path, fake_judge.url, "--json")
    assert out.returncode == 0, out.stderr
    [report] = json.loads(out.stdout)
    assert (report["n"], report["agree"], report["false_positives"], report["false_negatives"]) == (
        5,
        3,
        1,
        1,
    )
    assert report["reasons"] == {"accepted": 1, "unparseable_judgement": 1}
    assert report["examples"][0]["value"] == 0.7 and "[[7]]" in report["examples"][0]["reply"]
    assert fake_judge.requests == 5  # the real calls, through the openai SDK

    strict = json.loads(agreement(path, fake_judge.url, "--json", "--threshold", "0.75").stdout)[0]
    assert (strict["agree"], strict["false_positives"], strict["false_negatives"]) == (4, 0, 1)
    table = agreement(path, fake_judge.url, "--threshold", "0.75")
    assert table.returncode == 0 and "correct from 0.75" in table.stdout and "80.0%" in table.stdout


def test_agreement_on_the_judge_fails_clearly(tmp_path: Path, fake_judge: FakeJudge) -> None:
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in LABELLED))
    no_question = tmp_path / "no_question.jsonl"
    no_question.write_text(json.dumps({"completion": "4", "label": 1}) + "\n")
    missing = agreement(no_question, fake_judge.url)
    assert missing.returncode == 2 and "question" in missing.stderr
    unreachable = agreement(path, "http://127.0.0.1:9/v1", func="llm_judge:max_retries=0")
    assert unreachable.returncode == 2 and "error: llm_judge" in unreachable.stderr, unreachable.stderr
    helped = subprocess.run([SCRIPT, "agreement", "--help"], capture_output=True, text=True, timeout=60)
    assert "llm_judge" in helped.stdout and "--threshold" in helped.stdout
