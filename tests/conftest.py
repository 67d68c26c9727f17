"""Shared fixtures: sample columns for every built-in reward, a clean registry for registration tests, and
the math worker's alarm handler in the test process."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from rewardkit import registry
from tests.support.fake_judge import FakeJudge

# Run in a subprocess with veRL on the path (test_verl.py), never imported here.
collect_ignore = ["support/verl_run.py"]

# A skipped test is a test that does not exist: any skip not listed here fails the run (``make test``), so a
# broken install or a missing service cannot pass CI silently. Each entry says where it truly cannot run.
ALLOWED_SKIPS = {
    "tests/security/test_sandbox_escape.py::test_an_unprivileged_service_gets_the_same_guarantees": (
        "needs root to run a service as user 65534 and /usr/bin/python3; run as a normal user, the whole "
        "suite tests a normal user's service"
    ),
    "tests/security/test_sandbox_memory.py::test_through_a_normal_users_service_the_attack_holds_nothing": (
        "needs root to run a service as user 65534, and /usr/bin/python3"
    ),
    "tests/security/test_sandbox_memory.py::test_the_cgroup_bounds_the_whole_sandbox_on_its_own": (
        "needs a host that lets the service make memory cgroups (not a container with a read-only cgroupfs)"
    ),
}
_skipped: dict[str, str] = {}


def _note_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped[report.nodeid] = str(reason)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_skip(report)


def unexpected_skips() -> dict[str, str]:
    """The skips of this run that ``ALLOWED_SKIPS`` does not name (parameters aside)."""
    return {node: why for node, why in _skipped.items() if node.split("[")[0] not in ALLOWED_SKIPS}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if unexpected := unexpected_skips():
        terminalreporter.section("unexpected skips (tests/conftest.py ALLOWED_SKIPS)", red=True)
        for node, why in unexpected.items():
            terminalreporter.line(f"{node}: {why}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if unexpected_skips() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# One valid sample per registered reward, for the contract tests. A new reward without an entry here
# fails test_every_reward_has_contract_samples: contract tests must cover every registered reward.
# Rewards that need a setting (ms-swift requires it too) are built with "params".
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "code": {
        "completion": "<think>add them</think>```python\nprint(sum(map(int, input().split())))\n```",
        "columns": {"tests": {"inputs": ["1 2"], "outputs": ["3"]}},
        "expected": 1.0,
    },
    "choice": {
        "completion": "<think>2x is the derivative</think>The answer is (B).",
        "columns": {"solution": "2x", "choices": ["x^2", "2x", "x"]},
        "expected": 1.0,
    },
    "cosine": {
        "params": {"max_len": 100},
        "completion": "<think>half</think><answer>\\boxed{\\dfrac{1}{2}}</answer>",
        "columns": {"solution": "0.5", "completion_ids": [1] * 100},
        "expected": 0.5,  # right, at max_len: max_len_value_correct
    },
    "length": {
        "completion": "<answer>\\boxed{2}</answer>",
        "columns": {"solution": "2", "prompt": "1 + 1?"},
        "expected": 0.0,  # a group of one length
    },
    "route": {
        "params": {"column": "task", "routes": {"cd": "countdown", "gsm8k": "math"}},
        "completion": "<answer>6 * 4</answer>",
        "columns": {"task": "cd", "target": 24, "nums": [4, 6]},
        "expected": 1.0,
    },
    "reasoning_steps": {
        "completion": "Step 1: add.\nStep 2: check.\nStep 3: answer.",
        "columns": {},
        "expected": 1.0,
    },
    "repetition": {
        "completion": "the cat sat the cat sat",
        "columns": {},
        "expected": -0.25,  # 4 trigrams, 3 distinct
    },
    "soft_overlong": {
        "params": {"max_length": 100, "cache_length": 20},
        "completion": "whatever",
        "columns": {"completion_ids": [7] * 90},
        "expected": -0.5,  # TRL's docstring example
    },
    "tag_count": {
        "completion": "<think>\nhm\n</think>\n<answer>\n4\n</answer>",
        "columns": {},
        "expected": 1.0,
    },
    "think_format": {
        "completion": "<think>\nhm\n</think>\nIt is 4.",
        "columns": {},
        "expected": 1.0,
    },
    "tool_call": {
        "completion": (
            "<think>weather</think>"
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
        ),
        "columns": {
            "solution": [{"get_weather": {"city": ["Paris"], "unit": ["", "celsius"]}}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    },
                }
            ],
        },
        "expected": 1.0,
    },
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
    "json_schema": {
        "completion": '<think>an object with a name</think>```json\n{"name": "Ann"}\n```',
        "columns": {"schema": {"type": "object", "required": ["name"]}},
        "expected": 1.0,
    },
    "llm_judge": {
        "completion": "The answer is 4.",
        "columns": {"question": "What is 2 + 2? SCORE:9"},  # the fake judge answers [[9]]
        "expected": 0.9,
    },
    "math": {
        "completion": "<think>half of it</think><answer>\\boxed{\\dfrac{1}{2}}</answer>",
        "columns": {"solution": "The answer is $\\boxed{0.5}$."},
        "expected": 1.0,
    },
    "math_or_judge": {
        "completion": "It is as many as the legs of a dog.",  # no answer the rule reads: the judge decides
        "columns": {"solution": "4", "question": "What is 2 + 2? SCORE:10"},  # the fake judge: [[10]]
        "expected": 1.0,
    },
    "gated": {
        "params": {"reward": "ifeval"},  # gated by the (fake) judge: "does it address the request?"
        "completion": "Leaves fall and the air cools.",
        "columns": {
            "instruction_id_list": ["punctuation:no_comma"],
            "prompt": "Write a line about autumn without commas. SCORE:9",  # the fake judge answers [[9]]
        },
        "expected": 0.9,
    },
    "ifeval": {
        "completion": "<think>no commas, and a title</think><<Autumn>>\nLeaves fall and the air cools.",
        "columns": {
            "instruction_id_list": ["punctuation:no_comma", "detectable_format:title"],
            "kwargs": [{}, {}],
            "prompt": "Write two lines about autumn with a title in <<double angular brackets>>, no commas.",
        },
        "expected": 1.0,
    },
    "qa_em": {
        "completion": "<think>search it</think><search>capital of France</search><answer>Paris</answer>",
        "columns": {"solution": ["Paris", "City of Light"]},
        "expected": 1.0,
    },
    "qa_f1": {
        "completion": "<think>search it</think><answer>the Eiffel Tower</answer>",
        "columns": {"solution": '["Eiffel Tower, Paris"]'},
        "expected": 0.8,  # 2 shared words: precision 1, recall 2/3
    },
    "r1v_acc": {
        "completion": "<think>I count them</think><answer>3</answer>",
        "columns": {"solution": "<answer> 3 </answer>"},
        "expected": 1.0,
    },
}


@pytest.fixture(scope="session")
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge()
    yield judge
    judge.close()


@pytest.fixture(autouse=True)
def judge_settings(fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> FakeJudge:
    """Every test sees a configured judge (the contract tests build every registered reward)."""
    fake_judge.reset()
    monkeypatch.setenv("REWARDKIT_JUDGE_BASE_URL", fake_judge.url)
    monkeypatch.setenv("REWARDKIT_JUDGE_MODEL", "test-judge")
    monkeypatch.setenv("REWARDKIT_JUDGE_API_KEY", "sk-test-secret-key")
    return fake_judge


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    """Let a test register rewards; everything it registered is removed afterwards."""
    before = {i.name for i in registry.list_rewards()}
    yield
    for info in registry.list_rewards():
        if info.name not in before:
            registry.unregister(info.name)


@pytest.fixture
def alarm() -> Iterator[None]:
    """The math worker's alarm handler in this process, for as long as the test runs (what
    ``rewardkit.verify.worker``'s checks need outside a worker); the previous handler afterwards."""
    from rewardkit.verify.worker import init_worker

    previous = signal.getsignal(signal.SIGALRM)
    init_worker(0)
    yield
    signal.signal(signal.SIGALRM, previous)
