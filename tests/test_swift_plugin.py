"""The ms-swift plugin, loaded by ms-swift's own loader (what --external_plugins calls), real ms-swift 4.6."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.testing import iter_golden_files, load_golden

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "swift_plugins" / "rewards.py"
GOLDEN = Path(__file__).parent / "golden"
# What ms-swift passes besides the dataset columns.
SWIFT_KWARGS = {"trainer_state": object(), "prompt_id": ["p"], "request_id": ["r"], "is_truncated": [False]}


@pytest.fixture(scope="module")
def orms() -> dict[str, Any]:
    from swift.utils.utils import import_external_file

    import_external_file(str(PLUGIN))
    from swift.rewards import orms

    return orms  # type: ignore[no-any-return]


def _call(obj: Any, completions: list[Any], **kwargs: Any) -> list[float | None]:
    result = obj(completions, **kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run(_wait(result))
    return list(result)


async def _wait(awaitable: Any) -> Any:
    return await awaitable


def test_every_reward_and_alias_is_registered_under_its_own_class_name(orms: dict[str, Any]) -> None:
    from swift.rewards import ORM, AsyncORM

    for info in rewardkit.list_rewards():
        cls = orms[f"rk_{info.name}"]
        assert cls.__name__ == f"rk_{info.name}"  # ms-swift logs rewards/<class name>/mean
        assert issubclass(cls, AsyncORM if info.name == "llm_judge" else ORM)
    assert orms["external_countdown"].__name__ == "external_countdown"
    assert orms["external_r1v_acc"].__name__ == "external_r1v_acc"
    assert orms["format"].__module__.startswith("swift.")  # ms-swift's own are left alone
    assert orms["accuracy"].__module__.startswith("swift.")


def test_golden_completions_score_as_in_process(orms: dict[str, Any]) -> None:
    groups: dict[str, list[Any]] = defaultdict(list)
    for file in iter_golden_files([GOLDEN]):
        for case in load_golden(file):
            if (
                not case.params
                and isinstance(case.completion, str)
                and (case.columns or case.func == "format")
            ):
                groups[case.func].append(case)
    assert set(groups) >= {"choice", "countdown", "format", "ifeval", "math", "qa_em", "qa_f1", "r1v_acc"}
    for func, cases in groups.items():
        names = sorted({k for c in cases for k in c.columns})
        columns = {k: [c.columns.get(k) for c in cases] for k in names}
        completions = [c.completion for c in cases]
        expected = rewardkit.get(func)(completions, **columns)
        for key in [
            f"rk_{func}",
            *[
                a
                for a, n in {"external_countdown": "countdown", "external_r1v_acc": "r1v_acc"}.items()
                if n == func
            ],
        ]:
            assert _call(orms[key](args=None), completions, **columns, **SWIFT_KWARGS) == expected, key


def test_judge_runs_as_an_async_orm(orms: dict[str, Any]) -> None:
    judge = orms["rk_llm_judge"](args=None)
    assert _call(judge, ["a", "b"], question=["SCORE:3", "SCORE:5"], **SWIFT_KWARGS) == [0.3, 0.5]


def test_missing_column_names_it_and_what_was_passed(orms: dict[str, Any]) -> None:
    reward = orms["rk_countdown"](args=None)
    with pytest.raises(
        ValueError, match="no column 'target'.*ms-swift passed: is_truncated, nums, prompt_id"
    ):
        reward(["<answer>1</answer>"], nums=[[1]], **SWIFT_KWARGS)


def test_parameters_from_env_and_config_file(
    orms: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = ["<answer>4 + 6</answer>"]
    assert orms["rk_countdown"]()(wrong, target=[24], nums=[[4, 6]]) == [0.0]
    monkeypatch.setenv("REWARDKIT_PARAMS", json.dumps({"countdown": {"format_score": 0.1}}))
    assert orms["rk_countdown"]()(wrong, target=[24], nums=[[4, 6]]) == [0.1]
    assert orms["external_countdown"]()(wrong, target=[24], nums=[[4, 6]]) == [0.1]
    monkeypatch.delenv("REWARDKIT_PARAMS")
    config = tmp_path / "rewards.json"
    config.write_text(json.dumps({"format": {"think_prefilled": True}}))
    monkeypatch.setenv("REWARDKIT_CONFIG", str(config))
    assert orms["rk_format"]()(["x</think><answer>4</answer>"]) == [1.0]
    monkeypatch.setenv("REWARDKIT_PARAMS", json.dumps({"countdown": {"format_score": 7}}))
    with pytest.raises(ValueError, match="format_score"):
        orms["rk_countdown"]()


REMOTE_SCRIPT = """
import asyncio, json, sys
from swift.utils.utils import import_external_file
import_external_file(sys.argv[1])
from swift.rewards import orms, AsyncORM
reward = orms[sys.argv[2]](args=None)
assert isinstance(reward, AsyncORM)
call = json.loads(sys.argv[3])
values = asyncio.run(reward(call.pop("completions"), trainer_state=None, **call))
print(json.dumps(values))
"""
COUNTDOWN_CALL = {
    "completions": ["<answer>4 * 6</answer>", "<answer>4 + 6</answer>"],
    "target": [24, 24],
    "nums": [[4, 6], [4, 6]],
    "prompt_id": ["a", "b"],
}


def run_remote_script(
    env: dict[str, str], key: str = "rk_countdown", call: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", REMOTE_SCRIPT, str(PLUGIN), key, json.dumps(call or COUNTDOWN_CALL)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=200)


@pytest.mark.timeout(240)
def test_remote_judge_with_a_rubric_template_on_a_messages_dataset(tmp_path: Path, fake_judge: Any) -> None:
    """ms-swift's standard dataset has messages (no question column); a custom template's placeholder
    (rubric) is a column of that configuration, which the remote mode learns from the server and sends."""
    from tests.support.helpers import Server

    server = Server(
        {
            "REWARDKIT_JUDGE_BASE_URL": fake_judge.url,
            "REWARDKIT_JUDGE_MODEL": "m",
            "REWARDKIT_JUDGE_API_KEY": "sk-x",
        },
        tmp_path / "server.log",
    )
    try:
        env = {
            **os.environ,
            "REWARDKIT_URL": server.url,
            "REWARDKIT_PARAMS": json.dumps(
                {"llm_judge": {"template": "{rubric} | {question} | {completion}"}}
            ),
        }
        call = {
            "completions": ["It is 4."],
            "messages": [
                [{"role": "user", "content": "2+2? SCORE:4"}, {"role": "assistant", "content": "It is 4."}]
            ],
            "rubric": ["be strict"],
        }
        proc = run_remote_script(env, "rk_llm_judge", call)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [0.4]
        assert fake_judge.plain_texts[-1] == "be strict | 2+2? SCORE:4 | It is 4."
    finally:
        server.stop()


@pytest.mark.timeout(240)
def test_remote_mode_scores_through_the_service(tmp_path: Path) -> None:
    from tests.support.helpers import Server

    server = Server({}, tmp_path / "server.log")
    try:
        env = {
            **os.environ,
            "REWARDKIT_URL": server.url,
            "REWARDKIT_PARAMS": '{"countdown": {"format_score": 0.1}}',
        }
        proc = run_remote_script(env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [1.0, 0.1]
        # A parameter the service keeps for its operator fails when the plugin loads, before any step.
        refused = run_remote_script({**env, "REWARDKIT_PARAMS": '{"math": {"workers": 4}}'}, "rk_math")
        assert refused.returncode != 0 and "'workers' is a server setting" in refused.stderr
        assert "Traceback" in refused.stderr and "__init__" in refused.stderr  # at construction
    finally:
        server.stop()
    # The service is gone now: the step must fail loudly, not train on zeros.
    proc = run_remote_script(env)
    assert proc.returncode != 0 and "could not reach the reward service" in proc.stderr
