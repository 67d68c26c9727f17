"""Every registered reward called exactly as each trainer calls it; the veRL and OpenRLHF adapters.

TRL, ms-swift and veRL's reward managers run for real elsewhere (test_trl_e2e.py, test_swift_e2e.py,
test_verl.py). OpenRLHF does not install here (it needs flash-attn, deepspeed and CUDA), so its calling
convention is reproduced from its source (OpenRLHF 0.11.2 ``utils/agent.py``): the request body, one sample
per call, no headers, the file loaded by path; veRL's is too, for the cases its managers cannot show.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.adapters import plugin_path
from tests.conftest import CONTRACT_SAMPLES
from tests.support.helpers import TOKEN, Server

NAMES = sorted(CONTRACT_SAMPLES)


class TrainerState:  # what TRL and ms-swift pass as trainer_state: an object, not a column
    global_step = 3


def _sample(name: str, n: int = 2) -> tuple[rewardkit.Reward, list[Any], dict[str, list[Any]], Any]:
    entry = CONTRACT_SAMPLES[name]
    reward = rewardkit.get(name, **entry.get("params", {}))
    columns = {k: [v] * n for k, v in entry["columns"].items()}
    return reward, [entry["completion"]] * n, columns, entry["expected"]


@pytest.mark.parametrize("name", NAMES)
def test_trl_convention(name: str) -> None:
    """TRL 0.29: ``prompts=``, ``completions=``, ``completion_ids=``, every other dataset column, and
    ``trainer_state=``; the dataset's ``prompt`` column is not passed (it arrives as ``prompts``)."""
    reward, completions, columns, expected = _sample(name)
    prompt = columns.pop("prompt", None) or columns.pop("question", None) or ["What is 2 + 2? SCORE:9"] * 2
    columns.setdefault("completion_ids", [[1, 2, 3]] * 2)
    values = reward(prompts=prompt, completions=completions, trainer_state=TrainerState(), **columns)
    assert values == [expected] * 2
    chat = [[{"role": "assistant", "content": c}] for c in completions]  # conversational datasets
    chat_prompts = [[{"role": "user", "content": p}] for p in prompt]
    values = reward(prompts=chat_prompts, completions=chat, trainer_state=TrainerState(), **columns)
    assert values == [expected] * 2


@pytest.mark.parametrize("name", NAMES)
def test_ms_swift_convention(name: str) -> None:
    """ms-swift 4.6: ``completions`` positional; ``messages`` (the conversation, the completion appended),
    ``trainer_state``, ``response_token_ids`` and the dataset's columns as keywords."""
    reward, completions, columns, expected = _sample(name)
    question = (
        columns.pop("question", None) or columns.pop("prompt", None) or ["What is 2 + 2? SCORE:9"] * 2
    )[0]
    messages = [
        [{"role": "user", "content": question}, {"role": "assistant", "content": c}] for c in completions
    ]
    if name == "length":
        columns["prompt"] = [question] * 2  # the group key: ms-swift keeps the dataset's columns
    values = reward(
        completions,
        messages=messages,
        trainer_state=TrainerState(),
        response_token_ids=[[1, 2, 3]] * 2,
        **columns,
    )
    assert values == [expected] * 2


# ---------------------------------------------------------------- veRL


VERL_BATCH = [  # (data_source, solution_str, ground_truth, expected)
    ("openai/gsm8k", "She sells 16 - 3 - 4 = 9 eggs.\n#### 18", "18", 1.0),
    ("openai/gsm8k", "#### 17", "18", 0.0),
    (
        "countdown",
        "<think>6 - 2 = 4</think><answer>(6 - 2) * 6</answer>",
        {"target": 24, "numbers": [2, 6, 6]},
        1.0,
    ),
    ("countdown", "<answer>2 ** 6</answer>", {"target": 64, "numbers": [2, 6]}, 0.0),  # no powers
    ("lighteval/MATH", "So $x = \\boxed{\\dfrac{1}{2}}$.", "\\frac12", 1.0),
    ("HuggingFaceH4/MATH-500", "The answer is $\\boxed{3\\sqrt{2}}$", "\\sqrt{18}", 1.0),
    ("math_dapo", "Answer: 7", "8", -1.0),  # veRL's DAPO scoring: wrong is -1
    ("aime2024", "\\boxed{204}", "204", 1.0),
]


