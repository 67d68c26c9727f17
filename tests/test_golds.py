"""Issue 23, tried as a new user would with each trainer: OpenRLHF's ``scores``, golds that never arrive, and
veRL's ``reward_kwargs`` and unknown data sources. Each test fails without its fix."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Iterator
from types import ModuleType

import httpx
import pytest

import rewardkit
from rewardkit.adapters import plugin_path, verl
from rewardkit.golds import GoldCheck, MissingGoldError
from tests.support.helpers import Server

PROMPT = "<|im_start|>user\nUse 4, 6 to make 24<|im_end|>\n<|im_start|>assistant\n"
RIGHT = PROMPT + "<think>6 * 4</think><answer>6 * 4</answer><|im_end|>"
COUNTDOWN_LABEL = {"target": 24, "nums": [4, 6]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("golds") / "server.log")
    yield s
    s.stop()


def _openrlhf_file_form(monkeypatch: pytest.MonkeyPatch, funcs: str) -> ModuleType:
    """The file as OpenRLHF loads it (by path, a module of its own: a fresh gold check too)."""
    monkeypatch.setenv("REWARDKIT_OPENRLHF_FUNCS", funcs)
    spec = importlib.util.spec_from_file_location("reward_func_golds", plugin_path("openrlhf"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- OpenRLHF: scores are one reward's accuracy


def test_openrlhf_scores_are_the_first_funcs_accuracy_not_the_sum(server: Server) -> None:
    """--dynamic_filtering_reward_range 0 1 compares `scores`: a weighted sum of 2.0 would drop the group."""
    body = {"query": [RIGHT], "prompts": [PROMPT], "labels": [COUNTDOWN_LABEL]}
    url = server.url + "/get_reward?funcs=countdown,format"
    answer = httpx.post(url, json=body, timeout=60).json()
    assert answer == {"rewards": [2.0], "scores": [1.0], "extra_logs": {"countdown": [1.0], "format": [1.0]}}
    wrong = dict(body, query=[PROMPT + "<think>6 + 4</think><answer>6 + 4</answer>"])
    assert httpx.post(url, json=wrong, timeout=60).json()["scores"] == [0.0]  # format's 1.0 is not in it
    named = httpx.post(url + "&score_func=format", json=wrong, timeout=60).json()
    assert named["scores"] == [1.0] and named["rewards"] == [1.0]
    repeated = httpx.post(
        server.url + "/get_reward?funcs=format,format&score_func=format%232", json=body, timeout=60
    )
    assert repeated.status_code == 200 and repeated.json()["scores"] == [1.0]
    unknown = httpx.post(url + "&score_func=math", json=body, timeout=60)
    assert unknown.status_code == 422
    assert "score_func 'math' is not one of the rewards named: countdown, format" in unknown.json()["detail"]


def test_openrlhf_file_form_scores_and_score_func(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _openrlhf_file_form(monkeypatch, "countdown,format")
    label = '{"target": 24, "nums": [4, 6]}'
    assert module.reward_func([RIGHT], [PROMPT], [label])["scores"] == [1.0]
    monkeypatch.setenv("REWARDKIT_OPENRLHF_SCORE_FUNC", "format")
    wrong = PROMPT + "<think>6 + 4</think><answer>6 + 4</answer>"
    assert module.reward_func([wrong], [PROMPT], [label])["scores"] == [1.0]
    monkeypatch.setenv("REWARDKIT_OPENRLHF_SCORE_FUNC", "nope")
    with pytest.raises(ValueError, match="score_func 'nope' is not one of the rewards named"):
        module.reward_func([RIGHT], [PROMPT], [label])


# ---------------------------------------------------------------- golds that never arrive


def test_a_batch_without_any_gold_raises_naming_the_column() -> None:
    completions = ["so \\boxed{4}", "\\boxed{5}"]
    with pytest.raises(MissingGoldError, match=r"math: no item has its gold .*'solution'.*missing_solution"):
        rewardkit.score_batch(["math"], completions, {"solution": [None, ""]})
    mapped = rewardkit.get("math", columns={"solution": "answer"})
    with pytest.raises(MissingGoldError, match="'answer' column"):
        rewardkit.score_batch([mapped], completions, {"answer": [None, None]})
    with pytest.raises(MissingGoldError, match="countdown: .*'target'.*missing_target"):
        rewardkit.score_batch(["countdown"], ["<answer>6 * 4</answer>"], {"target": [None], "nums": [[4, 6]]})
    for name in ("choice", "r1v_acc"):
        with pytest.raises(MissingGoldError, match=f"{name}: no item has its gold"):
            rewardkit.score_batch([name], ["<answer>3</answer>"], {"solution": [" "]})


def test_a_few_missing_golds_stay_none_with_their_reason() -> None:
    result = rewardkit.score_batch(
        ["math", "format"], ["\\boxed{4}", "\\boxed{4}"], {"solution": ["4", None]}
    )
    assert result.scores["math"] == [1.0, None]
    assert result.errors["math"] == [None, "missing_solution"]
    # a reward that reads no gold is never checked, and a reward on its own keeps its contract
    assert rewardkit.score_batch(["format"], ["x"], {"solution": [None]}).scores == {"format": [0.0]}
    assert rewardkit.get("math")(["\\boxed{4}"], solution=[None]) == [None]


def test_score_route_answers_422_for_a_batch_without_gold(server: Server) -> None:
    body = {
        "funcs": ["math", "format"],
        "completions": ["\\boxed{4}"] * 2,
        "columns": {"solution": [None, None]},
    }
    missing = httpx.post(server.url + "/score", json=body, timeout=60)
    assert missing.status_code == 422
    assert "no item has its gold" in missing.json()["detail"] and "'solution'" in missing.json()["detail"]
    body["columns"] = {"solution": ["4", None]}
    some = httpx.post(server.url + "/score", json=body, timeout=60).json()
    assert some["scores"]["math"] == [1.0, None] and some["errors"]["math"] == [None, "missing_solution"]


def test_openrlhf_without_label_key_fails_after_a_few_samples(server: Server) -> None:
    """OpenRLHF without --data.label_key sends "" for every label, one sample a request."""
    url = server.url + "/get_reward?funcs=math"
    body = {"query": ["The answer is \\boxed{4}."], "labels": [""]}
    answers = [httpx.post(url, json=body, timeout=60) for _ in range(8)]
    assert [a.status_code for a in answers] == [200] * 7 + [422]
    assert answers[0].json()["rewards"] == [0.0]
    detail = answers[-1].json()["detail"]
    assert "--data.label_key" in detail and "none of the 8 items since the start" in detail
    many = {"query": ["\\boxed{4}"] * 8, "labels": [""] * 8}  # one request of 8: no need to wait
    countdown = httpx.post(server.url + "/get_reward?funcs=countdown", json=many, timeout=60)
    assert countdown.status_code == 422  # no target column at all: the column error names it
    assert "target" in countdown.json()["detail"]


def test_openrlhf_a_missing_label_now_and_then_is_a_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _openrlhf_file_form(monkeypatch, "math")
    assert module.reward_func(["\\boxed{4}"], [""], ["4"])["rewards"] == [1.0]
    for _ in range(20):  # after a gold has been seen, a missing one is a gap in the data
        assert module.reward_func(["\\boxed{4}"], [""], [""])["rewards"] == [0.0]
    with pytest.raises(MissingGoldError, match="--data.label_key"):
        module.reward_func(["\\boxed{4}"] * 8, [""] * 8, [""] * 8)  # a batch that large: raised at once
    fresh = _openrlhf_file_form(monkeypatch, "math")
    for _ in range(7):
        fresh.reward_func(["\\boxed{4}"], [""], [""])
    with pytest.raises(MissingGoldError, match="--data.label_key"):
        fresh.reward_func(["\\boxed{4}"], [""], [""])


@pytest.fixture
def fresh_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    """veRL's per-process gold check, fresh (other tests' samples had golds)."""
    monkeypatch.setattr(verl._state, "golds", GoldCheck(verl._GOLD_HINT, verl.GOLD_WINDOW))


def test_verl_rows_without_ground_truth(fresh_verl: None) -> None:
    texts = ["#### 4"] * 8
    with pytest.raises(MissingGoldError, match="reward_model.ground_truth"):
        verl.compute_score_batch(["openai/gsm8k"] * 8, texts, [None] * 8)
    some = verl.compute_score_batch(["openai/gsm8k"] * 8, texts, ["4"] + [None] * 7)
    assert some == [1.0] + [0.0] * 7
    detailed = verl.compute_score_detailed("openai/gsm8k", "#### 4", None)
    assert detailed == {"score": 0.0, "reason": "missing_solution"}


def test_verl_per_sample_calls_without_ground_truth_fail_after_a_few(fresh_verl: None) -> None:
    for _ in range(7):
        assert verl.compute_score("countdown", "<answer>6 * 4</answer>", None) == 0.0
    with pytest.raises(MissingGoldError, match="reward_model.ground_truth"):
        verl.compute_score("countdown", "<answer>6 * 4</answer>", None)


# ---------------------------------------------------------------- veRL: reward_kwargs and unknown sources


def test_verl_reward_kwargs_are_reward_parameters() -> None:
    """veRL merges custom_reward_function.reward_kwargs into every compute_score call."""
    row = {"data_source": "openai/gsm8k", "solution_str": "I think it is 12", "ground_truth": "12"}
    assert verl.compute_score(**row, extra_info={}) == 0.0  # strict reading: no answer marker
    assert verl.compute_score(**row, extra_info={}, extract="lenient") == 1.0
    assert verl.compute_score_batch(["openai/gsm8k"], ["I think it is 12"], ["12"], extract="lenient") == [
        1.0
    ]
    countdown = {"data_source": "countdown", "solution_str": "<answer>4 + 6</answer>"}
    truth = {"target": 24, "numbers": [4, 6]}
    assert verl.compute_score(**countdown, ground_truth=truth, countdown={"format_score": 0.1}) == 0.1
    # veRL's own keys (DAPO's overlong penalty) reach compute_score too, and are left alone
    assert verl.compute_score(**row, extract="lenient", max_resp_len=512, overlong_buffer_cfg={}) == 1.0
    with pytest.raises(rewardkit.RewardError, match="'extrct' is no parameter of the data-source table"):
        verl.compute_score(**row, extrct="lenient")
    with pytest.raises(ValueError, match="extract must be one of"):
        verl.compute_score(**row, extract="loose")


def test_verl_async_reward_kwargs() -> None:
    call = verl.compute_score_async("openai/gsm8k", "I think it is 12", "12", extract="lenient")
    assert asyncio.run(call) == 1.0


def test_verl_reward_kwargs_on_the_service(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDKIT_URL", server.url)
    assert verl.compute_score("openai/gsm8k", "I think it is 12", "12") == 0.0
    assert verl.compute_score("openai/gsm8k", "I think it is 12", "12", extract="lenient") == 1.0


def test_verl_batch_unknown_data_source_fails_only_its_rows(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = ["openai/gsm8k", "golds/unknown", "golds/unknown"]
    with caplog.at_level(logging.WARNING, logger="rewardkit.adapters.verl"):
        assert verl.compute_score_batch(sources, ["#### 4"] * 3, ["4"] * 3) == [1.0, 0.0, 0.0]
        assert verl.compute_score_batch(sources, ["#### 4"] * 3, ["4"] * 3) == [1.0, 0.0, 0.0]
    warned = [r.getMessage() for r in caplog.records if "golds/unknown" in r.getMessage()]
    assert len(warned) == 1 and "unknown_data_source" in warned[0]
    assert verl.score_rows(sources, ["#### 4"] * 3, ["4"] * 3).reasons == [None] + ["unknown_data_source"] * 2
    with pytest.raises(ValueError, match="no reward for data_source 'golds/unknown'"):
        verl.compute_score_batch(sources, ["#### 4"] * 3, ["4"] * 3, strict=True)
    monkeypatch.setenv("REWARDKIT_VERL_STRICT", "1")
    with pytest.raises(ValueError, match="no reward for data_source 'golds/unknown'"):
        verl.compute_score_batch(sources, ["#### 4"] * 3, ["4"] * 3)
