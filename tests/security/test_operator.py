"""What the operator configures: server settings from REWARDKIT_CONFIG, caps from REWARDKIT_CAPS, the
metrics scrape, the start-up log; and a configuration that is wrong keeps the service from starting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.security.conftest import JUDGE_KEY
from tests.support.fake_judge import FakeJudge
from tests.support.helpers import ROOT, TOKEN, Server

AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, judge: FakeJudge) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("operator")
    template = folder / "rubric.txt"
    template.write_text("OPERATOR RUBRIC. {completion} SCORE:4")
    config = folder / "rewards.json"
    config.write_text(
        json.dumps(
            {
                "llm_judge": {
                    "base_url": judge.url,
                    "model": "operator-model",
                    "api_key_env": "OPERATOR_JUDGE_KEY",
                    "template": str(template),
                },
                "math": {"workers": 1, "timeout_s": 2.0},
            }
        )
    )
    env = {
        "REWARDKIT_API_TOKEN": TOKEN,
        "REWARDKIT_CONFIG": str(config),
        "REWARDKIT_CAPS": '{"math": {"timeout_s": 10}}',
        "REWARDKIT_METRICS_PUBLIC": "true",
        "OPERATOR_JUDGE_KEY": JUDGE_KEY,
    }
    s = Server(env, folder / "server.log")
    yield s
    s.stop()


def test_the_operators_judge_settings_and_template_file_apply(server: Server, judge: FakeJudge) -> None:
    judge.reset()
    body = {"funcs": ["llm_judge"], "completions": ["It is 4."], "columns": {"question": ["2+2?"]}}
    response = httpx.post(server.url + "/score", json=body, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["scores"]["llm_judge"] == [0.4]
    assert judge.plain_texts == ["OPERATOR RUBRIC. It is 4. SCORE:4"]
    assert judge.authorizations == [f"Bearer {JUDGE_KEY}"]


def test_operator_caps_and_defaults_are_published_and_enforced(server: Server) -> None:
    data = httpx.get(server.url + "/rewards", headers=AUTH).json()
    math = next(r for r in data["rewards"] if r["name"] == "math")["params"]
    assert math["timeout_s"]["default"] == 2.0 and math["timeout_s"]["cap"] == 10
    body = {"funcs": [{"name": "math", "params": {"timeout_s": 11}}], "completions": ["1"]}
    response = httpx.post(server.url + "/score", json={**body, "columns": {"solution": ["1"]}}, headers=AUTH)
    assert response.status_code == 422 and "cap of 10" in response.json()["detail"]
    ready = httpx.get(server.url + "/readyz", headers=AUTH, timeout=60).json()
    assert ready["status"] == "ready" and ready["rewards"]["math"] == "ready"


def test_public_metrics_need_no_token_but_report_the_rewards_figures(server: Server) -> None:
    body = {"funcs": ["math"], "completions": ["\\boxed{2}"] * 3, "columns": {"solution": ["2"] * 3}}
    assert httpx.post(server.url + "/score", json=body, headers=AUTH).status_code == 200
    text = httpx.get(server.url + "/metrics").text
    assert 'rewardkit_items_scored_total{func="math"}' in text
    assert 'rewardkit_reward_stat_total{func="math",stat="pairs"}' in text
    assert httpx.get(server.url + "/rewards").status_code == 401  # only /metrics and /healthz are open


def test_the_start_up_log_shows_settings_and_policy_without_secrets(server: Server) -> None:
    log = server.log.read_text()
    assert '"api_token": "(set)"' in log and TOKEN not in log and JUDGE_KEY not in log
    assert "reward math (ok): callers may set {'timeout_s': 10.0, 'max_answer_chars': 100000," in log
    assert "server settings ['memory_mb', 'workers']" in log


@pytest.mark.parametrize(
    "env, message",
    [
        ({"REWARDKIT_PARAMS": '{"math": {"threads": 4}}'}, "has no parameter(s) threads"),
        ({"REWARDKIT_CAPS": '{"llm_judge": {"base_url": 1}}'}, "not a parameter callers may set"),
    ],
)
def test_a_wrong_configuration_keeps_the_service_from_starting(env: dict[str, str], message: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    code = "from service.app import create_app; create_app()"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-2000:]


def test_the_start_up_report_redacts_passwords_in_urls() -> None:
    from service.settings import Settings

    shown = Settings(params={"llm_judge": {"base_url": "https://bob:hunter2@judge.example/v1"}}).redacted()
    assert shown["params"]["llm_judge"]["base_url"] == "https://***@judge.example/v1"