def _verl_call(fn: Any, row: tuple[Any, ...]) -> Any:
    data_source, solution_str, ground_truth, _ = row
    extra_info = {"split": "test", "index": 0, "num_turns": 1, "rollout_reward_scores": {}}
    return fn(
        data_source=data_source, solution_str=solution_str, ground_truth=ground_truth, extra_info=extra_info
    )


def test_verl_compute_score_sync_and_detailed() -> None:
    from rewardkit.adapters import verl

    assert [_verl_call(verl.compute_score, row) for row in VERL_BATCH] == [row[3] for row in VERL_BATCH]
    detailed = _verl_call(verl.compute_score_detailed, VERL_BATCH[3])
    assert detailed == {"score": 0.0, "reason": "invalid_expression"}
    assert _verl_call(verl.compute_score_detailed, VERL_BATCH[0]) == {"score": 1.0, "reason": "ok"}


def test_verl_compute_score_batch() -> None:
    from rewardkit.adapters import verl

    sources, texts, truths, expected = (list(c) for c in zip(*VERL_BATCH, strict=True))
    extra_infos = [{"index": i} for i in range(len(sources))]
    scores = verl.compute_score_batch(
        data_sources=sources, solution_strs=texts, ground_truths=truths, extra_infos=extra_infos
    )
    assert scores == expected


def test_verl_unknown_data_source_names_it_and_the_table() -> None:
    from rewardkit.adapters import verl

    with pytest.raises(ValueError, match="no reward for data_source 'my/dataset'; known: openai/gsm8k, "):
        verl.compute_score("my/dataset", "#### 1", "1")
    verl.register_data_source("my/*", "math", {"extract": "lenient"})
    try:
        assert verl.compute_score("my/dataset", "it is 1", "1") == 1.0
    finally:
        del verl.DATA_SOURCES["my/*"]
    with pytest.raises(rewardkit.RewardError, match="has no parameter"):
        verl.register_data_source("bad", "math", {"nope": 1})


def test_verl_async_reward_loop_coalesces_concurrent_calls() -> None:
    """veRL's reward loop makes one task per sample and gathers them: they are scored in one batch."""
    import inspect

    from rewardkit.adapters import verl

    assert inspect.iscoroutinefunction(verl.compute_score_async)  # how veRL decides to await it

    async def reward_loop() -> tuple[list[float], int]:
        tasks = [asyncio.create_task(_verl_call(verl.compute_score_async, row)) for row in VERL_BATCH * 8]
        scores = await asyncio.gather(*tasks)
        return scores, verl.coalescer().batches

    scores, batches = asyncio.run(reward_loop())
    assert scores == [row[3] for row in VERL_BATCH] * 8
    assert batches == 1


def test_verl_async_unknown_data_source_fails_only_its_caller() -> None:
    from rewardkit.adapters import verl

    async def loop() -> list[Any]:
        good = _verl_call(verl.compute_score_async, VERL_BATCH[0])
        bad = verl.compute_score_async("nobody/knows", "x", "1")
        return list(await asyncio.gather(good, bad, return_exceptions=True))

    good, bad = asyncio.run(loop())
    assert good == 1.0
    assert isinstance(bad, ValueError) and "no reward for data_source 'nobody/knows'" in str(bad)


def test_verl_loads_the_file_as_verl_does() -> None:
    """veRL's load_extern_object: the file by path under a module name of its own, then the function."""
    path = plugin_path("verl")
    spec = importlib.util.spec_from_file_location("custom_module_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert _verl_call(module.compute_score, VERL_BATCH[2]) == 1.0


# ---------------------------------------------------------------- OpenRLHF


def test_openrlhf_file_form_loaded_and_called_as_openrlhf_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDKIT_OPENRLHF_FUNCS", "countdown,format")
    spec = importlib.util.spec_from_file_location("reward_func", plugin_path("openrlhf"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prompt = "<|im_start|>user\nUse 4, 6 to make 24<|im_end|>\n<|im_start|>assistant\n"
    query = prompt + "<think>6 * 4</think><answer>6 * 4</answer><|im_end|>"
    label = json.dumps({"target": 24, "nums": [4, 6]})
    out = module.reward_func([query], [prompt], [label])  # positional lists of one sample, as OpenRLHF calls
    # scores: the first reward's own value, a 0-1 accuracy for OpenRLHF's dynamic filtering (issue 23)
    assert out == {"rewards": [2.0], "scores": [1.0], "extra_logs": {"countdown": [1.0], "format": [1.0]}}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"REWARDKIT_API_TOKEN": TOKEN}
    s = Server(env, tmp_path_factory.mktemp("openrlhf") / "server.log")
    yield s
    s.stop()


def test_openrlhf_secured_service_takes_the_token_and_funcs_in_the_url(secured: Server) -> None:
    prompt = "<|im_start|>user\nUse 4, 6 to make 24<|im_end|>\n<|im_start|>assistant\n"
    body = {  # OpenRLHF 0.11: one sample per request, no headers
        "query": [prompt + "<think>6 * 4</think><answer>6 * 4</answer><|im_end|>"],
        "prompts": [prompt],
        "labels": [{"target": 24, "nums": [4, 6]}],
    }
    url = secured.url + "/get_reward?funcs=countdown,format&token=" + TOKEN
    response = httpx.post(url, json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "rewards": [2.0],
        "scores": [1.0],  # countdown's accuracy, not the weighted sum (issue 23)
        "extra_logs": {"countdown": [1.0], "format": [1.0]},
    }
    body["labels"] = [json.dumps({"target": 24, "nums": [4, 6]})]  # a string holding the object
    assert httpx.post(url, json=body, timeout=60).json()["rewards"] == [2.0]
    for bad in ("", "&token=wrong"):
        denied = httpx.post(secured.url + "/get_reward?funcs=countdown" + bad, json=body, timeout=60)
        assert denied.status_code == 401
    # the token in the URL is for /get_reward only
    score = {"funcs": ["format"], "completions": ["x"]}
    assert httpx.post(secured.url + "/score?token=" + TOKEN, json=score).status_code == 401
    unknown = httpx.post(secured.url + "/get_reward?funcs=nope&token=" + TOKEN, json=body, timeout=60)
    assert unknown.status_code == 422 and "unknown reward 'nope'" in unknown.json()["detail"]
    many = ",".join(["format"] * 17)
    assert httpx.post(secured.url + f"/get_reward?funcs={many}&token={TOKEN}", json=body).status_code == 422
    # server settings stay the server's: funcs name rewards, not parameters
    assert (
        httpx.post(url.replace("funcs=countdown", "funcs=countdown:workers=9"), json=body).status_code == 422
    )


def test_openrlhf_token_never_reaches_the_log(secured: Server) -> None:
    body = {"query": ["#### 4"], "labels": ["4"]}
    response = httpx.post(secured.url + f"/get_reward?token={TOKEN}&funcs=math", json=body, timeout=60)
    assert response.status_code == 200 and response.json()["rewards"] == [1.0]
    encoded = httpx.post(secured.url + f"/get_reward?%74oken={TOKEN}&funcs=math", json=body, timeout=60)
    assert encoded.status_code == 200  # the same parameter, percent-encoded: authenticates, and is redacted
    log = secured.log.read_text()
    assert "/get_reward?token=***&funcs=math" in log  # the access line is there, redacted
    assert "/get_reward?%74oken=***&funcs=math" in log
    assert TOKEN not in log


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, tmp_path_factory.mktemp("verl") / "server.log")
    yield s
    s.stop()


def _score_requests(server: Server) -> float:
    metrics = httpx.get(server.url + "/metrics").text
    lines = [
        line for line in metrics.splitlines() if line.startswith('rewardkit_requests_total{route="/score"')
    ]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_verl_remote_mode_coalesces_into_few_requests(plain: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardkit.adapters import verl

    monkeypatch.setenv("REWARDKIT_URL", plain.url)
    rows = VERL_BATCH * 16  # 128 samples, one task each, as veRL's reward loop makes them

    async def reward_loop() -> list[float]:
        return list(await asyncio.gather(*(_verl_call(verl.compute_score_async, row) for row in rows)))

    before = _score_requests(plain)
    assert asyncio.run(reward_loop()) == [row[3] for row in rows]
    assert _score_requests(plain) - before == 1  # 128 per-sample calls, one POST /score
    # the sync and batch faces in remote mode
    assert _verl_call(verl.compute_score, VERL_BATCH[2]) == 1.0
    sources, texts, truths, expected = (list(c) for c in zip(*VERL_BATCH, strict=True))
    assert verl.compute_score_batch(sources, texts, truths, [{}] * len(texts)) == expected
    assert _score_requests(plain) - before == 3
